import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_perm_compress import moment_features, moments, monomial_exponents, tchakaloff_bound


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 5), k=st.integers(1, 6))
def test_monomial_exponents_count_order_and_uniqueness(m, k):
    e = monomial_exponents(m, k)
    assert e.shape == (math.comb(m + k, k), m) == (tchakaloff_bound(m, k), m)
    assert len({tuple(r) for r in e}) == e.shape[0]
    degrees = e.sum(axis=1)
    assert degrees[0] == 0 and (np.diff(degrees) >= 0).all() and degrees.max() == k


def test_features_equal_direct_products():
    rng = np.random.default_rng(3)
    W = rng.uniform(-2, 2, (7, 3))
    e = monomial_exponents(3, 4)
    F = moment_features(W, 4)
    direct = np.array([[np.prod([w[i] ** a[i] for i in range(3)]) for a in e] for w in W])
    np.testing.assert_allclose(F, direct, rtol=1e-13)
    assert (F[:, 0] == 1).all()


def test_moments_are_weighted_sums_of_features():
    rng = np.random.default_rng(4)
    W, c = rng.normal(size=(50, 2)), rng.uniform(0, 2, 50)
    np.testing.assert_allclose(moments(W, c, 3), c @ moment_features(W, 3), rtol=1e-13)
    assert moments(W, None, 3)[0] == 50


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_order_is_refused(bad):
    with pytest.raises(ValueError, match="k:"):
        monomial_exponents(2, bad)


def test_bad_dimension_and_points_are_refused():
    with pytest.raises(ValueError, match="m:"):
        tchakaloff_bound(0, 2)
    with pytest.raises(ValueError, match="NaN"):
        moments(np.array([[0.0, np.nan]]), None, 2)
    with pytest.raises(ValueError, match="c:"):
        moments(np.zeros((3, 2)), [1.0, -1.0, 1.0], 2)
    with pytest.raises(ValueError, match="c: expected shape"):
        moments(np.zeros((3, 2)), [1.0, 1.0], 2)
