"""CGenPU (Papic et al.): an auxiliary-classifier conditional GAN for PU data; its auxiliary head classifies.

Experimental (Tier C): architecture and losses are an inferred reading of the method.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .base import TorchPUEstimator, minibatches, set_params_from


class _Critic(nn.Module):
    """Shared trunk with three logits: real-L vs fake-positive, real-U vs fake-mixture, auxiliary class."""

    def __init__(self, d: int):
        super().__init__()
        self.trunk = nn.Sequential(nn.Flatten(), nn.Linear(d, 100), nn.LeakyReLU(0.2), nn.Linear(100, 100),
                                   nn.LeakyReLU(0.2))
        self.heads = nn.Linear(100, 3)

    def all(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads(self.trunk(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.all(x)[:, 2:3]


class CGenPU(TorchPUEstimator):
    """G(z, y) generates positives (y = 1) and negatives (y = 0). The critic's first head separates L from
    generated positives, the second U from a prior-weighted mixture of generated positives and negatives,
    the third (the PU classifier) is trained on generated rows with their conditioning labels and on L as
    positive. G fools both adversarial heads and keeps its samples classifiable."""

    def __init__(self, *, latent_dim=16, backbone="auto", epochs=60, batch_size=128, lr=2e-4, weight_decay=0.0,
                 device="auto", random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _make_model(self, shape):
        self._d = int(np.prod(shape))
        return _Critic(self._d)

    def _train(self, X, s, prior) -> None:
        D, k = self.model_, self.latent_dim
        G = nn.Sequential(nn.Linear(k + 1, 100), nn.ReLU(), nn.Linear(100, 100), nn.ReLU(),
                          nn.Linear(100, self._d)).to(X.device)
        opt_d = torch.optim.Adam(D.parameters(), lr=self.lr, betas=(0.5, 0.999))
        opt_g = torch.optim.Adam(G.parameters(), lr=self.lr, betas=(0.5, 0.999))
        bce = F.binary_cross_entropy_with_logits

        def generate(n, label):
            z = torch.randn((n, k), generator=self._gen).to(X.device)
            return G(torch.cat([z, label[:, None]], 1)).reshape(n, *X.shape[1:])

        for epoch in range(self.epochs):
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                x, lab = X[idx], s[idx] == 1
                n = len(idx)
                y_mix = (torch.rand(n, generator=self._gen) < prior).float().to(X.device)
                ones, zeros = torch.ones(n, device=X.device), torch.zeros(n, device=X.device)
                fake_pos, fake_mix = generate(n, ones), generate(n, y_mix)
                out_real, out_fp, out_fm = D.all(x), D.all(fake_pos.detach()), D.all(fake_mix.detach())
                loss_d = bce(out_fp[:, 0], zeros) + bce(out_fm[:, 1], zeros) + bce(out_real[~lab, 1], ones[~lab])
                if lab.any():
                    loss_d = loss_d + bce(out_real[lab, 0], ones[lab]) + bce(out_real[lab, 2], ones[lab])
                loss_d = loss_d + bce(out_fp[:, 2], ones) + bce(out_fm[:, 2], y_mix)
                opt_d.zero_grad()
                loss_d.backward()
                opt_d.step()
                out_fp, out_fm = D.all(fake_pos), D.all(fake_mix)
                loss_g = (bce(out_fp[:, 0], ones) + bce(out_fm[:, 1], ones) + bce(out_fp[:, 2], ones)
                          + bce(out_fm[:, 2], y_mix))
                opt_g.zero_grad()
                loss_g.backward()
                opt_g.step()
            self._end_epoch(epoch, X, s, prior)
        self.generator_ = G.eval()
