"""The active-learning loop (FisherRF ``v20seq1_inplace`` schema, scaled) and its evaluation.

Initial set: candidate 0 plus farthest-view additions up to ``n_init`` views (exact poses). Then:
train ``iters_per_round`` iterations, score the remaining candidates, capture the chosen view (pose
noise if configured), refine its pose, add it; at ``n_max`` views train ``final_iters`` more.
The model is trained in place across rounds.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .cameras import Camera, pose_errors
from .model import GaussianModel
from .pose import robust_pose_refine
from .render import render
from .scene import HIDDEN_PART, SyntheticObjectScene
from .selectors import FarthestViewSelector, Selector
from .train import Trainer, psnr, ssim

POSE_REFINE = ("robust", "l2", "none")


@dataclass
class Evaluation:
    """Test metrics of one model: mean PSNR/SSIM over the test views and the hidden-part PSNR."""

    psnr: float
    ssim: float
    hidden_psnr: float


def evaluate(model: GaussianModel, scene: SyntheticObjectScene, masks: list[np.ndarray] | None = None,
             render_kw: dict | None = None) -> Evaluation:
    """Mean test PSNR/SSIM over ``scene.test_cameras``; hidden-part PSNR pooled over the pixels whose
    ground-truth part is the hidden disc, over the test views that see it (``masks`` from ``part_masks``)."""
    masks = masks if masks is not None else scene.test_masks
    p, s, se, count = [], [], 0.0, 0
    with torch.no_grad():
        for cam, gt, mask in zip(scene.test_cameras, scene.test_images, masks, strict=True):
            pred = render(model, cam, bg=scene.bg, **(render_kw or {}))["rgb"].clamp(0, 1).cpu()
            gt = gt.cpu()
            p.append(psnr(pred, gt))
            s.append(ssim(pred, gt))
            hidden = torch.as_tensor(mask == HIDDEN_PART)
            se += float(((pred - gt)[hidden] ** 2).sum())
            count += int(hidden.sum()) * 3
    hidden = -10 * math.log10(se / count) if count and se > 0 else (math.inf if count else math.nan)
    return Evaluation(float(np.mean(p)), float(np.mean(s)), hidden)


@dataclass
class Round:
    """One round: views after it, the index picked, test metrics (NaN when not evaluated), timings; pose errors
    of the captured view before and after its capture-time refinement and whether that refinement was kept."""

    n_views: int
    selected: int | None
    angle_to_minus_x: float | None
    psnr: float = math.nan
    ssim: float = math.nan
    hidden_psnr: float = math.nan
    rot_err_before: float | None = None
    trans_err_before: float | None = None
    rot_err_after: float | None = None
    trans_err_after: float | None = None
    refine_accepted: bool | None = None
    train_seconds: float = 0.0
    select_seconds: float = 0.0
    refine_seconds: float = 0.0


@dataclass
class ActiveResult:
    """Output of ``ActiveLoop.run``: the rounds, the final metrics and the captured views' pose errors.

    ``final_pose_errors`` holds (rotation degrees, translation) of each captured view at the end of training.
    """

    rounds: list[Round] = field(default_factory=list)
    selected: list[int] = field(default_factory=list)
    final: Evaluation | None = None
    final_pose_errors: list[tuple[float, float]] = field(default_factory=list)
    model: GaussianModel | None = None
    seconds: float = 0.0

    def mean_pose_errors(self) -> dict[str, float]:
        """Mean rotation (deg) / translation errors of captured views: injected, after capture, at the end;
        ``accepted``: the fraction of capture-time refinements kept (NaN without refinement)."""
        cap = [r for r in self.rounds if r.rot_err_before is not None]
        if not cap:
            return {}
        return {"rot_before": float(np.mean([r.rot_err_before for r in cap])),
                "trans_before": float(np.mean([r.trans_err_before for r in cap])),
                "rot_after": float(np.mean([r.rot_err_after for r in cap])),
                "trans_after": float(np.mean([r.trans_err_after for r in cap])),
                "rot_end": float(np.mean([e[0] for e in self.final_pose_errors])),
                "trans_end": float(np.mean([e[1] for e in self.final_pose_errors])),
                "accepted": float(np.mean([r.refine_accepted for r in cap])) if cap[0].refine_accepted is not None
                else math.nan}


class ActiveLoop:
    """Runs active view selection on a ``SyntheticObjectScene``.

    Args:
        scene: the environment (ground truth, candidates, test views).
        selector: a ``Selector``.
        n_init: initial views (candidate 0 plus farthest views), captured with exact poses.
        n_max: stop at this many training views.
        iters_per_round: training iterations before each selection.
        final_iters: iterations after the last addition (default ``2 * iters_per_round``).
        pose_noise: (degrees, scene units) noise of the reported pose of every captured view.
        pose_refine: ``"robust"`` (Geman-McClure), ``"l2"`` or ``"none"``; applied at capture
            time and, jointly with the Gaussians, during training.
        seed: seeds the model initialisation, the training order and the pose noise.
        n_gaussians: model size N. lr_scale: Trainer learning-rate scale.
        evaluate_every_round: test metrics after every round (else only at the end).
        render_kw: renderer keywords; refine_kw: keywords of ``robust_pose_refine``.
    """

    def __init__(self, scene: SyntheticObjectScene, selector: Selector, n_init: int = 2, n_max: int = 10,
                 iters_per_round: int = 150, final_iters: int | None = None, pose_noise=(0.0, 0.0),
                 pose_refine: str = "robust", seed: int = 0, n_gaussians: int = 1000, lr_scale: float = 1.0,
                 evaluate_every_round: bool = True, render_kw: dict | None = None, refine_kw: dict | None = None):
        if not isinstance(selector, Selector):
            raise TypeError(f"selector: expected a Selector, got {type(selector).__name__}")
        if not 1 <= n_init <= n_max <= len(scene.candidates):
            raise ValueError(f"expected 1 <= n_init <= n_max <= {len(scene.candidates)} candidates, "
                             f"got n_init={n_init}, n_max={n_max}")
        if pose_refine not in POSE_REFINE:
            raise ValueError(f"pose_refine: expected one of {POSE_REFINE}, got {pose_refine!r}")
        if iters_per_round < 0:
            raise ValueError(f"iters_per_round: expected >= 0, got {iters_per_round}")
        self.scene, self.selector, self.n_init, self.n_max = scene, selector, n_init, n_max
        self.iters_per_round = iters_per_round
        self.final_iters = 2 * iters_per_round if final_iters is None else final_iters
        self.pose_noise, self.pose_refine, self.seed = tuple(pose_noise), pose_refine, seed
        self.n_gaussians, self.lr_scale, self.evaluate_every_round = n_gaussians, lr_scale, evaluate_every_round
        self.render_kw, self.refine_kw = dict(render_kw or {}), dict(refine_kw or {})

    def _initial(self) -> list[int]:
        chosen = [0]
        fvs = FarthestViewSelector()
        while len(chosen) < self.n_init:
            rest = [i for i in range(len(self.scene.candidates)) if i not in chosen]
            k = fvs.select(None, None, [self.scene.candidates[i] for i in chosen],
                           [self.scene.candidates[i] for i in rest])[0]
            chosen.append(rest[k])
        return chosen

    def run(self, progress=None) -> ActiveResult:
        """Runs the loop; ``progress`` is an optional callable ``(str) -> None`` told of each round."""
        start = time.perf_counter()
        scene, rng = self.scene, np.random.default_rng(self.seed + 7919)
        model = GaussianModel(self.n_gaussians, seed=self.seed, radius=scene.object_radius)
        loss = "geman-mcclure" if self.pose_refine == "robust" else "l2"
        trainer = Trainer(model, lr_scale=self.lr_scale, refine_poses=self.pose_refine != "none", seed=self.seed,
                          extent=scene.extent, bg=scene.bg, render_kw=self.render_kw,
                          pose_loss_kw={"loss": loss, "tau": self.refine_kw.get("tau", 0.1),
                                        "trim": self.refine_kw.get("trim", 0.2),
                                        "mask": self.refine_kw.get("mask", "none")})
        taken = self._initial()
        images = [scene.render_gt(scene.candidates[i]) for i in taken]
        cams: list[Camera] = [scene.candidates[i] for i in taken]
        refine = [False] * len(taken)
        result = ActiveResult(selected=list(taken))
        while True:
            t0 = time.perf_counter()
            last = len(cams) >= self.n_max
            trainer.fit(images, cams, self.final_iters if last else self.iters_per_round, refine)
            cams = list(trainer.cameras_)
            rnd = Round(n_views=len(cams), selected=None, angle_to_minus_x=None,
                        train_seconds=time.perf_counter() - t0)
            if self.evaluate_every_round or last:
                ev = evaluate(model, scene, render_kw=self.render_kw)
                rnd.psnr, rnd.ssim, rnd.hidden_psnr = ev.psnr, ev.ssim, ev.hidden_psnr
            if progress is not None:
                progress(f"{len(cams)} views: PSNR {rnd.psnr:.2f} dB")
            if last:
                result.rounds.append(rnd)
                result.final = Evaluation(rnd.psnr, rnd.ssim, rnd.hidden_psnr)
                break
            t1 = time.perf_counter()
            rest = [i for i in range(len(scene.candidates)) if i not in taken]
            k = rest[self.selector.select(model, images, cams, [scene.candidates[i] for i in rest], 1)[0]]
            rnd.select_seconds = time.perf_counter() - t1
            image, reported = scene.capture(scene.candidates[k], self.pose_noise, rng)
            rnd.selected, rnd.angle_to_minus_x = k, scene.angle_to_minus_x(scene.candidates[k])
            if any(self.pose_noise):
                rnd.rot_err_before, rnd.trans_err_before = pose_errors(reported, scene.candidates[k])
                t2 = time.perf_counter()
                if self.pose_refine != "none":
                    kw = {"extent": scene.extent, "bg": scene.bg, "render_kw": self.render_kw, **self.refine_kw}
                    reported, info = robust_pose_refine(model, image, reported, loss=loss, **kw)
                    rnd.refine_accepted = info["accepted"]
                rnd.refine_seconds = time.perf_counter() - t2
                rnd.rot_err_after, rnd.trans_err_after = pose_errors(reported, scene.candidates[k])
            taken.append(k)
            images.append(image)
            cams.append(reported)
            refine.append(bool(any(self.pose_noise)))
            result.selected.append(k)
            result.rounds.append(rnd)
        result.final_pose_errors = [pose_errors(cams[j], scene.candidates[taken[j]])
                                    for j in range(len(taken)) if refine[j]]
        result.model, result.seconds = model, time.perf_counter() - start
        return result


def train_all_views(scene: SyntheticObjectScene, iters: int, n_gaussians: int = 1000, seed: int = 0,
                    lr_scale: float = 1.0, render_kw: dict | None = None) -> tuple[GaussianModel, Evaluation]:
    """The AllViews reference: trains on every candidate view for ``iters`` iterations.

    Returns (model, test metrics).
    """
    model = GaussianModel(n_gaussians, seed=seed, radius=scene.object_radius)
    trainer = Trainer(model, lr_scale=lr_scale, seed=seed, extent=scene.extent, bg=scene.bg, render_kw=render_kw)
    trainer.fit([scene.render_gt(c) for c in scene.candidates], scene.candidates, iters)
    return model, evaluate(model, scene, render_kw=render_kw)
