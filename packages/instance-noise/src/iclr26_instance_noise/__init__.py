"""iclr26-instance-noise: instance-only dependent label noise via per-instance loss correction.

"Resurfacing the Instance-only Dependent Label Noise Model through Loss Correction"
(Aydin, De Vos, Bertrand; ICLR 2026). Modules: ``noise`` (generators), ``estimate``
(cross-fitted ``rho(x)`` estimators), ``losses`` (backward/forward corrections, ``grad_hess``,
the torch ``InstanceCorrectedBCE``), ``models`` (scikit-learn style linear, GBM and MLP
learners), ``objectives`` (the corrections as LightGBM/XGBoost custom objectives and metrics),
``data`` (embedded data and loaders), ``metrics`` (clean-label evaluation).
"""
from importlib.metadata import version as _version

from . import data, estimate, losses, metrics, models, noise, objectives
from .estimate import rho_annotators, rho_knn, rho_posterior
from .losses import corrected_logistic, grad_hess
from .models import CorrectedGradientBoosting, CorrectedLogisticRegression, CorrectedMLP
from .noise import instance_only_flip

__version__ = _version("iclr26-instance-noise")
__all__ = [
    "CorrectedGradientBoosting",
    "CorrectedLogisticRegression",
    "CorrectedMLP",
    "__version__",
    "corrected_logistic",
    "data",
    "estimate",
    "grad_hess",
    "instance_only_flip",
    "losses",
    "metrics",
    "models",
    "noise",
    "objectives",
    "rho_annotators",
    "rho_knn",
    "rho_posterior",
]
