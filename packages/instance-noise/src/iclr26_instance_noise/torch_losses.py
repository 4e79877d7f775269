"""The corrected losses as a torch module, for any neural network that outputs one logit per instance."""
from __future__ import annotations

import warnings

import torch
from torch import nn

from .checks import RHO_MAX, check_mode, check_rho_max


class InstanceCorrectedBCE(nn.Module):
    """Mean instance-corrected binary cross-entropy: ``forward(logits, y_noisy, rho) -> scalar``.

    ``mode="backward"``: CE with target ``y' = (y~ - rho) / (1 - 2 rho)``, i.e. the unbiased
    ``[(1 - rho) l(t, y~) - rho l(t, 1 - y~)] / (1 - 2 rho)``; it is unbounded below when
    ``y'`` leaves [0, 1], so train with weight decay and early stopping.
    ``mode="forward"``: CE of ``p~ = rho + (1 - 2 rho) sigmoid(t)`` against ``y~`` (bounded).
    ``rho=None`` in ``forward`` gives plain BCE. Tensors stay on the input's device.

    Args:
        mode: ``"backward"`` or ``"forward"``.
        rho_max: ``rho`` is clipped to ``[0, rho_max]`` with a warning; None forbids ``rho >= 0.5``.
    """

    def __init__(self, mode: str = "backward", rho_max: float | None = RHO_MAX):
        super().__init__()
        self.mode = check_mode(mode)
        self.rho_max = check_rho_max(rho_max)

    def forward(self, logits: torch.Tensor, y_noisy: torch.Tensor, rho: torch.Tensor | None) -> torch.Tensor:
        """logits ``(n,)`` or ``(n, 1)``; y_noisy ``(n,)`` in {0, 1}; rho ``(n,)`` or None. Returns the mean loss."""
        t = logits.reshape(-1)
        y = y_noisy.reshape(-1).to(t.dtype)
        if y.shape != t.shape:
            raise ValueError(f"y_noisy: expected {t.shape[0]} labels, got shape {tuple(y_noisy.shape)}")
        if not torch.all((y == 0) | (y == 1)):
            raise ValueError("y_noisy: expected binary labels in {0, 1}")
        if rho is None:
            return nn.functional.binary_cross_entropy_with_logits(t, y)
        r = self._check_rho(rho.reshape(-1).to(device=t.device, dtype=t.dtype), t.shape[0])
        if self.mode == "backward":
            target = (y - r) / (1.0 - 2.0 * r)
            return (nn.functional.softplus(t) - target * t).mean()
        log_p, log_q = nn.functional.logsigmoid(t), nn.functional.logsigmoid(-t)
        log_r, log_keep = torch.log(r), torch.log1p(-r)
        log_pn = torch.logaddexp(log_keep + log_p, log_r + log_q)
        log_qn = torch.logaddexp(log_r + log_p, log_keep + log_q)
        return -(y * log_pn + (1.0 - y) * log_qn).mean()

    def _check_rho(self, r: torch.Tensor, n: int) -> torch.Tensor:
        if r.shape[0] != n:
            raise ValueError(f"rho: expected one flip probability per instance, shape ({n},), got {tuple(r.shape)}")
        if torch.isnan(r).any():
            raise ValueError("rho: expected no NaN values")
        if (r < 0).any():
            raise ValueError(f"rho: expected values >= 0, got minimum {r.min().item():.4g}")
        if self.rho_max is None:
            if (r >= 0.5).any():
                raise ValueError(f"rho: expected values < 0.5 when rho_max is None, got maximum {r.max().item():.4g}")
            return r
        clipped = int((r > self.rho_max).sum())
        if clipped:
            warnings.warn(f"rho: {clipped} of {n} values above rho_max={self.rho_max} were clipped to it", stacklevel=2)
        return r.clamp(max=self.rho_max)
