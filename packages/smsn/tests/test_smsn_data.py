import pathlib

import numpy as np
import pytest
from iclr26_smsn import PhantomDataset, apply_mask, make_phantom, subset_masks, subset_name
from iclr26_smsn.data import TISSUE_MEANS, TISSUES


@pytest.fixture(scope="module")
def phantom():
    return make_phantom(24, 48, seed=3, return_clean=True)


def test_labels_and_nesting(phantom):
    assert set(np.unique(phantom.labels)) <= {0, 1, 2, 4}
    assert phantom.images.shape == (24, 4, 48, 48) and phantom.images.dtype == np.float32
    wt, tc, et = (np.isin(phantom.labels, r) for r in ((1, 2, 4), (1, 4), (4,)))
    assert not (et & ~tc).any() and not (tc & ~wt).any()
    assert wt.any() and et.any()


def test_clean_tissue_means(phantom):
    for t in range(len(TISSUES)):
        sel = phantom.tissue == t
        if sel.any():
            for c in range(4):
                assert abs(phantom.clean[:, c][sel].mean() - TISSUE_MEANS[t, c]) <= 0.02


def test_contrast_ordering(phantom):
    def mean(c, tissue):
        return phantom.clean[:, c][phantom.tissue == TISSUES.index(tissue)].mean()

    assert mean(3, "oedema") - mean(3, "csf") > 0.6
    assert abs(mean(0, "enhancing") - mean(0, "oedema")) < 0.05
    assert mean(1, "enhancing") - mean(1, "oedema") > 0.5


def test_deterministic():
    a, b = make_phantom(3, 32, seed=7), make_phantom(3, 32, seed=7)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.images, make_phantom(3, 32, seed=8).images)


def test_3d_shape():
    p = make_phantom(1, 16, ndim=3, depth=8)
    assert p.images.shape == (1, 4, 16, 16, 8) and p.labels.shape == (1, 16, 16, 8)


def test_subset_masks_order():
    m = subset_masks()
    assert m.shape == (15, 4) and len({tuple(r) for r in m}) == 15 and m.any(1).all()
    assert list(m.sum(1)) == [1] * 4 + [2] * 6 + [3] * 4 + [4]
    assert subset_name(m[0]) == "T1" and subset_name(m[9]) == "T2+FLAIR" and m[14].all()


def test_apply_mask_zero_fills():
    x = np.ones((2, 4, 3, 3), np.float32)
    out = apply_mask(x, np.array([[1, 0, 1, 0], [0, 0, 0, 1]]))
    assert out[0, 1].sum() == 0 and out[0, 0].sum() == 9 and out[1, :3].sum() == 0


@pytest.mark.parametrize("kwargs,match", [({"n": 0}, "n"), ({"n": 1, "size": 4}, "size"),
                                          ({"n": 1, "ndim": 4}, "ndim"), ({"n": 1, "noise": -1}, "noise")])
def test_phantom_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_phantom(**kwargs)


def test_dataset_bad_input():
    imgs = np.zeros((2, 4, 8, 8), np.float32)
    with pytest.raises(ValueError, match="labels"):
        PhantomDataset(imgs, np.full((2, 8, 8), 3))
    with pytest.raises(ValueError, match="labels"):
        PhantomDataset(imgs, np.zeros((2, 8, 9), int))
    imgs[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PhantomDataset(imgs, np.zeros((2, 8, 8), int))
    assert PhantomDataset(np.zeros((1, 4, 8, 8)), np.full((1, 8, 8), 3), "brats2023").labels.max() == 4


def test_brats_loader_missing_folder(tmp_path):
    from iclr26_smsn import load_brats_folder

    with pytest.raises(FileNotFoundError, match="BraTS"):
        next(load_brats_folder(tmp_path / "absent"))


def test_phantom_matches_stored_reference():
    """The phantom equals the arrays stored before the issue-38 speed-up (2-D 17², 8 cases; 3-D 16³, 2 cases; seed
    3): labels and tissue exactly; images to 1e-6 (bit-identical on the machine that stored them)."""
    ref = np.load(pathlib.Path(__file__).parent / "data" / "phantom_reference.npz")
    for ndim, size, n in ((2, 17, 8), (3, 16, 2)):
        p = make_phantom(n, size, seed=3, ndim=ndim)
        np.testing.assert_array_equal(p.labels, ref[f"ndim{ndim}_labels"])
        np.testing.assert_array_equal(p.tissue, ref[f"ndim{ndim}_tissue"])
        np.testing.assert_allclose(p.images, ref[f"ndim{ndim}_images"], rtol=0, atol=1e-6)
