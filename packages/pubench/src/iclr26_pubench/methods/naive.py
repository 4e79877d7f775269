"""The naive baseline: binary cross-entropy with the PU label s as the class ("U as negative")."""
from __future__ import annotations

import torch.nn.functional as F

from .base import TorchPUEstimator, set_params_from


class NaivePU(TorchPUEstimator):
    """Treats every unlabeled row as negative (BCE on s); needs no prior. Arguments as ``NNPU``'s common ones."""

    needs_prior = False

    def __init__(self, *, backbone="auto", epochs=40, batch_size=256, lr=3e-4, weight_decay=1e-4,
                 patience=None, device="auto",
                 random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _batch_loss(self, model, x, s, idx, epoch, prior):
        return F.binary_cross_entropy_with_logits(model(x).reshape(-1), s.float())
