import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_perm_compress import (
    caratheodory_reduce,
    caratheodory_step,
    moment_features,
    moments,
    reduce_block,
    tchakaloff_bound,
)
from iclr26_perm_compress.caratheodory import reduce_one


def test_each_step_removes_a_point_keeps_moments_and_signs():
    rng = np.random.default_rng(0)
    W = rng.uniform(-1, 1, (40, 2))
    A = moment_features(W, 3).T  # (10, 40)
    c = rng.uniform(0.5, 2, 40)
    live = 40
    while live > A.shape[0]:
        new = caratheodory_step(A[:, c > 0], c[c > 0])
        assert (new >= 0).all()
        assert (new > 0).sum() <= live - 1
        full = np.zeros_like(c)
        full[c > 0] = new
        np.testing.assert_allclose(A @ full, A @ c, rtol=1e-12, atol=1e-12 * np.abs(A @ c).max())
        c, live = full, int((full > 0).sum())
    assert live <= tchakaloff_bound(2, 3)


def test_block_elimination_agrees_with_reference_steps():
    rng = np.random.default_rng(1)
    A = moment_features(rng.uniform(-1, 1, (30, 2)), 2).T  # (6, 30)
    c = rng.uniform(0.1, 1, 30)
    fast = reduce_block(A, c)
    assert (fast > 0).sum() <= 6 and (fast >= 0).all()
    np.testing.assert_allclose(A @ fast, A @ c, rtol=1e-12)
    one = reduce_block(A, c, max_remove=1)
    assert (one > 0).sum() == 29


def test_full_column_rank_is_refused():
    with pytest.raises(ValueError, match="full column rank"):
        caratheodory_step(np.eye(3), np.ones(3))


def test_duplicates_merge_and_keep_mass():
    W = np.repeat(np.array([[0.0, 0.0], [1.0, 0.5], [-0.3, 0.2]]), 20, axis=0)
    c = caratheodory_reduce(W, None, 2)
    assert (c > 0).sum() <= 3
    np.testing.assert_allclose(moments(W, c, 2), moments(W, None, 2), rtol=1e-12)


def test_degenerate_points_on_a_line_still_reduce():
    t = np.linspace(-1, 1, 200)
    W = np.stack([t, 2 * t + 0.5], axis=1)  # rank(A) = k + 1 = 4 < N = 10
    c = caratheodory_reduce(W, None, 3)
    assert (c > 0).sum() <= tchakaloff_bound(2, 3) and (c >= 0).all()
    np.testing.assert_allclose(moments(W, c, 3), moments(W, None, 3), rtol=1e-10, atol=1e-10)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 3), k=st.integers(1, 3), extra=st.integers(1, 40))
def test_reduction_preserves_moments_on_random_sets(seed, m, k, extra):
    rng = np.random.default_rng(seed)
    n = tchakaloff_bound(m, k) + extra
    W, c0 = rng.normal(size=(n, m)), rng.uniform(0, 3, n)
    c = caratheodory_reduce(W, c0, k)
    assert (c >= 0).all() and (c > 0).sum() <= tchakaloff_bound(m, k)
    p0 = moments(W, c0, k)
    np.testing.assert_allclose(moments(W, c, k), p0, rtol=0, atol=1e-10 * np.abs(p0).max())


def test_bad_target_is_refused():
    with pytest.raises(ValueError, match="target"):
        caratheodory_reduce(np.zeros((5, 1)), None, 1, target=0)


@pytest.mark.parametrize("n_extra", [1, 5])
def test_qr_step_keeps_moments_like_the_svd_step(n_extra):
    rng = np.random.default_rng(11)
    A = moment_features(rng.uniform(-1, 1, (10 + n_extra, 2)), 3).T  # (10, 10 + n_extra)
    c = rng.uniform(0.5, 2, A.shape[1])
    new = reduce_one(A, c)
    assert (new >= 0).all() and (new == 0).sum() >= 1
    np.testing.assert_allclose(A @ new, A @ c, rtol=1e-12, atol=1e-12 * np.abs(A @ c).max())
    # on N + 1 points the null vector is unique: the QR step and the SVD step agree
    if n_extra == 1:
        np.testing.assert_allclose(new, caratheodory_step(A, c), atol=1e-10)
