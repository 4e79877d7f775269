"""Temperature-schedule modulated representation learning for open set recognition (NegCosSch).

Kundu, Patil, JaJa, "Boosting Open Set Recognition Performance through Modulated Representation
Learning", ICLR 2026 (arXiv:2505.18137).

Modules: ``schedules`` (tau(t), NegCosSch and ablations), ``losses`` (scheduled wrapper, SupCon, ARPL),
``scoring`` (max logit, MSP, energy, kNN), ``metrics`` (AUROC, OSCR), ``data`` (OSR splits, embedded
digits and blobs tasks, local CIFAR/ImageFolder), ``models`` and ``train`` (reference loops, evaluator).
"""
from importlib.metadata import version as _version

from . import data, losses, metrics, models, schedules, scoring, train
from .losses import ARPLLoss, SupConLoss, TemperatureScheduledLoss
from .metrics import auroc, oscr
from .schedules import Constant, GeneralizedCosine, NegativeCosine

__all__ = [
    "__version__",
    "data", "losses", "metrics", "models", "schedules", "scoring", "train",
    "TemperatureScheduledLoss", "SupConLoss", "ARPLLoss", "NegativeCosine", "GeneralizedCosine", "Constant",
    "auroc", "oscr",
]
__version__ = _version("iclr26-osr-temperature")
