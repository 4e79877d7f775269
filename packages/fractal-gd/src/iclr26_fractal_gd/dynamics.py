"""Plain vectorised GD on the scalar and scalar-vector factorisation losses.

u' = u − η (r v + λ u),  v' = v − η (r u + λ v),  r = uᵀv − y.

Every entry (or every row, for vectors) is an independent run. A run whose iterate leaves
``|·| ≤ blowup`` is frozen at 0 (where the gradient vanishes when λ = 0 and stays 0 when λ > 0),
its divergence step recorded: inf/NaN never appear and never slow the loop down.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _checks

RESIDUAL_TOL = 1e-6  # λ = 0: converged when |uᵀv − y| < RESIDUAL_TOL
NEAR_MINIMISER = 1e-3  # λ > 0: converged when within this of a minimiser (and the gradient is below tol)


@dataclass
class GDResult:
    """Outcome of a batch of GD runs.

    Attributes:
        u, v: final iterates, same shapes as the initialisations (diverged runs hold 0).
        converged: bool, shape = batch shape (``u.shape`` for scalars, ``u.shape[:-1]`` for vectors,
            ``U.shape[:-2]`` for matrices).
        diverged: bool, batch shape: the run left the ``blowup`` box.
        steps_to_diverge: int, batch shape; the step at which it left, −1 if it never did.
        loss: (steps + 1, *batch) array of losses when ``record``, else None.
        trajectory: ``(u_history, v_history)``, each (steps + 1, *u.shape), when ``record``, else None.
    """

    u: np.ndarray
    v: np.ndarray
    converged: np.ndarray
    diverged: np.ndarray
    steps_to_diverge: np.ndarray
    loss: np.ndarray | None = None
    trajectory: tuple[np.ndarray, np.ndarray] | None = None


def default_steps(eta, lam: float) -> int:
    """The default number of steps: max(200, 40/η) for λ > 0 and 3000 for λ = 0."""
    if lam > 0:
        return int(max(200, np.ceil(40.0 / float(np.min(eta)))))
    return 3000


def converged_scalar(u: np.ndarray, v: np.ndarray, y: float, lam: float, tol: float) -> np.ndarray:
    """The convergence test of an iterate (elementwise, numpy or torch arrays).

    λ = 0: |uv − y| < 1e-6. λ > 0: ‖∇L_λ‖ < tol and within 1e-3 of a minimiser ±(m, sign(y) m).
    """
    r = u * v - y
    if lam == 0:
        return abs(r) < RESIDUAL_TOL
    s = 1.0 if y > 0 else -1.0
    m = (abs(y) - lam) ** 0.5
    grad2 = (r * v + lam * u) ** 2 + (r * u + lam * v) ** 2
    near = abs(u - s * v) + abs(abs(u) - m) + abs(abs(v) - m) < NEAR_MINIMISER
    return (grad2 < tol * tol) & near


def _run(u, v, y, eta, lam, steps, blowup, record, inner):
    """The shared GD loop; ``inner(u, v)`` returns uᵀv with a trailing axis of length 1 (vectors) or uv."""
    decay = 1.0 - eta * lam
    batch = inner(u, v).shape
    div_step = np.full(batch, -1, dtype=np.int64)
    hist_u, hist_v = ([u.copy()], [v.copy()]) if record else (None, None)
    for t in range(1, steps + 1):
        r = inner(u, v) - y
        u, v = decay * u - eta * r * v, decay * v - eta * r * u
        gone = ~((abs(u) <= blowup) & (abs(v) <= blowup))
        if gone.ndim > len(batch):
            gone = gone.any(-1, keepdims=True)
        if gone.any():
            div_step[gone & (div_step < 0)] = t
            u = np.where(gone, 0.0, u)
            v = np.where(gone, 0.0, v)
        if record:
            hist_u.append(u)
            hist_v.append(v)
    trajectory = (np.stack(hist_u), np.stack(hist_v)) if record else None
    return u, v, div_step, trajectory


def _check_inputs(u0, v0, y, eta, lam, steps, tol, blowup):
    u0 = _checks.real_array("u0", u0)
    v0 = _checks.real_array("v0", v0)
    if u0.shape != v0.shape:
        raise ValueError(f"u0, v0: expected the same shape, got {u0.shape} and {v0.shape}")
    y = _checks.target(y)
    eta = _checks.step_size(eta)
    lam = _checks.regulariser(lam, y)
    steps = default_steps(eta, lam) if steps is None else _checks.positive_int("steps", steps, 0)
    tol = _checks.real_scalar("tol", tol)
    blowup = _checks.real_scalar("blowup", blowup)
    if tol <= 0 or blowup <= 0:
        raise ValueError(f"tol, blowup: expected positive numbers, got {tol} and {blowup}")
    return u0, v0, y, eta, lam, steps, tol, blowup


def gd_scalar(u0, v0, y, eta, lam: float = 0.0, steps: int | None = 1000, record: bool = False,
              tol: float = 1e-8, blowup: float = 1e6) -> GDResult:
    """Runs GD on ½(uv − y)² + λ/2 (u² + v²) elementwise over arrays of initialisations.

    Args:
        u0, v0: initialisations, scalars or arrays of the same shape S.
        y: non-zero target (y < 0 allowed). eta: step size, a number or an array broadcasting to S.
        lam: ℓ2 coefficient, 0 ≤ λ < |y|. steps: number of steps (None: ``default_steps``).
        record: keep the whole trajectory and the loss curve.
        tol: gradient tolerance of the λ > 0 convergence test. blowup: divergence threshold on |u|, |v|.

    Returns:
        ``GDResult`` with arrays of shape S.

    Raises:
        ValueError/TypeError: non-finite inputs, η ≤ 0, λ < 0 or λ ≥ |y|, y = 0, mismatched shapes.
    """
    u0, v0, y, eta, lam, steps, tol, blowup = _check_inputs(u0, v0, y, eta, lam, steps, tol, blowup)
    u, v, div_step, traj = _run(u0.copy(), v0.copy(), y, eta, lam, steps, blowup, record, lambda a, b: a * b)
    diverged = div_step >= 0
    converged = converged_scalar(u, v, y, lam, tol) & ~diverged
    loss = None
    if record:
        hu, hv = traj
        loss = 0.5 * (hu * hv - y) ** 2 + 0.5 * lam * (hu * hu + hv * hv)
    return GDResult(u, v, converged, diverged, div_step, loss, traj)


def gd_vector(u0, v0, y, eta, lam: float = 0.0, steps: int | None = 1000, record: bool = False,
              tol: float = 1e-8, blowup: float = 1e6) -> GDResult:
    """GD on the scalar-vector factorisation ½(uᵀv − y)² + λ/2 (‖u‖² + ‖v‖²), u, v ∈ ℝ^p.

    Args:
        u0, v0: arrays of shape (..., p); each leading index is an independent run.
        eta: a number or an array of the batch shape (...).
        The other arguments are those of ``gd_scalar``.

    Returns:
        ``GDResult`` with ``u, v`` of shape (..., p) and flags of shape (...). For λ > 0 ``converged``
        means ‖∇L_λ‖ < tol.
    """
    u0, v0, y, eta, lam, steps, tol, blowup = _check_inputs(u0, v0, y, eta, lam, steps, tol, blowup)
    if u0.ndim == 0:
        raise ValueError("u0: expected an array of shape (..., p), got a scalar")
    eta_b = np.asarray(eta)[..., None]
    u, v, div_step, traj = _run(u0.copy(), v0.copy(), y, eta_b, lam, steps, blowup, record,
                                lambda a, b: (a * b).sum(-1, keepdims=True))
    div_step = div_step[..., 0]
    diverged = div_step >= 0
    r = (u * v).sum(-1) - y
    if lam == 0:
        converged = (np.abs(r) < RESIDUAL_TOL) & ~diverged
    else:
        grad2 = ((r[..., None] * v + lam * u) ** 2 + (r[..., None] * u + lam * v) ** 2).sum(-1)
        converged = (grad2 < tol * tol) & ~diverged
    loss = None
    if record:
        hu, hv = traj
        loss = 0.5 * ((hu * hv).sum(-1) - y) ** 2 + 0.5 * lam * (hu * hu + hv * hv).sum(-1)
    return GDResult(u, v, converged, diverged, div_step, loss, traj)
