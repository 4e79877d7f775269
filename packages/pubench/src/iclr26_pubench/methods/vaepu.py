"""VAE-PU (Na et al., CIKM 2020): a VAE generates pseudo-negatives that complement the PU risk.

Experimental (Tier C): the label-relevant/irrelevant latent split is reduced to one latent code (inferred).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..losses import nnpu_risk
from .base import TorchPUEstimator, minibatches, set_params_from


class _VAE(nn.Module):
    def __init__(self, d: int, z: int):
        super().__init__()
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(d, 100), nn.ReLU(), nn.Linear(100, 2 * z))
        self.dec = nn.Sequential(nn.Linear(z, 100), nn.ReLU(), nn.Linear(100, d))
        self.z = z

    def elbo_loss(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        mu, logvar = self.enc(x).chunk(2, dim=1)
        zs = mu + torch.randn(mu.shape, generator=gen).to(x.device) * (0.5 * logvar).exp()
        rec = ((self.dec(zs) - x.flatten(1)) ** 2).sum(1)
        kl = 0.5 * (mu**2 + logvar.exp() - 1 - logvar).sum(1)
        return (rec + kl).mean()


class VAEPU(TorchPUEstimator):
    """Trains a VAE (latent ``latent_dim``) on U for ``vae_epochs``; then the classifier minimises the nnPU risk
    plus ``gen_weight`` x BCE(generated rows the current classifier scores negative, 0)."""

    def __init__(self, *, latent_dim=8, vae_epochs=20, gen_weight=0.5, backbone="auto", epochs=40, batch_size=256,
                 lr=1e-3, weight_decay=1e-4, patience=None, device="auto", random_state=None, selection="proxy_acc",
                 verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        shape = X.shape[1:]
        self.vae_ = _VAE(int(np.prod(shape)), self.latent_dim).to(X.device)
        opt_v = torch.optim.Adam(self.vae_.parameters(), lr=1e-3)
        xu = X[s == 0]
        for _ in range(self.vae_epochs):
            for idx in minibatches(len(xu), self.batch_size, self._gen, X.device):
                loss = self.vae_.elbo_loss(xu[idx], self._gen)
                opt_v.zero_grad()
                loss.backward()
                opt_v.step()
        self.vae_.eval()
        super()._train(X, s, prior)

    def _batch_loss(self, model, x, s, idx, epoch, prior):
        loss = nnpu_risk(model(x).reshape(-1), s, prior)
        with torch.no_grad():
            z = torch.randn((len(x), self.latent_dim), generator=self._gen).to(x.device)
            fake = self.vae_.dec(z).reshape(x.shape)
        g_fake = model(fake).reshape(-1)
        neg = g_fake.detach() < 0
        if neg.any():
            loss = loss + self.gen_weight * F.binary_cross_entropy_with_logits(g_fake[neg], torch.zeros_like(
                g_fake[neg]))
        return loss
