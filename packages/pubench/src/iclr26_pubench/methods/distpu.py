"""Dist-PU (Zhao et al., CVPR 2022): label-distribution consistency, then MixUp on pseudo-labels."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..losses import distpu_loss, entropy
from .base import TorchPUEstimator, minibatches, set_params_from


class DistPU(TorchPUEstimator):
    """Stage 1 (``epochs``): L_dist + co_mu * mean_U H(p), Adam (lr, wd 5e-3), cosine annealing.
    Stage 2 (``epochs_stage2``): pseudo-labels on U from the current scores (refreshed every epoch),
    MixUp with Beta(6, 6); loss L_dist + 0.004 H(U) + 0.04 H(mixed) + 5 BCE(mixed); lr 5e-5, wd 1e-3.
    """

    def __init__(self, *, co_mu=0.002, epochs_stage2=60, lr_stage2=5e-5, weight_decay_stage2=1e-3, mix_alpha=6.0,
                 backbone="auto", epochs=60, batch_size=256, lr=5e-4, weight_decay=5e-3, patience=None, device="auto",
                 random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _stage(self, X, s, prior, epochs, lr, wd, first_epoch, mix: bool) -> None:
        opt = self._optimizer(self.model_.parameters(), lr, wd)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(epochs, 1))
        rng = np.random.default_rng(int(torch.randint(2**31, (1,), generator=self._gen)))
        for epoch in range(epochs):
            target = torch.where(s == 1, 1.0, torch.sigmoid(self._logits(X)))  # pseudo-labels, refreshed per epoch
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                g = self.model_(X[idx]).reshape(-1)
                sb = s[idx]
                p = torch.sigmoid(g)
                ent_u = entropy(p[sb == 0]).mean() if (sb == 0).any() else g.new_tensor(0.0)
                if not mix:
                    loss = distpu_loss(g, sb, prior) + self.co_mu * ent_u
                else:
                    lam = float(rng.beta(self.mix_alpha, self.mix_alpha))
                    perm = torch.randperm(len(idx), generator=self._gen).to(X.device)
                    x_mix = lam * X[idx] + (1 - lam) * X[idx][perm]
                    t_mix = lam * target[idx] + (1 - lam) * target[idx][perm]
                    g_mix = self.model_(x_mix).reshape(-1)
                    loss = (distpu_loss(g, sb, prior) + 0.004 * ent_u + 0.04 * entropy(torch.sigmoid(g_mix)).mean()
                            + 5.0 * F.binary_cross_entropy_with_logits(g_mix, t_mix))
                opt.zero_grad()
                loss.backward()
                opt.step()
            sched.step()
            self._end_epoch(first_epoch + epoch, X, s, prior, {"stage": 2.0 if mix else 1.0})

    def _train(self, X, s, prior) -> None:
        self._stage(X, s, prior, self.epochs, self.lr, self.weight_decay, 0, mix=False)
        self._stage(X, s, prior, self.epochs_stage2, self.lr_stage2, self.weight_decay_stage2, self.epochs, mix=True)
