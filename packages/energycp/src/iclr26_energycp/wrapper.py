"""Prediction sets for a fitted model instead of logits: ``ModelConformalClassifier``.

The model's logits are ``decision_function`` of a fitted scikit-learn classifier (binary: ``[0, d]``, whose
softmax is the logistic probability), ``log predict_proba`` when it has no ``decision_function`` (the free
energy of log-probabilities is 0, so the energy weight is constant and the sets are the base score's; a
warning says so), or the output of a ``torch.nn.Module`` (evaluated in ``no_grad`` batches on the module's
device).
"""
from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np

from ._backend import is_tensor
from ._checks import not_fitted_error
from ._estimator import ParamsMixin
from .predictor import EnergyConformalClassifier


def _torch_module(model: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def model_logits(model: Any, X: Any, batch_size: int = 4096):
    """(n, K) logits of ``model`` on inputs ``X``: numpy for a scikit-learn model, torch for a module.

    Raises:
        TypeError: ``model`` is neither a torch module nor has ``decision_function``/``predict_proba``.
    """
    if _torch_module(model):
        import torch

        device = next(model.parameters()).device if any(True for _ in model.parameters()) else "cpu"
        x = X if is_tensor(X) else torch.as_tensor(np.asarray(X, dtype=np.float32))
        was_training = model.training
        model.eval()
        with torch.no_grad():
            out = torch.cat([model(x[i:i + batch_size].to(device)) for i in range(0, x.shape[0], batch_size)])
        model.train(was_training)
        return out
    if hasattr(model, "decision_function"):
        d = np.asarray(model.decision_function(X), dtype=np.float64)
        return np.column_stack([np.zeros_like(d), d]) if d.ndim == 1 else d
    if hasattr(model, "predict_proba"):
        warnings.warn(f"{type(model).__name__} has no decision_function: log predict_proba are used as logits, "
                      "whose free energy is constant, so the energy weight does nothing", UserWarning, stacklevel=3)
        return np.log(np.clip(np.asarray(model.predict_proba(X), dtype=np.float64), 1e-300, None))
    raise TypeError(f"model: expected a torch.nn.Module or a fitted classifier with decision_function or "
                    f"predict_proba, got {type(model).__name__}")


class ModelConformalClassifier(ParamsMixin):
    """Split-conformal sets for a fitted model: its logits go to an ``EnergyConformalClassifier``.

    ``ModelConformalClassifier(clf).fit(X_cal, y_cal).predict_set(X_test)`` gives a boolean (n, K) mask.
    The model is used as fitted (never refit); ``fit`` only calibrates. Labels are the model's class
    indices 0..K-1 (for scikit-learn, the positions in ``clf.classes_``).

    Args:
        model: a fitted scikit-learn classifier or a ``torch.nn.Module`` mapping inputs to logits.
        conformal: the ``EnergyConformalClassifier`` to calibrate (a fresh copy is fitted);
            None for the defaults (energy APS, ``T_energy = beta = "auto"``, alpha = 0.1).
            ``class_conditional=True`` in it gives Mondrian (per-class) calibration.
        batch_size: rows per forward pass of a torch module.

    Attributes (after ``fit``): ``conformal_``, the fitted ``EnergyConformalClassifier``.
    """

    def __init__(self, model: Any = None, conformal: EnergyConformalClassifier | None = None, batch_size: int = 4096):
        self.model = model
        self.conformal = conformal
        self.batch_size = batch_size

    def fit(self, X: Any, y: Any = None) -> ModelConformalClassifier:
        """Calibrates on the model's logits of ``X`` and the labels ``y``; returns ``self``."""
        c = self.conformal if self.conformal is not None else EnergyConformalClassifier()
        self.conformal_ = type(c)(**c.get_params(deep=False))
        self.conformal_.fit(model_logits(self.model, X, self.batch_size), y)
        return self

    def predict_set(self, X: Any):
        """Boolean (n, K) prediction sets for inputs ``X``."""
        if not hasattr(self, "conformal_"):
            raise not_fitted_error("This ModelConformalClassifier instance is not fitted yet; call fit(X, y) "
                                   "with calibration inputs and labels before predicting")
        return self.conformal_.predict_set(model_logits(self.model, X, self.batch_size))
