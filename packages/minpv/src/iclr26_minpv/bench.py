"""Benchmark ``minpv``: Gaussian MI estimation with MinPV vs fixed paths and classifier baselines.

Every estimator is trained in the same run on the same data stream and seeds (``derive_seeds``); the
central accuracy claim pairs MinPV's per-seed MI error with the best fixed path's. The closed-form
path-variance check (criterion 1) and the exact-score quadrature check of the fitted path are run on
their own (d = 20, m₂ = 20).
"""
from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass

import numpy as np
import torch
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale, derive_seeds

from .baselines import ClassifierDRE
from .data import gaussian_mi_joint, gaussian_mi_task, true_log_ratio_gaussian_mi
from .estimators import TimeScoreDRE
from .oracle import exact_score_bias
from .paths import make_path
from .variance import fit_path_variance, path_variance_objective

PAPER = ("Don't Forget Its Variance! The Minimum Path Variance Principle for Accurate and Stable "
         "Score-Based Models")
FIXED = ("linear", "trig", "vp")


@dataclass(frozen=True)
class Config:
    """One scale of the benchmark."""

    d: int
    steps: int
    batch_size: int
    hidden: tuple[int, ...]
    paths: tuple[str, ...]
    n_seeds: int
    n_eval: int
    clf_hidden: tuple[int, ...]
    clf_samples: int
    clf_max_iter: int
    quadratic_logistic: bool
    accuracy_threshold: float
    path_fit_steps: int = 400


CONFIGS = {
    "smoke": Config(4, 100, 128, (32, 32), ("linear", "minpv"), 1, 300, (32,), 1000, 20, False, 0.3,
                   path_fit_steps=50),
    "quick": Config(10, 1000, 256, (128, 128, 128), FIXED + ("minpv",), 3, 1000, (128, 128), 5000, 50, False, 0.3),
    "full": Config(20, 3000, 512, (128, 128, 128), FIXED + ("minpv",), 5, 2000, (256, 256), 20000, 100, True, 0.5),
    "paper": Config(80, 20000, 9600, (128,) * 5, FIXED + ("cosine", "minpv"), 5, 10000, (256, 256), 100000, 200,
                    True, 0.1 * 20.0),
}
PATH_ONLY_ALPHA_HALF = 0.2  # issue 32: the official objective fitted at d = 20 drops α early (spec: α(0.5) ≈ 0.08)
EXACT_BIAS_NATS = 0.05  # 100-point trapezoid of the exact score along the fitted path
CONVERGED_DRIFT_NATS = 0.15  # |MI estimate at the end − at 3/4 of training| on the probe, every path and seed


def closed_form_check(seed: int, steps: int = 400, dim: int = 20, second_moment: float = 20.0) -> dict[str, float]:
    """Criterion 1: path-only Adam (``steps``, lr 1e-2, 1,024 t) on the KMM path; objective values before/after.

    Also the fitted path's ``α`` at 0.25/0.5/0.75 and its exact-score quadrature bias (``exact_score_bias``,
    100 points) on the Gaussian MI task of the same ``d``.
    """
    gen = torch.Generator().manual_seed(seed)
    kmm = make_path("minpv").double()
    out = {"objective_kmm_init": float(path_variance_objective(kmm, dim, second_moment).detach())}
    fit_path_variance(kmm, dim, second_moment, steps=steps, lr=1e-2, n_times=1024, generator=gen)
    out["objective_kmm_fitted"] = float(path_variance_objective(kmm, dim, second_moment).detach())
    for name in ("linear", "trig", "vp"):
        out[f"objective_{name}"] = float(path_variance_objective(make_path(name).double(), dim, second_moment))
    out.update({f"fitted_{k}": v for k, v in kmm.summary().items()})
    out["fitted_exact_score_bias"] = exact_score_bias(kmm, dim, seed=seed)
    return out


