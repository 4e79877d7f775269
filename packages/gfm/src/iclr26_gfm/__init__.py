"""Gauge flow matching (Li, Liang, Chen, ICLR 2026): constrained generative modelling with exact feasibility.

Map a compact convex (or star-shaped) set ``C`` onto the unit ball with its gauge, train flow
matching in the ball, sample with a reflection at the sphere, and map back: every sample lies in ``C``.
"""
from importlib.metadata import version as _version

from .baselines import MirrorFM, PlainFM, ProjectedFM, ReflectedFM, RejectionFM
from .data import TARGETS, constraint_set, load_csv, load_npz, make_target, sample_target
from .gauge import GaugeMap, ball_boundary_step, uniform_ball
from .metrics import (
    boundary_atom_fraction,
    max_violation,
    mmd_rbf,
    near_boundary_fraction,
    sliced_wasserstein,
    violation_rate,
)
from .model import GaugeFlowMatching, VelocityMLP
from .projection import project
from .sets import (
    Ball,
    Box,
    ConvexSet,
    Ellipsoid,
    FunctionalSet,
    Intersection,
    Polytope,
    StarUnion,
    chebyshev_center,
    set_from_spec,
)
from .sphere import SphericalCap

__version__ = _version("iclr26-gfm")
__all__ = [
    "__version__",
    "Ball", "Box", "ConvexSet", "Ellipsoid", "FunctionalSet", "GaugeFlowMatching", "GaugeMap", "Intersection",
    "MirrorFM", "PlainFM", "Polytope", "ProjectedFM", "RejectionFM", "ReflectedFM", "SphericalCap", "StarUnion",
    "TARGETS", "VelocityMLP", "ball_boundary_step", "boundary_atom_fraction", "chebyshev_center", "constraint_set",
    "load_csv", "load_npz", "make_target", "max_violation", "mmd_rbf", "near_boundary_fraction", "project",
    "sample_target", "set_from_spec", "sliced_wasserstein", "uniform_ball", "violation_rate",
]
