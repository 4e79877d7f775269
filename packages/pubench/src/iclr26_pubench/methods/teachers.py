"""Pieces the disambiguation methods share: EMA teachers, trend scores, Jenks breaks, sharpening."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, decay: float) -> None:
    """teacher <- decay * teacher + (1 - decay) * student, parameter-wise."""
    for t, s in zip(teacher.parameters(), student.parameters()):
        t.mul_(decay).add_(s.detach(), alpha=1 - decay)


def trend_scores(history: np.ndarray, sigma: float = 3.0) -> np.ndarray:
    """Holistic-PU trend of each row: mean of successive differences of its predicted probability,
    after dropping differences further than ``sigma`` standard deviations from the row's mean difference.

    ``history``: ``(T, n)`` probabilities over T evaluation steps. Returns ``(n,)``.
    """
    diff = np.diff(history, axis=0)
    mu, sd = diff.mean(0), diff.std(0)
    keep = np.abs(diff - mu) <= sigma * sd + 1e-12
    return (diff * keep).sum(0) / np.maximum(keep.sum(0), 1)


def jenks_two_classes(values: np.ndarray) -> float:
    """Jenks natural breaks with two classes on 1-D ``values``: the break minimising the within-class sum of
    squares (exact, by prefix sums). Returns the threshold; values > threshold form the upper class."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    n = len(v)
    if n < 2:
        return float(v[0]) if n else 0.0
    c1, c2 = np.cumsum(v), np.cumsum(v**2)
    k = np.arange(1, n)  # size of the lower class
    ss_lo = c2[k - 1] - c1[k - 1] ** 2 / k
    ss_hi = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
    i = int(np.argmin(ss_lo + ss_hi))
    return float(v[i])


def sharpen(p: torch.Tensor, temperature: float) -> torch.Tensor:
    """p^(1/T) / (p^(1/T) + (1 - p)^(1/T)) for binary probabilities ``p``."""
    a, b = p.clamp(1e-6, 1 - 1e-6) ** (1 / temperature), (1 - p).clamp(1e-6, 1 - 1e-6) ** (1 / temperature)
    return a / (a + b)


def strong_view(x: torch.Tensor, gen: torch.Generator, noise: float = 0.1, drop: float = 0.1) -> torch.Tensor:
    """The vector "strong augmentation": Gaussian noise (std ``noise``) and input dropout (rate ``drop``)."""
    eps = torch.randn(x.shape, generator=gen).to(x.device)
    keep = (torch.rand(x.shape, generator=gen) >= drop).to(x.device, x.dtype)
    return (x + noise * eps) * keep
