"""Closed forms for GD on L(u, v) = ½(uᵀv − y)² (+ λ/2 (‖u‖² + ‖v‖²)).

For y < 0 every formula applies the symmetry v → −v (so y → |y| and uᵀv → sign(y) uᵀv).
"""
from __future__ import annotations

import numpy as np

from . import _checks


def _reduce(u, v, vector: bool) -> tuple[np.ndarray, np.ndarray]:
    """(N, q) = (‖u‖² + ‖v‖², uᵀv): over the last axis of (..., p) arrays (``vector``), else elementwise."""
    u = _checks.real_array("u", u)
    v = _checks.real_array("v", v)
    if u.shape != v.shape:
        raise ValueError(f"u, v: expected the same shape, got {u.shape} and {v.shape}")
    if vector:
        if u.ndim == 0:
            raise ValueError("u: vector=True needs arrays of shape (..., p), got a scalar")
        return (u * u + v * v).sum(-1), (u * v).sum(-1)
    return u * u + v * v, u * v


def _scalar_or_array(x: np.ndarray):
    return float(x) if np.ndim(x) == 0 else x


def ellipse_step_size(u, v, y, vector: bool = False, allow_zero_target: bool = False):
    """The ellipse branch 8 / (N + sqrt(N² − 16 y (q − y))) of η*, with N = ‖u‖²+‖v‖², q = uᵀv.

    It is the smaller positive root of y(q − y) η² − N η + 4 = 0 (for y(q − y) ≤ 0 the only positive one).
    Shapes: like ``u`` (``vector=False``) or ``u.shape[:-1]`` (``vector=True``).
    """
    y = _checks.target(y, allow_zero_target)
    n2, q = _reduce(u, v, vector)
    q = np.sign(y) * q if y != 0 else q
    ay = abs(y)
    disc = np.maximum(n2 * n2 - 16.0 * ay * (q - ay), 0.0)  # ≥ 0 in exact arithmetic
    with np.errstate(divide="ignore"):
        out = 8.0 / (n2 + np.sqrt(disc))
    return _scalar_or_array(out)


def critical_step_size(u, v, y, vector: bool = False, allow_zero_target: bool = False):
    """η*(u₀, v₀) = min{1/|y|, 8 / (N + sqrt(N² − 16|y|(q − |y|)))}: GD converges iff η < η* (a.e.).

    Args:
        u, v: initialisations, scalars or arrays of equal shape (elementwise scalar factorisation),
            or (..., p) arrays with ``vector=True`` (scalar-vector factorisation uᵀv).
        y: non-zero target; y < 0 is handled by the sign flip v → −v.
        allow_zero_target: accept y = 0, where η* = 4 / N.

    Returns:
        float or array of shape ``u.shape`` (or ``u.shape[:-1]``); inf at u = v = 0 with y = 0.

    Raises:
        ValueError: y = 0 without ``allow_zero_target``, non-finite inputs, mismatched shapes.
    """
    ell = ellipse_step_size(u, v, y, vector, allow_zero_target)
    y = float(y)
    return ell if y == 0 else _scalar_or_array(np.minimum(ell, 1.0 / abs(y)))


def active_branch(u, v, y, vector: bool = False):
    """Which term of the min in η* is active: ``"inverse_target"`` (1/|y|) or ``"ellipse"``; array of str for arrays."""
    ell = np.asarray(ellipse_step_size(u, v, y, vector))
    out = np.where(1.0 / abs(float(y)) <= ell, "inverse_target", "ellipse")
    return str(out) if out.ndim == 0 else out


def in_convergence_region(u, v, y, eta, vector: bool = False):
    """Strict membership in E_η = {η(‖u‖²+‖v‖²) − η²|y| q + η²y² < 4}, q = sign(y) uᵀv; False where η ≥ 1/|y|.

    Returns a bool (scalar inputs) or a bool array shaped like ``u`` (or ``u.shape[:-1]``).
    """
    y = _checks.target(y)
    eta = _checks.step_size(eta)
    n2, q = _reduce(u, v, vector)
    q = np.sign(y) * q
    ay = abs(y)
    inside = (eta * n2 - eta * eta * ay * q + eta * eta * ay * ay < 4.0) & (eta * ay < 1.0)
    return bool(inside) if np.ndim(inside) == 0 else inside


def quotient_map(a, b, y, eta, lam: float = 0.0):
    """One GD step in the planar coordinates (a, b) = (‖u+v‖², ‖u−v‖²).

    a' = a (1 − ηλ − ηr)²,  b' = b (1 − ηλ + ηr)²,  r = (a − b)/4 − y.

    Shapes: ``a`` and ``b`` broadcast; returns two arrays (or floats) of the broadcast shape.
    """
    a = _checks.real_array("a", a)
    b = _checks.real_array("b", b)
    if np.any(a < 0) or np.any(b < 0):
        raise ValueError("a, b: expected squared norms >= 0, got a negative entry")
    y = _checks.real_scalar("y", y)
    eta = _checks.step_size(eta)
    lam = _checks.regulariser(lam)
    r = (a - b) / 4.0 - y
    a_new = a * (1.0 - eta * lam - eta * r) ** 2
    b_new = b * (1.0 - eta * lam + eta * r) ** 2
    return _scalar_or_array(a_new), _scalar_or_array(b_new)


def minimizers(y, lam):
    """The two global minimisers ±(m, sign(y) m), m = sqrt(|y| − λ), of the regularised scalar loss; shape (2, 2).

    Raises:
        ValueError: λ ≤ 0 (the unregularised minimisers form the curve uv = y) or λ ≥ |y|.
    """
    y = _checks.target(y)
    lam = _checks.regulariser(lam, y)
    if lam == 0:
        raise ValueError("lam: expected lam > 0 (for lam = 0 the minimisers are the whole curve uv = y), got 0")
    m = np.sqrt(abs(y) - lam)
    s = np.sign(y)
    return np.array([[m, s * m], [-m, -s * m]])


def hessian_eigs(u, v, y, lam: float = 0.0):
    """Eigenvalues (ascending) of ∇²L_λ at (u, v) for scalars: [[v²+λ, 2uv−y], [2uv−y, u²+λ]].

    Returns an array of shape ``broadcast(u, v).shape + (2,)``.
    """
    u = _checks.real_array("u", u)
    v = _checks.real_array("v", v)
    y = _checks.real_scalar("y", y)
    lam = _checks.regulariser(lam)
    mean = (u * u + v * v) / 2.0 + lam
    radius = np.hypot((v * v - u * u) / 2.0, 2.0 * u * v - y)
    return np.stack([mean - radius, mean + radius], axis=-1)


def hessian_init_step_size(u, v, y, lam: float = 0.0):
    """The baseline rule 2 / λ_max(∇²L(θ₀)) (a Hessian-at-initialisation guess, not the true threshold)."""
    return 2.0 / hessian_eigs(u, v, y, lam)[..., 1]


def stable_step_size(y, lam: float = 0.0) -> float:
    """Largest η for which some global minimiser is linearly stable: 1/|y| (λ = 0) or min{1/(|y|−λ), 1/λ}."""
    y = _checks.target(y)
    lam = _checks.regulariser(lam, y)
    if lam == 0:
        return 1.0 / abs(y)
    return min(1.0 / (abs(y) - lam), 1.0 / lam)
