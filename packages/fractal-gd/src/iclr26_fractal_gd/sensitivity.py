"""Probes of minimiser selection: which minimiser GD reaches, along segments and over the region E_η.

A balancedness bias predicts |u∞² − v∞²| ≈ 0; a minimum-norm/flatness bias predicts ‖θ∞‖² ≈ 2|y|.
Near the critical step size neither holds, and both quantities vary wildly over tiny segments.
"""
from __future__ import annotations

import numpy as np

from . import _checks
from .dynamics import gd_scalar
from .theory import in_convergence_region


def segment_points(p0, p1, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` evenly spaced initialisations from ``p0 = (u, v)`` to ``p1``; two arrays of shape (n,)."""
    p0 = _checks.real_array("p0", p0)
    p1 = _checks.real_array("p1", p1)
    if p0.shape != (2,) or p1.shape != (2,):
        raise ValueError(f"p0, p1: expected points (u, v), got shapes {p0.shape} and {p1.shape}")
    n = _checks.positive_int("n", n, 2)
    t = np.linspace(0.0, 1.0, n)
    return p0[0] + t * (p1[0] - p0[0]), p0[1] + t * (p1[1] - p0[1])


def branch_flips(branch: np.ndarray, converged: np.ndarray) -> int:
    """Number of sign changes of ``branch`` between consecutive converged points of a segment."""
    b = np.asarray(branch)[np.asarray(converged, dtype=bool)]
    return int(np.count_nonzero(b[1:] != b[:-1]))


def segment_outcomes(p0, p1, n: int, y, eta, lam: float = 0.0, steps: int = 6000) -> dict[str, np.ndarray | int]:
    """Runs GD from ``n`` initialisations on the segment p0 → p1 and describes the limits.

    Returns:
        dict with arrays of shape (n,): ``final_imbalance`` |u∞² − v∞²|, ``final_norm2`` u∞² + v∞²,
        ``branch`` sign(u∞ + sign(y) v∞) (0 when not converged), ``converged``; and ``flips``, the
        number of branch changes along the segment.
    """
    u0, v0 = segment_points(p0, p1, n)
    res = gd_scalar(u0, v0, y, eta, lam, steps=steps)
    branch = np.where(res.converged, np.sign(res.u + np.sign(y) * res.v), 0).astype(np.int8)
    return {"final_imbalance": np.abs(res.u**2 - res.v**2), "final_norm2": res.u**2 + res.v**2,
            "branch": branch, "converged": res.converged, "flips": branch_flips(branch, res.converged)}


def _chord_half_length(y: float, eta: float, d: np.ndarray) -> float:
    """Half-length of the chord of E_η through the origin along the unit direction d (λ = 0, y > 0 after the flip)."""
    denom = eta * (d @ d) - eta * eta * y * d[0] * d[1]
    return float(np.sqrt((4.0 - eta * eta * y * y) / denom))


def bias_report(y, eta, n: int = 2000, rng: np.random.Generator | None = None, region: str = "ellipse",
                extent=(-4, 4, -4, 4), steps: int = 6000) -> dict[str, float]:
    """How far GD's limits are from the balancedness and flatness predictions (λ = 0).

    Args:
        y, eta: target and step size, with η < 1/|y| so that E_η is not empty.
        n: number of initialisations. rng: generator (default: ``default_rng(0)``).
        region: ``"ellipse"`` (uniform in E_η, every run converges) or ``"box"`` (uniform in ``extent``).
        steps: GD steps per run.

    Returns:
        dict: ``converged_fraction``; over converged runs, ``imbalance_mean/std/max`` of |u∞² − v∞²|
        (balancedness predicts 0) and ``norm_excess_mean/std`` of u∞² + v∞² − 2|y| (flatness predicts 0);
        ``flips_per_unit_length``, branch flips along the chord of E_η through the origin in direction
        (1, 0.3), sampled at ``n`` points.
    """
    y = _checks.target(y)
    eta = float(_checks.step_size(_checks.real_scalar("eta", eta)))
    if eta * abs(y) >= 1:
        raise ValueError(f"eta: expected eta < 1/|y| = {1 / abs(y):.6g} (otherwise E_eta is empty), got {eta}")
    if region not in ("ellipse", "box"):
        raise ValueError(f"region: expected 'ellipse' or 'box', got {region!r}")
    n = _checks.positive_int("n", n, 2)
    rng = np.random.default_rng(0) if rng is None else rng
    u_min, u_max, v_min, v_max = extent
    if region == "box":
        u0, v0 = rng.uniform(u_min, u_max, n), rng.uniform(v_min, v_max, n)
    else:
        keep_u, keep_v, total = [], [], 0
        while total < n:
            cu, cv = rng.uniform(u_min, u_max, 4 * n), rng.uniform(v_min, v_max, 4 * n)
            inside = in_convergence_region(cu, cv, y, eta)
            keep_u.append(cu[inside])
            keep_v.append(cv[inside])
            total += int(inside.sum())
        u0, v0 = np.concatenate(keep_u)[:n], np.concatenate(keep_v)[:n]
    res = gd_scalar(u0, v0, y, eta, steps=steps)
    c = res.converged
    imb = np.abs(res.u[c] ** 2 - res.v[c] ** 2)
    excess = res.u[c] ** 2 + res.v[c] ** 2 - 2 * abs(y)
    d = np.array([1.0, 0.3]) / np.hypot(1.0, 0.3)
    d_flip = np.array([d[0], np.sign(y) * d[1]])
    half = _chord_half_length(abs(y), eta, d_flip) * (1 - 1e-9)
    seg = segment_outcomes(-half * d, half * d, n, y, eta, steps=steps)
    stats = {"converged_fraction": float(c.mean()), "flips_per_unit_length": seg["flips"] / (2 * half)}
    for name, vals in (("imbalance", imb), ("norm_excess", excess)):
        stats[f"{name}_mean"] = float(vals.mean()) if vals.size else float("nan")
        stats[f"{name}_std"] = float(vals.std()) if vals.size else float("nan")
    stats["imbalance_max"] = float(imb.max()) if imb.size else float("nan")
    return stats
