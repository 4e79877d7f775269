"""The reproduction benchmarks ``vit-token`` (base vs specialised ViT) and ``vit-token.ablations``.

Per seed: ShapesSeg data (pretraining, probe-train, probe-test from disjoint random streams), a base ViT
initialised with the seed, every other model built from it with ``SpecViT.from_base`` (so all runs start
from the same function and differ only by specialisation), identical data order, pretraining in parallel
single-thread processes on CPU (sequentially on CUDA), then frozen linear probes for classification
([CLS]) and segmentation (patches), the LayerNorm cosine analysis, and the forward/backward time ratio.
"""
from __future__ import annotations

import copy
import pathlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale
from joblib import Parallel, delayed

from .analysis import token_cosine_stats
from .data import ShapesSeg, shapes_seg_splits
from .model import BASE, SEPNORM, SpecViT, count_flops, vit_cpu_config
from .pretrain import pretrain, to_tensor
from .probe import linear_probe_cls, linear_probe_seg

PAPER = "Revisiting [CLS] and Patch Token Interaction in Vision Transformers"
PACKAGE = "iclr26-vit-token"
EXPECTED_BASE, EXPECTED_EXTRA = 307_392, 25_728


@dataclass(frozen=True)
class ScaleConfig:
    """Data sizes, pretraining schedule, probe epochs and seeds of one scale."""

    pretrain: int
    probe_train: int
    probe_test: int
    steps: int
    batch_size: int
    seg_epochs: int
    n_seeds: int
    parallel: bool = True


SCALE_CONFIGS = {
    "smoke": ScaleConfig(128, 100, 50, steps=8, batch_size=16, seg_epochs=2, n_seeds=1, parallel=False),
    "quick": ScaleConfig(2000, 1000, 500, steps=150, batch_size=64, seg_epochs=15, n_seeds=1),
    "full": ScaleConfig(8000, 2000, 1000, steps=900, batch_size=64, seg_epochs=30, n_seeds=2),
    "paper": ScaleConfig(8000, 2000, 1000, steps=1500, batch_size=128, seg_epochs=30, n_seeds=3),
}

# name -> (specialisation options given to SpecViT.from_base, pretraining objective)
MAIN_RUNS = {"base": (BASE, "cls+masked_patch"), "spec": ({}, "cls+masked_patch")}
ABLATION_RUNS = {
    "base": (BASE, "cls+masked_patch"),
    "spec": ({}, "cls+masked_patch"),
    "norm_only": ({"spec_qkv_blocks": "none"}, "cls+masked_patch"),
    "qkv_only": ({"spec_norm_blocks": "none"}, "cls+masked_patch"),
    "sepnorm": (SEPNORM, "cls+masked_patch"),
    "base_cls_only": (BASE, "cls"),
    "spec_cls_only": ({}, "cls"),
}


def _train_job(arch: dict[str, Any], spec: dict[str, Any], state: dict[str, torch.Tensor], data: ShapesSeg,
               objective: str, steps: int, batch_size: int, seed: int, device: str,
               threads: int | None) -> tuple[dict[str, torch.Tensor], float]:
    """Pretrains one model (in a worker process on CPU); returns its CPU state dict and the last-10-step loss."""
    if threads is not None:
        torch.set_num_threads(threads)
    model = SpecViT(**arch, **spec)
    model.load_state_dict(state)
    model.to(device)
    out = pretrain(model, data, steps=steps, objective=objective, batch_size=batch_size, seed=seed)
    loss = float(np.mean([h["loss"] for h in out.history[-10:]]))
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}, loss


def _fwd_bwd_seconds(model: SpecViT, images: torch.Tensor, repeats: int) -> float:
    """Median wall time of one forward + backward pass of ``model`` on ``images``."""
    times = []
    for _ in range(repeats + 1):
        model.zero_grad(set_to_none=True)
        if images.is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        model.forward_features(images)["patches"].square().mean().backward()
        if images.is_cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times[1:]))


def _structure(base: SpecViT, spec: SpecViT, probe_images: np.ndarray) -> dict[str, float]:
    """Parameter overhead, FLOPs at two sizes and the function-preservation error of ``spec`` vs ``base``."""
    over = spec.param_overhead()
    with torch.no_grad():
        x = to_tensor(probe_images[:64], next(base.parameters()).device)
        fb, fs = base.forward_features(x), spec.forward_features(x)
        diff = max(float((fb[k] - fs[k]).abs().max()) for k in ("cls", "patches"))
    return {"base_params": over["base"], "extra_params": over["extra"], "param_ratio": over["ratio"],
            "flops_base": count_flops(base), "flops_spec": count_flops(spec),
            "flops_base_48px": count_flops(base, 48), "flops_spec_48px": count_flops(spec, 48),
            "from_base_max_abs_diff": diff}


