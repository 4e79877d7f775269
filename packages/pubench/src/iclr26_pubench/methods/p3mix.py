"""P3Mix (Li et al., ICLR 2022): heuristic MixUp of marginal unlabeled rows with confident positives.

Shared by ``P3MixC`` (pseudo-label correction by a mean teacher) and ``P3MixE`` (early-learning regularisation).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..losses import entropy
from .base import TorchPUEstimator, minibatches


class P3MixBase(TorchPUEstimator):
    """Base loss: BCE with L as positive (weight 1) and U as negative (weight 0.5) plus 0.05 entropy on U.
    From epoch ``mix_start``: U rows with p in [0.15, 0.85] are mixed (coefficient ~ Beta(0.5, 0.5)) with partners
    from the ``n_candidates`` most confidently positive rows; the mixed target is the mixed label. Adam, learning
    rate halved every 20 epochs."""

    band = (0.15, 0.85)

    def _train(self, X, s, prior) -> None:
        opt = self._optimizer(self.model_.parameters())
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
        rng = np.random.default_rng(int(torch.randint(2**31, (1,), generator=self._gen)))
        self._target = s.float().clone()  # label of each row: 1 on L, 0 (or corrected) on U
        self._setup(X, s)
        for epoch in range(self.epochs):
            p_all = torch.sigmoid(self._logits(X))
            cand = torch.topk(p_all, min(self.n_candidates, len(X))).indices
            self._refresh(epoch, X, s)
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                g = self.model_(X[idx]).reshape(-1)
                sb, tb = s[idx], self._target[idx]
                w = torch.where(sb == 1, 1.0, 0.5)
                loss = (w * F.binary_cross_entropy_with_logits(g, tb, reduction="none")).mean()
                if (sb == 0).any():
                    loss = loss + 0.05 * entropy(torch.sigmoid(g[sb == 0])).mean()
                loss = loss + self._extra(g, idx)
                p = torch.sigmoid(g).detach()
                marginal = (sb == 0) & (p >= self.band[0]) & (p <= self.band[1])
                if epoch >= self.mix_start and marginal.any():
                    rows = idx[marginal]
                    partner = cand[torch.randint(len(cand), (len(rows),), generator=self._gen).to(X.device)]
                    lam = torch.as_tensor(rng.beta(0.5, 0.5, len(rows)), dtype=X.dtype, device=X.device)
                    lx = lam.reshape(-1, *([1] * (X.dim() - 1)))
                    x_mix = lx * X[rows] + (1 - lx) * X[partner]
                    t_mix = lam * self._target[rows] + (1 - lam)
                    loss = loss + F.binary_cross_entropy_with_logits(self.model_(x_mix).reshape(-1), t_mix)
                opt.zero_grad()
                loss.backward()
                opt.step()
                self._after_step()
            sched.step()
            self._end_epoch(epoch, X, s, prior)

    def _setup(self, X, s) -> None:
        """Method-specific state before training."""

    def _refresh(self, epoch, X, s) -> None:
        """Method-specific per-epoch update of ``self._target``."""

    def _extra(self, g, idx) -> torch.Tensor:
        return g.new_tensor(0.0)

    def _after_step(self) -> None:
        """Method-specific update after each optimiser step."""
