"""P3Mix-E: P3Mix with early-learning regularisation (ELR) instead of label correction."""
from __future__ import annotations

import torch

from .base import set_params_from
from .p3mix import P3MixBase


class P3MixE(P3MixBase):
    """P3Mix plus the ELR penalty ``elr_weight`` * mean log(1 - <p, t>), where t is each row's temporal
    ensemble of predictions (EMA ``elr_beta``) and <p, t> = p t + (1 - p)(1 - t). Needs no prior."""

    needs_prior = False

    def __init__(self, *, mix_start=15, n_candidates=100, elr_beta=0.7, elr_weight=3.0, backbone="auto", epochs=40,
                 batch_size=256, lr=1e-3, weight_decay=1e-6, patience=None, device="auto", random_state=None,
                 selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _setup(self, X, s) -> None:
        self._ens = torch.full((len(X),), 0.5, device=X.device)

    def _extra(self, g, idx) -> torch.Tensor:
        p = torch.sigmoid(g).clamp(1e-4, 1 - 1e-4)
        self._ens[idx] = self.elr_beta * self._ens[idx] + (1 - self.elr_beta) * p.detach()
        t = self._ens[idx]
        inner = (p * t + (1 - p) * (1 - t)).clamp(max=1 - 1e-4)
        return self.elr_weight * torch.log(1 - inner).mean()
