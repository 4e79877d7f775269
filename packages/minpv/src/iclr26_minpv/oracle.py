"""The exact time score of the Gaussian MI task: what a perfect network would output on a given path.

For ``x₁ ~ N(0, Σ)`` and ``x₀ ~ N(0, I)``, ``x_t = α_t x₀ + β_t x₁ ~ N(0, α_t² I + β_t² Σ)``. In the
eigenbasis of each ``2 × 2`` block of ``Σ`` (eigenvalues ``1 ± ρ``, coordinates ``(u ± v)/√2``) every
coordinate ``z`` with eigenvalue ``λ`` has variance ``S = α² + β² λ``, so ``∂_t log p_t(x)`` is the sum of
``−½ Ṡ/S + ½ Ṡ z²/S²`` with ``Ṡ = 2αα̇ + 2ββ̇λ``. Integrating it isolates the error a path adds through
the time quadrature alone (no network in the loop).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from .data import _check_even_dim, gaussian_mi_correlation, gaussian_mi_task, true_log_ratio_gaussian_mi
from .paths import InterpolantPath
from .quadrature import integrate_time_score


def gaussian_mi_time_score(path: InterpolantPath, d: int) -> Callable[[Tensor, Tensor], Tensor]:
    """The exact ``∂_t log p_t(x)`` of ``gaussian_mi_task(d)`` along ``path``: ``score(x (B, d), t (B, 1)) -> (B, 1)``.
    """
    d = _check_even_dim(d)
    rho = gaussian_mi_correlation(d)

    def score(x: Tensor, t: Tensor) -> Tensor:
        alpha, beta, dalpha, dbeta = path.coefficients(t)
        u, v = x[:, 0::2], x[:, 1::2]
        out = torch.zeros_like(alpha)
        for z, lam in (((u + v) / math.sqrt(2.0), 1.0 + rho), ((u - v) / math.sqrt(2.0), 1.0 - rho)):
            s = alpha**2 + beta**2 * lam
            ds = 2.0 * alpha * dalpha + 2.0 * beta * dbeta * lam
            out = out + (0.5 * ds / s * (z**2 / s - 1.0)).sum(dim=1, keepdim=True)
        return out

    return score


def exact_score_bias(path: InterpolantPath, d: int, n_points: int = 100, n: int = 2000, seed: int = 0) -> float:
    """``mean(∫ exact score dt − true log r)`` in nats over ``n`` joint samples: the path's quadrature bias.

    Uses the estimator's quadrature (trapezoid on ``n_points`` uniform times of ``[ε, 1 − ε]``, ``ε`` the path's).
    """
    joint, _, _ = gaussian_mi_task(d, n, seed=seed)
    dtype = next(iter(path.parameters()), torch.zeros((), dtype=torch.float64)).dtype
    with torch.no_grad():
        x = torch.as_tensor(joint, dtype=dtype)
        got = integrate_time_score(gaussian_mi_time_score(path, d), x, n_points=n_points, eps=path.eps)
    return float(got.double().mean()) - float(true_log_ratio_gaussian_mi(joint, d).mean())
