"""PU-Bench: a unified benchmark for positive-unlabeled learning.

A PU data generator (label frequency c, case-control vs single sample, SCAR vs SAR labeling), 18 PU
learners plus the PN oracle, uPU and a naive baseline behind one scikit-learn-style interface, the
benchmark's metrics (oracle and PU-only proxies) and a resumable sweep runner.
"""
from importlib.metadata import version as _version

from .data import PUSplit, TestSet, labeling_propensity, make_benchmark_splits, make_pu_split
from .datasets import BinaryDataset, DatasetNotFoundError, gauss2_sample, list_datasets, load_dataset
from .methods import (
    BBEPU,
    LBE,
    NNPU,
    PAN,
    PUET,
    PULCPBF,
    PULDA,
    PUSB,
    REGISTRY,
    UPU,
    VAEPU,
    VPU,
    BaggingPU,
    CGenPU,
    DistPU,
    ElkanNoto,
    HolisticPU,
    LaGAM,
    NaivePU,
    P3MixC,
    P3MixE,
    PNOracle,
    PUEstimator,
    RobustPU,
    SelfPU,
    get_method,
)
from .metrics import lee_liu_score, oracle_metrics, proxy_accuracy, proxy_auc, pu_f1_score, pu_risk
from .priors import PriorEstimate, bbe_estimate, estimate_prior_bbe
from .sweep import RunSpec, expand_grid, run_one, run_sweep

__version__ = _version("iclr26-pubench")

__all__ = [
    "__version__", "BBEPU", "LBE", "NNPU", "PAN", "PUET", "PULCPBF", "PULDA", "PUSB", "REGISTRY", "UPU", "VAEPU", "VPU",
    "BaggingPU", "BinaryDataset", "CGenPU", "DatasetNotFoundError", "DistPU", "ElkanNoto", "HolisticPU", "LaGAM",
    "NaivePU", "P3MixC", "P3MixE", "PNOracle", "PUEstimator", "PUSplit", "PriorEstimate", "RobustPU", "RunSpec",
    "SelfPU", "TestSet", "bbe_estimate", "estimate_prior_bbe", "expand_grid", "gauss2_sample", "get_method",
    "labeling_propensity", "lee_liu_score", "list_datasets", "load_dataset", "make_benchmark_splits", "make_pu_split",
    "oracle_metrics", "proxy_accuracy", "proxy_auc", "pu_f1_score", "pu_risk", "run_one", "run_sweep",
]
