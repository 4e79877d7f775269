"""Holistic-PU (Wang et al., NeurIPS 2023): trend-based disambiguation, then FixMatch-style training."""
from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F

from .base import TorchPUEstimator, minibatches, set_params_from
from .teachers import ema_update, jenks_two_classes, strong_view, trend_scores


class HolisticPU(TorchPUEstimator):
    """Phase 1 (``epochs``): P-vs-U classifier on batches whose positives are re-sampled to half of each batch;
    every unlabeled row's probability is recorded after each epoch, its trend (mean successive difference,
    three-sigma filtered) split by two-class Jenks breaks into pseudo-positives (rising) and pseudo-negatives.
    Phase 2 (``epochs_phase2``): soft labels (L = 1, U = pseudo) on the weak view plus, on U, BCE of the strong
    view against the confident (>= ``confidence``) hard pseudo-label of the weak view. SGD Nesterov (momentum 0.9),
    EMA model (decay 0.999) used for prediction. Needs no prior.
    """

    needs_prior = False

    def __init__(self, *, epochs_phase2=25, confidence=0.9, ema_decay=0.999, backbone="auto", epochs=15,
                 batch_size=64, lr=0.01, weight_decay=5e-4, patience=None, device="auto", random_state=None,
                 selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _sgd(self):
        return torch.optim.SGD(self.model_.parameters(), lr=self.lr, momentum=0.9, nesterov=True,
                               weight_decay=self.weight_decay)

    def _train(self, X, s, prior) -> None:
        p_idx, u_idx = torch.nonzero(s == 1).reshape(-1), torch.nonzero(s == 0).reshape(-1)
        opt = self._sgd()
        record = []
        half = max(1, self.batch_size // 2)
        for epoch in range(self.epochs):
            for bu in minibatches(len(u_idx), half, self._gen, X.device):
                bp = p_idx[torch.randint(len(p_idx), (len(bu),), generator=self._gen).to(X.device)]
                rows = torch.cat([bp, u_idx[bu]])
                loss = F.binary_cross_entropy_with_logits(self.model_(X[rows]).reshape(-1), s[rows].float())
                opt.zero_grad()
                loss.backward()
                opt.step()
            record.append(torch.sigmoid(self._logits(X[u_idx])).cpu().numpy())
            self._end_epoch(epoch, X, s, prior)
        trend = trend_scores(np.stack(record))
        pseudo = torch.as_tensor(trend > jenks_two_classes(trend), dtype=X.dtype, device=X.device)
        target = s.float().clone()
        target[u_idx] = pseudo
        self.pseudo_positive_share_ = float(pseudo.mean())
        teacher = copy.deepcopy(self.model_)
        opt = self._sgd()
        for epoch in range(self.epochs_phase2):
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                g = self.model_(X[idx]).reshape(-1)
                loss = F.binary_cross_entropy_with_logits(g, target[idx])
                unl = s[idx] == 0
                if unl.any():
                    p = torch.sigmoid(g[unl]).detach()
                    mask = (torch.maximum(p, 1 - p) >= self.confidence).float()
                    gs = self.model_(strong_view(X[idx][unl], self._gen)).reshape(-1)
                    loss = loss + (mask * F.binary_cross_entropy_with_logits(gs, (p > 0.5).float(),
                                                                             reduction="none")).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                ema_update(teacher, self.model_, self.ema_decay)
            self._end_epoch(self.epochs + epoch, X, s, prior)
        self.model_.load_state_dict(teacher.state_dict())
