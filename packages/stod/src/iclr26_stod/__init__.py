"""STOD: Gradient Temporal Collinearity and Structured Temporal Orthogonal Decorrelation for spiking networks."""
from importlib.metadata import version as _version

from .attacks import accuracy, apgd, fgsm, pgd, robust_accuracy, transfer_attack
from .data import DatasetNotFoundError, ImageData, TensorBatches, load_images, remap_intensity
from .encoding import (
    PFD,
    DirectEncoder,
    Encoder,
    NoisyDirectEncoder,
    RateEncoder,
    STODEncoder,
    gor_loss,
    householder_kernels,
    make_encoder,
    patchify,
    unpatchify,
)
from .gtc import collinearity_matrix, gradient_temporal_collinearity, gtc_hessian_bound, per_step_gradients
from .models import EncodedSNN, SpikingConvNet, SpikingVGG11, build_model, load_model
from .neurons import LIF, heaviside_atan, heaviside_rect, heaviside_sigmoid, heaviside_triangle
from .optim import RiemannianSGD, orthogonality_error, qr_retraction, riemannian_gradient
from .train import History, fit, kernel_path

__version__ = _version("iclr26-stod")
__all__ = [
    "__version__",
    "LIF", "heaviside_atan", "heaviside_sigmoid", "heaviside_rect", "heaviside_triangle",
    "Encoder", "DirectEncoder", "RateEncoder", "NoisyDirectEncoder", "PFD", "STODEncoder", "gor_loss",
    "householder_kernels", "make_encoder", "patchify", "unpatchify",
    "RiemannianSGD", "riemannian_gradient", "qr_retraction", "orthogonality_error",
    "SpikingConvNet", "SpikingVGG11", "EncodedSNN", "build_model", "load_model",
    "gradient_temporal_collinearity", "per_step_gradients", "collinearity_matrix", "gtc_hessian_bound",
    "fgsm", "pgd", "transfer_attack", "robust_accuracy", "accuracy", "apgd",
    "fit", "History", "kernel_path",
    "load_images", "remap_intensity", "ImageData", "TensorBatches", "DatasetNotFoundError",
]
