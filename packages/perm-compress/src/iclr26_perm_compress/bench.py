"""The reproduction benchmarks, registered under ``iclr26.benchmarks``.

- ``perm-compress.exactness``: Tchakaloff reduction of 3000 points in [-1, 1]^3, k = 4 (step 1).
- ``perm-compress.error-scaling``: Fig. 2 at small scale, with the random-subset baseline (step 2).
- ``perm-compress.lth``: scaled-down Fig. 4, full vs compressed vs random sub-networks (step 3).
- ``perm-compress.dataset``: scaled-down Fig. 3, full vs compressed vs random data (step 4).
"""
from __future__ import annotations

import pathlib

import numpy as np
import torch
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale
from sklearn.cluster import KMeans

from .compressor import MomentCompressor
from .experiments import dataset_experiment, error_scaling, lth_experiment
from .moments import moments, tchakaloff_bound
from .plots import plot_curves, plot_error_scaling

PAPER = "A Universal Compression Theory: Lottery Ticket Hypothesis and Superpolynomial Scaling Laws"
PACKAGE = "iclr26-perm-compress"

EXACTNESS_CONFIG = {
    "smoke": {"d": 300, "m": 3, "k": 4},
    "quick": {"d": 3000, "m": 3, "k": 4},
    "full": {"d": 3000, "m": 3, "k": 4},
    "paper": {"d": 100000, "m": 3, "k": 4},
}
ERROR_SCALING_CONFIG = {
    "smoke": {"m_list": (2,), "k_list": (2,), "d_list": (1000,), "trials": 1},
    "quick": {"m_list": (2,), "k_list": (2,), "d_list": (2000, 4000, 8000, 16000), "trials": 2},
    "full": {"m_list": (2,), "k_list": (2, 4), "d_list": (2000, 4000, 8000, 16000), "trials": 5},
    "paper": {"m_list": (1, 2, 3), "k_list": (2, 4), "d_list": (2000, 4000, 8000, 16000, 32000, 64000), "trials": 20},
}
LTH_CONFIG = {
    "smoke": {"width": 300, "target_width": 60, "k": 2, "n_train": 1000, "n_test": 2000, "epochs": 2, "log_every": 1,
              "optimizers": ("adam",)},
    "quick": {"width": 2000, "target_width": 200, "k": 4, "n_train": 5000, "n_test": 10000, "epochs": 20,
              "log_every": 2, "optimizers": ("adam",)},
    "full": {"width": 4000, "target_width": 400, "k": 4, "n_train": 20000, "n_test": 10000, "epochs": 60,
             "log_every": 5, "optimizers": ("adam",)},
    "paper": {"width": 10000, "target_width": 1000, "k": 5, "n_train": 100000, "n_test": 10000, "epochs": 1000,
              "log_every": 50, "optimizers": ("sgd", "adam", "adamw", "rmsprop", "rprop", "adamax")},
}
DATASET_CONFIG = {
    "smoke": {"d": 1000, "target_size": 100, "k": 4, "steps": 20},
    "quick": {"d": 5000, "target_size": 500, "k": 4, "steps": 200},
    "full": {"d": 5000, "target_size": 500, "k": 4, "steps": 400},
    "paper": {"d": 10000, "target_size": 1000, "k": 5, "steps": 2000},
}


def _cpu_threads(device: str) -> None:
    """Two intra-op threads on the CPU (the target machine has two cores)."""
    if device == "cpu":
        torch.set_num_threads(min(2, torch.get_num_threads()))


def _degree4_symmetric_polynomial(rng: np.random.Generator, m: int):
    """A random degree-4 polynomial P(w), evaluated from the coordinates (not from monomial features)."""
    a, u, v, e = (rng.standard_normal(m) for _ in range(4))
    b = rng.standard_normal()
    return lambda W: (W @ a + b) ** 4 + (W @ u) ** 2 * (W @ v) + W @ e


