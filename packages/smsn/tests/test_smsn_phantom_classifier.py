"""The phantom encodes the modality dependence: a non-neural per-pixel classifier (gradient boosting on raw and
3×3-mean intensities of the available modalities) finds ET only with T1ce and WT from FLAIR alone (issue 38)."""
import numpy as np
import pytest
from iclr26_smsn import make_phantom
from scipy.ndimage import uniform_filter

sklearn_ensemble = pytest.importorskip("sklearn.ensemble")


def _pixels(phantom, modalities):
    """(pixels inside the head, features) and their labels: raw and 3×3-filtered intensities."""
    im = phantom.images[:, modalities]
    feats = np.concatenate([im, uniform_filter(im, size=(1, 1, 3, 3))], 1).transpose(0, 2, 3, 1)
    head = phantom.tissue > 0
    return feats[head], phantom.labels[head]


def _f1(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(2 * (pred & truth).sum() / max(pred.sum() + truth.sum(), 1))


def test_pixel_classifier_needs_t1ce_for_et_and_flair_suffices_for_wt():
    train, test = make_phantom(24, 48, seed=3), make_phantom(12, 48, seed=7_000)
    f1 = {}
    for name, mods in (("all", [0, 1, 2, 3]), ("no_t1ce", [0, 2, 3]), ("flair", [3])):
        x, y = _pixels(train, mods)
        xt, yt = _pixels(test, mods)
        clf = sklearn_ensemble.HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(x, y)
        pred = clf.predict(xt)
        f1[name] = (_f1(pred == 4, yt == 4), _f1(pred > 0, yt > 0))
    assert f1["all"][0] >= 0.6, f1
    assert f1["no_t1ce"][0] <= 0.4, f1
    assert f1["flair"][1] >= 0.7, f1
