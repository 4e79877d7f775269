"""Gradient descent with large step sizes: exact critical step size, chaos and fractal convergence regions.

Liang & Montúfar, "Gradient Descent with Large Step Sizes: Chaos and Fractal Convergence Region", ICLR 2026.
"""
from importlib.metadata import version as _version

from .basins import (
    BasinMap,
    basin_map,
    classify_points,
    diagonal_clearance,
    naive_basin_labels,
    refinement_flip_fraction,
    zoom_sequence,
)
from .chaos import ftle_map, periodic_points, topological_entropy
from .dynamics import GDResult, gd_scalar, gd_vector
from .fractal import (
    CONVENTIONS,
    BoxCountResult,
    DimensionSpread,
    boundary_dimension,
    boundary_mask,
    box_counting_dimension,
    dimension_spread,
    koch_snowflake,
    uncertainty_exponent,
)
from .matrix import aligned_init, critical_step_size_aligned, gd_matrix, mode_amplitudes, random_orthogonal
from .sensitivity import bias_report, segment_outcomes
from .theory import (
    active_branch,
    critical_step_size,
    ellipse_step_size,
    hessian_eigs,
    hessian_init_step_size,
    in_convergence_region,
    minimizers,
    quotient_map,
    stable_step_size,
)

__version__ = _version("iclr26-fractal-gd")
__all__ = [
    "__version__",
    "CONVENTIONS", "BasinMap", "BoxCountResult", "DimensionSpread", "GDResult", "active_branch", "aligned_init",
    "basin_map", "bias_report", "boundary_dimension", "boundary_mask", "box_counting_dimension", "classify_points",
    "critical_step_size", "critical_step_size_aligned", "diagonal_clearance", "dimension_spread",
    "ellipse_step_size", "ftle_map", "gd_matrix", "gd_scalar", "gd_vector", "hessian_eigs",
    "hessian_init_step_size", "in_convergence_region", "koch_snowflake", "minimizers", "mode_amplitudes",
    "naive_basin_labels", "periodic_points", "quotient_map", "random_orthogonal", "refinement_flip_fraction",
    "segment_outcomes", "stable_step_size", "topological_entropy", "uncertainty_exponent", "zoom_sequence",
]
