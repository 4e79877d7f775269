"""Self-PU (Chen et al., ICML 2020): nnPU plus self-paced pseudo-labels and mean-teacher distillation."""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from ..losses import nnpu_risk
from .base import TorchPUEstimator, set_params_from
from .teachers import ema_update


class SelfPU(TorchPUEstimator):
    """nnPU (sigmoid loss) plus (a) from epoch ``pseudo_start``, refreshed every 2 epochs, the most confident
    share of U (10 % rising linearly to 20 % over 30 epochs) pseudo-labelled by the model and trained with BCE,
    and (b) from epoch ``teacher_start`` an EMA teacher (decay 0.999) with a probability-MSE consistency of
    weight 0.3 ramped over 20 epochs. The meta-reweighting part of the original is omitted (as in the benchmark).
    """

    def __init__(self, *, pseudo_start=5, teacher_start=10, teacher_decay=0.999, consistency=0.3,
                 backbone="auto", epochs=40, batch_size=256, lr=1e-3, weight_decay=5e-4, patience=None, device="auto",
                 random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        self._teacher = copy.deepcopy(self.model_)
        self._pseudo = torch.full((len(X),), -1.0, device=X.device)  # -1 = no pseudo-label
        super()._train(X, s, prior)
        del self._teacher, self._pseudo

    def _start_epoch(self, epoch, X, s, prior) -> None:
        if epoch < self.pseudo_start or (epoch - self.pseudo_start) % 2:
            return
        p = torch.sigmoid(self._logits(X))
        share = 0.1 + 0.1 * min(1.0, (epoch - self.pseudo_start) / 30)
        u = torch.nonzero(s == 0).reshape(-1)
        chosen = u[torch.topk((p[u] - 0.5).abs(), max(1, int(share * len(u)))).indices]
        self._pseudo.fill_(-1.0)
        self._pseudo[chosen] = (p[chosen] > 0.5).float()

    def _batch_loss(self, model, x, s, idx, epoch, prior):
        g = model(x).reshape(-1)
        loss = nnpu_risk(g, s, prior, "sigmoid")
        pl = self._pseudo[idx]
        if (pl >= 0).any():
            loss = loss + F.binary_cross_entropy_with_logits(g[pl >= 0], pl[pl >= 0])
        if epoch >= self.teacher_start:
            ramp = min(1.0, (epoch - self.teacher_start + 1) / 20)
            with torch.no_grad():
                pt = torch.sigmoid(self._teacher(x).reshape(-1))
            loss = loss + self.consistency * ramp * F.mse_loss(torch.sigmoid(g), pt)
            ema_update(self._teacher, model, self.teacher_decay)
        return loss
