"""CAMEL's sub-problems, constraints and end-to-end behaviour on synthetic data."""
import tracemalloc

import numpy as np
import pytest
from iclr26_camel import CAMEL, apply_mask, make_incomplete_mask, make_incomplete_multiview_blobs
from iclr26_camel.admm import (
    Penalties,
    augmented_lagrangian,
    degree_weights,
    laplacian_term,
    update_anchors,
    update_coefficients,
    update_embedding,
    update_error,
    update_tensor,
)
from iclr26_camel.metrics import clustering_accuracy
from iclr26_camel.model import _initial_state
from iclr26_camel.views import check_views, preprocess_views


@pytest.fixture(scope="module")
def blobs():
    Xs, y = make_incomplete_multiview_blobs(n=300, n_clusters=5, n_views=3, random_state=0)
    mask = make_incomplete_mask(300, 3, 0.5, rng=0)
    return apply_mask(Xs, mask), y, mask


def _state(blobs, degree="constant", mu=0.5):
    Xs, _, mask = blobs
    views, mask = check_views(Xs, mask)
    views = preprocess_views(views, mask, "minmax_l2")
    p = Penalties(1e-3, 1.0, 100.0, 0.1, degree=degree)
    state = _initial_state(views, mask, 5, 15, 0, p, mu)
    rng = np.random.default_rng(1)
    for v in range(3):  # non-trivial multipliers and error so every term of the Lagrangian matters
        state.Y[v] = 0.01 * rng.standard_normal(state.Y[v].shape) * state.observed[v]
        state.E[v] = 0.01 * rng.standard_normal(state.E[v].shape) * state.observed[v]
    state.W = 0.01 * rng.standard_normal(state.W.shape)
    return state, p


def test_constant_degree_trace_identity():
    rng = np.random.default_rng(0)
    n, t, c, beta = 200, 12, 4, 50.0
    Z = np.abs(rng.standard_normal((t, n)))
    H, _ = np.linalg.qr(rng.standard_normal((n, c)))
    dense = np.trace(H.T @ (np.eye(n) - Z.T @ Z / beta) @ H)
    assert abs(laplacian_term(Z, H, degree_weights(Z, "constant", beta)) - dense) <= 1e-10
    d = Z.T @ Z.sum(axis=1)
    L = np.eye(n) - np.diag(d**-0.5) @ Z.T @ Z @ np.diag(d**-0.5)
    assert abs(laplacian_term(Z, H, degree_weights(Z, "normalized", beta)) - np.trace(H.T @ L @ H)) <= 1e-10


@pytest.mark.parametrize("degree", ["constant", "normalized"])
@pytest.mark.parametrize("step", ["A", "Z", "E", "H"])
def test_each_step_does_not_increase_the_lagrangian(blobs, step, degree):
    state, p = _state(blobs, degree)
    update = {"A": lambda v: update_anchors(state, v), "Z": lambda v: update_coefficients(state, v, p),
              "E": lambda v: update_error(state, v, p), "H": lambda v: update_embedding(state, v, p)}[step]
    for v in range(3):
        before = augmented_lagrangian(state, p)
        update(v)
        after = augmented_lagrangian(state, p)
        assert after <= before + 1e-9 * abs(before)


def test_tensor_step_does_not_increase_the_lagrangian(blobs):
    state, p = _state(blobs)
    before = augmented_lagrangian(state, p)
    update_tensor(state, p)
    assert augmented_lagrangian(state, p) <= before + 1e-9 * abs(before)


def test_anchor_step_is_the_procrustes_optimum(blobs):
    state, p = _state(blobs)
    v = 1
    B = (state.X[v] - state.E[v] + state.Y[v] / state.mu) @ state.Z[v].T
    update_anchors(state, v)
    A = state.A[v]
    u, _, vh = np.linalg.svd(B, full_matrices=False)
    np.testing.assert_allclose(A, u @ vh, atol=1e-10)
    rng = np.random.default_rng(0)
    for _ in range(100):
        Q, _ = np.linalg.qr(rng.standard_normal(A.shape))
        assert np.trace(Q.T @ B) <= np.trace(A.T @ B) + 1e-10


