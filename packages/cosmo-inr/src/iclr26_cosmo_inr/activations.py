"""Activations of coordinate networks: COSMO-RC and the baselines' nonlinearities.

COSMO-RC (paper Sec. 3) is the raised-cosine impulse response modulated by a complex
sinusoid, ψ(x) = h_RC(x; T, β) · exp(j 2π C x), with

    h_RC(x; T, β) = (1/T) sinc(x/T) cos(πβx/T) / (1 − (2βx/T)²).

The denominator vanishes at x = ±T/(2β). This module never evaluates that quotient: it
uses the identity cos(πy)/(1 − 4y²) = (π/4)[sinc(y + ½) + sinc(y − ½)] (y = βx/T), exact
for real and complex x, so the removable singularity gives its finite limit and finite
gradients, with full float32 accuracy near it.

Complex values inside the networks are carried as pairs ``(re, im)`` of real tensors
(``im`` is ``None`` for a real tensor): torch's complex transcendental functions are
not vectorised on CPU, and the pair kernel is several times faster. The public
functions accept and return ordinary (real or complex) tensors.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

Pair = tuple[Tensor, Tensor | None]

T_FLOOR = 1e-4  # the effective T is clamped to at least this (T = 0 is only a range endpoint)
_TAYLOR_BAND = 1e-6  # |w|² below which sinc(w) uses its Taylor series


def check_beta(beta: float) -> float:
    """Returns ``beta`` if it is a roll-off factor in [0, 1]; raises ``ValueError`` otherwise."""
    beta = float(beta)
    if not 0.0 <= beta <= 1.0 or math.isnan(beta):
        raise ValueError(f"beta: expected a roll-off factor in [0, 1], got {beta}")
    return beta


def _sinh_cosh(t: Tensor) -> tuple[Tensor, Tensor]:
    """(sinh t, cosh t) from ``expm1(±t)`` (torch's sinh/cosh are not vectorised on CPU); accurate near 0."""
    up, down = torch.expm1(t), torch.expm1(-t)
    return 0.5 * (up - down), 1.0 + 0.5 * (up + down)


def _sinc_complex(w: Tensor, sin_pi_w: Tensor) -> Tensor:
    """sinc(w) = sin(πw)/(πw) of a complex tensor given sin(πw); Taylor series where |w|² < 1e-6."""
    mod2 = w.real.square() + w.imag.square()
    small = mod2 < _TAYLOR_BAND
    inv = 1.0 / (math.pi * torch.where(small, 1.0, mod2))  # 1/(π w) = conj(w) / (π |w|²), real arithmetic
    quotient = sin_pi_w * torch.complex(w.real * inv, -w.imag * inv)
    x2 = (math.pi * w).square()
    taylor = 1.0 - x2 * (1.0 / 6.0) + x2.square() * (1.0 / 120.0)
    return torch.where(small, taylor, quotient)


def _sin_pi_complex(re: Tensor, sinh_cosh: tuple[Tensor, Tensor]) -> Tensor:
    """sin(π(a + ib)) = sin(πa) cosh(πb) + i cos(πa) sinh(πb), given (sinh πb, cosh πb)."""
    sh, ch = sinh_cosh
    return torch.complex(torch.sin(math.pi * re) * ch, torch.cos(math.pi * re) * sh)


def raised_cosine_pair(re: Tensor, im: Tensor | None, T, beta: float = 0.5) -> Pair:
    """h_RC(x; T, β) of x = re + i·im through the singularity-free form.

    h_RC(x) = (π/(4T)) sinc(x/T) [sinc(βx/T + ½) + sinc(βx/T − ½)].

    Args:
        re, im: real and imaginary parts, same shape (``im=None`` for real x).
        T: time scale, a float or a 0-d tensor (clamped to >= 1e-4).
        beta: roll-off in [0, 1].

    Returns:
        ``(re, im)`` of h_RC (``im`` is ``None`` for real x).
    """
    T = torch.as_tensor(T, dtype=re.dtype, device=re.device).clamp_min(T_FLOOR)
    inv_T = 1.0 / T
    scale = (math.pi / 4.0) * inv_T
    p = re * inv_T
    if im is None:
        y = beta * p
        return scale * torch.sinc(p) * (torch.sinc(y + 0.5) + torch.sinc(y - 0.5)), None
    q = im * inv_T
    u = torch.complex(p, q)
    sinc_u = _sinc_complex(u, _sin_pi_complex(p, _sinh_cosh(math.pi * q)))
    y_sc = _sinh_cosh((math.pi * beta) * q)
    bracket = (_sinc_complex(beta * u + 0.5, _sin_pi_complex(beta * p + 0.5, y_sc))
               + _sinc_complex(beta * u - 0.5, _sin_pi_complex(beta * p - 0.5, y_sc)))
    h = scale * sinc_u * bracket
    return h.real, h.imag


def modulate_pair(re: Tensor, im: Tensor | None, values: Pair, zeta) -> tuple[Tensor, Tensor]:
    """values · exp(j ζ x) for x = re + i·im: exp(jζx) = exp(−ζ b)(cos ζa + i sin ζa)."""
    zeta = torch.as_tensor(zeta, dtype=re.dtype, device=re.device)
    phase = zeta * re
    cos, sin = torch.cos(phase), torch.sin(phase)
    if im is not None:
        damp = torch.exp(-zeta * im)
        cos, sin = damp * cos, damp * sin
    v_re, v_im = values
    if v_im is None:
        return v_re * cos, v_re * sin
    out = torch.complex(v_re, v_im) * torch.complex(cos, sin)
    return out.real, out.imag


def cosmo_rc_pair(re: Tensor, im: Tensor | None, T, C, beta: float = 0.5) -> tuple[Tensor, Tensor]:
    """ψ(x) = h_RC(x; T, β) · exp(j 2π C x) of x = re + i·im, returned as ``(re, im)``."""
    h = raised_cosine_pair(re, im, T, beta)
    C = torch.as_tensor(C, dtype=re.dtype, device=re.device)
    return modulate_pair(re, im, h, 2.0 * math.pi * C)


def _split(x: Tensor, name: str = "x") -> Pair:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    return (x.real, x.imag) if x.is_complex() else (x, None)


def _join(pair: Pair) -> Tensor:
    re, im = pair
    return re if im is None else torch.complex(re, im)


def raised_cosine(x: Tensor, T, beta: float = 0.5) -> Tensor:
    """Raised-cosine impulse response h_RC(x; T, β), for real or complex ``x`` of any shape.

    Returns a tensor of ``x``'s shape and kind (real in, real out). Never Inf/NaN at the
    removable singularity x = ±T/(2β): there it equals (π/(4T)) sinc(1/(2β)).

    Raises:
        TypeError: ``x`` is not a tensor. ValueError: ``beta`` outside [0, 1].
    """
    re, im = _split(x)
    return _join(raised_cosine_pair(re, im, T, check_beta(beta)))


def cosmo(x: Tensor, base: Callable[[Tensor], Tensor], zeta) -> Tensor:
    """Complex sinusoidal modulation of any activation: ψ(x) = base(x) · exp(jζx) (complex output).

    ζ = 0 returns ``base(x)`` (as a complex tensor) exactly.
    """
    re, im = _split(x)
    values = _split(base(x), "base(x)")
    return torch.complex(*modulate_pair(re, im, values, zeta))


def cosmo_rc(x: Tensor, T, C, beta: float = 0.5) -> Tensor:
    """COSMO-RC: ψ(x) = h_RC(x; T, β) · exp(j2πCx); complex tensor of ``x``'s shape."""
    re, im = _split(x)
    return torch.complex(*cosmo_rc_pair(re, im, T, C, check_beta(beta)))


class Sine(nn.Module):
    """SIREN's sin(ω0 x)."""

    def __init__(self, omega0: float = 30.0):
        super().__init__()
        self.omega0 = float(omega0)

    def forward(self, x: Tensor) -> Tensor:
        return torch.sin(self.omega0 * x)


class Gauss(nn.Module):
    """Gaussian activation exp(−(s x)²)."""

    def __init__(self, scale: float = 10.0):
        super().__init__()
        self.scale = float(scale)

    def forward(self, x: Tensor) -> Tensor:
        return torch.exp(-(self.scale * x).square())


class Finer(nn.Module):
    """FINER's variable-periodic sin(ω0 (|x| + 1) x), the scale |x| + 1 detached from the graph."""

    def __init__(self, omega0: float = 30.0):
        super().__init__()
        self.omega0 = float(omega0)

    def forward(self, x: Tensor) -> Tensor:
        return torch.sin(self.omega0 * (x.detach().abs() + 1.0) * x)


def gabor_pair(re: Tensor, im: Tensor | None, omega0: float, s0: float) -> tuple[Tensor, Tensor]:
    """WIRE's complex Gabor wavelet exp(jω0 z − |s0 z|²) of z = re + i·im, as a pair."""
    mod2 = re.square() if im is None else re.square() + im.square()
    log_mag = -(s0**2) * mod2 if im is None else -omega0 * im - (s0**2) * mod2
    mag = torch.exp(log_mag)
    return mag * torch.cos(omega0 * re), mag * torch.sin(omega0 * re)


class ComplexGabor(nn.Module):
    """WIRE's complex Gabor wavelet exp(jω0 x − |s0 x|²) on tensors (complex output)."""

    def __init__(self, omega0: float = 20.0, s0: float = 10.0):
        super().__init__()
        self.omega0, self.s0 = float(omega0), float(s0)

    def forward(self, x: Tensor) -> Tensor:
        return torch.complex(*gabor_pair(*_split(x), self.omega0, self.s0))


class RaisedCosine(nn.Module):
    """h_RC(x; T, β) with fixed T and β (the unmodulated RC of the ablation)."""

    def __init__(self, T: float = 1.0, beta: float = 0.5):
        super().__init__()
        self.T, self.beta = float(T), check_beta(beta)

    def forward(self, x: Tensor) -> Tensor:
        return raised_cosine(x, self.T, self.beta)


class CosmoRC(nn.Module):
    """COSMO-RC activation with fixed β; T and C are given at call time (one pair per layer)."""

    def __init__(self, beta: float = 0.5):
        super().__init__()
        self.beta = check_beta(beta)

    def forward(self, x: Tensor, T, C) -> Tensor:
        return cosmo_rc(x, T, C, self.beta)
