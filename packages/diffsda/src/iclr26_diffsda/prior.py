"""The optional latent prior: a DDPM over the flattened codes (s, d^{1:V}) for unconditional generation.

Linear beta schedule from beta1 to betaT over ``steps``; an epsilon-prediction MLP
(``LatentMLP``: 10 layers of width 4 dim, the input concatenated at every layer, LayerNorm,
FiLM by a time embedding); sampled by DDPM ancestral steps or DDIM (eta = 0.01).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .networks import FourierFeatures


class LatentMLP(nn.Module):
    """epsilon_theta(x_t, t): (B, dim), (B,) in [0, 1] -> (B, dim)."""

    def __init__(self, dim: int, layers: int = 10):
        super().__init__()
        width = 4 * dim
        self.temb = nn.Sequential(FourierFeatures(16, 1.0), nn.Linear(32, width), nn.SiLU())
        self.linears = nn.ModuleList([nn.Linear(dim if i == 0 else width + dim, width) for i in range(layers - 1)])
        self.films = nn.ModuleList([nn.Linear(width, 2 * width) for _ in range(layers - 1)])
        self.norms = nn.ModuleList([nn.LayerNorm(width) for _ in range(layers - 1)])
        self.out = nn.Linear(width + dim, dim)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        emb = self.temb(t)
        h = x
        for i, linear in enumerate(self.linears):
            h = linear(h if i == 0 else torch.cat([h, x], dim=1))
            scale, shift = self.films[i](emb).chunk(2, dim=1)
            h = F.silu(self.norms[i](h * (1 + scale) + shift))
        return self.out(torch.cat([h, x], dim=1))


class LatentPrior(nn.Module):
    """DDPM prior p(s, d^{1:V}) over standardised flattened codes of width ``dim``."""

    def __init__(self, dim: int, steps: int = 1000, beta1: float = 1e-4, betaT: float = 0.02):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim: expected an integer >= 1, got {dim!r}")
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 2:
            raise ValueError(f"steps: expected an integer >= 2, got {steps!r}")
        if not 0 < beta1 < betaT < 1:
            raise ValueError(f"beta1, betaT: expected 0 < beta1 < betaT < 1, got {beta1!r}, {betaT!r}")
        self.dim, self.steps = int(dim), int(steps)
        betas = torch.linspace(beta1, betaT, steps, dtype=torch.float64)
        self.register_buffer("alpha_bar", torch.cumprod(1 - betas, 0).float())
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))
        self.net = LatentMLP(dim)

    def _check(self, codes) -> torch.Tensor:
        codes = torch.as_tensor(codes, dtype=torch.float32)
        if codes.dim() != 2 or codes.shape[1] != self.dim or not torch.isfinite(codes).all():
            raise ValueError(f"codes: expected finite (N, {self.dim}) flattened codes, got shape {tuple(codes.shape)}")
        return codes.to(self.alpha_bar.device)

    def fit(self, codes, *, epochs: int = 200, batch_size: int = 128, lr: float = 1e-3, seed: int = 0) -> LatentPrior:
        """Trains the epsilon-prediction loss ||eps - eps_theta(sqrt(ab_t) x + sqrt(1 - ab_t) eps, t)||^2."""
        codes = self._check(codes)
        self.mean.copy_(codes.mean(0))
        self.std.copy_(codes.std(0).clamp_min(1e-6))
        data = (codes - self.mean) / self.std
        gen = torch.Generator().manual_seed(int(seed))
        # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
        opt = torch.optim.AdamW(self.parameters(), lr=lr, foreach=True)
        self.train()
        for _ in range(epochs):
            for idx in torch.randperm(len(data), generator=gen).split(batch_size):
                x0 = data[idx.to(data.device)]
                t = torch.randint(0, self.steps, (len(x0),), generator=gen).to(data.device)
                ab = self.alpha_bar[t][:, None]
                eps = torch.randn_like(x0)
                loss = F.mse_loss(self.net(ab.sqrt() * x0 + (1 - ab).sqrt() * eps, t.float() / self.steps), eps)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        self.eval()
        return self

    @torch.no_grad()
    def sample(self, n: int, *, ddim: bool = True, ddim_steps: int = 50, eta: float = 0.01,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """n code vectors (n, dim) in the original (unstandardised) units."""
        dev = self.alpha_bar.device
        x = torch.randn(n, self.dim, generator=generator, device=dev if generator is None else generator.device).to(dev)
        ts = (np.linspace(self.steps - 1, 0, ddim_steps).round().astype(int) if ddim else np.arange(self.steps)[::-1])
        for i, t in enumerate(ts):
            ab = self.alpha_bar[t]
            ab_prev = self.alpha_bar[ts[i + 1]] if i + 1 < len(ts) else torch.ones((), device=dev)
            eps = self.net(x, torch.full((n,), t / self.steps, device=dev))
            x0 = (x - (1 - ab).sqrt() * eps) / ab.sqrt()
            # DDPM's ancestral step is DDIM with eta = 1 on the full grid
            sig = (eta if ddim else 1.0) * math.sqrt(float((1 - ab_prev) / (1 - ab) * (1 - ab / ab_prev)))
            dir_x = (1 - ab_prev - sig**2).clamp_min(0).sqrt() * eps
            noise = torch.randn(x.shape, generator=generator, device=dev if generator is None else generator.device)
            x = ab_prev.sqrt() * x0 + dir_x + sig * noise.to(dev)
        return x * self.std + self.mean
