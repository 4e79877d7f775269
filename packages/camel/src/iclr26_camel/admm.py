"""CAMEL's ADMM: the state, the sub-problem updates and the augmented Lagrangian.

Notation (spec and paper): view ``v`` has data ``X^v`` ``(d_v, n)`` (columns = samples; missing
columns are 0), anchors ``A^v`` ``(d_v, t_v)`` with ``A^T A = I``, coefficients ``Z^v >= 0``
``(t_v, n)``, error ``E^v`` ``(d_v, n)``, multiplier ``Y^v`` ``(d_v, n)`` and embedding ``H^v``
``(n, c)`` with ``H^T H = I``. The embeddings form the tensor ``𝓗 = Φ(H^1..H^m)``, split as
``𝓗 = 𝓖`` with multiplier ``𝓦``. One penalty ``mu`` serves both constraints.

The graph term uses the degree weights ``w`` ``(n,)``: the Laplacian term of view ``v`` is
``Tr(H^T (I - diag(w) Z^T Z diag(w)) H) = c - ||Z diag(w) H||_F^2``. The paper's constant degree
``D = beta I`` is ``w = 1/sqrt(beta)``; the ``"normalized"`` ablation uses ``w_i = d_i^{-1/2}`` with
the true degree ``d = Z^T (Z 1)`` (computed in O(t n)). The n x n matrix ``Z^T Z`` is never formed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .tensor import ldelta_tensor_norm, prox_tensor, tnn

LAYOUTS = ("n_m_c", "n_c_m")


@dataclass(frozen=True)
class Penalties:
    """Weights of the objective: ``lambda1`` (error), ``lambda2`` (graph), ``beta`` (constant degree),
    ``delta`` (l_delta), the degree mode, the tensor norm and the tensor layout."""

    lambda1: float
    lambda2: float
    beta: float
    delta: float
    degree: str = "constant"
    tensor_norm: str = "ldelta"
    tensor_layout: str = "n_m_c"


@dataclass
class State:
    """Every ADMM variable; lists are indexed by view."""

    X: list[np.ndarray]
    observed: list[np.ndarray]
    A: list[np.ndarray]
    Z: list[np.ndarray]
    E: list[np.ndarray]
    Y: list[np.ndarray]
    H: list[np.ndarray]
    G: np.ndarray
    W: np.ndarray
    mu: float
    w: list[np.ndarray] = field(default_factory=list)

    def copy(self) -> State:
        """A deep copy (for tests of monotone steps)."""
        dup = [list(map(np.copy, getattr(self, k))) for k in ("X", "observed", "A", "Z", "E", "Y", "H", "w")]
        return State(*dup[:7], G=self.G.copy(), W=self.W.copy(), mu=self.mu, w=dup[7])


def stack_embeddings(Hs: list[np.ndarray], layout: str = "n_m_c") -> np.ndarray:
    """``Φ(H^1..H^m)``: ``(n, m, c)`` with lateral slices ``H^v`` (``"n_m_c"``) or ``(n, c, m)`` with
    frontal slices ``H^v`` (``"n_c_m"``)."""
    if layout not in LAYOUTS:
        raise ValueError(f"tensor_layout: expected one of {LAYOUTS}, got {layout!r}")
    return np.stack(Hs, axis=1 if layout == "n_m_c" else 2)


def view_slice(T: np.ndarray, v: int, layout: str) -> np.ndarray:
    """The ``(n, c)`` part of a tensor that belongs to view ``v``."""
    return T[:, v, :] if layout == "n_m_c" else T[:, :, v]


def degree_weights(Z: np.ndarray, degree: str, beta: float) -> np.ndarray:
    """Degree weights ``w`` ``(n,)``: ``1/sqrt(beta)`` (constant) or ``d^{-1/2}``, ``d = Z^T (Z 1)`` (0 where d = 0)."""
    n = Z.shape[1]
    if degree == "constant":
        return np.full(n, 1.0 / np.sqrt(beta))
    if degree == "normalized":
        d = Z.T @ Z.sum(axis=1)
        return np.divide(1.0, np.sqrt(np.maximum(d, 0.0)), out=np.zeros(n), where=d > 0)
    raise ValueError(f"degree: expected 'constant' or 'normalized', got {degree!r}")


def laplacian_term(Z: np.ndarray, H: np.ndarray, w: np.ndarray) -> float:
    """``Tr(H^T L H) = c - ||Z diag(w) H||_F^2`` (valid because ``H^T H = I``)."""
    ZH = (Z * w) @ H
    return float(H.shape[1] - np.sum(ZH * ZH))


def _polar(M: np.ndarray) -> np.ndarray:
    """``U V^T`` of the thin SVD of ``M``: the orthonormal matrix closest to ``M``."""
    u, _, vh = np.linalg.svd(M, full_matrices=False)
    return u @ vh


def _target(state: State, v: int) -> np.ndarray:
    """``X^v - E^v + Y^v / mu`` ``(d_v, n)`` (0 in missing columns)."""
    return state.X[v] - state.E[v] + state.Y[v] / state.mu


def update_anchors(state: State, v: int) -> None:
    """A-step (orthogonal Procrustes): ``A = U V^T`` from the SVD of ``(X - E + Y/mu) Z^T``."""
    state.A[v] = _polar(_target(state, v) @ state.Z[v].T)


def update_coefficients(state: State, v: int, p: Penalties) -> None:
    """Z-step (majorize-minimize): ``Z = max(0, A^T(X - E + Y/mu) + (2 lambda2 / mu) Z_old diag(w) H H^T diag(w))``.

    The concave term ``-lambda2 ||Z diag(w) H||^2`` is linearised at ``Z_old``; missing columns are set to 0.
    """
    Z_old, H, w = state.Z[v], state.H[v], state.w[v]
    C = state.A[v].T @ _target(state, v)
    if p.lambda2 > 0:
        C += (2.0 * p.lambda2 / state.mu) * (((Z_old * w) @ H) @ (H * w[:, None]).T)
    Z = np.maximum(C, 0.0)
    Z[:, ~state.observed[v]] = 0.0
    state.Z[v] = Z


def update_error(state: State, v: int, p: Penalties) -> None:
    """E-step: ``E = (mu (X - A Z) + Y) / (2 lambda1 + mu)`` on observed columns, 0 elsewhere."""
    E = (state.mu * (state.X[v] - state.A[v] @ state.Z[v]) + state.Y[v]) / (2.0 * p.lambda1 + state.mu)
    E[:, ~state.observed[v]] = 0.0
    state.E[v] = E


def update_embedding(state: State, v: int, p: Penalties, steps: int = 1) -> None:
    """H-step (generalized power iteration on the Stiefel manifold).

    Maximises ``lambda2 ||Z diag(w) H||^2 + mu Tr(H^T (G_v - W_v / mu))`` by ``steps`` iterations of
    ``H <- polar(2 lambda2 diag(w) Z^T (Z diag(w) H) + mu G_v - W_v)``; each step does not decrease it.
    """
    Z, w = state.Z[v], state.w[v]
    pull = state.mu * view_slice(state.G, v, p.tensor_layout) - view_slice(state.W, v, p.tensor_layout)
    H = state.H[v]
    for _ in range(steps):
        P = pull.copy()
        if p.lambda2 > 0:
            P += 2.0 * p.lambda2 * w[:, None] * (Z.T @ ((Z * w) @ H))
        H = _polar(P)
    state.H[v] = H


def update_tensor(state: State, p: Penalties) -> float:
    """G-step: ``𝓖 = prox_{||.||/mu}(𝓗 + 𝓦/mu)`` by t-SVD shrinkage; returns ``||𝓖||``."""
    T = stack_embeddings(state.H, p.tensor_layout)
    state.G, norm = prox_tensor(T + state.W / state.mu, 1.0 / state.mu, p.delta, norm=p.tensor_norm,
                                return_norm=True)
    return norm


def reconstruction_residual(state: State, v: int) -> np.ndarray:
    """``X - A Z - E`` on observed columns (0 elsewhere), ``(d_v, n)``."""
    R = state.X[v] - state.A[v] @ state.Z[v] - state.E[v]
    R[:, ~state.observed[v]] = 0.0
    return R


def tensor_norm_value(T: np.ndarray, p: Penalties) -> float:
    """``||T||_{l_delta}`` or ``tnn(T)`` according to ``p.tensor_norm``."""
    return ldelta_tensor_norm(T, p.delta) if p.tensor_norm == "ldelta" else tnn(T)


def objective_terms(state: State, p: Penalties) -> dict[str, float]:
    """The paper's objective at ``𝓗``: tensor norm, ``lambda1 sum ||E||^2``, ``lambda2 sum Tr(H^T L H)``, total."""
    tensor = tensor_norm_value(stack_embeddings(state.H, p.tensor_layout), p)
    error = p.lambda1 * sum(float(np.sum(E * E)) for E in state.E)
    graph = p.lambda2 * sum(laplacian_term(Z, H, w) for Z, H, w in zip(state.Z, state.H, state.w))
    return {"tensor": tensor, "error": error, "graph": graph, "objective": tensor + error + graph}


