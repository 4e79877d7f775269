"""nnPU (Kiryo et al., NeurIPS 2017): the non-negative PU risk with the defitting step."""
from __future__ import annotations

from typing import ClassVar

from ..losses import nnpu_risk
from .base import TorchPUEstimator, set_params_from


class NNPU(TorchPUEstimator):
    """Minimises prior R_p^+ + max(-beta, r_n); when r_n < -beta it ascends r_n (scaled by ``gamma``).

    Args:
        loss: margin loss ``"sigmoid"``, ``"logistic"`` or ``"squared"``.
        gamma, beta: defitting step size and tolerance.
        backbone, epochs, batch_size, lr, weight_decay, device, random_state, selection, verbose: see
            ``TorchPUEstimator``; defaults are the repository's (Adam lr 3e-4, wd 1e-4, batch 256, 40 epochs).
    """

    nonneg: ClassVar[bool] = True

    def __init__(self, *, loss="sigmoid", gamma=1.0, beta=0.0, backbone="auto", epochs=40, batch_size=256, lr=3e-4,
                 weight_decay=1e-4,
                 patience=None, device="auto", random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    @property
    def risk_loss(self) -> str:
        return self.loss

    def _batch_loss(self, model, x, s, idx, epoch, prior):
        return nnpu_risk(model(x).reshape(-1), s, prior, self.loss, nonneg=self.nonneg, beta=self.beta,
                         gamma=self.gamma)
