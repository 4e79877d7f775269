"""The reproduction benchmarks ``vit-token`` (base vs specialised ViT) and ``vit-token.ablations``.

Per seed (seeds ``derive_seeds(--seed, n_seeds)``): ShapesSeg data (pretraining, probe-train, probe-test from
disjoint random streams), a base ViT initialised with the seed, every other model built from it with
``SpecViT.from_base`` (so all runs start from the same function and differ only by specialisation), one set
of pretraining heads drawn from the seed in this process and given to every run of that seed, identical data
order; then frozen linear probes for classification ([CLS]) and segmentation (patches) and the LayerNorm
cosine analysis. On CPU the runs are spread over as many single-thread worker processes as the caller gave
threads (``--threads``), sequential otherwise; every run is a pure function of its inputs, so the results do
not depend on how the runs are scheduled. The central claim (spec - base mIoU) is paired over the seeds.
"""
from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale, derive_seeds
from joblib import Parallel, delayed

from .analysis import token_cosine_stats
from .data import ShapesSeg, shapes_seg_splits
from .model import BASE, SEPNORM, SpecViT, count_flops, vit_cpu_config
from .pretrain import PretrainHeads, pretrain, to_tensor
from .probe import linear_probe_cls, linear_probe_seg

PAPER = "Revisiting [CLS] and Patch Token Interaction in Vision Transformers"
PACKAGE = "iclr26-vit-token"
EXPECTED_BASE, EXPECTED_EXTRA = 307_392, 25_728


@dataclass(frozen=True)
class ScaleConfig:
    """Data sizes, pretraining schedule, probe epochs and CV folds, seeds of the main benchmark, whether every
    seed gets its own random-init reference row (otherwise the first seed only), and whether the ablation
    benchmark trains (otherwise it checks only the parameter structure)."""

    pretrain: int
    probe_train: int
    probe_test: int
    steps: int
    batch_size: int
    seg_epochs: int
    n_seeds: int
    train_ablations: bool
    cls_folds: int = 5
    random_init_every_seed: bool = True


SCALE_CONFIGS = {
    "smoke": ScaleConfig(128, 100, 50, steps=4, batch_size=16, seg_epochs=2, n_seeds=1, train_ablations=False,
                         cls_folds=3),
    "quick": ScaleConfig(960, 400, 200, steps=30, batch_size=32, seg_epochs=8, n_seeds=5, train_ablations=False,
                         cls_folds=3, random_init_every_seed=False),
    # full: 10 paired seeds (what detecting +1 mIoU needs), sized for <= 15 min on 2 idle cores (estimated from
    # the 100-step, 5-seed run's 555 CPU s); longer pretraining is the paper scale's
    "full": ScaleConfig(8000, 1000, 500, steps=160, batch_size=64, seg_epochs=12, n_seeds=10, train_ablations=True),
    "paper": ScaleConfig(8000, 2000, 1000, steps=1500, batch_size=128, seg_epochs=30, n_seeds=10,
                         train_ablations=True),
}

# name -> (specialisation options given to SpecViT.from_base, pretraining objective)
MAIN_RUNS = {"base": (BASE, "cls+masked_patch"), "spec": ({}, "cls+masked_patch")}
ABLATION_RUNS = {
    "base": (BASE, "cls+masked_patch"),
    "spec": ({}, "cls+masked_patch"),
    "norm_only": ({"spec_qkv_blocks": "none"}, "cls+masked_patch"),
    "qkv_only": ({"spec_norm_blocks": "none"}, "cls+masked_patch"),
    "sepnorm": (SEPNORM, "cls+masked_patch"),
    "base_ibot": (BASE, "cls+ibot"),
    "spec_ibot": ({}, "cls+ibot"),
    "base_cls_only": (BASE, "cls"),
    "spec_cls_only": ({}, "cls"),
}
# dense-term options per objective: raw pixels at MAE's 0.75 masking; iBOT at 0.4 (its range is 0.1-0.5)
OBJECTIVE_OPTIONS = {"cls+masked_patch": {"pixel_target": "raw", "mask_ratio": 0.75},
                     "cls+ibot": {"mask_ratio": 0.4}, "cls": {}}


@dataclass(frozen=True)
class Job:
    """One run: a model (architecture, specialisation, initial weights), the seed's shared initial heads and
    data, the objective and schedule (``steps=0``: the frozen random-init baseline)."""

    seed: int
    name: str
    spec: dict[str, Any]
    state: dict[str, torch.Tensor]
    heads: dict[str, torch.Tensor]
    data: dict[str, ShapesSeg]
    objective: str
    steps: int