def augmented_lagrangian(state: State, p: Penalties) -> float:
    """``ℒ = ||𝓖|| + lambda1 sum||E||^2 + lambda2 sum(c - ||Z diag(w) H||^2)
    + sum[<Y, R> + mu/2 ||R||^2] + <𝓦, 𝓗 - 𝓖> + mu/2 ||𝓗 - 𝓖||^2`` with ``R = X - A Z - E`` (observed)."""
    value = tensor_norm_value(state.G, p)
    for v in range(len(state.X)):
        R = reconstruction_residual(state, v)
        value += p.lambda1 * float(np.sum(state.E[v] ** 2))
        value += p.lambda2 * laplacian_term(state.Z[v], state.H[v], state.w[v])
        value += float(np.sum(state.Y[v] * R)) + 0.5 * state.mu * float(np.sum(R * R))
    D = stack_embeddings(state.H, p.tensor_layout) - state.G
    return value + float(np.sum(state.W * D)) + 0.5 * state.mu * float(np.sum(D * D))


def run_admm(state: State, p: Penalties, *, mu_max: float, eta: float, max_iter: int, tol: float,
             gpi_steps: int = 1, callback=None) -> tuple[int, bool, dict[str, list[float]]]:
    """Runs the outer ADMM loop on ``state`` (in place).

    Per iteration and view: degree weights, A, Z, E, H; then 𝓖; then the multipliers and
    ``mu <- min(eta mu, mu_max)``. Stops when both primal residuals (max-abs) are below ``tol``.

    Returns:
        ``(n_iter, converged, history)``; ``history`` holds per-iteration lists: objective terms,
        ``residual_x``, ``residual_h``, ``mu`` and seconds per sub-step (``time_degree``, ``time_A``,
        ``time_Z``, ``time_E``, ``time_H``, ``time_G``, ``time_multipliers``, ``time_iteration``) and the
        process CPU seconds per iteration (``cpu_time_iteration``, robust to other jobs on a shared machine).
    """
    m = len(state.X)
    keys = ("tensor", "error", "graph", "objective", "residual_x", "residual_h", "mu", "time_degree", "time_A",
            "time_Z", "time_E", "time_H", "time_G", "time_multipliers", "time_iteration", "cpu_time_iteration")
    history: dict[str, list[float]] = {k: [] for k in keys}
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        clock = dict.fromkeys(("degree", "A", "Z", "E", "H", "G", "multipliers"), 0.0)
        start, cpu_start = time.perf_counter(), time.process_time()
        for v in range(m):
            t0 = time.perf_counter()
            state.w[v] = degree_weights(state.Z[v], p.degree, p.beta)
            t1 = time.perf_counter()
            update_anchors(state, v)
            t2 = time.perf_counter()
            update_coefficients(state, v, p)
            t3 = time.perf_counter()
            update_error(state, v, p)
            t4 = time.perf_counter()
            update_embedding(state, v, p, gpi_steps)
            t5 = time.perf_counter()
            for key, (a, b) in zip(("degree", "A", "Z", "E", "H"), ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5))):
                clock[key] += b - a
        t0 = time.perf_counter()
        update_tensor(state, p)
        t1 = time.perf_counter()
        res_x = 0.0
        for v in range(m):
            R = reconstruction_residual(state, v)
            state.Y[v] += state.mu * R
            res_x = max(res_x, float(np.abs(R).max(initial=0.0)))
        D = stack_embeddings(state.H, p.tensor_layout) - state.G
        state.W += state.mu * D
        res_h = float(np.abs(D).max(initial=0.0))
        t2, cpu_end = time.perf_counter(), time.process_time()
        clock["G"], clock["multipliers"] = t1 - t0, t2 - t1
        history["mu"].append(state.mu)
        state.mu = min(eta * state.mu, mu_max)
        for key, value in objective_terms(state, p).items():
            history[key].append(value)
        history["residual_x"].append(res_x)
        history["residual_h"].append(res_h)
        for key, value in clock.items():
            history[f"time_{key}"].append(value)
        history["time_iteration"].append(t2 - start)
        history["cpu_time_iteration"].append(cpu_end - cpu_start)
        if callback is not None:
            callback(it, history)
        if max(res_x, res_h) < tol:
            converged = True
            break
    return it, converged, history