def _one_seed(runs: dict[str, tuple[dict, str]], cfg: ScaleConfig, device: str, seed: int,
              analysis: bool) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Trains and probes every run for one seed; returns per-run metrics and seed-level structure metrics."""
    data = shapes_seg_splits({"pretrain": cfg.pretrain, "probe_train": cfg.probe_train,
                              "probe_test": cfg.probe_test}, seed=seed)
    arch = vit_cpu_config()
    torch.manual_seed(seed)
    base = SpecViT(**arch, **BASE).to(device)
    models = {name: SpecViT.from_base(base, **spec) for name, (spec, _) in runs.items()}
    structure = _structure(base, models["spec"], data["probe_test"].images)

    results: dict[str, dict[str, float]] = {}
    random_init = copy.deepcopy(base)
    results["random_init"] = {"cls_acc": linear_probe_cls(random_init, data["probe_train"], data["probe_test"], seed),
                              **linear_probe_seg(random_init, data["probe_train"], data["probe_test"],
                                                 epochs=cfg.seg_epochs, seed=seed)}
    on_cpu = device == "cpu"
    jobs = [delayed(_train_job)(arch, models[name].spec, {k: v.cpu() for k, v in models[name].state_dict().items()},
                                data["pretrain"], objective, cfg.steps, cfg.batch_size, seed, device,
                                1 if on_cpu and cfg.parallel else None)
            for name, (_, objective) in runs.items()]
    n_jobs = 2 if on_cpu and cfg.parallel else 1
    trained = Parallel(n_jobs=n_jobs, backend="loky" if n_jobs > 1 else "sequential")(jobs)
    for (name, _), (state, loss) in zip(runs.items(), trained):
        model = models[name]
        model.load_state_dict(state)
        model.eval()
        row = {"cls_acc": linear_probe_cls(model, data["probe_train"], data["probe_test"], seed),
               **linear_probe_seg(model, data["probe_train"], data["probe_test"], epochs=cfg.seg_epochs, seed=seed),
               "final_loss": loss, "params": sum(p.numel() for p in model.backbone_parameters().values())}
        if analysis:
            block = len(model.blocks) // 2
            row.update(token_cosine_stats(model, data["probe_test"].images, block))
        results[name] = row
    if analysis:
        x = to_tensor(data["probe_test"].images[:64], device)
        t_base = _fwd_bwd_seconds(models["base"].train(), x, repeats=5)
        t_spec = _fwd_bwd_seconds(models["spec"].train(), x, repeats=5)
        structure["fwd_bwd_seconds_base"], structure["fwd_bwd_seconds_spec"] = t_base, t_spec
        structure["fwd_bwd_time_ratio"] = t_spec / t_base
    return results, structure


def _aggregate(per_seed: list[dict[str, dict[str, float]]], seeds: list[int]) -> list[dict[str, Any]]:
    """One row per method: means over seeds of every metric, plus per-seed mIoU and accuracy."""
    rows = []
    for name in per_seed[0]:
        keys = per_seed[0][name].keys()
        row: dict[str, Any] = {"method": name}
        row.update({k: float(np.mean([r[name][k] for r in per_seed])) for k in keys})
        for s, r in zip(seeds, per_seed):
            row[f"miou_seed{s}"], row[f"cls_acc_seed{s}"] = r[name]["miou"], r[name]["cls_acc"]
        rows.append(row)
    return rows


def _structure_claims(st: dict[str, float]) -> list[Claim]:
    exact = (st["base_params"] == EXPECTED_BASE and st["extra_params"] == EXPECTED_EXTRA
             and st["flops_base"] == st["flops_spec"] and st["flops_base_48px"] == st["flops_spec_48px"])
    return [
        Claim("structure_params_flops", "+8% parameters, no extra computation (CPU preset: 25,728 / 307,392 = 8.37%)",
              f"extra {st['extra_params']} / base {st['base_params']} = {st['param_ratio']:.4%}; "
              f"FLOPs {st['flops_spec']} vs {st['flops_base']}",
              "extra == 25,728 and base == 307,392 and FLOPs(spec) == FLOPs(base) at 32 and 48 px", exact),
        Claim.at_most("function_preservation", "both copies start from the shared weights (function-preserving)",
                      st["from_base_max_abs_diff"], 1e-6, what="max |f_spec - f_base| before training"),
    ]


def _main_claims(scale: str, rows: dict[str, dict[str, Any]], per_seed: list, seeds: list[int],
                 st: dict[str, float]) -> list[Claim]:
    claims = _structure_claims(st)
    if scale == "smoke":
        return claims
    strict = scale in ("full", "paper")
    gain_floor, acc_floor = (1.0, -1.0) if strict else (0.0, -2.0)
    gains = [100 * (r["spec"]["miou"] - r["base"]["miou"]) for r in per_seed]
    acc_gaps = [100 * (r["spec"]["cls_acc"] - r["base"]["cls_acc"]) for r in per_seed]
    per = ", ".join(f"seed {s}: {g:+.2f}" for s, g in zip(seeds, gains))
    claims.append(Claim("central_miou_gain", "> +2 mIoU from specialisation (linear segmentation probe)",
                        float(np.mean(gains)), f"mean paired mIoU(spec) - mIoU(base) >= {gain_floor:+.1f} points "
                        f"({per})", bool(np.mean(gains) >= gain_floor)))
    claims.append(Claim.at_least("cls_accuracy_preserved", "classification accuracy essentially unchanged",
                                 float(np.mean(acc_gaps)), acc_floor,
                                 what="mean acc(spec) - acc(base), points"))
    if strict:
        rnd = rows["random_init"]
        acc_min = min(r[m]["cls_acc"] for r in per_seed for m in ("base", "spec"))
        miou_min = min(r[m]["miou"] for r in per_seed for m in ("base", "spec"))
        acc_bar, miou_bar = max(0.70, rnd["cls_acc"] + 0.10), max(0.45, rnd["miou"] + 0.10)
        claims.append(Claim("learning_sanity", "both models learn (floors of the spec, not calibrated)",
                            f"min CLS acc {acc_min:.3f}, min mIoU {miou_min:.3f} (random init: "
                            f"{rnd['cls_acc']:.3f}, {rnd['miou']:.3f})",
                            f"acc >= {acc_bar:.3f} and mIoU >= {miou_bar:.3f}",
                            bool(acc_min >= acc_bar and miou_min >= miou_bar)))
        b = rows["base"]
        drop = abs(b["cls_patch_pre"]) - abs(b["cls_patch_post"])
        claims.append(Claim("layernorm_separates_cls", "after the pre-attention LN, cos([CLS], patch) drops near 0 "
                            "while patch-patch cosine stays positive",
                            f"|cos cls-patch| pre {abs(b['cls_patch_pre']):.3f} -> "
                            f"post {abs(b['cls_patch_post']):.3f}; patch-patch post {b['patch_patch_post']:.3f}",
                            "post <= 0.25 and pre - post >= 0.15 and patch-patch post >= 0.2",
                            bool(abs(b["cls_patch_post"]) <= 0.25 and drop >= 0.15 and b["patch_patch_post"] >= 0.2)))
    return claims


def _ablation_claims(scale: str, rows: dict[str, dict[str, Any]], st: dict[str, float]) -> list[Claim]:
    claims = _structure_claims(st)
    sep = rows["sepnorm"]["params"] - rows["base"]["params"]
    d, depth = vit_cpu_config()["dim"], vit_cpu_config()["depth"]
    claims.append(Claim("sepnorm_overhead", "specialising every normalisation is cheap (< 0.1% at ViT-B width)",
                        f"{sep} extra = {sep / rows['base']['params']:.4%}",
                        f"extra == (2 * depth + 1) * 2D = {(2 * depth + 1) * 2 * d}",
                        bool(sep == (2 * depth + 1) * 2 * d)))
    if scale == "smoke":
        return claims
    dense_gain = rows["spec"]["miou"] - rows["base"]["miou"]
    cls_gain = rows["spec_cls_only"]["miou"] - rows["base_cls_only"]["miou"]
    claims.append(Claim("gain_needs_dense_loss", "the gain diminishes without a dense loss (DeiT-III, ViT-L)",
                        f"mIoU gain with masked-patch loss {100 * dense_gain:+.2f}, [CLS] loss only "
                        f"{100 * cls_gain:+.2f} points", "gain(dense) >= gain(cls only)",
                        bool(dense_gain >= cls_gain)))
    return claims


def _run(runs: dict[str, tuple[dict, str]], ablation: bool, scale: str, device: str, seed: int) -> Result:
    check_scale(scale)
    cfg = SCALE_CONFIGS[scale]
    if device == "cpu":
        torch.set_num_threads(min(2, torch.get_num_threads()))
    seeds = [seed + i for i in range(cfg.n_seeds if not ablation else 1)]
    analysis = not ablation and scale != "smoke"
    outcomes = [_one_seed(runs, cfg, device, s, analysis=analysis) for s in seeds]
    per_seed = [o[0] for o in outcomes]
    st = outcomes[0][1]
    rows = _aggregate(per_seed, seeds)
    by_name = {r["method"]: r for r in rows}
    metrics = {k: float(v) for k, v in st.items()}
    metrics.update({f"{r['method']}_{k}": r[k] for r in rows for k in ("miou", "cls_acc", "pixel_acc")})
    claims = _ablation_claims(scale, by_name, st) if ablation else _main_claims(scale, by_name, per_seed, seeds, st)
    return Result(metrics=metrics, rows=rows, claims=claims)


def run_main(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """The benchmark ``vit-token``: base vs specialised ViT (claims: structure, function preservation, central
    mIoU gain with unchanged accuracy; at full/paper also learning sanity and the LayerNorm analysis)."""
    return _run(MAIN_RUNS, False, scale, device, seed)


def run_ablations(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """The benchmark ``vit-token.ablations``: norm-only, QKV-only, SepNorm and the no-dense-loss runs (one seed)."""
    return _run(ABLATION_RUNS, True, scale, device, seed)


BENCHMARK = Benchmark("vit-token", PAPER, PACKAGE, run_main)
ABLATIONS = Benchmark("vit-token.ablations", PAPER, PACKAGE, run_ablations)
