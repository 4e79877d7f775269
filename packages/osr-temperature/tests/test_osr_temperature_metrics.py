"""AUROC, OSCR (exact and reference), scoring, splits."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_osr_temperature import data, metrics, scoring
from sklearn.metrics import roc_auc_score


def _brute_oscr(sk, su, correct):
    pts = [(0.0, 0.0)]
    for d in sorted(set(np.concatenate([sk, su])), reverse=True):
        pts.append((np.mean(su >= d), np.sum(correct & (sk >= d)) / sk.size))
    pts = np.array(pts)
    return sum((pts[i + 1, 0] - pts[i, 0]) * (pts[i + 1, 1] + pts[i, 1]) / 2 for i in range(len(pts) - 1))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), nk=st.integers(1, 30), nu=st.integers(1, 30), levels=st.integers(2, 8))
def test_oscr_matches_brute_force_and_auroc_matches_sklearn(seed, nk, nu, levels):
    rng = np.random.default_rng(seed)
    sk, su = rng.integers(0, levels, nk) / levels, rng.integers(0, levels, nu) / levels  # many ties
    y = rng.integers(0, 3, nk)
    preds = np.where(rng.random(nk) < 0.7, y, (y + 1) % 3)
    assert metrics.oscr(sk, su, preds, y) == pytest.approx(_brute_oscr(sk, su, preds == y), abs=1e-9)
    assert metrics.oscr(sk, su, preds, y) <= np.mean(preds == y) + 1e-12
    expected = roc_auc_score(np.r_[np.ones(nk), np.zeros(nu)], np.r_[sk, su])
    assert metrics.auroc(sk, su) == pytest.approx(expected, abs=1e-12)
    assert metrics.oscr(sk, su, y, y) == pytest.approx(metrics.auroc(sk, su), abs=1e-12)


def test_oscr_extremes_and_reference_loop():
    y = np.array([0, 1, 2, 0])
    sk, su = np.array([5.0, 6.0, 7.0, 8.0]), np.array([1.0, 2.0, 3.0])
    assert metrics.oscr(sk, su, y, y) == pytest.approx(1.0)
    assert metrics.oscr(sk, su, (y + 1) % 3, y) == 0.0
    # ARPL's loop counts knowns from position j+1 but unknowns from j: by hand 1/3 + 1/3 + (1/3)(1 + 3/4)/2
    assert metrics.oscr(sk, su, y, y, reference=True) == pytest.approx(1 / 3 + 1 / 3 + 1.75 / 6, abs=1e-12)
    rng = np.random.default_rng(0)
    a, b = rng.random(200), rng.random(150) - 0.2
    yy = rng.integers(0, 3, 200)
    pp = np.where(rng.random(200) < 0.9, yy, (yy + 1) % 3)
    assert abs(metrics.oscr(a, b, pp, yy, reference=True) - metrics.oscr(a, b, pp, yy)) < 0.02


def test_metric_bad_input():
    with pytest.raises(ValueError, match="scores_known"):
        metrics.auroc([], [0.1])
    with pytest.raises(ValueError, match="scores_unknown"):
        metrics.auroc([0.2], [np.nan])
    with pytest.raises(ValueError, match="preds_known"):
        metrics.oscr([0.1, 0.2], [0.3], [0], [0, 1])


def test_scores_and_knn():
    z = torch.tensor([[1.0, 3.0, 2.0], [0.0, -1.0, 0.5]])
    torch.testing.assert_close(scoring.max_logit(z), torch.tensor([3.0, 0.5]))
    np.testing.assert_allclose(scoring.max_softmax(z.numpy()), torch.softmax(z, 1).max(1).values.numpy(), rtol=1e-6)
    np.testing.assert_allclose(scoring.energy(z.numpy()), torch.logsumexp(z, 1).numpy(), rtol=1e-6)
    train = np.array([[0.0, 0.0], [0.0, 0.1], [5.0, 5.0], [5.0, 5.1]])
    knn = scoring.KNNScorer(k=2, method="dist").fit(train, np.array([0, 0, 1, 1]))
    s, p = knn.score(np.array([[0.0, 0.05], [20.0, 20.0]]))
    assert list(p) == [0, 1] and s[0] == pytest.approx(np.exp(-0.05)) and s[1] < s[0]
    s_prob, _ = scoring.KNNScorer(k=4, method="prob").fit(train, [0, 0, 1, 1]).score([[0.0, 0.0]])
    assert s_prob[0] == 0.5
    with pytest.raises(ValueError, match="k"):
        scoring.KNNScorer(k=5).fit(train, [0, 0, 1, 1])
    with pytest.raises(RuntimeError, match="fit"):
        scoring.KNNScorer(k=1).score(train)


def test_digits_split_deterministic_distinct_and_consistent():
    known_sets = set()
    for i in range(5):
        a, b = data.digits_osr(i), data.digits_osr(i)
        np.testing.assert_array_equal(a["known_classes"], b["known_classes"])
        np.testing.assert_array_equal(a["known_classes"], np.sort(np.random.default_rng(i).permutation(10)[:6]))
        known_sets.add(tuple(a["known_classes"]))
        assert len(a["Xtr"]) + 0 <= 900 and len(a["Xte_known"]) + len(a["Xte_unknown"]) == 897
        assert set(np.unique(a["ytr"])) == set(range(6)) and a["Xtr"].max() <= 1.0
    assert len(known_sets) == 5
    task = data.digits_osr(0)
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    labels = {}
    for row, label in zip((X / 16.0).astype(np.float32), y):
        labels.setdefault(row.tobytes(), set()).add(int(label))
    for row in task["Xte_unknown"]:  # no known-class sample labelled unknown
        assert not labels[row.tobytes()] & set(task["known_classes"].tolist())
    for row, k in zip(task["Xte_known"], task["yte_known"]):
        assert int(task["known_classes"][k]) in labels[row.tobytes()]


def test_make_osr_split_and_blobs():
    known, unknown = data.make_osr_split(np.arange(10).repeat(3), 6, 2)
    assert len(known) == 6 and len(unknown) == 4 and not set(known) & set(unknown)
    with pytest.raises(ValueError, match="n_known"):
        data.make_osr_split(np.arange(10), 10, 0)
    blobs = data.make_blobs_osr(0)
    assert blobs["Xtr"].shape[1] == 32 and set(np.unique(blobs["ytr"])) == set(range(12))
    assert len(blobs["unknown_classes"]) == 8


def test_local_datasets_give_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="cifar10"):
        data.cifar_osr(0, root=tmp_path)
    with pytest.raises(FileNotFoundError, match="ImageFolder"):
        data.image_folder_osr("tinyimagenet", root=tmp_path)
