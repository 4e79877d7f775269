"""The registered reproduction ``smsn``: SMSN vs parallel fusion over the 15 modality subsets."""
from __future__ import annotations

import pathlib
import time

import numpy as np
import torch
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale

from .data import PhantomDataset, make_phantom, subset_masks
from .losses import SMSNLoss
from .metrics import REGIONS, evaluate_subsets
from .models import build_model
from .train import fit

PAPER = ("Sequential Information Bottleneck Fusion: Towards Robust and Generalizable Multi-Modal "
         "Brain Tumor Segmentation")

# Per scale: phantom, models, training. `paper` = the spec's GPU configuration (3-D phantom at 48³).
CONFIGS = {
    "smoke": dict(ndim=2, size=16, n_train=32, n_test=8, widths=(4, 8, 8, 16), steps=3, batch=8,
                  models=("smsn", "concat"), ablations=(), bootstrap=0, leak_n=4, threads=1),
    "quick": dict(ndim=2, size=48, n_train=400, n_test=100, widths=(8, 16, 32, 64), steps=100, batch=16,
                  models=("smsn", "concat"), ablations=(), bootstrap=0, leak_n=32, threads=1),
    "full": dict(ndim=2, size=64, n_train=800, n_test=300, widths=(8, 16, 32, 64), steps=400, batch=16,
                 models=("smsn", "mean", "concat"), ablations=(), bootstrap=1000, leak_n=32, threads=1),
    "paper": dict(ndim=3, size=48, n_train=2000, n_test=200, widths=(16, 32, 64, 128, 256), steps=30000, batch=2,
                  models=("smsn", "mean", "concat", "attention"), ablations=("no_recon", "no_orth", "fixed_order"),
                  bootstrap=1000, leak_n=4, threads=None),
}
TEST_SEED = 10_000


def _make(name: str, cfg: dict):
    """(model, loss) for a model or an ablation name."""
    kwargs = dict(ndim=cfg["ndim"], widths=cfg["widths"])
    if name == "no_recon":
        return build_model("smsn", beta=0.0, gamma=0.0, **kwargs), SMSNLoss()
    if name == "no_orth":
        return build_model("smsn", **kwargs), SMSNLoss(lambda_o=0.0)
    if name == "fixed_order":
        return build_model("smsn", random_order=False, **kwargs), SMSNLoss()
    return build_model(name, **kwargs), SMSNLoss()


@torch.no_grad()
def mask_leakage(model, images: torch.Tensor, seed: int = 0) -> tuple[float, float]:
    """Acceptance 3: (max |Δlogit| when masked modalities hold noise or 100 instead of zeros, over all 15
    subsets; max |Δlogit| between two identical calls). ``images (B, 4, ...)``; the model is put in eval mode."""
    model.eval()
    gen = torch.Generator(device="cpu").manual_seed(seed)
    leak, repeat = 0.0, 0.0
    for mask in torch.as_tensor(subset_masks(), device=images.device):
        m = mask.expand(len(images), -1)
        mm = m.reshape(*m.shape, *([1] * (images.ndim - 2)))
        base = model(torch.where(mm, images, 0.0), m).logits
        noise = torch.randn(images.shape, generator=gen).to(images.device)
        for filler in (noise, torch.full_like(images, 100.0)):
            leak = max(leak, float((model(torch.where(mm, images, filler), m).logits - base).abs().max()))
        repeat = max(repeat, float((model(torch.where(mm, images, 0.0), m).logits - base).abs().max()))
    return leak, repeat


