"""Closed-loop evaluation of a policy on a split, the two oracles, and loading saved policies.

A policy has ``plan(env)`` returning either visual aids (one ``VisualAids`` or None per scene: executed by
``VisualAidController``) or joint waypoints (n, 8, 2) for the training arm (executed as they are).
"""
from __future__ import annotations

import os
from collections import Counter

import numpy as np
import torch

from .arm import Arm
from .baseline import DirectActionPolicy
from .controller import VisualAidController, execute_joints
from .env import TableTop2D
from .grammar import VisualAids
from .metrics import box_iou, discrete_frechet, hausdorff, point_accuracy, trace_rmse
from .model import FSDTiny, TokenPolicy


class OracleAids:
    """Ground-truth visual aids (validates the simulator, IK, homography and success predicate)."""

    def plan(self, env: TableTop2D) -> list[VisualAids]:
        return list(env.aids)


class MeanAids:
    """The same visual aids for every scene: the training split's average box, points and trace.

    A control: a model that has not learned to ground the instruction scores like this one.
    """

    def __init__(self, train: TableTop2D):
        mean = {k: np.mean([np.asarray(getattr(a, k), dtype=float) for a in train.aids], 0)
                for k in ("box", "points", "trace")}
        self.aids = VisualAids.from_arrays(mean["box"], mean["points"], mean["trace"])

    def plan(self, env: TableTop2D) -> list[VisualAids]:
        return [self.aids] * len(env)


class DirectOracle:
    """The expert's joint waypoints after the direct policy's quantisation (can the action space express the task?)."""

    def __init__(self, policy: DirectActionPolicy):
        self.policy = policy

    def plan(self, env: TableTop2D) -> np.ndarray:
        return self.policy.dequantize(self.policy.quantize(env.expert_joints))


def aid_quality(aids: list[VisualAids | None], env: TableTop2D) -> dict[str, float]:
    """Point accuracy, trace RMSE / discrete Fréchet / Hausdorff, start-point error and box IoU over parsed aids."""
    ok = [i for i, a in enumerate(aids) if a is not None and len(a.trace) == len(env.aids[i].trace)]
    if not ok:
        return {k: float("nan") for k in ("point_accuracy", "trace_rmse", "trace_dfd", "trace_hausdorff",
                                          "start_error", "box_iou")}
    point_hits = [point_accuracy(np.array(aids[i].points), np.array(env.aids[i].box)) for i in ok]
    pairs = [(np.array(aids[i].trace, dtype=float), np.array(env.aids[i].trace, dtype=float)) for i in ok]
    return {"point_accuracy": float(np.mean(point_hits)),
            "trace_rmse": float(np.mean([trace_rmse(p, g) for p, g in pairs])),
            "trace_dfd": float(np.mean([discrete_frechet(p, g) for p, g in pairs])),
            "trace_hausdorff": float(np.mean([hausdorff(p, g) for p, g in pairs])),
            "start_error": float(np.mean([np.hypot(*(p[0] - g[0])) for p, g in pairs])),
            "box_iou": float(np.mean([box_iou(aids[i].box, env.aids[i].box) for i in ok]))}


def evaluate(policy, env: TableTop2D, arm: Arm | str = "default", plans=None, grasp_module: bool = False) -> dict:
    """Executes ``policy`` on every scene of ``env`` with ``arm``; returns the rates and, for aids, their quality.

    Args:
        policy: anything with ``plan(env)`` (``FSDTiny``, ``DirectActionPolicy``, ``OracleAids``, ``DirectOracle``).
        env: the split.
        arm: an ``Arm`` or ``"default"``/``"alt"``.
        plans: precomputed ``policy.plan(env)`` (to execute one prediction with several arms).
        grasp_module: execute visual aids with the grasp module (box + affordance points) instead of the trace.

    Returns:
        ``{"success_rate", "parse_fail_rate", "n", "reasons": {reason: count}, ...}`` plus ``aid_quality``
        for visual-aid policies.
    """
    arm = Arm.named(arm) if isinstance(arm, str) else arm
    plans = policy.plan(env) if plans is None else plans
    if isinstance(plans, np.ndarray):
        results = [execute_joints(s, q, arm) for s, q in zip(env.scenes, plans, strict=True)]
        extra: dict = {}
    else:
        ctrl = VisualAidController(arm, env.camera, grasp_module)
        results = [ctrl.execute(s, a) for s, a in zip(env.scenes, plans, strict=True)]
        extra = aid_quality(plans, env)
    reasons = Counter(r.reason for r in results)
    n = len(results)
    return {"success_rate": float(np.mean([r.success for r in results])),
            "parse_fail_rate": reasons.get("parse_failure", 0) / n, "n": n, "reasons": dict(reasons), **extra}


def load_policy(path: str | os.PathLike, device="cpu") -> TokenPolicy:
    """Loads a model written by ``FSDTiny.save`` / ``DirectActionPolicy.save``."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    cfg = state["config"]
    common = dict(d_model=cfg["d_model"], n_layers=cfg["n_layers"], n_heads=cfg["n_heads"], d_mlp=cfg["d_mlp"],
                  image_size=cfg["image_size"], seed=state["seed"], device=device)
    if state["kind"] == "fsd":
        model = FSDTiny(cot=state["cot"], self_consistency=state["self_consistency"],
                        coord_bins=state["coord_bins"], **common)
    elif state["kind"] == "direct":
        model = DirectActionPolicy(n_bins=state["n_bins"], **common)
        model.joint_low_ = state["joint_low"].numpy()
        model.joint_high_ = state["joint_high"].numpy()
    else:
        raise ValueError(f"path: {path} is not an iclr26-fsd model (kind {state.get('kind')!r})")
    missing = sorted(set(model.net.state_dict()) - set(state["state_dict"]))
    if missing:
        raise ValueError(f"path: expected a model of this iclr26-fsd version, got {path} without {missing[0]} (written "
                         "by an earlier version, before the pointer readout, the stem normalisation or the dilated "
                         "pointer conv; retrain it)")
    model.net.load_state_dict(state["state_dict"])
    model.net.eval()
    return model
