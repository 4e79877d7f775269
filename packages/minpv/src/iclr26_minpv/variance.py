"""The conditional time-score target and its closed-form path variance (the MinPV principle).

With ``x₀ ~ N(0, I_d)``, ``x_t = α_t x₀ + β_t x₁`` and ``p_t(x | x₁) = N(x; β_t x₁, α_t² I)``:

    s_cond(t; x₀, x₁) = −d α̇/α + β̇ ⟨x₀, x₁⟩/α + α̇ ‖x₀‖²/α
    V(t; x₁)         = Var_{x₀} s_cond = (2d α̇² + β̇² ‖x₁‖²) / α²
    V̄(t)             = E_{x₁} V(t; x₁) = (2d α̇² + β̇² m₂) / α²,   m₂ = E‖x₁‖²

The practical (conditional) time-score objective exceeds the ideal one by this path variance;
MinPV minimises it over the path. As in the official code (OpenDRE), the path is trained on the
*unclamped* variance with the floored denominator ``σ² = α² + 1e-5`` (``VARIANCE_FLOOR``):
``V_σ = (2d α̇² + β̇² ‖x₁‖²)/(α² + 1e-5)``. The spec's alternative, ``clamp(V, 1e-5, 1e6)``, caps the
blow-up near ``t = 1`` and so lets a path postpone the drop of ``α`` to the last instant (path-only
fit at d = 20: α(0.5) = 0.78 and a 6.6-nat quadrature bias, against 0.08 and 0.05 nats for ``V_σ``);
it is kept (``clamp=SPEC_CLAMP``) only to reproduce the spec's reference values.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy import integrate
from torch import Tensor

from .paths import InterpolantPath

VARIANCE_FLOOR = 1e-5
SPEC_CLAMP = (1e-5, 1e6)


def _check_path(path) -> InterpolantPath:
    if not isinstance(path, InterpolantPath):
        raise TypeError(f"path: expected an InterpolantPath (see make_path), got {type(path).__name__}")
    return path


def _check_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a positive number, got {type(value).__name__}")
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ValueError(f"{name}: expected a positive finite number, got {value}")
    return float(value)


def conditional_time_score(path: InterpolantPath, t: Tensor, x0: Tensor, x1: Tensor) -> Tensor:
    """``s_cond = ∂_t log N(x; β_t x₁, α_t² I)`` at ``x = x_t`` held fixed, written with ``x_t − β_t x₁ = α_t x₀``.

    Args:
        path: the interpolation.
        t: times, shape ``(B, 1)``.
        x0: anchor samples ``N(0, I)``, shape ``(B, d)``.
        x1: data samples, shape ``(B, d)``.

    Returns:
        Tensor of shape ``(B, 1)``.

    Raises:
        TypeError, ValueError: wrong types or shapes.
    """
    _check_path(path)
    if x0.shape != x1.shape or x0.dim() != 2:
        raise ValueError(f"x0, x1: expected equal shapes (B, d), got {tuple(x0.shape)} and {tuple(x1.shape)}")
    return target_from_coefficients(path.coefficients(t), x0, x1)


def target_from_coefficients(coefficients: tuple[Tensor, ...], x0: Tensor, x1: Tensor) -> Tensor:
    """``s_cond`` from precomputed ``(α, β, α̇, β̇)`` (each ``(B, 1)``) and ``x0, x1`` of shape ``(B, d)``; ``(B, 1)``."""
    alpha, _, dalpha, dbeta = coefficients
    inner = (x0 * x1).sum(dim=1, keepdim=True)
    sq = (x0 * x0).sum(dim=1, keepdim=True)
    return (-x0.shape[1] * dalpha + dbeta * inner + dalpha * sq) / alpha


def variance_from_coefficients(coefficients: tuple[Tensor, ...], dim: int, x1_sqnorm: Tensor | float,
                               floor: float = 0.0) -> Tensor:
    """``V = (2d α̇² + β̇² ‖x₁‖²)/(α² + floor)`` from precomputed ``(α, β, α̇, β̇)`` (each ``(B, 1)``); ``(B, 1)``."""
    alpha, _, dalpha, dbeta = coefficients
    return (2.0 * dim * dalpha**2 + dbeta**2 * x1_sqnorm) / (alpha**2 + floor)


def time_score_variance(path: InterpolantPath, t: Tensor, x1: Tensor | None = None, dim: int | None = None,
                        x1_sqnorm: Tensor | float | None = None, floor: float = 0.0) -> Tensor:
    """Closed-form ``V(t; x₁) = (2d α̇_t² + β̇_t² ‖x₁‖²) / α_t²``, the variance of ``s_cond`` over ``x₀``.

    Give either ``x1`` (shape ``(B, d)``) or both ``dim`` and ``x1_sqnorm`` (a number or a tensor
    broadcastable to ``(B, 1)``; pass ``m₂ = E‖x₁‖²`` to get ``V̄(t)``). Differentiable in the
    path's parameters; no clamp is applied here. ``floor=VARIANCE_FLOOR`` gives the official
    training form ``V_σ`` (denominator ``α² + 1e-5``).

    Returns:
        Tensor of shape ``(B, 1)``.

    Raises:
        ValueError: neither or both ways of giving the data were used.
    """
    _check_path(path)
    if x1 is not None:
        if dim is not None or x1_sqnorm is not None:
            raise ValueError("x1, dim, x1_sqnorm: give x1 alone, or dim with x1_sqnorm")
        dim = x1.shape[1]
        x1_sqnorm = (x1 * x1).sum(dim=1, keepdim=True)
    elif dim is None or x1_sqnorm is None:
        raise ValueError("x1, dim, x1_sqnorm: give x1 (B, d), or both dim and x1_sqnorm")
    return variance_from_coefficients(path.coefficients(t), dim, x1_sqnorm, floor)


def path_training_variance(path: InterpolantPath, t: Tensor, dim: int, x1_sqnorm: Tensor | float,
                           clamp: tuple[float, float] | None = None) -> Tensor:
    """The variance MinPV trains the path on, shape ``(B, 1)``: ``V_σ`` (official, ``clamp=None``) or ``clamp(V)``."""
    if clamp is None:
        return time_score_variance(path, t, dim=dim, x1_sqnorm=x1_sqnorm, floor=VARIANCE_FLOOR)
    return torch.clamp(time_score_variance(path, t, dim=dim, x1_sqnorm=x1_sqnorm), *clamp)


def _path_tensor_kw(path: InterpolantPath) -> dict:
    ref = next(iter(path.parameters()), None)
    if ref is None:
        return {"dtype": torch.float64, "device": torch.device("cpu")}
    return {"dtype": ref.dtype, "device": ref.device}


def path_variance_objective(path: InterpolantPath, dim: int, second_moment: float, n_grid: int = 2001,
                            clamp: tuple[float, float] | None = None) -> Tensor:
    """The MinPV objective ``∫_ε^{1−ε} V̄_σ(t) dt`` by the trapezoid rule on ``n_grid`` points.

    ``V̄_σ = (2d α̇² + β̇² m₂)/(α² + 1e-5)`` is the official, unclamped form (finite although ``V̄``
    itself diverges near ``t = 1`` for every path that reaches ``α₁ = 0``); ``clamp=SPEC_CLAMP``
    gives the spec's ``∫ clamp(V̄, 1e-5, 1e6) dt`` (its reference values).

    Args:
        path: the interpolation (its ``eps`` sets the interval).
        dim: the data dimension ``d``.
        second_moment: ``m₂ = E‖x₁‖²``.
        n_grid: number of trapezoid points (>= 2).
        clamp: ``None`` (official ``V̄_σ``) or ``(low, high)`` applied to ``V̄``.

    Returns:
        A scalar tensor, differentiable in the path's parameters.
    """
    _check_path(path)
    _check_positive("dim", dim)
    _check_positive("second_moment", second_moment)
    if isinstance(n_grid, bool) or not isinstance(n_grid, int) or n_grid < 2:
        raise ValueError(f"n_grid: expected an int >= 2, got {n_grid!r}")
    t = torch.linspace(path.eps, 1.0 - path.eps, n_grid, **_path_tensor_kw(path)).reshape(-1, 1)
    v = path_training_variance(path, t, int(dim), float(second_moment), clamp)
    return torch.trapezoid(v.flatten(), t.flatten())


def variance_metric(alpha: np.ndarray | float, dim: int, second_moment: float, constraint: str) -> np.ndarray:
    """``g(α)`` with ``V̄ = α̇² g(α)``: spherical ``2d/α² + m₂/(1 − α²)``, affine ``(2d + m₂)/α²``."""
    alpha = np.asarray(alpha, dtype=float)
    if constraint == "affine":
        return (2.0 * dim + second_moment) / alpha**2
    if constraint == "spherical":
        return 2.0 * dim / alpha**2 + second_moment / (1.0 - alpha**2)
    raise ValueError(f"constraint: expected 'spherical' or 'affine', got {constraint!r}")


def geodesic_lower_bound(path: InterpolantPath, dim: int, second_moment: float, t0: float = 0.05,
                         t1: float = 0.95) -> float:
    """Cauchy–Schwarz lower bound of ``∫_{t0}^{t1} V̄ dt`` over every path with the same endpoints α(t0), α(t1).

    With ``G(α) = ∫_α^1 sqrt(g(a)) da``: ``∫ V̄ dt >= (G(α(t1)) − G(α(t0)))² / (t1 − t0)``, equality iff
    ``α̇² g(α)`` is constant (a geodesic of the variance metric). Uses the path's own ``α`` at the
    window ends and its ``constraint``.

    Raises:
        ValueError: the window is not inside ``(0, 1)`` with ``t0 < t1``.
    """
    _check_path(path)
    if not 0.0 < t0 < t1 < 1.0:
        raise ValueError(f"t0, t1: expected 0 < t0 < t1 < 1, got {t0}, {t1}")
    with torch.no_grad():
        t = torch.tensor([[t0], [t1]], **_path_tensor_kw(path))
        a0, a1 = (float(a) for a in path.coefficients(t)[0].flatten())
    lo, hi = sorted((a0, a1))
    length, _ = integrate.quad(lambda a: math.sqrt(float(variance_metric(a, dim, second_moment, path.constraint))),
                               lo, hi, limit=200)
    return length**2 / (t1 - t0)


def fit_path_variance(path: InterpolantPath, dim: int, second_moment: float, steps: int = 400, lr: float = 1e-2,
                      n_times: int = 1024, clamp: tuple[float, float] | None = None,
                      generator: torch.Generator | None = None) -> list[float]:
    """Path-only MinPV: Adam on ``mean_t V̄_σ(t)`` (``clamp=None``, official) with ``n_times`` uniform ``t`` per step.

    Used by ``path_mode="pretrain"`` and by the closed-form check of the benchmark. Updates
    ``path`` in place.

    Returns:
        The Monte-Carlo objective at each step (length ``steps``).

    Raises:
        ValueError: ``path`` has no trainable parameters, or bad sizes.
    """
    _check_path(path)
    params = [p for p in path.parameters() if p.requires_grad]
    if not params:
        raise ValueError(f"path: {type(path).__name__} has no trainable parameters to fit")
    _check_positive("dim", dim)
    _check_positive("second_moment", second_moment)
    if steps < 1 or n_times < 1:
        raise ValueError(f"steps, n_times: expected positive ints, got {steps}, {n_times}")
    kw = _path_tensor_kw(path)
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    opt = torch.optim.Adam(params, lr=lr, foreach=True)
    history = []
    for _ in range(steps):
        t = torch.rand(n_times, 1, generator=generator, dtype=kw["dtype"]).to(kw["device"])
        t = path.eps + (1.0 - 2.0 * path.eps) * t
        loss = path_training_variance(path, t, int(dim), float(second_moment), clamp).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    return history
