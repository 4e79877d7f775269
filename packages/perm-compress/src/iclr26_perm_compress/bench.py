"""The reproduction benchmarks, registered under ``iclr26.benchmarks``.

- ``perm-compress.exactness``: Tchakaloff reduction of 3000 points in [-1, 1]^3, k = 4 (step 1).
- ``perm-compress.error-scaling``: Fig. 2 at small scale, with the random-subset baseline (step 2).
- ``perm-compress.lth``: scaled-down Fig. 4, full vs compressed vs random sub-networks (step 3).
- ``perm-compress.dataset``: scaled-down Fig. 3, full vs compressed vs random data (step 4).
- ``perm-compress.attention``: the attention appendix, heads compressed with k = 3.
- ``perm-compress.deep``: every wide layer of a deep MLP compressed, against random subsets and torch-pruning.

Steps 2-4 run every method and its baseline on each seed of ``derive_seeds(seed, seeds)`` (3 at
quick, 5 at full) and judge method-vs-baseline claims on paired per-seed differences of logs, so a
ratio threshold ``r`` becomes the margin ``log r``.
"""
from __future__ import annotations

import pathlib

import numpy as np
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale, derive_seeds
from sklearn.cluster import KMeans

from .compressor import STANDARDISED_VARIANT, MomentCompressor
from .experiments import attention_experiment, dataset_experiment, deep_experiment, error_scaling, lth_experiment
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
# trials per seed; the seeds are ``derive_seeds(seed, seeds)``
ERROR_SCALING_CONFIG = {
    "smoke": {"m_list": (2,), "k_list": (2,), "d_list": (1000,), "trials": 1, "seeds": 2},
    "quick": {"m_list": (2,), "k_list": (2,), "d_list": (2000, 4000, 8000, 16000), "trials": 1, "seeds": 3},
    "full": {"m_list": (2,), "k_list": (2, 4), "d_list": (2000, 4000, 8000, 16000), "trials": 1, "seeds": 5},
    "paper": {"m_list": (1, 2, 3), "k_list": (2, 4), "d_list": (2000, 4000, 8000, 16000, 32000, 64000), "trials": 4,
              "seeds": 5},
}
LTH_CONFIG = {
    "smoke": {"width": 300, "target_width": 60, "k": 2, "n_train": 1000, "n_test": 2000, "epochs": 2, "log_every": 1,
              "n_random": 1, "optimizers": ("adam",), "seeds": 2},
    "quick": {"width": 2000, "target_width": 200, "k": 4, "n_train": 5000, "n_test": 10000, "epochs": 20,
              "log_every": 2, "n_random": 2, "optimizers": ("adam",), "seeds": 5},
    "full": {"width": 10000, "target_width": 1000, "k": 5, "n_train": 20000, "n_test": 10000, "epochs": 20,
             "log_every": 2, "n_random": 2, "optimizers": ("adam",), "seeds": 5},
    "paper": {"width": 10000, "target_width": 1000, "k": 5, "n_train": 100000, "n_test": 10000, "epochs": 1000,
              "log_every": 50, "n_random": 4, "optimizers": ("sgd", "adam", "adamw", "rmsprop", "rprop", "adamax"),
              "seeds": 5},
}
LTH_RANDOM_INIT_DRAWS = 50
# Set from the official-faithful compressor on seeds 1-5 (never 0, 17, 23) at quick scale (2000 -> 200,
# k = 4): epoch-0 RMSE ratio compressed / random 0.22-0.38, RMSE(compressed) / std(full output)
# 0.24-0.49 (random subsets: 0.96-2.2), dev_random / dev_compressed 2.1-8.6.
LTH_THRESHOLDS = {"init_vs_random": 2.0, "init_over_std": 0.6, "dev_vs_random": 2.0}
# The attention appendix: scalar tokens, two-dimensional heads (m = 8), k = 3; paper 4000 -> 800 heads,
# Adam 1e-4, 250 steps of 256 episodes. Smaller layers and Adam 1e-3 on the CPU scales.
ATTENTION_CONFIG = {
    "smoke": {"n_heads": 300, "target_heads": 170, "k": 3, "steps": 10, "batch_size": 16, "lr": 1e-3,
              "n_test": 256, "log_every": 2, "n_random": 1, "seeds": 2},
    "quick": {"n_heads": 600, "target_heads": 170, "k": 3, "steps": 100, "batch_size": 64, "lr": 1e-3,
              "n_test": 1024, "log_every": 10, "n_random": 1, "seeds": 5},
    "full": {"n_heads": 1500, "target_heads": 300, "k": 3, "steps": 150, "batch_size": 64, "lr": 1e-3,
             "n_test": 2048, "log_every": 10, "n_random": 2, "seeds": 5},
    "paper": {"n_heads": 4000, "target_heads": 800, "k": 3, "steps": 250, "batch_size": 256, "lr": 1e-4,
              "n_test": 2560, "log_every": 5, "n_random": 2, "seeds": 5},
}
ATTENTION_RANDOM_INIT_DRAWS = 20
# Set on tuning seeds 101 and 202 (never 0, 17, 23) at quick scale: epoch-0 RMSE ratio compressed /
# random (same mass) 0.41 and 0.03, dev_random / dev_compressed 3.1 and 7.0, late gap random / compressed 100
# and 27; RMSE(compressed) / std(full output) 0.51 and 0.85 (the full layer's output is nearly constant at
# init, so this ratio is loose).
ATTENTION_THRESHOLDS = {"init_vs_random": 2.0, "init_over_std": 1.0, "dev_vs_random": 2.0}
# A deep tanh MLP 2 -> wide -> 4 -> wide -> 1 (the wide layers need narrow neighbours, see deep.py), both wide
# layers compressed 10:1; teacher-student regression, Adam 1e-3, batch 256.
DEEP_CONFIG = {
    "smoke": {"widths": (300, 4, 300), "target_widths": (60, None, 60), "k": 2, "n_train": 1000, "n_test": 1000,
              "steps": 20, "log_every": 5, "n_random": 1, "n_random_init": 2, "seeds": 2},
    "quick": {"widths": (2000, 4, 2000), "target_widths": (200, None, 200), "k": 3, "n_train": 4000,
              "n_test": 4000, "steps": 300, "log_every": 20, "n_random": 2, "n_random_init": 20, "seeds": 3},
    "full": {"widths": (5000, 4, 5000), "target_widths": (500, None, 500), "k": 3, "n_train": 10000,
             "n_test": 4000, "steps": 1000, "log_every": 50, "n_random": 2, "n_random_init": 20, "seeds": 5},
    "paper": {"widths": (10000, 4, 10000), "target_widths": (1000, None, 1000), "k": 4, "n_train": 20000,
              "n_test": 10000, "steps": 4000, "log_every": 100, "n_random": 4, "n_random_init": 50, "seeds": 5},
}
# Set on tuning seeds 101, 202, 303 (never 0, 17, 23) at quick scale: the standardised compressor variant
# (epoch-0 RMSE / output std 0.24, 0.72, 1.41; official-faithful default 0.51, 0.54 at 101, 202 and 30 CPU s
# per net instead of 1), epoch-0 RMSE compressed / random (same mass) 0.012-0.073, compressed / torch-pruning
# magnitude 0.15-0.33; trajectory deviation magnitude / compressed 1.8-3.6, random / compressed 0.8-2.2;
# final test MSE compressed / magnitude 0.48-0.87, compressed / full 1.1-1.6.
DEEP_COMPRESSOR = STANDARDISED_VARIANT
DEEP_THRESHOLDS = {"init_vs_random": 5.0, "init_vs_magnitude": 2.0, "final_vs_full": 2.0}
# label noise 1.0 at smoke/quick/full: with the paper's sigma = 3 the clean test MSE (~0.02) is
# 0.3 % of the training loss and the comparison is decided by the noise draw; with sigma = 0.3
# 200 full-batch steps are optimisation-limited and a random 10 % subset fits as well as the full set
DATASET_CONFIG = {
    "smoke": {"d": 1000, "target_size": 100, "k": 4, "steps": 20, "noise": 1.0, "n_random": 1, "seeds": 2},
    "quick": {"d": 5000, "target_size": 500, "k": 4, "steps": 200, "noise": 1.0, "n_random": 3, "seeds": 3},
    "full": {"d": 10000, "target_size": 1000, "k": 5, "steps": 400, "noise": 1.0, "n_random": 3, "seeds": 5},
    "paper": {"d": 10000, "target_size": 1000, "k": 5, "steps": 2000, "noise": 3.0, "n_random": 5, "seeds": 5},
}
# Set from seeds 1-3 (never 0, 17, 23) at quick scale, noise 1.0: MSE(compressed) / MSE(full)
# 1.02-1.05, MSE(random) / MSE(compressed) 1.30-3.58 (one random draw each); base seed 1 (seeds
# 1000-1002, three random draws): compressed / full exp(0.083) = 1.09 [1.04, 1.13], random / compressed 2.7.
# The ratio bound is the spec's 1.15.
DATASET_THRESHOLDS = {"compressed_vs_full": 1.15, "random_vs_compressed": 1.2}


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


