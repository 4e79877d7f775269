"""Moment-matching compression of permutation-invariant functions (ICLR 2026).

A symmetric function of d objects ``h(sum_i g(w_i))`` is compressed to a few weighted
objects that keep every moment of degree <= k: clustering plus Caratheodory/Tchakaloff
reduction. Applied to neurons it preserves training dynamics (dynamical lottery ticket),
applied to data it preserves the loss landscape.
"""
from importlib.metadata import version as _version

from .caratheodory import caratheodory_reduce, caratheodory_step, reduce_block
from .compressor import MomentCompressor
from .data import (
    Teacher,
    WeightedReplacementSampler,
    compress_dataset,
    cylindrical_harmonic,
    load_objects,
    teacher_regression,
    uniform_cube,
)
from .deep import WeightedMLP, compress_mlp, dense_mlp, magnitude_prune_mlp, random_mlp_subnetwork
from .experiments import (
    dataset_experiment,
    deep_experiment,
    error_scaling,
    lth_experiment,
    scaling_law_experiment,
)
from .moments import moment_features, moments, monomial_exponents, tchakaloff_bound
from .networks import (
    WeightedTwoLayerNet,
    attach_compressed_dynamics,
    compress_two_layer,
    dense_two_layer,
    random_subnetwork,
)
from .symmetric import rational_benchmark, sigmoid_benchmark, symmetric_value

__version__ = _version("iclr26-perm-compress")
__all__ = [
    "__version__",
    "MomentCompressor",
    "Teacher",
    "WeightedReplacementSampler",
    "WeightedMLP",
    "WeightedTwoLayerNet",
    "attach_compressed_dynamics",
    "caratheodory_reduce",
    "caratheodory_step",
    "compress_dataset",
    "compress_mlp",
    "compress_two_layer",
    "cylindrical_harmonic",
    "dataset_experiment",
    "deep_experiment",
    "dense_mlp",
    "dense_two_layer",
    "error_scaling",
    "load_objects",
    "lth_experiment",
    "magnitude_prune_mlp",
    "moment_features",
    "moments",
    "monomial_exponents",
    "random_mlp_subnetwork",
    "random_subnetwork",
    "rational_benchmark",
    "reduce_block",
    "scaling_law_experiment",
    "sigmoid_benchmark",
    "symmetric_value",
    "tchakaloff_bound",
    "teacher_regression",
    "uniform_cube",
]