def test_generalized_power_iteration_is_monotone(blobs):
    state, p = _state(blobs)
    v = 0

    def objective(H):
        Z, w = state.Z[v], state.w[v]
        ZH = (Z * w) @ H
        return p.lambda2 * np.sum(ZH**2) + np.sum(H * (state.mu * state.G[:, v, :] - state.W[:, v, :]))

    values = [objective(state.H[v])]
    for _ in range(20):
        update_embedding(state, v, p, steps=1)
        values.append(objective(state.H[v]))
    assert np.all(np.diff(values) >= -1e-10)


@pytest.fixture(scope="module")
def fitted(blobs):
    Xs, y, _ = blobs
    return CAMEL(5, random_state=0).fit(Xs), y


def test_constraints_hold_after_fit(fitted, blobs):
    model, _ = fitted
    _, _, mask = blobs
    for v, (A, H, Z) in enumerate(zip(model.anchors_, model.view_embeddings_, model.coefficients_)):
        assert np.linalg.norm(A.T @ A - np.eye(A.shape[1])) <= 1e-8
        assert np.linalg.norm(H.T @ H - np.eye(H.shape[1])) <= 1e-8
        assert Z.min() >= 0
        assert np.all(Z[:, ~mask[:, v]] == 0)
    assert model.converged_ or max(model.history_["residual_x"][-1], model.history_["residual_h"][-1]) <= 1e-4
    assert np.all(np.isfinite(model.history_["objective"]))


def test_recovers_separated_clusters_and_connectivity_helps(fitted, blobs):
    model, y = fitted
    Xs, _, _ = blobs
    acc = clustering_accuracy(y, model.labels_)
    assert acc >= 0.95
    without = clustering_accuracy(y, CAMEL(5, lambda2=0.0, random_state=0).fit_predict(Xs))
    assert without < acc


def test_same_seed_same_labels_and_view_order_invariance(fitted, blobs):
    model, y = fitted
    Xs, _, _ = blobs
    again = CAMEL(5, random_state=0).fit(Xs)
    np.testing.assert_array_equal(again.labels_, model.labels_)
    permuted = CAMEL(5, random_state=0).fit_predict([Xs[2], Xs[0], Xs[1]])
    assert abs(clustering_accuracy(y, permuted) - clustering_accuracy(y, model.labels_)) <= 0.02


@pytest.mark.parametrize("layout,norm", [("n_c_m", "ldelta"), ("n_m_c", "tnn")])
def test_layout_and_norm_variants_run_and_keep_constraints(blobs, layout, norm):
    Xs, y, _ = blobs
    model = CAMEL(5, tensor_layout=layout, tensor_norm=norm, max_iter=30, random_state=0).fit(Xs)
    assert all(np.linalg.norm(H.T @ H - np.eye(5)) <= 1e-8 for H in model.view_embeddings_)
    assert clustering_accuracy(y, model.labels_) >= 0.9


def test_views_smaller_than_anchor_count_use_fewer_anchors():
    Xs, _ = make_incomplete_multiview_blobs(n=200, n_clusters=5, n_views=2, dims=(30, 4), random_state=0)
    small = apply_mask(Xs, make_incomplete_mask(200, 2, 0.3, rng=0))
    model = CAMEL(5, n_anchors=15, max_iter=5, random_state=0).fit(small)
    assert model.n_anchors_ == [15, 4]
    assert model.anchors_[1].shape == (4, 4)
    assert np.linalg.norm(model.anchors_[1].T @ model.anchors_[1] - np.eye(4)) <= 1e-8


def test_no_n_by_n_allocation():
    n = 3000
    Xs, _ = make_incomplete_multiview_blobs(n=n, n_clusters=5, n_views=3, dims=(20, 20, 20), random_state=0)
    masked = apply_mask(Xs, make_incomplete_mask(n, 3, 0.3, rng=0))
    tracemalloc.start()
    try:
        CAMEL(5, max_iter=3, n_init_kmeans=1, random_state=0).fit(masked)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * n * 8 / 2  # a single float64 n x n array would take n^2 * 8 bytes
