"""PAN (Hu et al., AAAI 2021): predictive adversarial networks; the classifier plays the generator.

Experimental (Tier C): the objective is an inferred reading of the paper.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from .base import TorchPUEstimator, minibatches, set_params_from


class PAN(TorchPUEstimator):
    """A discriminator D separates L from C-weighted U (U rows weighted by 1 - C(x)); the classifier C
    minimises ``kl_weight`` x KL(t || C) on U, t = D(x) / mean_L D (the Elkan-Noto rescaling of the
    labeled-vs-unlabeled probability, clipped to [0, 1]), plus ``reliability`` x BCE(C(L), 1). Needs no prior.
    """

    needs_prior = False

    def __init__(self, *, kl_weight=1.5, reliability=0.4, backbone="auto", epochs=120, batch_size=64, lr=3e-4,
                 weight_decay=0.0, device="auto", random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        C = self.model_
        D = copy.deepcopy(C)
        for m in D.modules():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()
        opt_c, opt_d = self._optimizer(C.parameters()), self._optimizer(D.parameters())
        for epoch in range(self.epochs):
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                x, sb = X[idx], s[idx]
                lab = sb == 1
                if not lab.any() or lab.all():
                    continue
                d_logit = D(x).reshape(-1)
                wu = 1 - torch.sigmoid(C(x[~lab]).reshape(-1)).detach()
                loss_d = F.binary_cross_entropy_with_logits(d_logit[lab], torch.ones(int(lab.sum()),
                                                                                     device=x.device))
                loss_d = loss_d + (wu * F.softplus(d_logit[~lab])).sum() / wu.sum().clamp_min(1e-8)
                opt_d.zero_grad()
                loss_d.backward()
                opt_d.step()
                with torch.no_grad():
                    pd = torch.sigmoid(D(x).reshape(-1))
                    t = (pd[~lab] / pd[lab].mean().clamp_min(1e-6)).clamp(1e-4, 1 - 1e-4)
                c = torch.sigmoid(C(x).reshape(-1)).clamp(1e-4, 1 - 1e-4)
                cu = c[~lab]
                kl = (t * (t / cu).log() + (1 - t) * ((1 - t) / (1 - cu)).log()).mean()
                loss_c = self.kl_weight * kl - self.reliability * c[lab].log().mean()
                opt_c.zero_grad()
                loss_c.backward()
                opt_c.step()
            self._end_epoch(epoch, X, s, prior)
        self.discriminator_ = D.eval()
