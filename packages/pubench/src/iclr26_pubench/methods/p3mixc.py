"""P3Mix-C: P3Mix with mean-teacher correction of unlabeled pseudo-labels."""
from __future__ import annotations

import copy

import torch

from .base import set_params_from
from .p3mix import P3MixBase
from .teachers import ema_update


class P3MixC(P3MixBase):
    """P3Mix whose unlabeled rows predicted above the band's upper edge by the EMA teacher (decay
    ``teacher_decay``) are corrected to positive, from epoch ``mix_start``. Needs no prior."""

    needs_prior = False

    def __init__(self, *, mix_start=15, n_candidates=100, teacher_decay=0.997, backbone="auto", epochs=40,
                 batch_size=256, lr=1e-3, weight_decay=1e-6, patience=None, device="auto", random_state=None,
                 selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _setup(self, X, s) -> None:
        self._teacher = copy.deepcopy(self.model_)

    def _refresh(self, epoch, X, s) -> None:
        if epoch < self.mix_start:
            return
        pt = torch.sigmoid(self._logits(X, self._teacher))
        self._target = torch.where((s == 0) & (pt > self.band[1]), 1.0, self._target)

    def _after_step(self) -> None:
        ema_update(self._teacher, self.model_, self.teacher_decay)
