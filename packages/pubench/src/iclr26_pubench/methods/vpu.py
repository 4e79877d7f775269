"""VPU (Chen et al., NeurIPS 2020): prior-free variational PU learning with MixUp regularisation."""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..losses import vpu_loss
from .base import TorchPUEstimator, set_params_from


class VPU(TorchPUEstimator):
    """Learns log Phi(x) = log sigmoid(g(x)) by the variational loss; needs no prior.

    Each epoch runs ``iterations`` steps on a batch of ``batch_size`` unlabeled rows and as many labeled
    rows; MixUp with mu ~ Beta(``mix_alpha``, ``mix_alpha``), weight ``lam``. Adam betas (0.5, 0.99); the
    learning rate is halved every ``halve_every`` epochs with an optimiser reset. Prediction: Phi normalised
    by its maximum over the training rows, above 0.5.
    """

    needs_prior = False

    def __init__(self, *, lam=0.03, mix_alpha=0.3, iterations=30, halve_every=20, backbone="auto", epochs=50,
                 batch_size=500, lr=3e-5, weight_decay=0.0,
                 patience=None, device="auto", random_state=None, selection="proxy_acc",
                 verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        p_idx, u_idx = torch.nonzero(s == 1).reshape(-1), torch.nonzero(s == 0).reshape(-1)
        rng = np.random.default_rng(int(torch.randint(2**31, (1,), generator=self._gen)))
        lr = self.lr
        for epoch in range(self.epochs):
            if epoch % self.halve_every == 0:
                opt = torch.optim.Adam(self.model_.parameters(), lr=lr, betas=(0.5, 0.99),
                                       weight_decay=self.weight_decay)
                lr /= 2
            for _ in range(self.iterations):
                bp = p_idx[torch.randint(len(p_idx), (min(self.batch_size, len(p_idx)),), generator=self._gen)
                           .to(X.device)]
                bu = u_idx[torch.randint(len(u_idx), (self.batch_size,), generator=self._gen).to(X.device)]
                log_phi_u = F.logsigmoid(self.model_(X[bu]).reshape(-1))
                log_phi_p = F.logsigmoid(self.model_(X[bp]).reshape(-1))
                k = min(len(bp), len(bu))
                mu = float(rng.beta(self.mix_alpha, self.mix_alpha))
                x_mix = mu * X[bp[:k]] + (1 - mu) * X[bu[:k]]
                target = (mu + (1 - mu) * log_phi_u[:k].exp()).detach().clamp_min(1e-6)
                log_phi_mix = F.logsigmoid(self.model_(x_mix).reshape(-1))
                loss = vpu_loss(log_phi_u, log_phi_p, log_phi_mix, target, self.lam)
                opt.zero_grad()
                loss.backward()
                opt.step()
            self._end_epoch(epoch, X, s, prior)

    def _current_threshold(self, g, s, prior) -> float:
        m = float(torch.sigmoid(g).max())
        half = min(0.5 * m, 1 - 1e-7)
        return math.log(half / (1 - half))

    def _finish(self, X, s, prior) -> None:
        self.threshold_ = self._current_threshold(self._logits(X), s, prior)
