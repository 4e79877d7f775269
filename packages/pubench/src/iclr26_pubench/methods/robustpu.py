"""Robust-PU (Zhu et al., KDD 2023): self-paced training that self-corrects noisy negatives."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..losses import nnpu_risk
from .base import TorchPUEstimator, minibatches, set_params_from


class RobustPU(TorchPUEstimator):
    """Pre-trains ``pretrain_epochs`` with nnPU (Adam ``pretrain_lr``), then ``outer`` x ``inner`` epochs of
    weighted BCE (Adam ``lr``, no weight decay) on a self-paced subset.

    Hardness of a row = logistic loss of its current label (L: +1, U: -1) at temperature 1.0 (positives)
    or 1.5 (negatives), min-max normalised per side (inferred). A row is kept when hardness < lambda, with
    lambda growing linearly from ``alpha`` (0.1 positives, 0.11 negatives) to 1 over 10 growth steps; kept
    rows weigh 1 - hardness/lambda. Between outer rounds unlabeled labels are re-assigned from the model.
    ``epochs`` is the pre-training length.
    """

    def __init__(self, *, outer=5, inner=5, pretrain_lr=1e-4, alpha_pos=0.1, alpha_neg=0.11, backbone="auto",
                 epochs=20, batch_size=256, lr=1e-2, weight_decay=0.0, patience=None, device="auto", random_state=None,
                 selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        opt = self._optimizer(self.model_.parameters(), lr=self.pretrain_lr, weight_decay=1e-4)
        for epoch in range(self.epochs):
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                loss = nnpu_risk(self.model_(X[idx]).reshape(-1), s[idx], prior)
                opt.zero_grad()
                loss.backward()
                opt.step()
            self._end_epoch(epoch, X, s, prior)
        label = torch.where(s == 1, 1.0, -1.0)
        opt = self._optimizer(self.model_.parameters())
        total, step = self.outer * self.inner, 0
        for k in range(self.outer):
            for _ in range(self.inner):
                growth = min(1.0, math.ceil(10 * (step + 1) / total) / 10)
                lam = torch.where(label > 0, self.alpha_pos + (1 - self.alpha_pos) * growth,
                                  self.alpha_neg + (1 - self.alpha_neg) * growth)
                weight = self._weights(self._logits(X), label, lam)
                for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                    if weight[idx].sum() == 0:
                        continue
                    g = self.model_(X[idx]).reshape(-1)
                    loss = F.binary_cross_entropy_with_logits(g, (label[idx] > 0).float(), weight=weight[idx],
                                                              reduction="sum") / weight[idx].sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                step += 1
                self._end_epoch(self.epochs + step - 1, X, s, prior, {"kept": float((weight > 0).float().mean())})
            if k < self.outer - 1:
                label = torch.where(s == 1, 1.0, torch.where(self._logits(X) > 0, 1.0, -1.0))

    @staticmethod
    def _weights(g, label, lam) -> torch.Tensor:
        temp = torch.where(label > 0, 1.0, 1.5)
        hard = F.softplus(-label * g / temp)
        out = torch.zeros_like(g)
        for side in (label > 0, label < 0):
            if side.any():
                h = hard[side]
                h = (h - h.min()) / (h.max() - h.min()).clamp_min(1e-12)
                out[side] = torch.where(h < lam[side], 1 - h / lam[side], 0.0)
        return out
