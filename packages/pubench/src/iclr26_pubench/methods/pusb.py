"""PUSB / nnPUSB (Kato, Teshima, Honda, ICLR 2019): nnPU training, selection-bias-robust threshold."""
from __future__ import annotations

import numpy as np

from .base import set_params_from
from .nnpu import NNPU

THRESHOLDS = ("quantile", "zero")


class PUSB(NNPU):
    """nnPU with logistic loss; predicts positive above the (1 - prior)-quantile of the scores on training U.

    Args:
        threshold: ``"quantile"`` (the PUSB rule) or ``"zero"`` (the benchmark wrapper's evaluation).
        Other arguments as ``NNPU``.
    """

    def __init__(self, *, loss="logistic", threshold="quantile", gamma=1.0, beta=0.0, backbone="auto", epochs=40,
                 batch_size=256, lr=3e-4, weight_decay=1e-4,
                 patience=None, device="auto", random_state=None, selection="proxy_acc",
                 verbose=False):
        set_params_from(self, locals())

    def _current_threshold(self, g, s, prior) -> float:
        if self.threshold not in THRESHOLDS:
            raise ValueError(f"threshold: expected one of {list(THRESHOLDS)}, got {self.threshold!r}")
        if self.threshold == "zero":
            return 0.0
        return float(np.quantile(g[s == 0].cpu().numpy(), 1.0 - prior))

    def _finish(self, X, s, prior) -> None:
        self.threshold_ = self._current_threshold(self._logits(X), s, prior)