def _log(values) -> np.ndarray:
    """Natural log of positive numbers (shape kept), floored at 1e-300 so an exact zero stays finite."""
    return np.log(np.maximum(np.asarray(values, dtype=float), 1e-300))


def run_error_scaling(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Step 2: Fig. 2 (sigmoid benchmark) error vs d, moment matching vs a random 10% subset, per seed."""
    cfg = dict(ERROR_SCALING_CONFIG[check_scale(scale)])
    seeds = derive_seeds(seed, cfg.pop("seeds"))
    runs = [error_scaling(**cfg, ratio=0.1, seed=s) for s in seeds]
    records = [{**r, "seed": s} for s, res in zip(seeds, runs) for r in res["records"]]
    groups = sorted({(r["m"], r["k"], r["d"]) for r in records})

    def mean_at(key: str, s: int, group: tuple) -> float:
        return float(np.mean([r[key] for r in records if r["seed"] == s and (r["m"], r["k"], r["d"]) == group]))

    rows = []
    for m, k, d in groups:
        sel = [r for r in records if (r["m"], r["k"], r["d"]) == (m, k, d)]
        rows.append({"method": f"moment_matched_m{m}_k{k}", "m": m, "k": k, "d": d, "target": sel[0]["target"],
                     "error": float(np.mean([r["error"] for r in sel])),
                     "seconds": float(np.mean([r["seconds"] for r in sel]))})
        rows.append({"method": "random_subset", "m": m, "k": k, "d": d, "target": sel[0]["target"],
                     "error": float(np.mean([r["random_error"] for r in sel]))})
    # per seed, the (m, k, d) where moment matching is closest to the random subset: "at every d"
    err, rnd = (np.array([[mean_at(key, s, g) for g in groups] for s in seeds]) for key in ("error", "random_error"))
    worst = np.argmax(_log(err) - _log(rnd), axis=1)
    pick = np.arange(len(seeds))
    claims = [Claim.paired("beats_random_subset", "moment matching beats a random subset by decades at every d",
                           _log(err[pick, worst]), _log(rnd[pick, worst]), seeds, margin=float(np.log(1e3)),
                           higher_is_better=False, what="log error - log random-subset error, worst d per seed")]
    slopes = {key: [res["slopes"][key] for res in runs] for key in runs[0]["slopes"]}
    if len(cfg["d_list"]) > 1:
        # the design in d is the same for every seed, so the mean per-seed slope is the pooled slope
        claims.append(Claim.mean_at_most("slope_k2", "error ~ d^-((k+1)/m + 0.5): slope -2.0 for m = 2, k = 2 "
                                         "(Fig. 2)", slopes["m2_k2"], seeds, -1.5, what="fitted slope (m=2, k=2)"))
    if 4 in cfg["k_list"] and len(cfg["d_list"]) > 1:
        claims.append(Claim.mean_at_most("slope_k4", "slope -3.0 for m = 2, k = 4 (Fig. 2)", slopes["m2_k4"], seeds,
                                         -2.5, what="fitted slope (m=2, k=4)"))
        k_ratio = [mean_at("error", s, (2, 4, 4000)) / mean_at("error", s, (2, 2, 4000)) for s in seeds]
        claims.append(Claim.mean_at_most("higher_order_helps", "at d = 4000 the k = 4 error is far below the k = 2 "
                                         "error", k_ratio, seeds, 0.1, what="error(k=4) / error(k=2)"))
    pooled = {"records": records, "slopes": {key: float(np.mean(v)) for key, v in slopes.items()},
              "reference": runs[0]["reference"]}
    fig = plot_error_scaling(pooled, out_dir / f"perm-compress_error-scaling_{scale}_seed{seed}.png")
    metrics = {f"slope_{key}": v for key, v in pooled["slopes"].items()}
    metrics.update({f"reference_slope_{key}": v for key, v in pooled["reference"].items()})
    metrics["worst_error_ratio_vs_random"] = float(np.max(err[pick, worst] / rnd[pick, worst]))
    return Result(metrics=metrics, rows=rows, claims=claims, figures=[fig])


def run_lth(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Step 3: dynamical lottery ticket, full vs compressed (1/c_j rule) vs random sub-networks, per seed."""
    cfg = dict(LTH_CONFIG[check_scale(scale)])
    optimizers, seeds = cfg.pop("optimizers"), derive_seeds(seed, cfg.pop("seeds"))
    runs = {(s, opt): lth_experiment(**cfg, optimizer=opt, lr=1e-3, batch_size=512, noise=0.2,
                                     n_random_init=LTH_RANDOM_INIT_DRAWS, seed=s, device=device)
            for s in seeds for opt in optimizers}
    return _ticket_result(runs, seeds, optimizers, LTH_THRESHOLDS, "sub-network", "neurons",
                          lambda opt, s: (out_dir / f"perm-compress_lth_{opt}_{scale}_seed{s}.png",
                                          f"dynamical LTH ({opt}, width {cfg['width']} -> {cfg['target_width']})"))


def run_attention(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """The attention appendix: full vs head-compressed (1/c_h rule) vs random heads, in-context regression."""
    cfg = dict(ATTENTION_CONFIG[check_scale(scale)])
    seeds = derive_seeds(seed, cfg.pop("seeds"))
    runs = {(s, "adam"): attention_experiment(**cfg, n_random_init=ATTENTION_RANDOM_INIT_DRAWS, seed=s, device=device)
            for s in seeds}
    return _ticket_result(runs, seeds, ("adam",), ATTENTION_THRESHOLDS, "head subset", "heads",
                          lambda opt, s: (out_dir / f"perm-compress_attention_{scale}_seed{s}.png",
                                          f"attention {cfg['n_heads']} -> {cfg['target_heads']} heads"))


def _ticket_result(runs: dict, seeds: list[int], optimizers, th: dict, what: str, unit: str, figure) -> Result:
    """Rows, claims and metrics of a lottery-ticket comparison from ``runs[(seed, optimizer)]``, the dicts of
    ``lth_experiment`` / ``attention_experiment``; ``figure(optimizer, seed)`` names the first seed's plots."""
    rows, figures = [], []
    # per seed, averaged over the optimizers: logs of the epoch-0 mismatch (normalised by the full
    # net's output std), of the largest trajectory deviation and of the late-epoch gap to the full net
    keys = ("init_c", "init_r", "dev_c", "dev_r", "gap_c", "gap_r")
    per_seed = {key: np.zeros(len(seeds)) for key in keys}
    for i, s in enumerate(seeds):
        for opt in optimizers:
            res = runs[(s, opt)]
            sd = res["output_std"]
            for name, curve in res["curves"].items():
                rows.append({"method": name, "optimizer": opt, "seed": s, unit: res["widths"][name],
                             "deviation": res["deviation"][name], "late_gap": res["gap"][name],
                             "initial_rmse_over_std": res["initial_rmse_to_full"][name] / sd,
                             "initial_test_mse": curve[0][1], "final_test_mse": curve[-1][1]})
            init, dev, gap = res["initial_rmse_to_full"], res["deviation"], res["gap"]
            for key, v in (("init_c", init["compressed"] / sd), ("init_r", init["random"] / sd),
                           ("dev_c", dev["compressed"]), ("dev_r", dev["random"]),
                           ("gap_c", gap["compressed"]), ("gap_r", gap["random"])):
                per_seed[key][i] += _log(v) / len(optimizers)
            if i == 0:
                figures.append(plot_curves(res["curves"], *figure(opt, s)))
    claims = [
        Claim.paired("initial_prediction_match", f"compressed {unit} reproduce the full layer at init",
                     per_seed["init_c"], per_seed["init_r"], seeds, margin=float(np.log(th["init_vs_random"])),
                     higher_is_better=False,
                     what=f"log RMSE(compressed, full) - log mean RMSE(random {what}, full) at epoch 0 (criterion "
                          f"ratio <= 1/{th['init_vs_random']:g})"),
        Claim.mean_at_most("initial_mismatch_small", "compressed epoch-0 output error, in units of the full "
                           "layer's output std", np.exp(per_seed["init_c"]), seeds, th["init_over_std"],
                           what="RMSE(compressed, full) / std(full output) at epoch 0"),
        Claim.paired("random_subnetwork_deviates", f"a random {what} of the same size deviates",
                     per_seed["dev_r"], per_seed["dev_c"], seeds, margin=float(np.log(th["dev_vs_random"])),
                     what=f"log mean dev_random - log dev_compressed, dev = max_t |log L - log L_full| "
                          f"(criterion ratio >= {th['dev_vs_random']:g})"),
        Claim.paired("late_trajectory_tracks_full", "compressed curve stays on the full curve to the end",
                     per_seed["gap_r"], per_seed["gap_c"], seeds, margin=0.0,
                     what="log mean gap_random - log gap_compressed, gap = mean |log L - log L_full| over the "
                          "last half of the logged steps (criterion: compressed closer than random)"),
    ]
    metrics = {"initial_rmse_over_std_compressed": float(np.exp(np.mean(per_seed["init_c"]))),
               "initial_rmse_over_std_random": float(np.exp(np.mean(per_seed["init_r"]))),
               "initial_rmse_ratio": float(np.exp(np.mean(per_seed["init_c"] - per_seed["init_r"]))),
               "dev_compressed": float(np.exp(np.mean(per_seed["dev_c"]))),
               "dev_random_over_compressed": float(np.exp(np.mean(per_seed["dev_r"] - per_seed["dev_c"]))),
               "late_gap_compressed": float(np.exp(np.mean(per_seed["gap_c"]))),
               "late_gap_random": float(np.exp(np.mean(per_seed["gap_r"]))),
               "compression_seconds": float(np.mean([r["compression_seconds"] for r in runs.values()]))}
    return Result(metrics=metrics, rows=rows, claims=claims, figures=figures)


def run_dataset(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Step 4: the same student trained on the full, moment-compressed and random-subset data, per seed."""
    cfg = dict(DATASET_CONFIG[check_scale(scale)])
    seeds = derive_seeds(seed, cfg.pop("seeds"))
    rows, log_mse = [], {"full": [], "compressed": [], "random": []}
    for s in seeds:
        res = dataset_experiment(**cfg, teacher_width=50, student_width=50, lr=1e-2, optimizer="adam",
                                 seed=s, device=device)
        rows += [{"method": name, "seed": s, "n_points": res["sizes"][name], "final_test_mse": v}
                 for name, v in res["final"].items()]
        for name in log_mse:
            log_mse[name].append(float(_log(res["final"][name])))
        if s == seeds[0]:
            fig = plot_curves(res["curves"], out_dir / f"perm-compress_dataset_{scale}_seed{s}.png",
                              f"dataset compression (d = {cfg['d']} -> {cfg['target_size']})")
    th = DATASET_THRESHOLDS
    claims = [
        Claim.paired("compressed_matches_full", "compressed data tracks the full data's test MSE (Fig. 3)",
                     log_mse["compressed"], log_mse["full"], seeds, margin=-float(np.log(th["compressed_vs_full"])),
                     higher_is_better=False, what=f"log MSE(compressed) - log MSE(full) (criterion ratio <= "
                                                  f"{th['compressed_vs_full']:g})"),
        Claim.paired("random_subset_worse", "a random subset of the same size does worse (Fig. 3)",
                     log_mse["random"], log_mse["compressed"], seeds, margin=float(np.log(th["random_vs_compressed"])),
                     what=f"log mean MSE(random, {cfg['n_random']} draws) - log MSE(compressed) (criterion ratio >= "
                          f"{th['random_vs_compressed']:g})"),
    ]
    metrics = {f"final_mse_{name}": float(np.exp(np.mean(v))) for name, v in log_mse.items()}
    return Result(metrics=metrics, rows=rows, claims=claims, figures=[fig])


def run_deep(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Deep MLP: full vs every-wide-layer compressed vs random subsets vs torch-pruning magnitude, per seed."""
    cfg = dict(DEEP_CONFIG[check_scale(scale)])
    seeds = derive_seeds(seed, cfg.pop("seeds"))
    runs = [deep_experiment(**cfg, **DEEP_COMPRESSOR, seed=s, device=device) for s in seeds]
    magnitude = all(r["magnitude_available"] for r in runs)
    methods = ["compressed", "random"] + (["magnitude"] if magnitude else [])
    rows = []
    logs = {f"{key}_{name}": [] for key in ("init", "dev", "final") for name in ["full", *methods]}
    for s, res in zip(seeds, runs):
        sd = res["output_std"]
        for name, curve in res["curves"].items():
            rows.append({"method": name, "seed": s, "hidden_widths": "x".join(map(str, res["widths"][name])),
                         "initial_rmse_over_std": res["initial_rmse_to_full"][name] / sd,
                         "deviation": res["deviation"][name], "late_gap": res["gap"][name],
                         "initial_test_mse": curve[0][1], "final_test_mse": curve[-1][1]})
        for name in ["full", *methods]:
            logs[f"init_{name}"].append(float(_log(res["initial_rmse_to_full"][name] / sd)))
            logs[f"dev_{name}"].append(float(_log(res["deviation"][name])))
            logs[f"final_{name}"].append(float(_log(res["curves"][name][-1][1])))
    if not magnitude:
        rows.append({"method": "magnitude", "note": "skipped: torch_pruning is not importable (install the "
                                                    "'pruning' extra: iclr26-perm-compress[pruning])"})
    th = DEEP_THRESHOLDS
    claims = [
        Claim.paired("initial_prediction_match", "compressed layers reproduce the full deep net at init (the "
                     "paper's two-layer claim, applied to every wide layer)", logs["init_compressed"],
                     logs["init_random"], seeds, margin=float(np.log(th["init_vs_random"])), higher_is_better=False,
                     what=f"log RMSE(compressed, full) - log mean RMSE(random same-mass subsets, full) at step 0 "
                          f"(criterion ratio <= 1/{th['init_vs_random']:g})"),
        Claim.paired("random_subnetwork_deviates", "a random sub-network of the same widths deviates more from the "
                     "full training curve", logs["dev_random"], logs["dev_compressed"], seeds, margin=0.0,
                     what="log mean dev_random - log dev_compressed, dev = max_t |log L - log L_full|"),
        Claim.paired("compressed_final_close_to_full", "after short training the compressed net is about as good "
                     "as the full net", logs["final_compressed"], logs["final_full"], seeds,
                     margin=-float(np.log(th["final_vs_full"])), higher_is_better=False,
                     what=f"log MSE(compressed) - log MSE(full) (criterion ratio <= {th['final_vs_full']:g})"),
    ]
    if magnitude:
        claims += [
            Claim.paired("beats_magnitude_pruning_at_init", "moment matching keeps the function better than "
                         "torch-pruning's L1 structured pruning to the same widths", logs["init_compressed"],
                         logs["init_magnitude"], seeds, margin=float(np.log(th["init_vs_magnitude"])),
                         higher_is_better=False,
                         what=f"log RMSE(compressed, full) - log RMSE(magnitude, full) at step 0 (criterion ratio "
                              f"<= 1/{th['init_vs_magnitude']:g})"),
            Claim.paired("magnitude_pruning_deviates", "the L1-pruned net deviates more from the full training "
                         "curve", logs["dev_magnitude"], logs["dev_compressed"], seeds, margin=0.0,
                         what="log dev_magnitude - log dev_compressed"),
            Claim.paired("beats_magnitude_pruning_after_training", "after the same short training the compressed "
                         "net has the lower test MSE", logs["final_compressed"], logs["final_magnitude"], seeds,
                         margin=0.0, higher_is_better=False, what="log MSE(compressed) - log MSE(magnitude)"),
        ]
    metrics = {f"{key}_{name}": float(np.exp(np.mean(logs[f"{key}_{name}"])))
               for key in ("init", "dev", "final") for name in methods}
    metrics["final_full"] = float(np.exp(np.mean(logs["final_full"])))
    metrics["magnitude_available"] = float(magnitude)
    metrics["compression_seconds"] = float(np.mean([r["compression_seconds"] for r in runs]))
    fig = plot_curves(runs[0]["curves"], out_dir / f"perm-compress_deep_{scale}_seed{seeds[0]}.png",
                      f"deep MLP {cfg['widths']} -> {cfg['target_widths']}")
    return Result(metrics=metrics, rows=rows, claims=claims, figures=[fig])


EXACTNESS = Benchmark("perm-compress.exactness", PAPER, PACKAGE, run_exactness)
ERROR_SCALING = Benchmark("perm-compress.error-scaling", PAPER, PACKAGE, run_error_scaling)
LTH = Benchmark("perm-compress.lth", PAPER, PACKAGE, run_lth)
ATTENTION = Benchmark("perm-compress.attention", PAPER, PACKAGE, run_attention)
DATASET = Benchmark("perm-compress.dataset", PAPER, PACKAGE, run_dataset)
DEEP = Benchmark("perm-compress.deep", PAPER, PACKAGE, run_deep)
BENCHMARKS = [EXACTNESS, ERROR_SCALING, LTH, ATTENTION, DATASET, DEEP]