def paired_bootstrap(a: np.ndarray, b: np.ndarray, n: int, seed: int) -> tuple[float, float]:
    """95% CI of mean(a − b) over paired samples ``a, b (N,)`` by resampling samples."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n, len(a)))
    diffs = (a[idx] - b[idx]).mean(1)
    return float(np.quantile(diffs, 0.025)), float(np.quantile(diffs, 0.975))


def run(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Trains SMSN and the baselines on the same phantom, evaluates all 15 subsets, computes the claims."""
    cfg = CONFIGS[check_scale(scale)]
    if cfg["threads"] and device == "cpu":
        torch.set_num_threads(cfg["threads"])
    train_p = make_phantom(cfg["n_train"], cfg["size"], seed=seed, ndim=cfg["ndim"])
    test_p = make_phantom(cfg["n_test"], cfg["size"], seed=TEST_SEED + seed, ndim=cfg["ndim"])
    train_set, test_set = PhantomDataset.from_phantom(train_p), PhantomDataset.from_phantom(test_p)
    leak_images = test_set.images[: cfg["leak_n"]].to(device)
    masks = subset_masks()
    has_t1ce, sizes = masks[:, 1], masks.sum(1)
    flair_alone = int(np.flatnonzero((masks == [False, False, False, True]).all(1))[0])
    full_idx = len(masks) - 1
    rows, evals, claims, metrics = [], {}, [], {}
    for name in (*cfg["models"], *cfg["ablations"]):
        torch.manual_seed(seed)
        model, loss = _make(name, cfg)
        model.to(device)
        start = time.perf_counter()
        hist = fit(model, train_set, steps=cfg["steps"], batch_size=cfg["batch"], lr=1e-3, weight_decay=1e-4,
                   seed=seed, device=device, loss=loss)
        train_s = time.perf_counter() - start
        ev = evaluate_subsets(model, test_set, batch_size=32 if cfg["ndim"] == 2 else 2)
        leak, repeat = mask_leakage(model, leak_images, seed)
        evals[name] = ev
        d = ev["dice"]
        row = {"method": name, "overall": ev["overall"], "hard": ev["hard"], "train_seconds": train_s,
               "steps": hist.steps, "final_loss": hist.epochs[-1]["total"], "leak_max_abs": leak,
               "repeat_max_abs": repeat, "et_with_t1ce": float(d[has_t1ce, 2].mean()),
               "et_without_t1ce": float(d[~has_t1ce, 2].mean()), "wt_flair_alone": float(d[flair_alone, 0])}
        row.update({f"{r}_mean": ev["mean"][r] for r in REGIONS})
        row.update({f"{r}_full": float(d[full_idx, j]) for j, r in enumerate(REGIONS)})
        row.update({f"{ev['subsets'][i]}_{r}": float(d[i, j]) for i in range(len(d)) for j, r in enumerate(REGIONS)})
        rows.append(row)
        for key in ("overall", "hard", "leak_max_abs"):
            metrics[f"{name}_{key}"] = row[key]

    models = cfg["models"]
    leak = max(r["leak_max_abs"] for r in rows)
    repeat = max(r["repeat_max_abs"] for r in rows)
    claims.append(Claim.at_most("mask_no_leakage", "missing modalities are ignored (structural)", leak, 1e-6,
                                "max |Δlogit| with masked inputs replaced by noise / 100, all models"))
    claims.append(Claim.at_most("deterministic_eval", "deterministic test-time order, z = μ", repeat, 1e-6,
                                "max |Δlogit| between two identical calls"))
    gap_margin = 0.15 if scale in ("smoke", "quick") else 0.25
    gap = min(r["et_with_t1ce"] - r["et_without_t1ce"] for r in rows if r["method"] in models)
    claims.append(Claim.at_least("phantom_et_needs_t1ce", "ET is visible essentially only in T1ce (phantom design)",
                                 gap, gap_margin, "min over models of ET(with T1ce) − ET(without T1ce)"))
    if scale not in ("smoke", "quick"):
        worst_without = max(r["et_without_t1ce"] for r in rows if r["method"] in models)
        claims.append(Claim.at_most("phantom_et_without_t1ce", "ET without T1ce is poor", worst_without, 0.45,
                                    "max over models of ET Dice averaged over the 7 subsets without T1ce"))
        worst_flair = min(r["wt_flair_alone"] for r in rows if r["method"] in models)
        claims.append(Claim.at_least("phantom_wt_flair_alone", "WT is clearest in FLAIR", worst_flair, 0.75,
                                     "min over models of WT Dice with FLAIR alone"))
        for region, floor in zip(REGIONS, (0.85, 0.75, 0.65)):
            worst = min(r[f"{region}_full"] for r in rows if r["method"] in models)
            claims.append(Claim.at_least(f"sanity_full_{region}", "full-modality Dice of every model", worst, floor,
                                         f"min over models of {region} Dice with all four modalities"))

    baselines = [m for m in models if m != "smsn"]
    best = max(baselines, key=lambda m: evals[m]["overall"])
    best_hard = max(baselines, key=lambda m: evals[m]["hard"])
    relaxed = scale in ("smoke", "quick")
    overall_gap = evals["smsn"]["overall"] - evals[best]["overall"]
    hard_gap = evals["smsn"]["hard"] - evals[best_hard]["hard"]
    metrics.update(smsn_minus_best_overall=overall_gap, smsn_minus_best_hard=hard_gap)
    claims.append(Claim.at_least(
        "smsn_vs_parallel_overall", "avg Dice over 15 subsets: SMSN 85.62/75.20/62.39 vs best parallel "
        "85.39/73.25/55.21 (BraTS18 WT/TC/ET)", overall_gap, -0.01 if relaxed else -0.005,
        f"SMSN − best baseline ({best}) mean Dice over 45 cells"))
    claims.append(Claim.at_least(
        "smsn_vs_parallel_hard", "the gain grows with the number of missing modalities", hard_gap,
        0.0 if relaxed else 0.01, f"SMSN − best baseline ({best_hard}) mean Dice over subsets with <= 2 modalities"))
    if cfg["bootstrap"]:
        for key, other in (("overall", best), ("hard", best_hard)):
            cells = (slice(None) if key == "overall" else sizes <= 2)
            a = evals["smsn"]["per_sample"][:, cells].mean((1, 2))
            b = evals[other]["per_sample"][:, cells].mean((1, 2))
            lo, hi = paired_bootstrap(a, b, cfg["bootstrap"], seed)
            metrics[f"smsn_minus_best_{key}_ci_low"], metrics[f"smsn_minus_best_{key}_ci_high"] = lo, hi
    for name in cfg["ablations"]:
        claims.append(Claim.at_least(f"ablation_{name}", "removing a component lowers Dice (BraTS18 ablation)",
                                     evals["smsn"]["hard"] - evals[name]["hard"], 0.0,
                                     f"SMSN hard-subset mean − {name}'s"))
    return Result(metrics=metrics, rows=rows, claims=claims)


BENCHMARK = Benchmark("smsn", PAPER, "iclr26-smsn", run)
