"""LBE (Gong et al., TPAMI 2021): labeling-bias estimation by EM over a classifier and a propensity model."""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from .backbones import build_backbone
from .base import TorchPUEstimator, set_params_from


class LBE(TorchPUEstimator):
    """Classifier f(x) = P(y=1|x) and propensity h(x) = P(s=1|y=1,x), with P(s=1|x) = f h.

    Pre-training: ``pretrain_steps`` full-batch Adam steps of each model on s. Then ``epochs`` EM epochs:
    E-step w = 1 on L and f(1-h)/(f(1-h) + 1 - f) on U; M-step ``m_steps`` updates, each on a random
    ``subset`` share of the rows: weighted BCE of f against w on the ``keep`` share of rows with the smallest
    loss, and BCE of h against s weighted by w. Needs no prior. Prediction: f > 0.5.
    """

    needs_prior = False

    def __init__(self, *, pretrain_steps=100, subset=0.1, keep=0.8, m_steps=10, backbone="auto", epochs=20,
                 batch_size=256, lr=5e-4, weight_decay=1e-4,
                 patience=None, device="auto", random_state=None, selection="proxy_acc",
                 verbose=False):
        set_params_from(self, locals())

    def _make_model(self, shape):
        self._h = build_backbone(self.backbone, shape)
        return build_backbone(self.backbone, shape)

    def _train(self, X, s, prior) -> None:
        f, h = self.model_, self._h.to(X.device)
        self.propensity_model_ = h
        opt_f, opt_h = self._optimizer(f.parameters()), self._optimizer(h.parameters())
        sf = s.float()
        for _ in range(self.pretrain_steps):
            for model, opt in ((f, opt_f), (h, opt_h)):
                loss = F.binary_cross_entropy_with_logits(model(X).reshape(-1), sf)
                opt.zero_grad()
                loss.backward()
                opt.step()
        n_sub = max(2, int(round(self.subset * len(X))))
        for epoch in range(self.epochs):
            with torch.no_grad():
                pf, ph = torch.sigmoid(self._logits(X, f)), torch.sigmoid(self._logits(X, h))
                w = torch.where(s == 1, 1.0, pf * (1 - ph) / (pf * (1 - ph) + 1 - pf).clamp_min(1e-8))
            for _ in range(self.m_steps):
                idx = torch.randperm(len(X), generator=self._gen)[:n_sub].to(X.device)
                lf = F.binary_cross_entropy_with_logits(f(X[idx]).reshape(-1), w[idx], reduction="none")
                k = max(1, int(self.keep * len(idx)))
                loss_f = torch.topk(lf, k, largest=False).values.mean()
                lh = F.binary_cross_entropy_with_logits(h(X[idx]).reshape(-1), sf[idx], weight=w[idx])
                opt_f.zero_grad()
                opt_h.zero_grad()
                (loss_f + lh).backward()
                opt_f.step()
                opt_h.step()
            self._end_epoch(epoch, X, s, prior, {"mean_posterior_u": float(w[s == 0].mean())})
        self.propensity_model_ = copy.deepcopy(h).eval()
        del self._h
