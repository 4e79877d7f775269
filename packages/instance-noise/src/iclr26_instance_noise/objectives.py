"""The corrected loss as a custom objective and evaluation metric for LightGBM and XGBoost.

Both libraries call a custom objective as ``f(preds, data) -> (grad, hess)``: ``preds`` ``(n,)`` are
the raw scores of the training rows (logits of the *clean* posterior here) and ``data`` is their
``lightgbm.Dataset`` or ``xgboost.DMatrix``, whose ``get_label()`` gives the noisy labels. The
gradient and curvature are ``losses.grad_hess`` (forward: the Fisher curvature, non-negative)::

    import lightgbm as lgb
    params = {"objective": corrected_objective(rho_train), "lambda_l2": 1.0, "max_delta_step": 1.0}
    booster = lgb.train(params, lgb.Dataset(X_train, y_noisy_train), valid_sets=[lgb.Dataset(X_val, y_val)],
                        feval=corrected_metric(rho_val), callbacks=[lgb.early_stopping(30)])
    p_clean = sigmoid(booster.predict(X_test, raw_score=True))

    import xgboost as xgb
    booster = xgb.train({"base_score": 0.0, "lambda": 1.0, "max_delta_step": 1.0}, xgb.DMatrix(X_train, y_train),
                        obj=corrected_objective(rho_train), evals=[(xgb.DMatrix(X_val, y_val), "val")],
                        custom_metric=corrected_metric(rho_val, library="xgboost"), early_stopping_rounds=30)
    p_clean = sigmoid(booster.predict(xgb.DMatrix(X_test), output_margin=True))

With a custom objective LightGBM starts every row at the raw score 0; give XGBoost
``base_score=0`` for the same start. ``rho`` is aligned with the rows of the data the function is
called on (one ``rho`` per data set: the training rows for the objective, the validation rows for
the metric). Neither library is a dependency (extras ``lightgbm`` and ``xgboost``); this module
imports neither.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .checks import RHO_MAX, as_binary_labels, check_mode, check_rho
from .losses import raw_grad_hess
from .models import corrected_ce

LIBRARIES = ("lightgbm", "xgboost")


def _rows(preds, data, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logits ``(n,)`` and noisy labels ``(n,)`` of one call, checked against ``rho`` ``(n,)``."""
    t = np.asarray(preds, dtype=np.float64).ravel()
    if t.shape != rho.shape:
        raise ValueError(f"rho: expected one flip probability per row of the data ({t.size} rows), "
                         f"got {rho.size} values")
    return t, as_binary_labels(data.get_label(), "label").astype(np.float64)


def corrected_objective(rho, mode: str = "forward", rho_max: float | None = RHO_MAX) -> Callable:
    """A custom objective ``f(preds, data) -> (grad (n,), hess (n,))`` of the corrected logistic loss.

    Args:
        rho: flip probabilities ``(n,)`` of the training rows, in row order (clipped to ``rho_max``).
        mode: ``"forward"`` (default) or ``"backward"``; ``rho`` zeros give plain cross-entropy.
        rho_max: clip level, as in ``losses.corrected_logistic``.

    Returns:
        The function for ``lightgbm.train(params={"objective": f})`` and ``xgboost.train(obj=f)``.

    Raises:
        ValueError: bad ``rho`` or ``mode`` (here), or, when called, data whose row count differs from
            ``len(rho)`` or labels not in {0, 1}.
    """
    mode = check_mode(mode)
    r = check_rho(rho, np.asarray(rho).size, rho_max)

    def objective(preds, data):
        t, y = _rows(preds, data, r)
        g, h = raw_grad_hess(t, y, r, mode)
        return g.reshape(np.shape(preds)), h.reshape(np.shape(preds))  # XGBoost wants the shape of preds

    return objective


def corrected_metric(rho, mode: str = "forward", library: str = "lightgbm",
                     rho_max: float | None = RHO_MAX) -> Callable:
    """A custom evaluation metric: the mean corrected CE of one data set's rows (lower is better).

    ``mode="forward"`` is the likelihood of the noisy labels under ``p~ = rho + (1 - 2 rho) p`` (bounded:
    the stopping loss of ``CorrectedGradientBoosting``); ``"backward"`` is unbiased for the clean risk
    but has targets up to +-4.5.

    Args:
        rho: flip probabilities ``(n,)`` of the evaluated rows (e.g. the validation set), in row order.
        mode: ``"forward"`` or ``"backward"``.
        library: ``"lightgbm"`` (returns ``(name, value, False)``, for ``feval``) or ``"xgboost"``
            (returns ``(name, value)``, for ``custom_metric``).

    Raises:
        ValueError: bad ``rho``, ``mode`` or ``library``; when called, a row count other than ``len(rho)``.
    """
    mode = check_mode(mode)
    if library not in LIBRARIES:
        raise ValueError(f"library: expected one of {LIBRARIES}, got {library!r}")
    r = check_rho(rho, np.asarray(rho).size, rho_max)
    name = f"{mode}_corrected_ce"

    def metric(preds, data):
        t, y = _rows(preds, data, r)
        value = corrected_ce(t, y, r, mode)
        return (name, value, False) if library == "lightgbm" else (name, value)

    return metric
