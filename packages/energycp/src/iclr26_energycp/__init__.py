"""Energy-based conformal classification ("Softmax is not Enough (for Adaptive Conformal Classification)").

Split-conformal LAC/APS/RAPS/SAPS scores reweighted by ``softplus_beta`` of the negative free
energy of the logits: sets grow on uncertain or unfamiliar inputs and the coverage guarantee
is untouched. numpy/scikit-learn only; torch tensors are accepted and stay on their device.
"""
from importlib.metadata import version as _version

from . import datasets, energy, metrics, scores
from .energy import energy_weight, free_energy
from .predictor import EnergyConformalClassifier, conformal_quantile
from .tuning import TuneResult, tune_energy
from .wrapper import ModelConformalClassifier, model_logits

__version__ = _version("iclr26-energycp")
__all__ = [
    "__version__",
    "EnergyConformalClassifier",
    "ModelConformalClassifier",
    "TuneResult",
    "conformal_quantile",
    "datasets",
    "energy",
    "energy_weight",
    "free_energy",
    "metrics",
    "model_logits",
    "scores",
    "tune_energy",
]
