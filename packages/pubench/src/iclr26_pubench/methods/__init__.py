"""The PU learners behind one scikit-learn-style interface, and their registry.

``REGISTRY[key]`` is a ``MethodSpec``: the class, its family, whether it needs the prior, its tier
(A = exact and tested, B = faithful to the benchmark configuration), and the CPU
budget the benchmark uses (constructor arguments that keep a digits run within a few seconds).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .backbones import BACKBONES, build_backbone, official_backbone
from .baggingpu import BaggingPU
from .base import PUEstimator, TorchPUEstimator
from .bbepu import BBEPU
from .cgenpu import CGenPU
from .distpu import DistPU
from .elkannoto import ElkanNoto
from .holisticpu import HolisticPU
from .lagam import LaGAM
from .lbe import LBE
from .naive import NaivePU
from .nnpu import NNPU
from .p3mixc import P3MixC
from .p3mixe import P3MixE
from .pan import PAN
from .pn import PNOracle
from .puet import PUET
from .pulcpbf import PULCPBF
from .pulda import PULDA
from .pusb import PUSB
from .robustpu import RobustPU
from .selfpu import SelfPU
from .upu import UPU
from .vaepu import VAEPU
from .vpu import VPU


@dataclass(frozen=True)
class MethodSpec:
    """Registry entry: ``key``, ``cls``, ``family`` ("oracle" | "baseline" | "risk" | "disambiguation" |
    "generative"), ``needs_prior``, ``tier`` ("A" | "B"), ``cpu`` (constructor arguments of the CPU budget),
    ``paper`` (what the paper budget sets over the class defaults: the official backbone, early stopping)."""

    key: str
    cls: type
    family: str
    tier: str
    cpu: dict[str, Any] = field(default_factory=dict)
    paper: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_prior(self) -> bool:
        return bool(self.cls.needs_prior)

    def build(self, budget: str = "cpu", **params) -> PUEstimator:
        """An estimator with the ``"cpu"`` budget or the class defaults plus ``paper`` (``"paper"``), updated by
        ``params``."""
        if budget not in ("cpu", "paper"):
            raise ValueError(f"budget: expected 'cpu' or 'paper', got {budget!r}")
        base = dict(self.cpu if budget == "cpu" else self.paper)
        base.update(params)
        return self.cls(**base)


_MLP60 = {"epochs": 60, "batch_size": 128, "lr": 1e-3, "weight_decay": 1e-4, "selection": "last"}
# paper budget: the benchmark's per-dataset network; single-phase learners also stop early as the benchmark does
# (validation proxy accuracy, patience 10); multi-phase learners run their full schedules
_OFFICIAL = {"backbone": "official"}
_OFFICIAL_ES = {**_OFFICIAL, "selection": "proxy_acc", "patience": 10}

REGISTRY: dict[str, MethodSpec] = {m.key: m for m in [
    MethodSpec("pn", PNOracle, "oracle", "A", _MLP60, _OFFICIAL_ES),
    MethodSpec("naive", NaivePU, "baseline", "A", _MLP60, _OFFICIAL_ES),
    MethodSpec("upu", UPU, "baseline", "A", _MLP60, _OFFICIAL_ES),
    MethodSpec("elkannoto", ElkanNoto, "baseline", "A", {}),
    MethodSpec("baggingpu", BaggingPU, "baseline", "A", {}),
    MethodSpec("nnpu", NNPU, "risk", "A", _MLP60, _OFFICIAL_ES),
    MethodSpec("pusb", PUSB, "risk", "A", _MLP60, _OFFICIAL_ES),
    MethodSpec("vpu", VPU, "risk", "A", {"epochs": 50, "iterations": 10, "lr": 1e-4, "selection": "last"},
               _OFFICIAL_ES),
    MethodSpec("bbepu", BBEPU, "risk", "A", _MLP60, _OFFICIAL_ES),
    MethodSpec("lbe", LBE, "risk", "A", {"epochs": 5, "selection": "last"}, _OFFICIAL),
    MethodSpec("puet", PUET, "risk", "A", {}),
    MethodSpec("distpu", DistPU, "risk", "A", {"epochs": 40, "epochs_stage2": 10, "batch_size": 128,
                                             "selection": "last"}, _OFFICIAL),
    MethodSpec("pulda", PULDA, "risk", "A", _MLP60, _OFFICIAL_ES),
    MethodSpec("selfpu", SelfPU, "disambiguation", "B", {"batch_size": 128, "selection": "last"}, _OFFICIAL),
    MethodSpec("p3mixc", P3MixC, "disambiguation", "B", {"batch_size": 128, "selection": "last"}, _OFFICIAL),
    MethodSpec("p3mixe", P3MixE, "disambiguation", "B", {"batch_size": 128, "selection": "last"}, _OFFICIAL),
    MethodSpec("robustpu", RobustPU, "disambiguation", "B", {"batch_size": 128, "selection": "last"}, _OFFICIAL),
    MethodSpec("holisticpu", HolisticPU, "disambiguation", "B", {"selection": "last"}, _OFFICIAL),
    MethodSpec("pulcpbf", PULCPBF, "disambiguation", "B", {"epochs_phase2": 30, "batch_size": 128,
                                                           "selection": "last"}, _OFFICIAL),
    MethodSpec("lagam", LaGAM, "disambiguation", "B", {"epochs": 30, "warmup": 10, "hidden": 100, "n_clusters": 20,
                                                      "lr": 0.01, "selection": "last"}),
    MethodSpec("vaepu", VAEPU, "generative", "B", {"vae_epochs": 10, "epochs": 60, "threshold": "youden",
                                                  "selection": "last"},
               {**_OFFICIAL, "threshold": "youden", "selection": "proxy_acc", "patience": 30}),
    MethodSpec("pan", PAN, "generative", "B", {"epochs": 30, "batch_size": 128, "selection": "last"}, _OFFICIAL_ES),
    MethodSpec("cgenpu", CGenPU, "generative", "B", {"epochs": 40, "selection": "last"},
               {"selection": "proxy_acc"}),
]}

BASELINES = ("pn", "naive", "upu", "elkannoto", "baggingpu")
THE_18 = tuple(k for k in REGISTRY if k not in BASELINES)


def get_method(key: str) -> MethodSpec:
    """The registry entry of ``key``; raises ``ValueError`` listing the valid keys."""
    if key not in REGISTRY:
        raise ValueError(f"method: expected one of {list(REGISTRY)}, got {key!r}")
    return REGISTRY[key]


__all__ = [
    "BACKBONES", "BASELINES", "BBEPU", "BaggingPU", "CGenPU", "DistPU", "ElkanNoto", "HolisticPU", "LBE", "LaGAM",
    "MethodSpec", "NNPU", "NaivePU", "P3MixC", "P3MixE", "PAN", "PNOracle", "PUET", "PULCPBF", "PULDA", "PUSB",
    "PUEstimator", "REGISTRY", "RobustPU", "SelfPU", "THE_18", "TorchPUEstimator", "UPU", "VAEPU", "VPU",
    "build_backbone", "get_method", "official_backbone",
]
