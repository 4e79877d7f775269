"""Leaky integrate-and-fire neurons with surrogate gradients (multi-step, time-first ``[T, B, ...]``).

The spike non-linearity is a Heaviside step ``S = Θ(u)`` in the forward pass; its derivative is
replaced in the backward pass by a smooth surrogate ``Θ'(u)``. The same code path runs in
``train()`` and ``eval()``, so attacks in evaluation mode keep their surrogate gradients.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn


def _atan_derivative(u: Tensor, alpha: float) -> Tensor:
    return (alpha / 2) / (1 + (math.pi / 2 * alpha * u) ** 2)


def _sigmoid_derivative(u: Tensor, alpha: float) -> Tensor:
    s = torch.sigmoid(alpha * u)
    return alpha * s * (1 - s)


def _rect_derivative(u: Tensor, width: float) -> Tensor:
    return (u.abs() < width / 2).to(u.dtype) / width


def _triangle_derivative(u: Tensor, gamma: float) -> Tensor:
    return (gamma - u.abs()).clamp_min(0) / gamma**2


class _Heaviside(torch.autograd.Function):
    """Θ(u) forward; ``derivative(u, param)`` backward."""

    @staticmethod
    def forward(ctx, u: Tensor, param: float, derivative: Callable[[Tensor, float], Tensor]) -> Tensor:
        ctx.save_for_backward(u)
        ctx.param, ctx.derivative = param, derivative
        return (u >= 0).to(u.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (u,) = ctx.saved_tensors
        return grad * ctx.derivative(u, ctx.param), None, None


def heaviside_atan(u: Tensor, alpha: float = 2.0) -> Tensor:
    """Θ(u) with the arctan surrogate Θ'(u) ≈ (α/2) / (1 + (π α u / 2)²) (spikingjelly's ``ATan``)."""
    return _Heaviside.apply(u, float(alpha), _atan_derivative)


def heaviside_sigmoid(u: Tensor, alpha: float = 4.0) -> Tensor:
    """Θ(u) with the sigmoid surrogate Θ'(u) ≈ α σ(αu)(1 − σ(αu))."""
    return _Heaviside.apply(u, float(alpha), _sigmoid_derivative)


def heaviside_rect(u: Tensor, width: float = 1.0) -> Tensor:
    """Θ(u) with the rectangular surrogate Θ'(u) ≈ 1[|u| < width/2] / width."""
    return _Heaviside.apply(u, float(width), _rect_derivative)


def heaviside_triangle(u: Tensor, gamma: float = 1.0) -> Tensor:
    """Θ(u) with the triangle surrogate Θ'(u) ≈ max(0, γ − |u|) / γ² (unit area; the "ZIF" of SNN_DSD-style code)."""
    return _Heaviside.apply(u, float(gamma), _triangle_derivative)


SURROGATES: dict[str, tuple[Callable[[Tensor, float], Tensor], float]] = {
    "atan": (heaviside_atan, 2.0),
    "sigmoid": (heaviside_sigmoid, 4.0),
    "rect": (heaviside_rect, 1.0),
    "triangle": (heaviside_triangle, 1.0),
}


class LIF(nn.Module):
    """Multi-step leaky integrate-and-fire neuron (spikingjelly conventions), hard or soft reset.

    H[t] = V[t−1] + (I[t] − (V[t−1] − V_reset)) / τ   (``decay_input=True``)
    H[t] = V[t−1] − (V[t−1] − V_reset) / τ + I[t]       (``decay_input=False``)
    S[t] = Θ(H[t] − V_th)
    V[t] = H[t](1 − S[t]) + V_reset S[t]   (hard reset)    or    V[t] = H[t] − V_th S[t]   (soft reset,
    ``v_reset=None``, where V_reset = 0 in the decay),  V[0] = V_reset (0 for soft reset).

    Args:
        tau: membrane time constant τ > 1.
        v_threshold: firing threshold V_th.
        v_reset: reset potential V_reset; ``None`` for the soft (subtractive) reset.
        decay_input: whether the input is also divided by τ.
        surrogate: ``"atan"``, ``"sigmoid"``, ``"rect"``, ``"triangle"`` or a callable ``f(u, alpha) -> spikes``.
        alpha: the surrogate's sharpness (the width for ``"rect"`` and ``"triangle"``); ``None`` takes the
            surrogate's default (2 for atan, 4 for sigmoid, 1 for rect and triangle).
        detach_reset: detach ``S[t]`` in the reset path.
        detach_membrane: detach V[t−1] before step t, so gradients flow within each time step only (the
            SNN_DSD/SNN_MRL training convention) instead of through time (full BPTT).

    Raises:
        ValueError: unknown surrogate name or ``tau <= 1``.
    """

    def __init__(self, tau: float = 2.0, v_threshold: float = 1.0, v_reset: float | None = 0.0,
                 decay_input: bool = True, surrogate: str | Callable = "atan", alpha: float | None = None,
                 detach_reset: bool = False, detach_membrane: bool = False):
        super().__init__()
        if isinstance(surrogate, str):
            if surrogate not in SURROGATES:
                raise ValueError(f"surrogate: expected one of {sorted(SURROGATES)} or a callable, got {surrogate!r}")
            fn, default_alpha = SURROGATES[surrogate]
        elif callable(surrogate):
            fn, default_alpha = surrogate, 2.0
        else:
            raise TypeError(f"surrogate: expected a name or a callable, got {type(surrogate).__name__}")
        if not tau > 1.0:
            raise ValueError(f"tau: expected a membrane time constant > 1, got {tau}")
        self.tau, self.v_threshold = float(tau), float(v_threshold)
        self.v_reset = None if v_reset is None else float(v_reset)
        self.decay_input, self.detach_reset = bool(decay_input), bool(detach_reset)
        self.detach_membrane = bool(detach_membrane)
        self.spike_fn = fn
        self.alpha = float(default_alpha if alpha is None else alpha)

    def forward(self, x_seq: Tensor, return_membrane: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """Input currents ``[T, B, ...]`` -> spikes ``[T, B, ...]`` (and, if asked, membrane ``H`` ``[T, B, ...]``)."""
        if x_seq.dim() < 2:
            raise ValueError(f"x_seq: expected a time-first tensor [T, B, ...], got shape {tuple(x_seq.shape)}")
        rest = 0.0 if self.v_reset is None else self.v_reset
        v = torch.full_like(x_seq[0], rest)
        spikes, membrane = [], []
        for x in x_seq:
            if self.detach_membrane:
                v = v.detach()
            above_rest = v if rest == 0 else v - rest  # the same numbers; one operation fewer at rest 0
            if self.decay_input:
                h = v + (x - above_rest) / self.tau
            else:
                h = v - above_rest / self.tau + x
            s = self.spike_fn(h - self.v_threshold, self.alpha)
            s_reset = s.detach() if self.detach_reset else s
            if self.v_reset is None:
                v = h - self.v_threshold * s_reset
            elif self.v_reset == 0:
                v = h * (1 - s_reset)
            else:
                v = h * (1 - s_reset) + self.v_reset * s_reset
            spikes.append(s)
            membrane.append(h)
        out = torch.stack(spikes)
        return (out, torch.stack(membrane)) if return_membrane else out

    def extra_repr(self) -> str:
        return (f"tau={self.tau}, v_threshold={self.v_threshold}, v_reset={self.v_reset}, alpha={self.alpha}, "
                f"decay_input={self.decay_input}, detach_membrane={self.detach_membrane}")
