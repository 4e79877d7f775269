"""Finite-time Lyapunov exponents of the GD map on ½(uv − y)² + λ/2 (u² + v²).

The tangent map of one step is Df = [[d − ηv², −η(2uv − y)], [−η(2uv − y), d − ηu²]] with d = 1 − ηλ.
The FTLE of an initialisation is (1/τ) log ‖Df^τ e‖ for the unit direction e that grows most, with τ the
horizon, or the step at which the run leaves the box |u|, |v| ≤ ``escape`` (it then has diverged).
"""
from __future__ import annotations

import numpy as np

from . import _checks


def ftle_map(u0, v0, y, eta, lam: float = 0.0, steps: int = 20, escape: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """Largest finite-time Lyapunov exponent of every initialisation.

    Args:
        u0, v0: initialisations, arrays of equal shape S. y, eta, lam: the loss and step size.
        steps: horizon T. escape: a run leaving |u|, |v| ≤ escape stops accumulating there.

    Returns:
        ``(ftle, tau)``, arrays of shape S: the exponent per step and the number of steps it averages.
    """
    u = _checks.real_array("u0", u0).copy()
    v = _checks.real_array("v0", v0).copy()
    if u.shape != v.shape:
        raise ValueError(f"u0, v0: expected the same shape, got {u.shape} and {v.shape}")
    y = _checks.target(y)
    eta = float(_checks.step_size(_checks.real_scalar("eta", eta)))
    lam = _checks.regulariser(lam, y)
    steps = _checks.positive_int("steps", steps)
    d = 1.0 - eta * lam
    # the 2x2 tangent product M = Df^t, kept normalised; its log scale is accumulated in ``log_scale``
    m11, m12, m21, m22 = np.ones_like(u), np.zeros_like(u), np.zeros_like(u), np.ones_like(u)
    log_scale = np.zeros_like(u)
    tau = np.zeros(u.shape, dtype=np.int32)
    live = np.ones(u.shape, dtype=bool)
    for _ in range(steps):
        a11, off, a22 = d - eta * v * v, -eta * (2 * u * v - y), d - eta * u * u
        n11, n12, n21, n22 = a11 * m11 + off * m21, a11 * m12 + off * m22, off * m11 + a22 * m21, off * m12 + a22 * m22
        norm = np.maximum(np.maximum(abs(n11), abs(n12)), np.maximum(abs(n21), abs(n22)))
        step = live & (norm > 0)  # a run that has escaped keeps its M and its scale
        scale = np.where(step, norm, 1.0)
        log_scale += np.log(scale)
        m11, m12, m21, m22 = (np.where(step, n / scale, m) for n, m in ((n11, m11), (n12, m12), (n21, m21), (n22, m22)))
        tau += live
        r = u * v - y
        u, v = d * u - eta * r * v, d * v - eta * r * u
        live &= (abs(u) <= escape) & (abs(v) <= escape)
        u, v = np.where(live, u, 0.0), np.where(live, v, 0.0)
    # the largest singular value of the normalised M: sqrt of the largest eigenvalue of MᵀM
    p, q = m11 * m11 + m21 * m21, m12 * m12 + m22 * m22
    s = m11 * m12 + m21 * m22
    top = 0.5 * (p + q) + np.sqrt(0.25 * (p - q) ** 2 + s * s)
    with np.errstate(divide="ignore"):
        ftle = (log_scale + 0.5 * np.log(top)) / np.maximum(tau, 1)
    return ftle, tau


def _iterate_with_jacobian(u, v, y, eta, lam, n):
    """f^n(u, v) and the entries (m11, m12, m21, m22) of Df^n, for flat arrays; iterates are clipped at 1e6."""
    d = 1.0 - eta * lam
    m11, m12, m21, m22 = np.ones_like(u), np.zeros_like(u), np.zeros_like(u), np.ones_like(u)
    for _ in range(n):
        a11, off, a22 = d - eta * v * v, -eta * (2 * u * v - y), d - eta * u * u
        m11, m12, m21, m22 = a11 * m11 + off * m21, a11 * m12 + off * m22, off * m11 + a22 * m21, off * m12 + a22 * m22
        r = u * v - y
        u, v = np.clip(d * u - eta * r * v, -1e6, 1e6), np.clip(d * v - eta * r * u, -1e6, 1e6)
    return u, v, m11, m12, m21, m22


def periodic_points(y, eta, lam: float, period: int, seeds_per_side: int = 400, extent=(-4, 4, -4, 4),
                    newton_steps: int = 40, tol: float = 1e-9) -> np.ndarray:
    """The distinct non-attracting points of period ``period`` (fixed points of f^period, so periods that
    divide it included) in ``extent``, found by damped Newton on f^n(x) − x from a grid of seeds.

    Newton misses a point whose basin holds no seed, so the count is a lower estimate that grows with
    ``seeds_per_side``. Attracting points (the minimisers) are left out: the others lie on basin boundaries.

    Returns:
        (k, 2) array of (u, v).
    """
    y = _checks.target(y)
    eta = float(_checks.step_size(_checks.real_scalar("eta", eta)))
    lam = _checks.regulariser(lam, y)
    n = _checks.positive_int("period", period)
    k = _checks.positive_int("seeds_per_side", seeds_per_side, 2)
    u_min, u_max, v_min, v_max = extent
    # seeds offset by an irrational fraction of the spacing: none on the symmetry lines u = ±v
    us = u_min + (u_max - u_min) * (np.arange(k) + 0.5 / np.sqrt(2)) / k
    vs = v_min + (v_max - v_min) * (np.arange(k) + 0.5 / np.sqrt(3)) / k
    u, v = (a.ravel() for a in np.meshgrid(us, vs))
    for _ in range(newton_steps):
        fu, fv, m11, m12, m21, m22 = _iterate_with_jacobian(u, v, y, eta, lam, n)
        gu, gv = fu - u, fv - v
        j11, j22 = m11 - 1.0, m22 - 1.0
        det = j11 * j22 - m12 * m21
        det = np.where(det == 0, 1e-300, det)
        du, dv = -(j22 * gu - m12 * gv) / det, -(j11 * gv - m21 * gu) / det
        damp = np.minimum(1.0, 0.5 / np.maximum(np.hypot(du, dv), 1e-300))  # steps of at most 0.5
        u, v = u + damp * du, v + damp * dv
        inside = (u >= u_min - 1) & (u <= u_max + 1) & (v >= v_min - 1) & (v <= v_max + 1)
        u, v = u[inside], v[inside]
    fu, fv, m11, m12, m21, m22 = _iterate_with_jacobian(u, v, y, eta, lam, n)
    tr, det = m11 + m22, m11 * m22 - m12 * m21
    disc = tr * tr - 4 * det
    radius = np.where(disc >= 0, 0.5 * (abs(tr) + np.sqrt(np.abs(disc))), np.sqrt(np.abs(det)))
    keep = ((np.hypot(fu - u, fv - v) < tol) & (radius > 1.0) & (u >= u_min) & (u <= u_max) & (v >= v_min)
            & (v <= v_max))
    return np.unique(np.round(np.column_stack([u[keep], v[keep]]), 7), axis=0)


def topological_entropy(y, eta, lam: float, periods=(1, 2, 3, 4, 5), seeds_per_side: int = 400,
                        extent=(-4, 4, -4, 4)) -> tuple[float, dict[int, int]]:
    """Topological entropy of the GD map on its basin boundaries from the growth of periodic points,
    h ≈ log P_n / n with P_n = #non-attracting fixed points of f^n (Bowen's formula for hyperbolic sets).

    Returns:
        ``(h at the largest period, {period: P_n})``.
    """
    counts = {int(p): int(periodic_points(y, eta, lam, p, seeds_per_side, extent).shape[0]) for p in periods}
    n = max(counts)
    if counts[n] == 0:
        raise ValueError(f"periods: no non-attracting periodic point of period {n} found; use more seeds")
    return float(np.log(counts[n]) / n), counts
