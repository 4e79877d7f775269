"""Per-instance loss corrections for instance-only label noise.

Noise model: each label flips with probability ``rho(x)`` that depends on ``x`` only,
``P(y~ != y | x, y) = rho(x)``, so the noisy posterior is ``eta~ = rho + (1 - 2 rho) eta``.

Base loss on a logit ``t``: binary cross-entropy ``l(t, 1) = log(1 + e^-t)``,
``l(t, 0) = log(1 + e^t)``, i.e. ``l(t, y) = log(1 + e^t) - y t``.

- Backward (unbiased; Natarajan et al. 2013 with ``rho+ = rho- = rho(x)``):
  ``l~(t, y~) = [(1 - rho) l(t, y~) - rho l(t, 1 - y~)] / (1 - 2 rho)``, whose expectation over the
  flip equals ``l(t, y)``. For cross-entropy it is CE with the real-valued target
  ``y' = (y~ - rho) / (1 - 2 rho)``: convex in ``t`` but unbounded below when ``y'`` leaves
  [0, 1], which is why every learner here regularises (L2, weight decay, early stopping,
  ``min_samples_leaf``).
- Forward: the model's ``p = sigma(t)`` is the clean posterior; the loss is CE of the noisy
  posterior ``p~ = rho + (1 - 2 rho) p`` against ``y~``. Bounded, same population minimiser.

``InstanceCorrectedBCE`` (the torch module) is imported from here lazily, so numpy-only
users never import torch.
"""
from __future__ import annotations

import numpy as np

from .checks import RHO_MAX, as_binary_labels, check_mode, check_rho

BASE_LOSSES = ("ce", "squared", "hinge")


