import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_vit_token import mean_iou
from iclr26_vit_token.probe import mask_patches


def _reference_miou(pred, gt, n_classes):
    ious = []
    for c in range(n_classes):
        p, g = pred == c, gt == c
        union = np.logical_or(p, g).sum()
        if union == 0:
            continue
        ious.append(np.logical_and(p, g).sum() / union)
    return float(np.mean(ious))


def test_miou_on_hand_built_masks_excludes_absent_classes():
    gt = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 2, 2], [0, 0, 0, 0]])
    pred = np.array([[0, 0, 1, 0], [0, 1, 1, 1], [2, 2, 0, 2], [0, 0, 0, 0]])
    # class 0: TP 7, FP 2, FN 1 -> 7/10; class 1: TP 3, FP 1, FN 1 -> 3/5; class 2: TP 3, FN 1 -> 3/4
    # classes 3 and 4 absent from both: excluded
    out = mean_iou(pred, gt, n_classes=5)
    assert out["miou"] == pytest.approx((7 / 10 + 3 / 5 + 3 / 4) / 3, abs=1e-12)
    assert out["pixel_acc"] == pytest.approx(13 / 16)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 50))
def test_miou_matches_an_independent_reference(seed, n):
    rng = np.random.default_rng(seed)
    gt, pred = rng.integers(0, 5, n), rng.integers(0, 5, n)
    assert mean_iou(pred, gt)["miou"] == pytest.approx(_reference_miou(pred, gt, 5), abs=1e-12)
    assert mean_iou(gt, gt)["miou"] == 1.0


def test_miou_bad_input():
    with pytest.raises(ValueError, match="shapes"):
        mean_iou(np.zeros(3, int), np.zeros(4, int))
    with pytest.raises(ValueError, match="target"):
        mean_iou(np.zeros(3, int), np.array([0, 1, 7]))


def test_mask_patches_uses_the_token_order():
    masks = np.arange(2 * 8 * 8).reshape(2, 8, 8)
    out = mask_patches(masks, 4)
    assert out.shape == (2, 4, 16)
    assert np.array_equal(out[1, 1].reshape(4, 4), masks[1, :4, 4:])  # second patch = top-right block
    assert np.array_equal(out[0, 2].reshape(4, 4), masks[0, 4:, :4])


def test_seg_probe_takes_many_classes_and_an_ignore_index():
    from iclr26_vit_token import SpecViT, linear_probe_seg, make_shapes_seg

    rng = np.random.default_rng(0)
    data = make_shapes_seg(24, seed=1)
    data.masks = rng.integers(0, 150, data.masks.shape).astype(np.int64)  # ADE20k-sized label set
    data.masks[:, :4] = 255
    model = SpecViT(depth=1)
    out = linear_probe_seg(model, data, data, epochs=1, n_classes=150, ignore_index=255)
    assert 0.0 <= out["miou"] <= 1.0
    with pytest.raises(ValueError, match="masks: expected labels in \\[0, 150\\)"):
        linear_probe_seg(model, data, data, epochs=1, n_classes=150)
    with pytest.raises(ValueError, match="n_classes"):
        linear_probe_seg(model, data, data, epochs=1, n_classes=1)


def test_miou_leaves_out_ignored_pixels():
    gt = np.array([0, 1, 255, 255])
    pred = np.array([0, 1, 0, 1])
    assert mean_iou(pred, gt, n_classes=2, ignore_index=255) == {"miou": 1.0, "pixel_acc": 1.0}
