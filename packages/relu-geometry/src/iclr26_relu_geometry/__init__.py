"""Generalization below the edge of stability: the role of data geometry (Liang, Cloninger, Parhi & Wang, ICLR 2026).

Two-layer ReLU networks trained by full-batch GD below the edge of stability (λ_max ≤ 2/η), the paper's data
families, sharpness by Hessian-vector products, the data-dependent weight g and weighted path norm, half-space
depth, activation patterns, and the experiments of gap versus n, α and intrinsic dimension.
"""
from importlib.metadata import version as _version

from .activations import activation_report
from .data import (
    BallMixture,
    ball_mixture,
    beta_radial,
    digits_dataset,
    gaussian_shell,
    lines,
    load_mnist_local,
    make_targets,
    mnist_dataset,
    target_function,
)
from .depth import depth_beta_radial, halfspace_depth, sphere_cap_mass
from .experiments import (
    RunConfig,
    fit_loglog_slope,
    make_data,
    run_alpha_sweep,
    run_experiment,
    run_intrinsic_sweep,
    run_real_vs_gaussian,
)
from .memorisation import kernel_self_influence, tangent_kernel
from .model import TwoLayerReLU, mse_loss
from .regularity import beos_bound, shatter_curve, weight_g, weight_g_tilde, weighted_path_norm
from .sharpness import HessianOperator, sharpness, top_eigenpair
from .theory import theory_rates
from .training import History, stable_init, train_gd

__version__ = _version("iclr26-relu-geometry")
__all__ = [
    "__version__",
    "BallMixture", "History", "HessianOperator", "RunConfig", "TwoLayerReLU",
    "activation_report", "ball_mixture", "beos_bound", "beta_radial", "depth_beta_radial", "digits_dataset",
    "fit_loglog_slope", "gaussian_shell", "halfspace_depth", "kernel_self_influence", "lines", "load_mnist_local",
    "make_data", "make_targets", "mnist_dataset", "mse_loss", "run_alpha_sweep", "run_experiment",
    "run_intrinsic_sweep", "run_real_vs_gaussian",
    "sharpness", "shatter_curve", "sphere_cap_mass", "stable_init", "tangent_kernel", "target_function",
    "theory_rates", "top_eigenpair", "train_gd", "weight_g", "weight_g_tilde", "weighted_path_norm",
]
