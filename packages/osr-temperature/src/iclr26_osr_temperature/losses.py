"""Losses whose temperature follows a schedule: the scheduled wrapper, SupCon and ARPL.

The temperature is the only thing the method changes: ``CE(f(x) / tau_t, y)`` for cross-entropy,
``z_i . z_a / tau_t`` inside SupCon, and the reciprocal-point logits divided by ``tau_t`` in ARPL.
"""
from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TemperatureScheduledLoss", "SupConLoss", "ARPLLoss"]


def _check_temperature(value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"temperature: expected a finite number > 0, got {value!r}")
    return float(value)


class TemperatureScheduledLoss(nn.Module):
    """Wraps a loss so that its temperature follows ``schedule``; call ``step()`` once per epoch (or step).

    - A plain loss ``base_loss(logits, y)`` (e.g. ``nn.CrossEntropyLoss()``) is called as
      ``base_loss(logits / tau, y)``.
    - A loss that exposes a settable ``temperature`` attribute (:class:`SupConLoss`,
      :class:`ARPLLoss`) gets ``base_loss.temperature = tau`` and is called with its own arguments.

    Args:
        base_loss: the loss to wrap.
        schedule: a :class:`~iclr26_osr_temperature.schedules.Schedule` (any callable ``tau(t)`` works).
        per: ``"epoch"`` (the paper's granularity) or ``"step"``; with ``"step"`` the schedule is evaluated
            at the fractional epoch ``start + steps / steps_per_epoch``.
        steps_per_epoch: required with ``per="step"``.
        start: the epoch index of the first epoch, 0 or 1. The reference code is 1-based (``t = 1..N``).

    Attributes:
        epoch: the current (possibly fractional) epoch at which ``temperature`` is evaluated.
        temperature: the current ``tau``.
    """

    def __init__(self, base_loss, schedule, per: str = "epoch", steps_per_epoch: int | None = None, start: int = 1):
        super().__init__()
        if not callable(base_loss):
            raise TypeError(f"base_loss: expected a callable loss, got {type(base_loss).__name__}")
        if not callable(schedule):
            raise TypeError(f"schedule: expected a callable tau(t), got {type(schedule).__name__}")
        if per not in ("epoch", "step"):
            raise ValueError(f"per: expected 'epoch' or 'step', got {per!r}")
        if per == "step" and (isinstance(steps_per_epoch, bool) or not isinstance(steps_per_epoch, numbers.Integral)
                              or steps_per_epoch <= 0):
            raise ValueError(f"steps_per_epoch: expected an integer > 0 with per='step', got {steps_per_epoch!r}")
        if start not in (0, 1):
            raise ValueError(f"start: expected 0 or 1, got {start!r}")
        self.base_loss = base_loss
        self.schedule = schedule
        self.per = per
        self.steps_per_epoch = steps_per_epoch
        self.start = int(start)
        self._count = 0
        self.temperature = _check_temperature(schedule(self.epoch))
        self._sets_attribute = hasattr(base_loss, "temperature")

    @property
    def epoch(self) -> float:
        """The epoch the schedule is evaluated at: ``start + count`` (per epoch) or ``start + count/steps``."""
        if self.per == "step":
            return self.start + self._count / self.steps_per_epoch
        return float(self.start + self._count)

    def step(self) -> float:
        """Advances one epoch (or one step with ``per="step"``); returns the new temperature."""
        self._count += 1
        self.temperature = _check_temperature(self.schedule(self.epoch))
        return self.temperature

    def forward(self, *args, **kwargs):
        """``base_loss(logits / tau, y)``, or ``base_loss(*args)`` with ``base_loss.temperature = tau``."""
        if self._sets_attribute:
            self.base_loss.temperature = self.temperature
            return self.base_loss(*args, **kwargs)
        logits, *rest = args
        return self.base_loss(logits / self.temperature, *rest, **kwargs)


