"""iclr26-diffsda: DiffSDA, unsupervised diffusion sequential disentanglement (ICLR 2026).

A semantic encoder splits a sequence x^{1:V} into a static code s and dynamic codes d^{1:V};
an EDM-preconditioned diffusion decoder reconstructs each element from (d^tau, s); swapping
codes between sequences transfers content and motion. Public API re-exported here.
"""
from importlib.metadata import version as _version

from .baselines import SeqVAE
from .data import SeqSet, load_csv_series, load_npy_sequences, make_series, make_sprites, make_tones
from .edm import c_in, c_noise, c_out, c_skip, heun_invert, heun_sample, karras_sigmas, loss_weight
from .evaluate import (
                       Judge,
                       control_accuracy,
                       eer,
                       generation_scores,
                       probe_leakage,
                       reconstruction_mse,
                       swap_accuracy,
                       train_judge,
                       unsupervised_swap_distances,
)
from .model import DiffSDA, EDMPrecond, SequentialEncoder
from .prior import LatentPrior
from .train import train_model

__version__ = _version("iclr26-diffsda")
__all__ = [
    "__version__",
    "DiffSDA", "EDMPrecond", "Judge", "LatentPrior", "SeqSet", "SeqVAE", "SequentialEncoder", "c_in", "c_noise",
    "c_out", "c_skip", "control_accuracy", "eer", "generation_scores", "heun_invert", "heun_sample",
    "karras_sigmas", "load_csv_series", "load_npy_sequences", "loss_weight", "make_series", "make_sprites",
    "make_tones", "probe_leakage", "reconstruction_mse", "swap_accuracy", "train_judge", "train_model",
    "unsupervised_swap_distances",
]
