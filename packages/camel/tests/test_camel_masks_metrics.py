"""The incomplete-view protocol and the clustering metrics."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_camel import apply_mask, ari, clustering_accuracy, evaluate, make_incomplete_mask, nmi, purity
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score


@settings(max_examples=20, deadline=None)
@given(n=st.integers(10, 200), m=st.integers(2, 5), rate=st.floats(0.0, 1.0), seed=st.integers(0, 1000))
def test_paired_mask_protocol(n, m, rate, seed):
    mask = make_incomplete_mask(n, m, rate, rng=seed)
    assert mask.shape == (n, m) and mask.dtype == bool
    assert mask.any(axis=1).all()
    assert (~mask.all(axis=1)).sum() == round(rate * n)
    np.testing.assert_array_equal(mask, make_incomplete_mask(n, m, rate, rng=seed))


def test_zero_rate_is_complete_and_per_view_keeps_every_sample():
    assert make_incomplete_mask(50, 3, 0.0, rng=0).all()
    mask = make_incomplete_mask(500, 3, 0.6, rng=1, protocol="per_view")
    assert mask.any(axis=1).all()
    assert np.all(1 - mask.mean(axis=0) <= 0.6 + 1e-12)


@pytest.mark.parametrize("args", [(10, 3, 1.5, 0, "paired"), (10, 3, 0.9, 0, "per_view"), (10, 1, 0.1, 0, "paired"),
                                  (10, 3, 0.1, 0, "random")])
def test_mask_rejects_bad_arguments(args):
    n, m, rate, seed, protocol = args
    with pytest.raises(ValueError):
        make_incomplete_mask(n, m, rate, rng=seed, protocol=protocol)


def test_apply_mask_sets_missing_rows_to_nan():
    Xs = [np.ones((4, 2)), np.ones((4, 3))]
    mask = np.array([[1, 1], [1, 0], [0, 1], [1, 1]], dtype=bool)
    out = apply_mask(Xs, mask)
    assert np.isnan(out[1][1]).all() and np.isnan(out[0][2]).all()
    assert np.isfinite(out[0][[0, 1, 3]]).all()


def test_accuracy_closed_form_and_identity():
    y = [0, 0, 1, 1, 2, 2]
    assert np.isclose(clustering_accuracy(y, [1, 1, 0, 0, 0, 2]), 5 / 6)
    assert clustering_accuracy(y, y) == 1.0
    assert np.isclose(purity(y, [1, 1, 0, 0, 0, 2]), 5 / 6)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_metrics_invariant_to_label_permutation_and_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    y, p = rng.integers(0, 4, 60), rng.integers(0, 4, 60)
    relabelled = rng.permutation(4)[p]
    assert evaluate(y, p) == pytest.approx(evaluate(y, relabelled))
    assert nmi(y, p) == pytest.approx(normalized_mutual_info_score(y, p))
    assert ari(y, p) == pytest.approx(adjusted_rand_score(y, p))


def test_metrics_reject_mismatched_lengths():
    with pytest.raises(ValueError, match="same non-zero length"):
        evaluate([0, 1, 1], [0, 1])