def run_minpv(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """The ``minpv`` benchmark at ``scale`` (see ``CONFIGS``)."""
    cfg = CONFIGS[check_scale(scale)]
    evaluation, _, true_mi = gaussian_mi_task(cfg.d, cfg.n_eval, seed=10_000 + seed)
    true_lr = true_log_ratio_gaussian_mi(evaluation, cfg.d)
    seeds = derive_seeds(seed, cfg.n_seeds)
    metrics: dict[str, float] = {"true_mi": true_mi, "d": cfg.d}
    metrics.update(closed_form_check(seed, cfg.path_fit_steps))
    rows, per_path = [], {}
    for name in cfg.paths:
        estimates, rmses, seconds, drifts = [], [], [], []
        for s in seeds:
            start = time.perf_counter()
            model = TimeScoreDRE(path=name, hidden=cfg.hidden, steps=cfg.steps, batch_size=cfg.batch_size,
                                 standardize=False, seed=s, device=device)
            model.fit(lambda n, rng: gaussian_mi_joint(n, cfg.d, rng))
            log_r = model.log_ratio(evaluation)
            seconds.append(time.perf_counter() - start)
            estimates.append(float(log_r.mean()))
            rmses.append(float(np.sqrt(np.mean((log_r - true_lr) ** 2))))
            drifts.append(_late_drift(model.history_["kl"]))
        est = np.array(estimates)
        per_path[name] = {"mi_mean": float(est.mean()), "mi_std": float(est.std(ddof=1)) if len(est) > 1 else 0.0,
                          "abs_err": float(np.mean(np.abs(est - true_mi))), "rmse": float(np.mean(rmses)),
                          "max_late_drift": float(np.max(drifts)), "abs_errs": np.abs(est - true_mi).tolist()}
        summary = {k: v for k, v in per_path[name].items() if k != "abs_errs"}
        rows.append({"method": f"TimeScoreDRE[{name}]", **summary, "seconds_per_run": float(np.mean(seconds)),
                     **{f"mi_seed{s}": e for s, e in zip(seeds, estimates)}})
    baselines = [("ClassifierDRE[mlp]", ClassifierDRE("mlp", hidden=cfg.clf_hidden, max_iter=cfg.clf_max_iter,
                                                      seed=seed))]
    if cfg.quadratic_logistic:
        baselines.append(("ClassifierDRE[logistic+quadratic] (oracle family)",
                          ClassifierDRE("logistic", quadratic_features=True)))
    rng = np.random.default_rng(20_000 + seed)
    num = gaussian_mi_joint(cfg.clf_samples, cfg.d, rng)
    den = rng.standard_normal((cfg.clf_samples, cfg.d))
    for label, clf in baselines:
        start = time.perf_counter()
        log_r = clf.fit(num, den).log_ratio(evaluation)
        est = float(log_r.mean())
        rows.append({"method": label, "mi_mean": est, "mi_std": 0.0, "abs_err": abs(est - true_mi),
                     "rmse": float(np.sqrt(np.mean((log_r - true_lr) ** 2))),
                     "seconds_per_run": time.perf_counter() - start})
    for name, row in per_path.items():
        metrics.update({f"{name}_{k}": v for k, v in row.items() if k != "abs_errs"})
    metrics["classifier_mlp_abs_err"] = rows[len(cfg.paths)]["abs_err"]
    return Result(metrics=metrics, rows=rows, claims=_claims(scale, cfg, metrics, per_path, seeds))


def _late_drift(curve: list[float]) -> float:
    """``|curve[-1] − curve[⌊3n/4⌋ − 1]|``: how far the probe MI estimate still moved over the last quarter."""
    return abs(curve[-1] - curve[max(0, (3 * len(curve)) // 4 - 1)])


def _claims(scale: str, cfg: Config, m: dict[str, float], per_path: dict[str, dict],
            seeds: list[int]) -> list[Claim]:
    ratio = m["objective_kmm_fitted"] / m["objective_kmm_init"]
    best_fixed_obj = min(m["objective_linear"], m["objective_trig"])
    claims = [Claim("closed_form_objective",
                    "MinPV training lowers the closed-form path variance (ref. 1.50e4 -> ~2.0e3 at d = m2 = 20)",
                    round(ratio, 4),
                    f"fitted/init <= 0.5 and fitted ({m['objective_kmm_fitted']:.4g}) <= min(linear, trig) "
                    f"({best_fixed_obj:.4g})",
                    bool(ratio <= 0.5 and m["objective_kmm_fitted"] <= best_fixed_obj)),
              Claim("path_only_fit", "the official (unclamped) path variance drops alpha early and keeps the "
                    "time quadrature exact (issue 32: alpha(0.5) <= 0.2, exact-score bias <= 0.05 nats)",
                    round(m["fitted_alpha(0.5)"], 4),
                    f"fitted alpha(0.5) <= {PATH_ONLY_ALPHA_HALF:g} and |100-point exact-score bias| "
                    f"({m['fitted_exact_score_bias']:.3f}) <= {EXACT_BIAS_NATS:g} nats",
                    bool(m["fitted_alpha(0.5)"] <= PATH_ONLY_ALPHA_HALF
                         and abs(m["fitted_exact_score_bias"]) <= EXACT_BIAS_NATS))]
    if "minpv" not in per_path or scale == "smoke":
        return claims
    fixed = [p for p in FIXED if p in per_path]
    minpv = per_path["minpv"]
    best = min(fixed, key=lambda p: per_path[p]["abs_err"])  # chosen after the fact: favours the baseline
    paper = f"MinPV estimates MI more accurately than fixed paths (true MI {m['true_mi']:g} nats)"
    claims.append(Claim.paired("accuracy", paper, minpv["abs_errs"], per_path[best]["abs_errs"], seeds,
                               margin=-0.1, higher_is_better=False,
                               what=f"|MI error| MinPV - best fixed path ({best}); spec: within +0.1 nats"))
    claims.append(Claim.mean_at_most("accuracy_level", f"MinPV |MI error| <= {cfg.accuracy_threshold:g} nats",
                                     minpv["abs_errs"], seeds, cfg.accuracy_threshold, what="MinPV |MI error|"))
    claims.append(Claim.at_most("pointwise_quality", "accurate pointwise log-ratio (spec criterion 5)",
                                minpv["rmse"], 1.0, what="MinPV RMSE of log r"))
    drift = max(per_path[p]["max_late_drift"] for p in per_path)
    claims.append(Claim.at_most("converged", "the score network is trained to convergence for every path",
                                drift, CONVERGED_DRIFT_NATS,
                                what="max over paths and seeds of |probe MI at end - at 3/4 of training|"))
    if scale in ("full", "paper"):
        median_std = float(np.median([per_path[p]["mi_std"] for p in fixed]))
        claims.append(Claim("stability", "MinPV is more stable across seeds than fixed paths",
                            round(minpv["mi_std"], 4), f"MinPV across-seed std <= median fixed-path std "
                            f"({median_std:.3f}) + 0.05", bool(minpv["mi_std"] <= median_std + 0.05)))
        clf_err = m["classifier_mlp_abs_err"]
        claims.append(Claim("beats_classifier", "classifier DRE underestimates large MI; time-score methods track it",
                            round(minpv["abs_err"], 4),
                            f"MinPV |error| <= 0.75 x MLP-classifier |error| ({clf_err:.3f})",
                            bool(minpv["abs_err"] <= 0.75 * clf_err)))
    return claims


MINPV = Benchmark(name="minpv", paper=PAPER, package="iclr26-minpv", func=run_minpv)
