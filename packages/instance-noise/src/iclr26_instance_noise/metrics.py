"""Evaluation against clean labels, and the Monte-Carlo risk-equivalence check."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import RHO_MAX, as_binary_labels, check_rho, check_same_length
from .losses import backward_loss, base_loss
from .noise import flip_labels


def clean_accuracy(y_clean, y_pred) -> float:
    """Fraction of predictions ``(n,)`` equal to the clean labels ``(n,)``."""
    y, p = as_binary_labels(y_clean, "y_clean"), as_binary_labels(y_pred, "y_pred")
    check_same_length(len(y), len(p), "y_clean, y_pred")
    return float(np.mean(y == p))


def clean_log_loss(y_clean, p1, eps: float = 1e-15) -> float:
    """Mean log-loss of clean labels ``(n,)`` under predicted ``P(y=1|x)`` ``(n,)`` (clipped to [eps, 1-eps])."""
    y = as_binary_labels(y_clean, "y_clean")
    p = np.asarray(p1, dtype=np.float64)
    check_same_length(len(y), len(p), "y_clean, p1")
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError("p1: expected probabilities in [0, 1]")
    p = np.clip(p, eps, 1 - eps)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def rho_mae(rho_hat, rho) -> float:
    """Mean absolute error between estimated and true flip probabilities, both ``(n,)``."""
    a, b = np.asarray(rho_hat, dtype=np.float64), np.asarray(rho, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"rho_hat, rho: expected two 1-D arrays of the same length, got {a.shape} and {b.shape}")
    return float(np.mean(np.abs(a - b)))


@dataclass(frozen=True)
class RiskGap:
    """Outcome of ``risk_gap``: the clean loss, the mean over draws of the corrected noisy loss, their
    difference, its standard error and the difference in standard errors."""

    clean_loss: float
    corrected_loss: float
    gap: float
    se: float
    z: float


def risk_gap(t, y_clean, rho, n_draws: int = 2000, random_state=123, rho_max: float | None = RHO_MAX) -> RiskGap:
    """Monte-Carlo check that the noisy backward-corrected risk equals the clean risk for fixed logits.

    Draws the noisy labels ``n_draws`` times with ``noise.flip_labels`` and compares the mean over
    draws of the per-draw mean backward-corrected CE with the clean CE of ``t``;
    ``se = std(per-draw means) / sqrt(n_draws)``.

    Args:
        t: fixed logits ``(n,)``; y_clean: ``(n,)``; rho: true flip probabilities ``(n,)``.
    """
    y = as_binary_labels(y_clean, "y_clean")
    t = np.asarray(t, dtype=np.float64)
    check_same_length(len(y), len(t), "y_clean, t")
    rho = check_rho(rho, len(y), rho_max)
    if n_draws < 2:
        raise ValueError(f"n_draws: expected >= 2, got {n_draws}")
    rng = np.random.default_rng(random_state)
    means = np.array([backward_loss(t, flip_labels(y, rho, rng), rho).mean() for _ in range(n_draws)])
    clean = float(base_loss(t, y).mean())
    se = float(means.std(ddof=1) / np.sqrt(n_draws))
    gap = float(means.mean() - clean)
    return RiskGap(clean, float(means.mean()), gap, se, gap / se if se > 0 else float("inf") * np.sign(gap))