class SupConLoss(nn.Module):
    """Supervised contrastive loss (Khosla et al. 2020) with a settable temperature.

    For anchor ``i`` over all ``n = B * V`` view embeddings:
    ``L_i = -(tau/tau_base) * mean_{p in P(i)} log( exp(z_i.z_p/tau) / sum_{a != i} exp(z_i.z_a/tau) )``,
    ``P(i)`` the other embeddings with the same label.

    Args:
        temperature: ``tau``; the scheduled wrapper sets it every epoch.
        base_temperature: ``tau_base`` (0.07 in the reference).
        scale_by_temperature: multiply by ``tau/tau_base`` (reference behaviour; it changes the effective
            learning rate with ``tau``). ``False`` drops the factor.
        empty_positive: ``"skip"`` averages over anchors with at least one positive; ``"zero"`` keeps anchors
            without positives in the mean with a zero term (as the current SupContrast code).
    """

    def __init__(self, temperature: float = 0.1, base_temperature: float = 0.07, scale_by_temperature: bool = True,
                 empty_positive: str = "skip"):
        super().__init__()
        self.temperature = _check_temperature(temperature)
        if isinstance(base_temperature, bool) or not isinstance(base_temperature, numbers.Real) \
                or base_temperature <= 0:
            raise ValueError(f"base_temperature: expected a number > 0, got {base_temperature!r}")
        if empty_positive not in ("skip", "zero"):
            raise ValueError(f"empty_positive: expected 'skip' or 'zero', got {empty_positive!r}")
        self.base_temperature = float(base_temperature)
        self.scale_by_temperature = bool(scale_by_temperature)
        self.empty_positive = empty_positive

    def forward(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The mean SupCon loss.

        Args:
            features: ``(B, V, D)`` L2-normalised embeddings of ``V`` views, or ``(B, D)`` for one view.
            labels: ``(B,)`` integer labels.

        Returns:
            A scalar tensor (zero, with a gradient path, when no anchor has a positive under ``"skip"``).

        Raises:
            ValueError: wrong shapes.
        """
        if features.dim() == 2:
            features = features.unsqueeze(1)
        if features.dim() != 3:
            raise ValueError(f"features: expected shape (B, V, D) or (B, D), got {tuple(features.shape)}")
        b, v, _ = features.shape
        if labels.shape != (b,):
            raise ValueError(f"labels: expected shape ({b},), got {tuple(labels.shape)}")
        tau = _check_temperature(self.temperature)
        z = features.transpose(0, 1).reshape(b * v, -1)  # (n, D), view-major like SupContrast
        y = labels.repeat(v)
        n = z.shape[0]
        eye = torch.eye(n, dtype=torch.bool, device=z.device)
        sim = (z @ z.T) / tau
        log_prob = sim - torch.logsumexp(sim.masked_fill(eye, float("-inf")), dim=1, keepdim=True)
        positives = (y[:, None] == y[None, :]) & ~eye
        n_pos = positives.sum(dim=1)
        mean_log_prob = (log_prob * positives).sum(dim=1) / n_pos.clamp(min=1)
        scale = tau / self.base_temperature if self.scale_by_temperature else 1.0
        per_anchor = -scale * mean_log_prob
        if self.empty_positive == "zero":
            return per_anchor.mean()
        has_pos = n_pos > 0
        if not bool(has_pos.any()):
            return (per_anchor * 0.0).sum()
        return per_anchor[has_pos].mean()


class ARPLLoss(nn.Module):
    """Adversarial reciprocal points loss (Chen et al. 2021) with its logits divided by a temperature.

    Reciprocal points ``P`` ``(num_classes, feat_dim)`` and a radius ``R`` are learned. For a feature
    ``C(x)`` of dimension ``m``: ``d(C(x), P_k) = ||C(x) - P_k||^2 / m - C(x).P_k``, the logits. The loss is
    ``CE(d / tau, y) + weight_pl * mean max(0, d_e - R)`` with ``d_e = ||C(x) - P_y||^2 / m``.
    The temperature placement follows the paper's description (the released code has no ARPL loop).
    """

    def __init__(self, num_classes: int, feat_dim: int, temperature: float = 1.0, weight_pl: float = 0.1):
        super().__init__()
        for name, value in (("num_classes", num_classes), ("feat_dim", feat_dim)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"{name}: expected an integer > 0, got {value!r}")
        if isinstance(weight_pl, bool) or not isinstance(weight_pl, numbers.Real) or weight_pl < 0:
            raise ValueError(f"weight_pl: expected a number >= 0, got {weight_pl!r}")
        self.temperature = _check_temperature(temperature)
        self.weight_pl = float(weight_pl)
        self.points = nn.Parameter(0.1 * torch.randn(int(num_classes), int(feat_dim)))
        self.radius = nn.Parameter(torch.zeros(()))

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """``(B, num_classes)`` reciprocal-point logits ``d(C(x), P_k)`` (higher = more that class), no temperature."""
        if features.dim() != 2 or features.shape[1] != self.points.shape[1]:
            raise ValueError(f"features: expected shape (B, {self.points.shape[1]}), got {tuple(features.shape)}")
        m = features.shape[1]
        l2 = torch.cdist(features, self.points).pow(2) / m
        return l2 - features @ self.points.T

    def forward(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The ARPL loss for ``features`` ``(B, feat_dim)`` and ``labels`` ``(B,)``."""
        logits = self.logits(features)
        ce = F.cross_entropy(logits / _check_temperature(self.temperature), labels)
        d_e = (features - self.points[labels]).pow(2).sum(dim=1) / features.shape[1]
        return ce + self.weight_pl * F.relu(d_e - self.radius).mean()
