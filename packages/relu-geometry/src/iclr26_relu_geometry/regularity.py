"""The data-dependent weight ``g``, the weighted path norm and the stability bound (all inferred, see README).

``g̃(u, t) = P(uᵀX > t)² · E[uᵀX − t | uᵀX > t] · sqrt(1 + ‖E[X | uᵀX > t]‖²)`` and
``g(u, t) = min{g̃(u, t), g̃(−u, −t)}``, with X the empirical distribution of the data. A neuron whose half-space
``{x : uᵀx > t}`` holds little, thin data has a small ``g``: it is almost free under the BEoS constraint.
"""
from __future__ import annotations

import numpy as np
import torch

from ._checks import as_rng, matrix, positive_int, real
from .model import TwoLayerReLU

_CHUNK = 2_000_000  # entries of the (n, m) projection matrix handled at once


def _directions(u, d: int) -> np.ndarray:
    U = matrix("u", np.atleast_2d(u.detach().cpu().numpy() if isinstance(u, torch.Tensor) else u), d)
    norms = np.linalg.norm(U, axis=1)
    if np.any(norms == 0):
        raise ValueError("u: expected non-zero directions, got a zero row")
    return U / norms[:, None]


def weight_g_tilde(u, t, X) -> np.ndarray:
    """Empirical ``g̃(u, t)`` for directions ``u`` ``(m, d)`` (or ``(d,)``; normalised here) and thresholds ``t``.

    Args:
        u: ``(m, d)`` or ``(d,)`` directions.
        t: ``(m,)`` thresholds or a scalar (broadcast).
        X: ``(n, d)`` data.

    Returns:
        ``(m,)`` float64; 0 for an empty cap (no point with ``uᵀx > t``).
    """
    X = matrix("X", X)
    U = _directions(u, X.shape[1])
    T = np.broadcast_to(np.asarray(t, dtype=np.float64).reshape(-1), (U.shape[0],)) if np.ndim(t) == 0 \
        else np.asarray(t, dtype=np.float64).reshape(-1)
    if T.shape[0] != U.shape[0]:
        raise ValueError(f"t: expected {U.shape[0]} thresholds (one per direction), got {T.shape[0]}")
    if not np.all(np.isfinite(T)):
        raise ValueError("t: expected finite thresholds, got NaN/inf")
    n = X.shape[0]
    out = np.empty(U.shape[0])
    step = max(1, _CHUNK // n)
    for lo in range(0, U.shape[0], step):
        Uc, Tc = U[lo:lo + step], T[lo:lo + step]
        excess = X @ Uc.T - Tc  # (n, c)
        mask = excess > 0
        count = mask.sum(axis=0)
        safe = np.maximum(count, 1)
        mean_excess = np.where(mask, excess, 0.0).sum(axis=0) / safe
        mean_x = (mask.T.astype(np.float64) @ X) / safe[:, None]
        value = (count / n) ** 2 * mean_excess * np.sqrt(1.0 + np.sum(mean_x**2, axis=1))
        out[lo:lo + step] = np.where(count > 0, value, 0.0)
    return out


def weight_g(u, t, X) -> np.ndarray:
    """Empirical ``g(u, t) = min{g̃(u, t), g̃(−u, −t)}``, vectorised over ``(u, t)``; ``(m,)``."""
    X = matrix("X", X)
    U = _directions(u, X.shape[1])
    T = np.asarray(t, dtype=np.float64)
    return np.minimum(weight_g_tilde(U, T, X), weight_g_tilde(-U, -T, X))


def _neuron_parameters(model: TwoLayerReLU) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not isinstance(model, TwoLayerReLU):
        raise TypeError(f"model: expected a TwoLayerReLU, got {type(model).__name__}")
    with torch.no_grad():
        return tuple(p.detach().cpu().double().numpy() for p in (model.W, model.b, model.v))


def weighted_path_norm(model: TwoLayerReLU, X) -> float:
    """``‖θ‖_{path,g} = Σ_k |v_k| ‖w_k‖ g(w_k/‖w_k‖, b_k/‖w_k‖)`` with g of the data ``X`` ``(n, d)``.

    Neuron k is active where ``w_kᵀx > b_k``, i.e. on the cap ``uᵀx > t`` with ``u = w_k/‖w_k‖``, ``t = b_k/‖w_k‖``.
    Invariant under ``(w_k, b_k, v_k) → (c w_k, c b_k, v_k/c)``, c > 0. Neurons with ``w_k = 0`` contribute 0.
    """
    W, b, v = _neuron_parameters(model)
    X = matrix("X", X, W.shape[1])
    norms = np.linalg.norm(W, axis=1)
    alive = norms > 0
    g = weight_g(W[alive], b[alive] / norms[alive], X)
    return float(np.sum(np.abs(v[alive]) * norms[alive] * g))


def beos_bound(eta: float, train_loss: float, R: float, X=None) -> float:
    """The inferred BEoS regularity bound ``‖θ‖_{path,g} ≤ 1/η − 1/2 + (R + 1)·sqrt(2 L(θ))``.

    Reconstructed from the predecessor papers (Mulayoff et al. 2021; Qiao et al. 2024; Liang et al. 2025);
    consistent with the ``(1/η − 1/2 + 4M)`` factor of the reported mixture bound. ``train_loss`` is L with the ½.
    When the data ``X`` ``(n, d)`` is passed, ``‖x‖ <= R`` is checked for every row.

    Raises:
        ValueError: ``eta <= 0``, ``train_loss < 0``, ``R < 0``, or a row of ``X`` outside the ball of radius R.
    """
    eta = real("eta", eta, positive=True)
    train_loss = real("train_loss", train_loss, nonnegative=True)
    R = real("R", R, nonnegative=True) if X is None else check_radius(X, R)
    return float(1.0 / eta - 0.5 + (R + 1.0) * np.sqrt(2.0 * train_loss))


def check_radius(X, R: float) -> float:
    """Returns ``R`` after checking ``‖x‖ <= R`` for every row of ``X``; raises ``ValueError`` otherwise."""
    X = matrix("X", X)
    R = real("R", R, nonnegative=True)
    largest = float(np.linalg.norm(X, axis=1).max())
    if largest > R * (1 + 1e-6):
        raise ValueError(f"R: expected every ‖x‖ <= R = {R}, got max ‖x‖ = {largest:.6g}")
    return R


DEFAULT_P_GRID = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def shatter_curve(X, p_grid=DEFAULT_P_GRID, n_dirs: int = 500, rng=None) -> dict:
    """The cost of a neuron that isolates a cap of mass p: median over random u of ``g̃(u, t_p(u))``.

    ``t_p(u)`` is the empirical (1 − p) quantile of ``uᵀX``, so the cap ``uᵀx > t_p(u)`` holds a fraction ≈ p.
    Data that shatters easily (a sphere) has a small cost at small p.

    Returns:
        ``{"p": [...], "median_g": [...], "q10_g": [...], "q90_g": [...]}``.
    """
    X = matrix("X", X)
    n_dirs = positive_int("n_dirs", n_dirs)
    p = np.asarray(p_grid, dtype=np.float64)
    if p.ndim != 1 or np.any((p <= 0) | (p >= 1)):
        raise ValueError(f"p_grid: expected masses in (0, 1), got {p_grid}")
    G = as_rng(rng).standard_normal((n_dirs, X.shape[1]))
    U = G / np.linalg.norm(G, axis=1, keepdims=True)
    proj = X @ U.T
    out = {"p": p.tolist(), "median_g": [], "q10_g": [], "q90_g": []}
    for mass in p:
        t = np.quantile(proj, 1.0 - mass, axis=0)
        g = weight_g_tilde(U, t, X)
        out["median_g"].append(float(np.median(g)))
        out["q10_g"].append(float(np.quantile(g, 0.1)))
        out["q90_g"].append(float(np.quantile(g, 0.9)))
    return out
