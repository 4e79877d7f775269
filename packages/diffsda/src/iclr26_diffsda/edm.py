"""EDM machinery (Karras et al. 2022): preconditioning, the sigma grid, the Heun sampler and its inversion.

The coefficient functions accept python floats, numpy arrays or torch tensors.
A denoiser is any callable ``D(x, sigma, z) -> x_hat`` where ``x`` is (B, ...), ``sigma``
a (B,) tensor of noise levels and ``z`` the conditioning (passed through unchanged).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

SIGMA_MIN = 0.002
SIGMA_MAX = 80.0
RHO = 7.0
INVERT_SIGMA_START = 1e-5

Denoiser = Callable[[torch.Tensor, torch.Tensor, object], torch.Tensor]


def c_skip(sigma, sigma_data: float = 0.5):
    """c_skip(sigma) = sigma_data^2 / (sigma^2 + sigma_data^2)."""
    return sigma_data**2 / (sigma**2 + sigma_data**2)


def c_out(sigma, sigma_data: float = 0.5):
    """c_out(sigma) = sigma sigma_data / sqrt(sigma^2 + sigma_data^2)."""
    return sigma * sigma_data / (sigma**2 + sigma_data**2) ** 0.5


def c_in(sigma, sigma_data: float = 0.5):
    """c_in(sigma) = 1 / sqrt(sigma^2 + sigma_data^2): the network input has unit variance."""
    return 1.0 / (sigma**2 + sigma_data**2) ** 0.5


def c_noise(sigma):
    """c_noise(sigma) = ln(sigma) / 4, the noise-level input of the network."""
    if isinstance(sigma, torch.Tensor):
        return torch.log(sigma) / 4
    return np.log(sigma) / 4


def loss_weight(sigma, sigma_data: float = 0.5):
    """lambda(sigma) = (sigma^2 + sigma_data^2) / (sigma sigma_data)^2 = 1 / c_out^2."""
    return (sigma**2 + sigma_data**2) / (sigma * sigma_data) ** 2


def _check_grid(steps: int, sigma_min: float, sigma_max: float, rho: float) -> None:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 2:
        raise ValueError(f"steps: expected an integer >= 2 for the Heun sampler, got {steps!r}")
    if not (math.isfinite(sigma_min) and math.isfinite(sigma_max)) or sigma_min <= 0:
        raise ValueError(f"sigma_min: expected a finite value > 0, got {sigma_min!r}")
    if sigma_min >= sigma_max:
        raise ValueError(f"sigma_min: expected sigma_min < sigma_max, got {sigma_min!r} >= {sigma_max!r}")
    if not rho > 0:
        raise ValueError(f"rho: expected a value > 0, got {rho!r}")


def karras_sigmas(steps: int, sigma_min: float = SIGMA_MIN, sigma_max: float = SIGMA_MAX, rho: float = RHO,
                  *, device: torch.device | str | None = None) -> torch.Tensor:
    """The Karras grid sigma_i = (s_max^(1/rho) + i/(N-1) (s_min^(1/rho) - s_max^(1/rho)))^rho, i < N, then 0.

    Returns:
        float64 tensor of shape (steps + 1,), decreasing from sigma_max to sigma_min, then 0.

    Raises:
        ValueError: steps < 2, sigma_min <= 0, sigma_min >= sigma_max or rho <= 0.
    """
    _check_grid(steps, sigma_min, sigma_max, rho)
    ramp = torch.linspace(0, 1, steps, dtype=torch.float64, device=device)
    lo, hi = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    sigmas = (hi + ramp * (lo - hi)) ** rho
    return torch.cat([sigmas, sigmas.new_zeros(1)])


def _ode_step(denoiser: Denoiser, x: torch.Tensor, z, s_now: torch.Tensor, s_next: torch.Tensor,
              dtype: torch.dtype) -> torch.Tensor:
    """One Heun step of dx/dsigma = (x - D(x; sigma)) / sigma in float64, from s_now to s_next."""
    batch = x.shape[0]

    def slope(x_at: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        denoised = denoiser(x_at.to(dtype), s.to(dtype).expand(batch), z).to(torch.float64)
        return (x_at - denoised) / s

    d = slope(x, s_now)
    x_next = x + (s_next - s_now) * d
    if s_next > 0:
        x_next = x + (s_next - s_now) * 0.5 * (d + slope(x_next, s_next))
    return x_next


def heun_sample(denoiser: Denoiser, x_T: torch.Tensor, z=None, *, steps: int = 18, sigma_min: float = SIGMA_MIN,
                sigma_max: float = SIGMA_MAX, rho: float = RHO) -> torch.Tensor:
    """Deterministic EDM Heun sampler (Karras Alg. 1, S_churn = 0), NFE = 2 steps - 1.

    Args:
        denoiser: ``D(x, sigma, z)``, x (B, ...), sigma (B,).
        x_T: unit-variance starting noise (B, ...); the state starts at sigma_0 x_T.
        z: conditioning handed to the denoiser unchanged.

    Returns:
        x_0 with the shape and dtype of ``x_T`` (the ODE is integrated in float64).

    Raises:
        ValueError: an invalid grid (see ``karras_sigmas``).
    """
    sigmas = karras_sigmas(steps, sigma_min, sigma_max, rho, device=x_T.device)
    x = x_T.to(torch.float64) * sigmas[0]
    for i in range(steps):
        x = _ode_step(denoiser, x, z, sigmas[i], sigmas[i + 1], x_T.dtype)
    return x.to(x_T.dtype)


def heun_invert(denoiser: Denoiser, x_0: torch.Tensor, z=None, *, steps: int = 18, sigma_min: float = SIGMA_MIN,
                sigma_max: float = SIGMA_MAX, rho: float = RHO) -> torch.Tensor:
    """The stochastic encoder: the same ODE run upward from sigma = 1e-5 through the flipped grid to sigma_max.

    Returns:
        x_T = x(sigma_max) / sigma_max, shape and dtype of ``x_0``; ``heun_sample`` of it with the
        same denoiser, z and grid returns ``x_0`` up to discretisation error.

    Raises:
        ValueError: an invalid grid (see ``karras_sigmas``).
    """
    grid = karras_sigmas(steps, sigma_min, sigma_max, rho, device=x_0.device)[:-1].flip(0)
    grid = torch.cat([grid.new_full((1,), INVERT_SIGMA_START), grid])
    x = x_0.to(torch.float64)
    for i in range(len(grid) - 1):
        x = _ode_step(denoiser, x, z, grid[i], grid[i + 1], x_0.dtype)
    return (x / grid[-1]).to(x_0.dtype)
