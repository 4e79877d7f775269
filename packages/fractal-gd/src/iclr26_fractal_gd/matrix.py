"""Matrix factorisation ½‖UVᵀ − Y‖_F² (+ λ/2(‖U‖² + ‖V‖²)) with aligned ("orthogonal") initialisation.

With Y = P Σ Qᵀ and U₀ = P_r diag(α) Rᵀ, V₀ = Q_r diag(β) Rᵀ (R ∈ O(r)), GD stays aligned and every
pair (α_i, β_i) follows scalar GD with target σ_i, so η*_matrix = min_i η*(α_i, β_i; σ_i). This
aligned family is our reading of the paper's orthogonal initialisation (inferred, see the README).
"""
from __future__ import annotations

import numpy as np

from . import _checks
from .dynamics import GDResult
from .theory import critical_step_size


def _target_matrix(Y) -> np.ndarray:
    Y = _checks.real_array("Y", Y)
    if Y.ndim != 2:
        raise ValueError(f"Y: expected a 2-D matrix, got shape {Y.shape}")
    return Y


def random_orthogonal(r: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random (r, r) orthogonal matrix (QR of a Gaussian with the sign fix)."""
    r = _checks.positive_int("r", r)
    q, rr = np.linalg.qr(rng.standard_normal((r, r)))
    return q * np.sign(np.diag(rr))


def _mode_values(Y: np.ndarray, alpha, beta, rank):
    alpha = _checks.real_array("alpha", alpha)
    beta = _checks.real_array("beta", beta)
    if alpha.shape != beta.shape or alpha.ndim not in (1, 2):
        raise ValueError(f"alpha, beta: expected equal shapes (r,) or (batch, r), got {alpha.shape} and {beta.shape}")
    r = alpha.shape[-1] if rank is None else _checks.positive_int("rank", rank)
    if r != alpha.shape[-1] or r > min(Y.shape):
        raise ValueError(f"rank: expected len(alpha) = rank <= min(Y.shape) = {min(Y.shape)}, "
                         f"got len(alpha) = {alpha.shape[-1]}, rank = {rank}")
    return alpha, beta, r


def aligned_init(Y, alpha, beta, rank: int | None = None, rng: np.random.Generator | None = None,
                 rotation=None) -> tuple[np.ndarray, np.ndarray]:
    """U₀ = P_r diag(α) Rᵀ and V₀ = Q_r diag(β) Rᵀ from the SVD Y = P Σ Qᵀ.

    Args:
        Y: (n, n') target. alpha, beta: (r,) or (batch, r) mode amplitudes.
        rank: r (default: len(alpha)); at most min(n, n').
        rng: draws a Haar-random R when ``rotation`` is None (with neither, R = I).
        rotation: an (r, r) orthogonal R, or (batch, r, r).

    Returns:
        ``(U0, V0)`` of shapes (..., n, r) and (..., n', r).
    """
    Y = _target_matrix(Y)
    alpha, beta, r = _mode_values(Y, alpha, beta, rank)
    if rotation is None:
        rotation = np.eye(r) if rng is None else random_orthogonal(r, rng)
    R = _checks.real_array("rotation", rotation)
    if R.shape[-2:] != (r, r) or not np.allclose(R @ np.swapaxes(R, -1, -2), np.eye(r), atol=1e-10):
        raise ValueError(f"rotation: expected an orthogonal ({r}, {r}) matrix (or a batch), got shape {R.shape}")
    P, _, Qt = np.linalg.svd(Y)
    Rt = np.swapaxes(R, -1, -2)
    U0 = (P[:, :r] * alpha[..., None, :]) @ Rt
    V0 = (Qt[:r].T * beta[..., None, :]) @ Rt
    return U0, V0


def critical_step_size_aligned(Y, alpha, beta):
    """η*_matrix = min_i η*(α_i, β_i; σ_i) ≤ 1/σ_max for the aligned initialisation; float or (batch,) array.

    A zero singular value σ_i contributes 4/(α_i² + β_i²) (the y = 0 case).
    """
    Y = _target_matrix(Y)
    alpha, beta, r = _mode_values(Y, alpha, beta, None)
    sigma = np.linalg.svd(Y, compute_uv=False)[:r]
    per_mode = np.stack([np.asarray(critical_step_size(alpha[..., i], beta[..., i], sigma[i],
                                                       allow_zero_target=True)) for i in range(r)], axis=-1)
    out = per_mode.min(-1)
    return float(out) if out.ndim == 0 else out


def gd_matrix(U0, V0, Y, eta, lam: float = 0.0, steps: int = 1000, record: bool = False, tol: float = 1e-6,
              blowup: float = 1e6, early_stop: bool = False) -> GDResult:
    """GD on ½‖UVᵀ − Y‖_F² + λ/2(‖U‖² + ‖V‖²), batched over leading dimensions.

    U' = U − η((UVᵀ − Y)V + λU),  V' = V − η((UVᵀ − Y)ᵀU + λV).

    Args:
        U0: (..., n, r). V0: (..., n', r). Y: (n, n'). eta: a number or an array of the batch shape.
        tol: a run has converged when ‖∇L‖_F < tol. blowup: a run diverges when an entry exceeds it
            (it is then frozen at 0 and its step recorded).
        early_stop: stop once every run has converged or diverged (checked every 100 steps).

    Returns:
        ``GDResult`` with ``u = U``, ``v = V`` and flags of the batch shape; ``loss`` (steps + 1, *batch)
        when ``record``.
    """
    Y = _target_matrix(Y)
    U = _checks.real_array("U0", U0).copy()
    V = _checks.real_array("V0", V0).copy()
    if U.ndim < 2 or V.ndim < 2 or U.shape[-2] != Y.shape[0] or V.shape[-2] != Y.shape[1] \
            or U.shape[-1] != V.shape[-1] or U.shape[:-2] != V.shape[:-2]:
        raise ValueError(f"U0, V0: expected (..., {Y.shape[0]}, r) and (..., {Y.shape[1]}, r), "
                         f"got {U.shape} and {V.shape}")
    eta_b = np.asarray(_checks.step_size(eta))[..., None, None]
    lam = _checks.regulariser(lam)
    steps = _checks.positive_int("steps", steps, 0)
    batch = U.shape[:-2]
    div_step = np.full(batch, -1, dtype=np.int64)

    def residual_grads(U, V):
        Rm = U @ np.swapaxes(V, -1, -2) - Y
        return Rm, Rm @ V + lam * U, np.swapaxes(Rm, -1, -2) @ U + lam * V

    def loss_of(U, V, Rm):
        return 0.5 * (Rm**2).sum((-1, -2)) + 0.5 * lam * ((U**2).sum((-1, -2)) + (V**2).sum((-1, -2)))

    losses = []
    for t in range(1, steps + 1):
        Rm, gU, gV = residual_grads(U, V)
        if record:
            losses.append(loss_of(U, V, Rm))
        U, V = U - eta_b * gU, V - eta_b * gV
        gone = ~((np.abs(U) <= blowup).all((-1, -2)) & (np.abs(V) <= blowup).all((-1, -2)))
        if gone.any():
            div_step[gone & (div_step < 0)] = t
            U = np.where(gone[..., None, None], 0.0, U)
            V = np.where(gone[..., None, None], 0.0, V)
        if early_stop and t % 100 == 0:
            _, gU, gV = residual_grads(U, V)
            small = np.sqrt((gU**2).sum((-1, -2)) + (gV**2).sum((-1, -2))) < tol
            if np.all(small | (div_step >= 0)):
                steps = t
                break
    Rm, gU, gV = residual_grads(U, V)
    if record:
        losses.append(loss_of(U, V, Rm))
    diverged = div_step >= 0
    converged = (np.sqrt((gU**2).sum((-1, -2)) + (gV**2).sum((-1, -2))) < tol) & ~diverged
    return GDResult(U, V, converged, diverged, div_step, np.stack(losses) if record else None, None)


def mode_amplitudes(U, V, Y, rotation) -> tuple[np.ndarray, np.ndarray]:
    """(α, β) = (diag(P_rᵀ U R), diag(Q_rᵀ V R)), the per-mode coordinates of aligned iterates; shapes (..., r)."""
    Y = _target_matrix(Y)
    R = np.asarray(rotation)
    r = R.shape[-1]
    P, _, Qt = np.linalg.svd(Y)
    a = np.diagonal(P[:, :r].T @ U @ R, axis1=-2, axis2=-1)
    b = np.diagonal(Qt[:r] @ V @ R, axis1=-2, axis2=-1)
    return a, b
