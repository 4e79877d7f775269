"""PULDA (Jiang et al., TPAMI 2023): label-distribution alignment with an EMA of the U mean."""
from __future__ import annotations

from ..losses import pulda_loss, two_way_margin_loss
from .base import TorchPUEstimator, set_params_from


class PULDA(TorchPUEstimator):
    """Minimises 2 prior (1 - mean_L p) + d(EMA mean_U p, prior) / (1 - alpha_u) [+ two-way margin term].

    Args:
        alpha_u: EMA factor of the U mean (the first batch initialises it).
        two_way: add the two-way sigmoid margin term (margin ``margin``); off by default (inferred).
        Other arguments as ``NNPU``.
    """

    def __init__(self, *, alpha_u=0.85, two_way=False, margin=0.6, backbone="auto", epochs=40, batch_size=256,
                 lr=3e-4, weight_decay=1e-4,
                 patience=None, device="auto", random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        self._ema = None
        super()._train(X, s, prior)
        del self._ema

    def _batch_loss(self, model, x, s, idx, epoch, prior):
        g = model(x).reshape(-1)
        loss, self._ema = pulda_loss(g, s, prior, self._ema, self.alpha_u)
        if self.two_way:
            loss = loss + two_way_margin_loss(g, s, prior, self.margin)
        return loss
