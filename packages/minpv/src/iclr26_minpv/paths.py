"""Interpolation paths ``x_t = α_t x₀ + β_t x₁`` between the Gaussian anchor (t = 0) and the data (t = 1).

Every path is an ``nn.Module`` whose ``coefficients(t)`` returns ``(α_t, β_t, α̇_t, β̇_t)`` for
``t`` of shape ``(B, 1)``; ``t`` is clamped to ``[ε, 1 − ε]`` first, so ``t`` exactly 0 or 1 never
gives NaN. Fixed paths (``linear``, ``trig``, ``vp``, ``cosine``) have closed-form derivatives;
the Kumaraswamy-mixture path (MinPV's learned schedule) has trainable parameters ``φ``.

``constraint`` records how β follows from α: ``"affine"`` (β = 1 − α) or ``"spherical"``
(β = sqrt(1 − α²)); the path-variance geometry (``variance.geodesic_lower_bound``) depends on it.
"""
from __future__ import annotations

import abc
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

CONSTRAINTS = ("spherical", "affine")


def check_eps(eps: float) -> float:
    """Returns ``eps`` as a float if it lies in ``(0, 0.1)``; raises ``ValueError`` otherwise."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps: expected a float in (0, 0.1), got {type(eps).__name__}")
    if not 0.0 < float(eps) < 0.1:
        raise ValueError(f"eps: expected a float in (0, 0.1), got {eps}")
    return float(eps)


def _check_t(t: Tensor) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"t: expected a torch.Tensor of shape (B, 1), got {type(t).__name__}")
    if t.dim() != 2 or t.shape[1] != 1:
        raise ValueError(f"t: expected shape (B, 1), got {tuple(t.shape)}")
    return t


def _spherical_beta(alpha: Tensor, dalpha: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """β = sqrt(1 − α²) and β̇ = −α α̇ / (β + ε) (the ε keeps β̇ finite at t → 0)."""
    beta = torch.sqrt(torch.clamp(1.0 - alpha**2, min=0.0))
    return beta, -alpha * dalpha / (beta + eps)


class InterpolantPath(nn.Module, abc.ABC):
    """Base class: a schedule ``t ↦ (α_t, β_t)`` with ``α₀ = 1, β₀ = 0`` and ``β₁ = 1``.

    Subclasses implement ``_coefficients`` on an already clamped ``t``.

    Attributes:
        eps: the clamp ``ε`` of ``t`` to ``[ε, 1 − ε]``.
        constraint: ``"affine"`` or ``"spherical"``.
        reaches_zero: whether ``α₁ = 0`` (the endpoint is exactly the data).
    """

    constraint: str = "spherical"
    reaches_zero: bool = True

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = check_eps(eps)

    def clamp_t(self, t: Tensor) -> Tensor:
        """``t`` clamped to ``[ε, 1 − ε]``; shape unchanged."""
        return torch.clamp(_check_t(t), self.eps, 1.0 - self.eps)

    def coefficients(self, t: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(α_t, β_t, α̇_t, β̇_t)``, each of shape ``(B, 1)``, for ``t`` of shape ``(B, 1)``.

        Raises:
            TypeError, ValueError: ``t`` is not a tensor of shape ``(B, 1)``.
        """
        return self._coefficients(self.clamp_t(t))

    @abc.abstractmethod
    def _coefficients(self, t: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(α, β, α̇, β̇)`` at an already clamped ``t`` of shape ``(B, 1)``."""

    def summary(self, times: tuple[float, ...] = (0.25, 0.5, 0.75)) -> dict[str, float]:
        """``{"alpha(0.25)": ..., ...}``: α at a few times, for logs."""
        with torch.no_grad():
            ref = next(iter(self.parameters()), torch.zeros(()))
            t = torch.tensor(times, dtype=ref.dtype, device=ref.device).reshape(-1, 1)
            alpha = self.coefficients(t)[0].flatten().tolist()
        return {f"alpha({s:g})": a for s, a in zip(times, alpha)}


class LinearPath(InterpolantPath):
    """``α_t = 1 − t``, ``β_t = t`` (affine; the rectified-flow / stochastic-interpolant line)."""

    constraint = "affine"

    def _coefficients(self, t):
        one = torch.ones_like(t)
        return 1.0 - t, t, -one, one


class TrigPath(InterpolantPath):
    """``α_t = cos(πt/2)``, ``β_t = sin(πt/2)`` (spherical)."""

    def _coefficients(self, t):
        h = 0.5 * math.pi
        return torch.cos(h * t), torch.sin(h * t), -h * torch.sin(h * t), h * torch.cos(h * t)


class VPPath(InterpolantPath):
    """Variance-preserving SDE schedule: ``log α_t = −¼ t² (β_max − β_min) − ½ t β_min``, ``β_t = sqrt(1 − α_t²)``.

    Does not reach ``α₁ = 0`` (``α₁ = e^{−5.025}`` with the defaults), so its endpoint is slightly off the data.
    """

    reaches_zero = False

    def __init__(self, beta_min: float = 0.1, beta_max: float = 20.0, eps: float = 1e-5):
        super().__init__(eps)
        if not 0.0 <= beta_min < beta_max:
            raise ValueError(f"beta_min, beta_max: expected 0 <= beta_min < beta_max, got {beta_min}, {beta_max}")
        self.beta_min, self.beta_max = float(beta_min), float(beta_max)

    def _coefficients(self, t):
        spread = self.beta_max - self.beta_min
        alpha = torch.exp(-0.25 * t**2 * spread - 0.5 * t * self.beta_min)
        dalpha = alpha * (-0.5 * t * spread - 0.5 * self.beta_min)
        beta, dbeta = _spherical_beta(alpha, dalpha, self.eps)
        return alpha, beta, dalpha, dbeta


class CosinePath(InterpolantPath):
    """Improved-DDPM cosine schedule read in this time direction (t = 1 is the data).

    With ``τ = 1 − t`` and ``u(τ) = (τ + s)/(1 + s) · π/2``: ``β_t = cos u(τ) / cos u(0)`` (the
    square root of the cosine ``ᾱ``), ``α_t = sqrt(1 − β_t²)``; reaches ``α₁ = 0``.
    """

    def __init__(self, s: float = 0.008, eps: float = 1e-5):
        super().__init__(eps)
        if not 0.0 <= s < 1.0:
            raise ValueError(f"s: expected 0 <= s < 1, got {s}")
        self.s = float(s)

    def _coefficients(self, t):
        scale = 0.5 * math.pi / (1.0 + self.s)
        u = (1.0 - t + self.s) * scale
        norm = math.cos(self.s * scale)
        beta = torch.clamp(torch.cos(u) / norm, 0.0, 1.0)
        dbeta = torch.sin(u) * scale / norm
        alpha = torch.clamp(torch.sqrt(torch.clamp(1.0 - beta**2, min=0.0)), self.eps, 1.0)
        dalpha = -beta * dbeta / alpha  # exact derivative of sqrt(1 − β²); α >= ε keeps it finite
        return alpha, beta, dalpha, dbeta


def kmm_initial_parameters(n_components: int) -> tuple[Tensor, Tensor]:
    """The official initialisation of the raw KMM parameters ``(ã, b̃)``, each of shape ``(K,)``.

    Centres ``c_k = linspace(0.1, 0.9, K)``; for ``j = 0..K−1``: ``a = 1.5 + 0.5j`` and
    ``b = 3 + 2(K − j)`` when ``c_k < 0.5``, else ``a = 3 + 2j`` and ``b = 1.5 + 0.5(K − j)``;
    the raw parameters are their logarithms (softplus is applied on top, as in the code).
    """
    centres = torch.linspace(0.1, 0.9, n_components, dtype=torch.float64)
    a, b = [], []
    for j, c in enumerate(centres.tolist()):
        early = c < 0.5
        a.append(1.5 + 0.5 * j if early else 3.0 + 2.0 * j)
        b.append(3.0 + 2.0 * (n_components - j) if early else 1.5 + 0.5 * (n_components - j))
    return torch.log(torch.tensor(a)), torch.log(torch.tensor(b))


def _check_bounds(name: str, bounds) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a pair (min, max) of positive floats, got {bounds!r}") from None
    if not 0.0 < lo < hi:
        raise ValueError(f"{name}: expected 0 < min < max, got {bounds!r}")
    return lo, hi


class KumaraswamyMixturePath(InterpolantPath):
    """MinPV's learnable schedule: ``α_t = 1 − F_φ(t)`` with ``F_φ`` a mixture of Kumaraswamy CDFs.

    ``F_φ(t) = Σ_k w_k [1 − (1 − t^{a_k})^{b_k}]``, ``w = softmax(ℓ)``,
    ``a_k = clamp(softplus(ã_k), a_min, a_max)``, ``b_k = clamp(softplus(b̃_k), b_min, b_max)``;
    ``α_t = clamp(1 − F_φ(t), ε, 1 − ε)``, ``α̇_t = −f_φ(t)`` (the mixture pdf). ``β`` follows from
    ``constraint``: spherical ``β = sqrt(1 − α²)``, ``β̇ = −α α̇/(β + ε)``; affine ``β = 1 − α``, ``β̇ = −α̇``.
    Since ``F(0) = 0`` and ``F(1) = 1`` the path reaches both endpoints.

    Args:
        n_components: ``K >= 1``.
        constraint: ``"spherical"`` (default) or ``"affine"``.
        a_bounds, b_bounds: clamps of the shape parameters; the ``[0.1, 10]`` defaults are part of
            the method (they stop the truncated objective from being gamed).
        eps: clamp of ``t`` and of ``α``, in ``(0, 0.1)``.
    """

    def __init__(self, n_components: int = 5, constraint: str = "spherical", a_bounds=(0.1, 10.0),
                 b_bounds=(0.1, 10.0), eps: float = 1e-5):
        super().__init__(eps)
        if isinstance(n_components, bool) or not isinstance(n_components, int):
            raise TypeError(f"n_components: expected an int >= 1, got {type(n_components).__name__}")
        if n_components < 1:
            raise ValueError(f"n_components: expected an int >= 1, got {n_components}")
        if constraint not in CONSTRAINTS:
            raise ValueError(f"constraint: expected one of {CONSTRAINTS}, got {constraint!r}")
        self.constraint = constraint
        self.a_bounds = _check_bounds("a_bounds", a_bounds)
        self.b_bounds = _check_bounds("b_bounds", b_bounds)
        raw_a, raw_b = kmm_initial_parameters(n_components)
        self.raw_a = nn.Parameter(raw_a.float())
        self.raw_b = nn.Parameter(raw_b.float())
        self.logits = nn.Parameter(torch.zeros(n_components))

    def shape_parameters(self) -> tuple[Tensor, Tensor, Tensor]:
        """``(a, b, w)``, each of shape ``(K,)``: the effective Kumaraswamy shapes and mixture weights."""
        a = torch.clamp(F.softplus(self.raw_a), *self.a_bounds)
        b = torch.clamp(F.softplus(self.raw_b), *self.b_bounds)
        return a, b, torch.softmax(self.logits, dim=0)

    def _cdf_pdf(self, t: Tensor) -> tuple[Tensor, Tensor]:
        a, b, w = self.shape_parameters()
        log_t = torch.log(t)  # t is already in [ε, 1 − ε]
        t_a = torch.exp(a * log_t)  # (B, K); powers via exp(y log x) for stability
        log_one_minus = torch.log1p(-torch.clamp(t_a, max=1.0 - 1e-12))
        cdf = 1.0 - torch.exp(b * log_one_minus)
        pdf = a * b * torch.exp((a - 1.0) * log_t + (b - 1.0) * log_one_minus)
        return (cdf * w).sum(dim=1, keepdim=True), (pdf * w).sum(dim=1, keepdim=True)

    def cdf(self, t: Tensor) -> Tensor:
        """``F_φ(t)``, shape ``(B, 1)``; ``t`` of shape ``(B, 1)`` is clamped to ``[ε, 1 − ε]``."""
        return self._cdf_pdf(self.clamp_t(t))[0]

    def pdf(self, t: Tensor) -> Tensor:
        """``f_φ(t) = F_φ'(t)``, shape ``(B, 1)``; ``t`` of shape ``(B, 1)`` is clamped to ``[ε, 1 − ε]``."""
        return self._cdf_pdf(self.clamp_t(t))[1]

    def _coefficients(self, t):
        cdf, pdf = self._cdf_pdf(t)
        alpha = torch.clamp(1.0 - cdf, self.eps, 1.0 - self.eps)
        dalpha = -pdf
        if self.constraint == "affine":
            return alpha, 1.0 - alpha, dalpha, -dalpha
        beta, dbeta = _spherical_beta(alpha, dalpha, self.eps)
        return alpha, beta, dalpha, dbeta


PATHS = {"linear": LinearPath, "trig": TrigPath, "vp": VPPath, "cosine": CosinePath, "minpv": KumaraswamyMixturePath}


def make_path(name: str, **kw) -> InterpolantPath:
    """A path by name: ``"linear"``, ``"trig"``, ``"vp"``, ``"cosine"`` or ``"minpv"`` (the KMM path).

    Keyword arguments go to the path's constructor (e.g. ``eps``, ``n_components``).

    Raises:
        ValueError: unknown ``name``.
    """
    if name not in PATHS:
        raise ValueError(f"path: expected one of {sorted(PATHS)}, got {name!r}")
    return PATHS[name](**kw)