def _logits(t, n: int | None = None) -> np.ndarray:
    arr = np.asarray(t, dtype=np.float64)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        raise ValueError(f"t: expected 1-D logits of length {n}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("t: expected finite logits")
    return arr


def sigmoid(t: np.ndarray) -> np.ndarray:
    """The logistic function, computed without overflow."""
    return np.exp(-np.logaddexp(0.0, -t))


def base_loss(t, y, base: str = "ce") -> np.ndarray:
    """Per-sample base loss ``l(t, y)`` for ``y`` in {0, 1} (arrays broadcast).

    ``"ce"``: ``log(1 + e^t) - y t``; ``"squared"``: ``(1 - s t)^2``; ``"hinge"``: ``max(0, 1 - s t)``,
    with the sign ``s = 2y - 1``.
    """
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if base == "ce":
        return np.logaddexp(0.0, t) - y * t
    s = 2.0 * y - 1.0
    if base == "squared":
        return (1.0 - s * t) ** 2
    if base == "hinge":
        return np.maximum(0.0, 1.0 - s * t)
    raise ValueError(f"base: expected one of {BASE_LOSSES}, got {base!r}")


def backward_target(y_noisy: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """The real-valued CE target of the backward correction, ``y' = (y~ - rho) / (1 - 2 rho)``, shape ``(n,)``."""
    return (y_noisy - rho) / (1.0 - 2.0 * rho)


def backward_loss(t, y_noisy, rho, base: str = "ce") -> np.ndarray:
    """Backward-corrected loss ``[(1 - rho) l(t, y~) - rho l(t, 1 - y~)] / (1 - 2 rho)``, per sample.

    No input checks (``rho < 0.5`` is assumed); ``corrected_logistic`` is the checked entry point.
    """
    y_noisy, rho = np.asarray(y_noisy, dtype=np.float64), np.asarray(rho, dtype=np.float64)
    return ((1.0 - rho) * base_loss(t, y_noisy, base) - rho * base_loss(t, 1.0 - y_noisy, base)) / (1.0 - 2.0 * rho)


def forward_loss(t, y_noisy, rho) -> np.ndarray:
    """Forward-corrected CE: ``-log p~`` if ``y~ = 1`` else ``-log(1 - p~)``, ``p~ = rho + (1 - 2 rho) sigma(t)``.

    Computed in log space: ``p~ = (1 - rho) sigma(t) + rho sigma(-t)``.
    """
    t = np.asarray(t, dtype=np.float64)
    y_noisy, rho = np.asarray(y_noisy, dtype=np.float64), np.asarray(rho, dtype=np.float64)
    log_sig_pos, log_sig_neg = -np.logaddexp(0.0, -t), -np.logaddexp(0.0, t)
    with np.errstate(divide="ignore"):
        log_rho, log_keep = np.log(rho), np.log1p(-rho)
    log_p = np.logaddexp(log_keep + log_sig_pos, log_rho + log_sig_neg)
    log_q = np.logaddexp(log_rho + log_sig_pos, log_keep + log_sig_neg)
    return -(y_noisy * log_p + (1.0 - y_noisy) * log_q)


def _prepare(t, y_noisy, rho, mode: str, rho_max):
    y = as_binary_labels(y_noisy, "y_noisy")
    t = _logits(t, len(y))
    if rho is None:
        return t, y, np.zeros(len(y)), "backward"
    check_mode(mode)
    return t, y, check_rho(rho, len(y), rho_max), mode


def corrected_logistic(t, y_noisy, rho, mode: str = "backward", rho_max: float | None = RHO_MAX) -> np.ndarray:
    """Per-sample corrected logistic loss.

    Args:
        t: logits ``(n,)``.
        y_noisy: noisy labels ``(n,)`` in {0, 1}.
        rho: flip probabilities ``(n,)`` (or a scalar), or None for plain CE (no correction).
        mode: ``"backward"`` (unbiased) or ``"forward"``.
        rho_max: ``rho`` is clipped to ``[0, rho_max]`` (with a warning); None forbids ``rho >= 0.5``.

    Returns:
        ``(n,)`` losses.

    Raises:
        ValueError: bad labels, lengths, ``rho`` (NaN, negative, >= 0.5 unclipped), ``rho_max`` or ``mode``.
    """
    t, y, rho, mode = _prepare(t, y_noisy, rho, mode, rho_max)
    return backward_loss(t, y, rho) if mode == "backward" else forward_loss(t, y, rho)


def raw_grad_hess(t: np.ndarray, y: np.ndarray, rho: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """``grad_hess`` without input checks (``rho`` already clipped); used inside the learners' loops."""
    p = sigmoid(t)
    pq = p * (1.0 - p)
    if mode == "backward":
        return p - backward_target(y, rho), pq
    shrink = 1.0 - 2.0 * rho
    p_noisy = rho + shrink * p
    q_noisy = 1.0 - p_noisy
    g = -shrink * pq * (y / p_noisy - (1.0 - y) / q_noisy)
    h = shrink**2 * pq**2 / (p_noisy * q_noisy)
    return g, h


def grad_hess(t, y_noisy, rho, mode: str = "backward", rho_max: float | None = RHO_MAX):
    """First derivative and Newton curvature of the corrected loss in the logit ``t``, per sample.

    Backward: ``g = sigma(t) - y'``, ``h = sigma(t)(1 - sigma(t))`` (the exact Hessian).
    Forward: ``g = -(1 - 2 rho) p (1 - p) [y~ / p~ - (1 - y~) / (1 - p~)]`` and the Fisher
    (Gauss-Newton) curvature ``h = (1 - 2 rho)^2 p^2 (1 - p)^2 / (p~ (1 - p~))``, which is
    non-negative (``objectives.corrected_objective`` wraps it for LightGBM and XGBoost).

    Args: as ``corrected_logistic``. Returns: ``(g, h)``, each ``(n,)``.
    """
    t, y, rho, mode = _prepare(t, y_noisy, rho, mode, rho_max)
    return raw_grad_hess(t, y.astype(np.float64), rho, mode)


def __getattr__(name: str):
    if name == "InstanceCorrectedBCE":
        from .torch_losses import InstanceCorrectedBCE

        return InstanceCorrectedBCE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
