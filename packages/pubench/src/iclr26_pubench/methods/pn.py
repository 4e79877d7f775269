"""The PN oracle: binary cross-entropy on the true labels of the constructed training rows."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..data import check_binary_labels
from .base import TorchPUEstimator, set_params_from


class PNOracle(TorchPUEstimator):
    """Supervised upper reference: ``fit(X, s, y=true_labels)``; ``s`` is only checked, ``y`` is learned."""

    needs_prior = False

    def __init__(self, *, backbone="auto", epochs=40, batch_size=256, lr=3e-4, weight_decay=1e-4,
                 patience=None, device="auto",
                 random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def fit(self, X, s, *, y=None, prior=None, X_val=None, s_val=None, y_val=None) -> PNOracle:
        """As ``PUEstimator.fit``, plus ``y``: ``(n,)`` true labels in {0, 1} (required)."""
        if y is None:
            raise ValueError("y: PNOracle is the supervised oracle; pass the true labels y= of the training rows")
        y = check_binary_labels(y)
        if len(y) != len(np.asarray(s)):
            raise ValueError(f"y: expected {len(np.asarray(s))} labels (one per row of X), got {len(y)}")
        self._y = y
        super().fit(X, s, prior=prior, X_val=X_val, s_val=s_val, y_val=y_val)
        del self._y
        return self

    def _train(self, X, s, prior) -> None:
        self._yt = torch.as_tensor(self._y, device=X.device).float()
        super()._train(X, s, prior)
        del self._yt

    def _batch_loss(self, model, x, s, idx, epoch, prior):
        return F.binary_cross_entropy_with_logits(model(x).reshape(-1), self._yt[idx])