def _run_job(job: Job, cfg: ScaleConfig, device: str, analysis: bool, threads: int | None) -> dict[str, float]:
    """Pretrains (unless ``job.steps == 0``) and probes one model; returns its metrics row."""
    if threads is not None:  # a worker process: its share of the caller's thread budget
        torch.set_num_threads(threads)
    model = SpecViT(**vit_cpu_config(), **job.spec)
    model.load_state_dict(job.state)
    model.to(device)
    row: dict[str, float] = {}
    if job.steps:
        heads = PretrainHeads.for_model(model)
        heads.load_state_dict(job.heads)
        out = pretrain(model, job.data["pretrain"], steps=job.steps, objective=job.objective,
                       batch_size=cfg.batch_size, seed=job.seed, heads=heads, **OBJECTIVE_OPTIONS[job.objective])
        row["final_loss"] = float(np.mean([h["loss"] for h in out.history[-10:]]))
    model.eval()
    train, test = job.data["probe_train"], job.data["probe_test"]
    row["cls_acc"] = linear_probe_cls(model, train, test, job.seed, folds=cfg.cls_folds)
    row.update(linear_probe_seg(model, train, test, epochs=cfg.seg_epochs, seed=job.seed))
    row["params"] = sum(p.numel() for p in model.backbone_parameters().values())
    if analysis:
        row.update(token_cosine_stats(model, test.images, len(model.blocks) // 2))
    return row


def _jobs(runs: dict[str, tuple[dict, str]], cfg: ScaleConfig, seed: int, random_init: bool = True) -> list[Job]:
    """Every run of ``runs`` for one seed (and, with ``random_init``, the frozen random-init baseline), all from
    one base and one set of heads."""
    data = shapes_seg_splits({"pretrain": cfg.pretrain, "probe_train": cfg.probe_train,
                              "probe_test": cfg.probe_test}, seed=seed)
    torch.manual_seed(seed)
    base = SpecViT(**vit_cpu_config(), **BASE)
    heads = PretrainHeads.for_model(base, seed).state_dict()
    jobs = [Job(seed, "random_init", BASE, base.state_dict(), heads, data, "cls", 0)] if random_init else []
    for name, (spec, objective) in runs.items():
        model = SpecViT.from_base(base, **spec)
        jobs.append(Job(seed, name, model.spec, model.state_dict(), heads, data, objective, cfg.steps))
    return jobs


def run_jobs(jobs: list[Job], cfg: ScaleConfig, device: str, analysis: bool) -> list[dict[str, float]]:
    """Runs ``jobs`` (in ``torch.get_num_threads()`` single-thread processes on CPU, in order otherwise)."""
    workers = min(torch.get_num_threads(), len(jobs)) if device == "cpu" else 1
    if workers == 1:
        return [_run_job(j, cfg, device, analysis, None) for j in jobs]
    return Parallel(n_jobs=workers, backend="loky")(delayed(_run_job)(j, cfg, device, analysis, 1) for j in jobs)


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


def _aggregate(per_seed: list[dict[str, dict[str, float]]], seeds: list[int]) -> list[dict[str, Any]]:
    """One row per method: means over the seeds that ran it of every metric, plus per-seed mIoU and accuracy."""
    rows = []
    for name in per_seed[0]:
        runs = [(s, r[name]) for s, r in zip(seeds, per_seed) if name in r]
        row: dict[str, Any] = {"method": name, "n_seeds": len(runs)}
        row.update({k: float(np.mean([r[k] for _, r in runs])) for k in runs[0][1]})
        for s, r in runs:
            row[f"miou_seed{s}"], row[f"cls_acc_seed{s}"] = r["miou"], r["cls_acc"]
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
    # central margin: 0 at quick and full (issue 42: over ~10 paired seeds the claim holds when the interval's low
    # end is > 0), the spec's +1.0 at paper
    gain_margin = 1.0 if scale == "paper" else 0.0
    acc_margin = -1.0 if strict else -2.0
    miou = {m: [100 * r[m]["miou"] for r in per_seed] for m in ("base", "spec")}
    acc = {m: [100 * r[m]["cls_acc"] for r in per_seed] for m in ("base", "spec")}
    claims.append(Claim.paired("central_miou_gain", "> +2 mIoU from specialisation (linear segmentation probe)",
                               miou["spec"], miou["base"], seeds, margin=gain_margin,
                               what="mIoU(spec) - mIoU(base), points"))
    claims.append(Claim.paired("cls_accuracy_preserved", "classification accuracy essentially unchanged",
                               acc["spec"], acc["base"], seeds, margin=acc_margin,
                               what="acc(spec) - acc(base), points"))
    if strict:
        claims.append(Claim.paired("dense_features_learnt", "pretraining gives patch features a linear probe can "
                                   "segment (issue 42: >= random init + 10 mIoU points)",
                                   miou["base"], [100 * r["random_init"]["miou"] for r in per_seed], seeds,
                                   margin=10.0, what="mIoU(base) - mIoU(random init), points"))
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


def _ablation_claims(st: dict[str, float], rows: dict[str, dict[str, Any]] | None) -> list[Claim]:
    """Structure claims and the SepNorm overhead; with trained ``rows`` (full, paper) also the dense-loss claim."""
    claims = _structure_claims(st)
    sep = int(st["sepnorm_extra_params"])
    d, depth = vit_cpu_config()["dim"], vit_cpu_config()["depth"]
    claims.append(Claim("sepnorm_overhead", "specialising every normalisation is cheap (< 0.1% at ViT-B width)",
                        f"{sep} extra = {sep / st['base_params']:.4%}",
                        f"extra == (2 * depth + 1) * 2D = {(2 * depth + 1) * 2 * d}",
                        bool(sep == (2 * depth + 1) * 2 * d)))
    if rows is None:
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
    seeds = derive_seeds(seed, 1 if ablation else cfg.n_seeds)
    analysis = not ablation and scale != "smoke"
    torch.manual_seed(seeds[0])
    base = SpecViT(**vit_cpu_config(), **BASE).to(device)
    spec = SpecViT.from_base(base)
    probe = shapes_seg_splits({"probe_test": 64}, seed=seeds[0])["probe_test"]
    st = _structure(base, spec, probe.images)
    if ablation:
        sepnorm = SpecViT.from_base(base, **SEPNORM)
        st["sepnorm_extra_params"] = sepnorm.param_overhead()["extra"]
        if not cfg.train_ablations:
            return Result(metrics={k: float(v) for k, v in st.items()}, claims=_ablation_claims(st, None))
    else:
        x = to_tensor(probe.images, device)
        st["fwd_bwd_seconds_base"] = _fwd_bwd_seconds(base.train(), x, repeats=5)
        st["fwd_bwd_seconds_spec"] = _fwd_bwd_seconds(spec.train(), x, repeats=5)
        st["fwd_bwd_time_ratio"] = st["fwd_bwd_seconds_spec"] / st["fwd_bwd_seconds_base"]
    jobs = [j for s in seeds for j in _jobs(runs, cfg, s, cfg.random_init_every_seed or s == seeds[0])]
    out = run_jobs(jobs, cfg, device, analysis)
    per_seed = [{j.name: r for j, r in zip(jobs, out) if j.seed == s} for s in seeds]
    rows = _aggregate(per_seed, seeds)
    by_name = {r["method"]: r for r in rows}
    metrics = {k: float(v) for k, v in st.items()}
    metrics.update({f"{r['method']}_{k}": r[k] for r in rows for k in ("miou", "cls_acc", "pixel_acc")})
    claims = _ablation_claims(st, by_name) if ablation else _main_claims(scale, by_name, per_seed, seeds, st)
    return Result(metrics=metrics, rows=rows, claims=claims)


def run_main(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """The benchmark ``vit-token``: base vs specialised ViT (claims: structure, function preservation, central
    mIoU gain with unchanged accuracy; at full/paper also learning sanity and the LayerNorm analysis)."""
    return _run(MAIN_RUNS, False, scale, device, seed)


def run_ablations(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """The benchmark ``vit-token.ablations``: norm-only, QKV-only, SepNorm and the no-dense-loss runs (one seed,
    trained at full/paper only; smoke and quick check the parameter structure)."""
    return _run(ABLATION_RUNS, True, scale, device, seed)


BENCHMARK = Benchmark("vit-token", PAPER, PACKAGE, run_main)
ABLATIONS = Benchmark("vit-token.ablations", PAPER, PACKAGE, run_ablations)
