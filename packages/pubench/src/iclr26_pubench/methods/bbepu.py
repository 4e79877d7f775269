"""BBE-PU / MPE-PU (Garg et al., NeurIPS 2021): nnPU with a class prior estimated by Best Bin Estimation."""
from __future__ import annotations

import numpy as np
import torch

from ..losses import nnpu_risk
from ..priors import bbe_estimate, estimate_prior_bbe
from .base import TorchPUEstimator, set_params_from

PRIOR_UPDATES = ("two_stage", "online")


class BBEPU(TorchPUEstimator):
    """Prior-free nnPU: the prior is estimated, never given.

    Args:
        prior_update: ``"two_stage"`` (estimate once from a held-out logistic P-vs-U scorer, then train) or
            ``"online"`` (the repository: every ``update_every`` steps BBE on the batch scores,
            prior <- 0.9 prior + 0.1 estimate, starting from 0.5).
        delta, bbe_gamma: BBE confidence and slack. Other arguments as ``NNPU``.
    Attributes:
        prior_: the final estimate.
    """

    needs_prior = False

    def __init__(self, *, prior_update="two_stage", delta=0.1, bbe_gamma=0.01, update_every=10, loss="sigmoid",
                 backbone="auto", epochs=40, batch_size=256, lr=3e-4, weight_decay=1e-4, patience=None, device="auto",
                 random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        if self.prior_update not in PRIOR_UPDATES:
            raise ValueError(f"prior_update: expected one of {list(PRIOR_UPDATES)}, got {self.prior_update!r}")
        if self.prior_update == "two_stage":
            est = estimate_prior_bbe(X.cpu().numpy(), s.cpu().numpy(), random_state=self.random_state,
                                     delta=self.delta, gamma=self.bbe_gamma)
            self._pi = est.value
        else:
            self._pi = 0.5
        self.prior_ = self._pi
        self._step = 0
        super()._train(X, s, self._pi)
        self.prior_ = self._pi

    def _batch_loss(self, model, x, s, idx, epoch, prior):
        g = model(x).reshape(-1)
        self._step += 1
        if self.prior_update == "online" and self._step % self.update_every == 0 and 0 < int(s.sum()) < len(s):
            sc = torch.sigmoid(g).detach().cpu().numpy()
            sn = s.cpu().numpy()
            est = bbe_estimate(sc[sn == 1], sc[sn == 0], self.delta, self.bbe_gamma).value
            self._pi = float(np.clip(0.9 * self._pi + 0.1 * est, 0.01, 0.99))
            self.prior_ = self._pi
        return nnpu_risk(g, s, self._pi, self.loss)

    def _end_epoch(self, epoch, X, s, prior, extra=None) -> None:
        super()._end_epoch(epoch, X, s, self._pi, {"prior_estimate": self._pi})
