"""COSMO-INR: complex sinusoidal modulation of activations for implicit neural representations."""
from importlib.metadata import version as _version

from .activations import cosmo, cosmo_rc, raised_cosine
from .data import get_coords, load_folder, load_image, occupancy, photon_noise
from .models import COSMOINR, FINER, INCODE, SIREN, WIRE, Gauss, ReLUPE, make_model, n_real_parameters
from .prior import PriorEmbedder
from .spectral import HarmonicProfile, chebyshev_coefficients, harmonic_profile, layer_harmonics, named_activation
from .tasks import (
    FitResult,
    TaskResult,
    denoise_image,
    denoise_observed,
    downsample,
    fit_image,
    fit_occupancy,
    fit_signal,
    inpaint,
    psnr,
    super_resolve,
    super_resolve_observed,
)

__all__ = [
    "__version__",
    "COSMOINR", "FINER", "INCODE", "SIREN", "WIRE", "FitResult", "Gauss", "HarmonicProfile", "PriorEmbedder",
    "ReLUPE", "TaskResult", "chebyshev_coefficients", "cosmo", "cosmo_rc", "denoise_image",
    "denoise_observed", "downsample", "fit_image",
    "fit_occupancy", "fit_signal", "get_coords", "harmonic_profile", "inpaint", "layer_harmonics", "load_folder",
    "load_image", "make_model", "n_real_parameters", "named_activation", "occupancy", "photon_noise", "psnr",
    "raised_cosine", "super_resolve", "super_resolve_observed",
]
__version__ = _version("iclr26-cosmo-inr")
