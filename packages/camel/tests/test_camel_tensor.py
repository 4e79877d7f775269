"""The tensor toolbox against closed forms, brute force and independent computations."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_camel.tensor import (
    ldelta,
    ldelta_tensor_norm,
    prox_ldelta_scalar,
    prox_tensor,
    tensor_rank_profile,
    tnn,
    tprod,
    tsvd,
    ttranspose,
)

TAUS = (1e-3, 0.1, 1.0, 10.0)
DELTAS = (1e-3, 0.1, 1.0, 100.0)


def scalar_objective(x, s, tau, delta):
    return tau * (1 + delta) * x / (delta + x) + 0.5 * (x - s) ** 2


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("delta", DELTAS)
def test_cubic_and_fixed_point_agree(tau, delta):
    s = np.linspace(0.0, 10.0, 401)
    cubic = prox_ldelta_scalar(s, tau, delta, method="cubic")
    fixed = prox_ldelta_scalar(s, tau, delta, method="fixed_point")
    np.testing.assert_allclose(cubic, fixed, atol=1e-8)


@pytest.mark.parametrize("tau,delta", [(0.1, 0.1), (1.0, 1e-3), (10.0, 100.0), (1.0, 1.0)])
def test_prox_beats_grid_search(tau, delta):
    grid = np.linspace(0.0, 10.0, 100_001)
    for s in (0.05, 0.7, 1.5, 3.0, 9.0):
        x = prox_ldelta_scalar(np.array([s]), tau, delta)[0]
        best = scalar_objective(grid, s, tau, delta).min()
        assert scalar_objective(x, s, tau, delta) <= best + 1e-12


def test_large_delta_is_soft_thresholding():
    s = np.linspace(0.0, 10.0, 201)
    x = prox_ldelta_scalar(s, 0.7, 1e6)
    assert np.all(np.abs(x - np.maximum(s - 0.7, 0.0)) <= 1e-4 * (1 + s))


def test_small_delta_is_hard_thresholding():
    tau = 0.5
    s = np.linspace(0.0, 5.0, 501)
    s = s[np.abs(s - np.sqrt(2 * tau)) > 0.02]
    x = prox_ldelta_scalar(s, tau, 1e-6)
    np.testing.assert_allclose(x, np.where(s > np.sqrt(2 * tau), s, 0.0), atol=1e-4)


@settings(max_examples=25, deadline=None)
@given(tau=st.floats(1e-3, 10.0), delta=st.floats(1e-3, 100.0))
def test_prox_is_monotone_and_shrinks(tau, delta):
    s = np.linspace(0.0, 10.0, 300)
    x = prox_ldelta_scalar(s, tau, delta)
    assert np.all(np.diff(x) >= -1e-12)
    assert np.all((x >= 0) & (x <= s + 1e-12))


def test_frobenius_parseval_and_tsvd_reconstruction():
    rng = np.random.default_rng(0)
    for shape in [(7, 4, 5), (6, 9, 4), (5, 5, 1)]:
        A = rng.standard_normal(shape)
        Abar = np.fft.fft(A, axis=2)
        assert np.isclose(np.sum(A**2), sum(np.linalg.norm(Abar[:, :, k]) ** 2 for k in range(shape[2])) / shape[2])
        U, S, V = tsvd(A)
        np.testing.assert_allclose(tprod(tprod(U, S), ttranspose(V)), A, atol=1e-10)
        # U is t-orthogonal: U^T * U = identity tensor
        eye = np.zeros((U.shape[1], U.shape[1], shape[2]))
        eye[:, :, 0] = np.eye(U.shape[1])
        np.testing.assert_allclose(tprod(ttranspose(U), U), eye, atol=1e-10)


def test_tprod_matches_block_circulant_product():
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 2, 5))
    n3 = 5
    circ = np.block([[A[:, :, (i - j) % n3] for j in range(n3)] for i in range(n3)])
    unfold = np.concatenate([B[:, :, k] for k in range(n3)], axis=0)
    expected = (circ @ unfold).reshape(n3, 3, 2).transpose(1, 2, 0)
    np.testing.assert_allclose(tprod(A, B), expected, atol=1e-12)


def test_one_slice_norms_are_matrix_norms():
    rng = np.random.default_rng(2)
    M = rng.standard_normal((8, 5))
    sv = np.linalg.svd(M, compute_uv=False)
    assert np.isclose(tnn(M[:, :, None]), sv.sum())
    assert np.isclose(ldelta_tensor_norm(M[:, :, None], 0.3), ldelta(sv, 0.3).sum())


def test_ldelta_norm_of_stacked_orthonormal_matrix():
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((9, 4)))
    n3, delta = 6, 0.5
    T = np.repeat(Q[:, :, None], n3, axis=2)
    expected = 4 * ldelta(float(n3), delta) / n3
    assert np.isclose(ldelta_tensor_norm(T, delta), expected)
    assert tensor_rank_profile(T).tolist() == [4, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("norm", ["ldelta", "tnn"])
def test_tensor_prox_is_optimal_and_real(norm):
    rng = np.random.default_rng(4)
    Y = rng.standard_normal((10, 3, 5))
    mu, delta = 2.0, 0.5
    G = prox_tensor(Y, 1.0 / mu, delta, norm=norm)
    assert np.isrealobj(G)
    value = ldelta_tensor_norm if norm == "ldelta" else (lambda T, d: tnn(T))

    def objective(T):
        return value(T, delta) + mu / 2 * np.sum((T - Y) ** 2)

    best = objective(G)
    assert best <= objective(np.zeros_like(Y)) + 1e-12 and best <= objective(Y) + 1e-12
    for scale in (1e-3, 1e-2, 1e-1):
        for _ in range(33):
            assert best <= objective(G + scale * rng.standard_normal(Y.shape)) + 1e-12


def test_prox_tensor_reports_its_norm():
    rng = np.random.default_rng(5)
    Y = rng.standard_normal((6, 4, 4))
    G, value = prox_tensor(Y, 0.2, 0.1, return_norm=True)
    assert np.isclose(value, ldelta_tensor_norm(G, 0.1))


@pytest.mark.parametrize("bad", [dict(delta=0.0), dict(tau=-1.0), dict(method="newton")])
def test_scalar_prox_rejects_bad_arguments(bad):
    args = dict(s=np.ones(3), tau=1.0, delta=0.1, method="cubic") | bad
    with pytest.raises(ValueError):
        prox_ldelta_scalar(**args)


def test_tensor_functions_reject_non_tensors():
    with pytest.raises(ValueError, match="3-D"):
        tnn(np.ones((3, 3)))
    with pytest.raises(ValueError, match="norm"):
        prox_tensor(np.ones((2, 2, 2)), 1.0, norm="nuclear")