def run_exactness(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Step 1: reduce d uniform points in [-1, 1]^3 to the Tchakaloff bound and check exactness."""
    cfg = EXACTNESS_CONFIG[check_scale(scale)]
    rng = np.random.default_rng(seed)
    d, m, k = cfg["d"], cfg["m"], cfg["k"]
    bound = tchakaloff_bound(m, k)
    W = rng.uniform(-1, 1, (d, m))
    poly = _degree4_symmetric_polynomial(rng, m)
    p_full = moments(W, None, k)
    poly_full, poly_scale = poly(W).sum(), np.abs(poly(W)).sum()

    mc = MomentCompressor(k=k, target_size=bound, random_state=seed).fit(W)
    sub = rng.choice(d, size=bound, replace=False)
    km = KMeans(n_clusters=bound, n_init=1, random_state=seed).fit(W)
    candidates = {
        "moment_matched": (mc.points_, mc.weights_),
        "random_subset": (W[sub], np.full(bound, d / bound)),
        "kmeans_centroids": (km.cluster_centers_, np.bincount(km.labels_, minlength=bound).astype(float)),
    }
    rows = []
    for name, (P, c) in candidates.items():
        rows.append({
            "method": name,
            "support": int((c > 0).sum()),
            "min_weight": float(c.min()),
            "mass_error": abs(c.sum() - d) / d,
            "moment_error": float(np.abs(moments(P, c, k) - p_full).max() / np.abs(p_full).max()),
            "polynomial_error": float(abs(c @ poly(P) - poly_full) / poly_scale),
        })
    mm = rows[0]
    claims = [
        Claim.at_most("support_at_tchakaloff_bound", f"support <= C(m+k, k) = {bound} (Tchakaloff)",
                      mm["support"], bound, what="support"),
        Claim.at_least("weights_nonnegative", "all weights >= 0", mm["min_weight"], 0.0, what="min weight"),
        Claim.at_most("mass_preserved", "sum c = d (row 0 of A is all ones)", mm["mass_error"], 1e-12,
                      what="|sum c - d| / d"),
        Claim.at_most("moments_matched", "every monomial moment of degree <= 4 matched (1e-9)",
                      mm["moment_error"], 1e-9, what="relative moment error"),
        Claim.at_most("symmetric_polynomial_matched", "a random symmetric polynomial of degree 4 is unchanged (1e-9)",
                      mm["polynomial_error"], 1e-9, what="relative error"),
    ]
    metrics = {"d": d, "tchakaloff_bound": bound, "seconds_compress": mc.timings_["total"],
               **{f"{r['method']}_{key}": r[key] for r in rows for key in ("moment_error", "polynomial_error")}}
    return Result(metrics=metrics, rows=rows, claims=claims)


def run_error_scaling(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Step 2: Fig. 2 (sigmoid benchmark) error vs d, moment matching vs a random 10% subset."""
    cfg = ERROR_SCALING_CONFIG[check_scale(scale)]
    res = error_scaling(**cfg, ratio=0.1, seed=seed)
    records = res["records"]
    groups = sorted({(r["m"], r["k"], r["d"]) for r in records})
    rows = []
    for m, k, d in groups:
        sel = [r for r in records if (r["m"], r["k"], r["d"]) == (m, k, d)]
        err = float(np.mean([r["error"] for r in sel]))
        rnd = float(np.mean([r["random_error"] for r in sel]))
        rows.append({"method": f"moment_matched_m{m}_k{k}", "m": m, "k": k, "d": d, "target": sel[0]["target"],
                     "error": err, "seconds": float(np.mean([r["seconds"] for r in sel]))})
        rows.append({"method": "random_subset", "m": m, "k": k, "d": d, "target": sel[0]["target"], "error": rnd})
    err_at = {(r["m"], r["k"], r["d"]): r["error"] for r in rows if r["method"] != "random_subset"}
    rnd_at = {(r["m"], r["k"], r["d"]): r["error"] for r in rows if r["method"] == "random_subset"}
    worst_ratio = max(err_at[key] / rnd_at[key] for key in err_at)
    claims = []
    if len(cfg["d_list"]) > 1:
        claims.append(Claim.at_most("slope_k2", "error ~ d^-((k+1)/m + 0.5): slope -2.0 for m = 2, k = 2 (Fig. 2)",
                                    res["slopes"]["m2_k2"], -1.5, what="fitted slope (m=2, k=2)"))
    if 4 in cfg["k_list"] and len(cfg["d_list"]) > 1:
        claims.append(Claim.at_most("slope_k4", "slope -3.0 for m = 2, k = 4 (Fig. 2)",
                                    res["slopes"]["m2_k4"], -2.5, what="fitted slope (m=2, k=4)"))
        claims.append(Claim.at_most("higher_order_helps", "at d = 4000 the k = 4 error is far below the k = 2 error",
                                    err_at[(2, 4, 4000)] / err_at[(2, 2, 4000)], 0.1, what="error(k=4) / error(k=2)"))
    claims.append(Claim.at_most("beats_random_subset", "moment matching beats a random subset by decades at every d",
                                worst_ratio, 1e-3, what="max over d of error / random-subset error"))
    fig = plot_error_scaling(res, out_dir / f"perm-compress_error-scaling_{scale}_seed{seed}.png")
    metrics = {f"slope_{key}": v for key, v in res["slopes"].items()}
    metrics.update({f"reference_slope_{key}": v for key, v in res["reference"].items()})
    metrics["worst_error_ratio_vs_random"] = worst_ratio
    return Result(metrics=metrics, rows=rows, claims=claims, figures=[fig])


def run_lth(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Step 3: dynamical lottery ticket, full vs compressed (1/c_j rule) vs random sub-networks."""
    cfg = dict(LTH_CONFIG[check_scale(scale)])
    _cpu_threads(device)
    optimizers = cfg.pop("optimizers")
    rows, figures, devs, randoms, ratios = [], [], [], [], []
    for opt in optimizers:
        res = lth_experiment(**cfg, optimizer=opt, lr=1e-3, batch_size=512, noise=0.2, seed=seed, device=device)
        for name, curve in res["curves"].items():
            rows.append({"method": name, "optimizer": opt, "width": res["widths"][name],
                         "deviation": res["deviation"][name], "initial_rmse_to_full": res["initial_rmse_to_full"][name],
                         "initial_test_mse": curve[0][1], "final_test_mse": curve[-1][1]})
        devs.append(res["deviation"]["compressed"])
        randoms.append(res["deviation"]["random"] / max(res["deviation"]["compressed"], 1e-12))
        ratios.append(res["initial_rmse_to_full"]["compressed"] / res["initial_rmse_to_full"]["random"])
        figures.append(plot_curves(res["curves"], out_dir / f"perm-compress_lth_{opt}_{scale}_seed{seed}.png",
                                   f"dynamical LTH ({opt}, width {cfg['width']} -> {cfg['target_width']})"))
    claims = [
        Claim.at_most("initial_prediction_match", "compressed net reproduces the full net at init (Fig. 4)",
                      max(ratios), 0.05, what="RMSE(compressed, full) / RMSE(random, full) at epoch 0"),
        Claim.at_most("trajectory_tracks_full", "compressed training curve indistinguishable from full (Fig. 4)",
                      max(devs), 0.15, what="max_t |log L_comp - log L_full|"),
        Claim.at_least("random_subnetwork_deviates", "a random sub-network of the same width deviates (Fig. 4)",
                       min(randoms), 3.0, what="dev_random / dev_compressed"),
    ]
    metrics = {"dev_compressed": max(devs), "dev_random_over_compressed": min(randoms),
               "initial_rmse_ratio": max(ratios), "compression_seconds": res["compression_seconds"]}
    return Result(metrics=metrics, rows=rows, claims=claims, figures=figures)


def run_dataset(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Step 4: the same student trained on the full, moment-compressed and random-subset data."""
    cfg = DATASET_CONFIG[check_scale(scale)]
    _cpu_threads(device)
    res = dataset_experiment(**cfg, teacher_width=50, student_width=50, noise=3.0, lr=1e-2, optimizer="adam",
                             seed=seed, device=device)
    final = res["final"]
    rows = [{"method": name, "n_points": res["sizes"][name], "final_test_mse": final[name]} for name in final]
    claims = [
        Claim.at_most("compressed_matches_full", "compressed data tracks the full data's test MSE (Fig. 3)",
                      final["compressed"] / final["full"], 1.15, what="MSE(compressed) / MSE(full)"),
        Claim.at_least("random_subset_worse", "a random subset of the same size does worse (Fig. 3)",
                       final["random"] / final["compressed"], 1.3, what="MSE(random) / MSE(compressed)"),
    ]
    fig = plot_curves(res["curves"], out_dir / f"perm-compress_dataset_{scale}_seed{seed}.png",
                      f"dataset compression (d = {cfg['d']} -> {cfg['target_size']})")
    metrics = {f"final_mse_{name}": v for name, v in final.items()}
    return Result(metrics=metrics, rows=rows, claims=claims, figures=[fig])


EXACTNESS = Benchmark("perm-compress.exactness", PAPER, PACKAGE, run_exactness)
ERROR_SCALING = Benchmark("perm-compress.error-scaling", PAPER, PACKAGE, run_error_scaling)
LTH = Benchmark("perm-compress.lth", PAPER, PACKAGE, run_lth)
DATASET = Benchmark("perm-compress.dataset", PAPER, PACKAGE, run_dataset)
BENCHMARKS = [EXACTNESS, ERROR_SCALING, LTH, DATASET]
