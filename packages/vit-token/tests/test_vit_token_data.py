import numpy as np
import pytest
import torch
from iclr26_vit_token import SpecViT, make_shapes_seg, shapes_seg_splits, vit_cpu_config
from iclr26_vit_token.data import load_seg_pairs, shape_masks
from iclr26_vit_token.pretrain import patch_pixels, random_patch_mask, warmup_cosine


def test_shapes_seg_is_seeded_and_well_formed():
    a, b = make_shapes_seg(64, seed=5), make_shapes_seg(64, seed=5)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.masks, b.masks)
    assert a.images.shape == (64, 32, 32, 3) and a.images.dtype == np.uint8
    assert a.masks.shape == (64, 32, 32) and set(np.unique(a.masks)) <= set(range(5))
    assert a.labels.min() >= 0 and a.labels.max() < 8
    assert np.array_equal(a.labels % 2, a.texture)
    # the global shape class is one of the visible shapes
    for i in range(64):
        assert a.labels[i] // 2 + 1 in set(np.unique(a.masks[i]))
    assert not np.array_equal(make_shapes_seg(64, seed=6).images, a.images)


def test_splits_are_disjoint_streams():
    parts = shapes_seg_splits({"pretrain": 16, "probe_test": 16}, seed=0)
    assert not np.array_equal(parts["pretrain"].images, parts["probe_test"].images)
    again = shapes_seg_splits({"probe_test": 16}, seed=0)
    assert np.array_equal(again["probe_test"].images, parts["probe_test"].images)


@pytest.mark.parametrize("kind, area", [(0, np.pi), (1, 2.0), (2, 3 * np.sqrt(3) / 4)])
def test_shape_areas_match_closed_forms(kind, area):
    r = np.array([40.0])
    m = shape_masks(np.array([kind]), np.array([64.0]), np.array([64.0]), r, np.array([0.3]), size=128)
    assert m.sum() == pytest.approx(area * r[0] ** 2, rel=0.02)


def test_bad_sizes_and_missing_folders(tmp_path):
    with pytest.raises(ValueError, match="n"):
        make_shapes_seg(0)
    with pytest.raises(FileNotFoundError, match="images"):
        load_seg_pairs(tmp_path)


def test_pretraining_pieces():
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    pix = patch_pixels(x, 4)
    assert pix.shape == (2, 4, 48)
    assert torch.equal(pix[0, 1].reshape(3, 4, 4), x[0, :, :4, 4:])
    mask = random_patch_mask(5, 64, 0.4, torch.Generator().manual_seed(0))
    assert mask.sum(1).tolist() == [26] * 5
    assert warmup_cosine(0, 100) == pytest.approx(0.2) and warmup_cosine(5, 100) == pytest.approx(1.0)
    assert warmup_cosine(99, 100) < 0.01
    model = SpecViT(**vit_cpu_config())
    assert model.prepare_tokens(torch.zeros(2, 3, 32, 32)).shape == (2, 65, 64)


@pytest.mark.parametrize("images", [np.full((2, 32, 32, 3), np.nan), np.zeros((2, 32, 32, 3), np.float32),
                                    np.zeros((2, 32, 32), np.uint8)])
def test_to_tensor_refuses_float_nan_and_misshaped_images(images):
    from iclr26_vit_token.pretrain import to_tensor

    with pytest.raises(ValueError, match="images: expected a uint8 array of shape"):
        to_tensor(images)


def test_seeded_heads_make_pretraining_reproducible():
    from iclr26_vit_token import make_shapes_seg, pretrain
    from iclr26_vit_token.pretrain import PretrainHeads

    model = SpecViT(depth=1)
    a, b = PretrainHeads.for_model(model, seed=3), PretrainHeads.for_model(model, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.cls_head.weight, PretrainHeads.for_model(model, seed=4).cls_head.weight)
    data = make_shapes_seg(16, seed=0)
    runs = []
    for _ in range(2):
        m = SpecViT(depth=1)
        m.load_state_dict(model.state_dict())
        torch.manual_seed(123 + len(runs))  # the global RNG must not matter
        runs.append([h["loss"] for h in pretrain(m, data, steps=3, batch_size=4, seed=5).history])
    assert runs[0] == runs[1]
