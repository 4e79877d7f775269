"""The registered reproduction ``relu-geometry``: gap vs data geometry for GD below the edge of stability.

Seeds are ``derive_seeds(seed, n_seeds)``; the claims comparing the sphere with α = 5 are paired over them.
Gap = clean test MSE + σ²·(1 − train MSE/ε̄²), ε̄² the label-noise energy drawn for the training set (no test-label
noise and no luck of the training noise draw in the estimate; ``run_experiment``). Memorisation is the train MSE/ε̄².
GD stops at a train-MSE plateau (two windows of 1000 steps in a row whose minimum fell < 1%; ``train_gd``) or at
the step cap.

- ``smoke``: sphere vs α = 5 at n = 128, 200 steps, 2 seeds (exercises every path; claims may not hold).
- ``quick``: α ∈ {sphere, 0.3, 1.5, 5} at n = 512, 5 seeds, at most 4000 steps; sharpness at the end.
- ``full``: the α sweep at n ∈ {128, 256, 512, 1024} and 5 seeds, lines vs Beta(1) at d ∈ {5, 50},
  n ∈ {256, 1024}, digits vs Gaussian shell; sharpness every 1000 steps (30 power iterations); wide runs
  (width 1024, n = 512, sphere, ``stable_init``, the first 3 seeds) check the edge of stability; the slope claims
  add 10 seeds of sphere and α = 5 runs (15 in all).
- ``paper``: width 1000 with ``stable_init`` (λ_max ≤ ½·2/η at step 0), n up to 8192, α ∈ {0.1, 0.3, 1.5, 5},
  5 seeds, lines up to d = 500, MNIST (local folder) vs Gaussian inputs at d = 784 (GPU).
"""
from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, replace

from iclr26_shared.bench import Benchmark, Claim, Result, check_scale, derive_seeds, t_interval

from .activations import activation_report
from .data import mnist_dataset
from .experiments import RunConfig, fit_loglog_slope, make_data, mean_over_seeds, run_experiment, run_grid, slopes_by
from .plotting import plot_diagnose, plot_gap_vs_alpha, plot_gap_vs_d, plot_gap_vs_n
from .regularity import shatter_curve

PAPER = "Generalization Below the Edge of Stability: The Role of Data Geometry"
SIGMA = 0.5
ETA = 0.2


@dataclass(frozen=True)
class Scale:
    """One scale of the benchmark."""

    alphas: tuple[float, ...]
    ns: tuple[int, ...]
    n_seeds: int
    steps: int
    n_test: int
    width: int = 256
    sharpness_every: int = 0
    sharpness_iters: int = 30
    intrinsic_ds: tuple[int, ...] = ()
    intrinsic_ns: tuple[int, ...] = ()
    real: tuple[str, int, int, int] | None = None  # (family, d, n, n_test) compared with the Gaussian shell
    ordering_n: int = 512
    memorisation_n: int = 512
    init_sharpness: float = 0.0  # 0: torch default; > 0: stable_init to this fraction of 2/η
    wide: tuple[int, int, int] | None = None  # (width, n, steps) of the wide edge-of-stability check
    plateau_window: int = 1000
    slope_seeds: int = 0  # > n_seeds: the slope claims also train sphere and α = 5 on the derived seeds up to this


SCALE_CONFIGS = {
    "smoke": Scale(alphas=(0.0, 5.0), ns=(128,), n_seeds=2, steps=200, n_test=500, ordering_n=128, memorisation_n=128,
                   wide=(128, 128, 200), plateau_window=100),
    "quick": Scale(alphas=(0.0, 0.3, 1.5, 5.0), ns=(512,), n_seeds=5, steps=4000, n_test=2000),
    "full": Scale(alphas=(0.0, 0.3, 1.5, 5.0), ns=(128, 256, 512, 1024), n_seeds=5, steps=4000, n_test=4000,
                  sharpness_every=1000, sharpness_iters=30, intrinsic_ds=(5, 50), intrinsic_ns=(256, 1024),
                  real=("digits", 64, 1000, 797), ordering_n=1024, wide=(1024, 512, 4000), slope_seeds=15),
    "paper": Scale(alphas=(0.0, 0.1, 0.3, 1.5, 5.0), ns=(128, 256, 512, 1024, 2048, 4096, 8192), n_seeds=5,
                   steps=20000, n_test=10000, width=1000, sharpness_every=1000, sharpness_iters=100,
                   intrinsic_ds=(10, 50, 100, 500), intrinsic_ns=(256, 1024, 4096), real=("mnist", 784, 50000, 10000),
                   ordering_n=1024, init_sharpness=0.5, wide=(1024, 512, 20000)),
}


def _name(alpha: float) -> str:
    return "sphere" if alpha == 0 else f"alpha={alpha:g}"


def _beos_claim(rows: list[dict]) -> Claim:
    limit = 1.1 * 2.0 / ETA
    finished = [r for r in rows if not r["diverged"]]
    worst = max((r["sharpness"] for r in finished), default=float("nan"))
    bad_divergence = [r for r in rows if r["diverged"] and r["family"] == "beta" and r["alpha"] >= 0.3]
    holds = bool(finished) and worst <= limit and not bad_divergence
    return Claim("beos_holds", "GD solutions sit below the edge of stability: λ_max ≤ 2/η", round(worst, 4),
                 f"max final sharpness <= 1.1·2/η = {limit:.4g} over {len(finished)} runs; "
                 f"diverged with α >= 0.3: {len(bad_divergence)} (must be 0)", holds)


def _per_seed(rows: list[dict], n: int, value: str, alphas=(0.0, 5.0)) -> tuple[list[int], list[list[float]]]:
    """The seeds having finished runs at every α of ``alphas`` at ``n``, and ``value`` per α, one list per α.

    A seed whose run at one of these α diverged (its ``value`` is NaN) is left out, and so drops from the claims.
    """
    table: dict[int, dict[float, float]] = {}
    for r in rows:
        if r["family"] == "beta" and r["n"] == n and r["alpha"] in alphas and not r["diverged"]:
            table.setdefault(r["seed"], {})[r["alpha"]] = float(r[value])
    seeds = sorted(s for s, v in table.items() if len(v) == len(alphas) and all(map(math.isfinite, v.values())))
    return seeds, [[table[s][a] for s in seeds] for a in alphas]


def _not_measured(name: str, paper: str, n: int) -> Claim:
    return Claim(name, paper, "no seed with finished runs", f"needs finished runs at n = {n}", False)


def _gap_claims(rows: list[dict], n: int) -> list[Claim]:
    """The central claim, gap(sphere) ≥ 3·gap(α = 5) paired over seeds, and the full α ordering of the seed means."""
    paper = ("gap decays faster as α grows; the sphere is easiest to memorise "
             "(slopes −0.05, −0.12, −0.25, −0.38 for α = 0.1, 0.3, 1.5, 5)")
    seeds, (sphere, deep) = _per_seed(rows, n, "gap")
    central = (Claim.paired("geometry_gap_contrast", paper, sphere, [3 * g for g in deep], seeds,
                            what=f"gap(sphere) − 3·gap(α=5) at n = {n}") if seeds
               else _not_measured("geometry_gap_contrast", paper, n))
    gap = {a: v for (a, m), v in mean_over_seeds(rows, ("alpha", "n"), "gap").items() if m == n}
    g = [gap.get(a, float("nan")) for a in (0.0, 0.3, 1.5, 5.0)]
    chain = bool(all(map(math.isfinite, g)) and g[0] > g[1] > g[2] >= 0.9 * g[3])
    measured = "; ".join(f"{_name(a)} {v:.4f}" for a, v in zip((0.0, 0.3, 1.5, 5.0), g))
    ordering = Claim("geometry_ordering", paper, measured, f"seed means at n = {n}: gap(sphere) > gap(0.3) > "
                     "gap(1.5) >= 0.9·gap(5)", chain)
    return [central, ordering]


def _memorisation_claims(rows: list[dict], n: int) -> list[Claim]:
    """Train MSE/ε̄² (the share of the drawn label-noise energy GD left unfitted): α = 5 exceeds the sphere by ≥ 0.15
    paired over seeds; sphere ≤ 0.75 and α = 5 ≥ 0.85 on average."""
    paper = "on the sphere GD below EoS fits the label noise; deep data does not"
    seeds, (sphere, deep) = _per_seed(rows, n, "train_over_noise")
    if not seeds:
        return [_not_measured("memorisation_contrast", paper, n)]
    return [Claim.paired("memorisation_contrast", paper, deep, sphere, seeds, margin=0.15,
                         what=f"train MSE/ε̄²: α=5 − sphere at n = {n}"),
            Claim.mean_at_most("memorisation_sphere", paper, sphere, seeds, 0.75,
                               what=f"train MSE/ε̄², sphere, n = {n}"),
            Claim.mean_at_least("memorisation_deep", paper, deep, seeds, 0.85, what=f"train MSE/ε̄², α=5, n = {n}")]


def _self_influence_claim(rows: list[dict], n: int) -> Claim:
    """Mean tangent-kernel self-influence: sphere ≥ 3 × α = 5, paired over seeds (``kernel_self_influence``)."""
    paper = "on the sphere ReLU neurons isolate points and GD memorises them; deep data forces shared features"
    seeds, (sphere, deep) = _per_seed(rows, n, "self_influence")
    if not seeds:
        return _not_measured("memorisation_self_influence", paper, n)
    return Claim.paired("memorisation_self_influence", paper, sphere, [3 * v for v in deep], seeds,
                        what=f"self-influence(sphere) − 3·self-influence(α=5) at n = {n}")


def seed_slopes(rows: list[dict], alpha: float) -> dict[int, float]:
    """Per seed, the log-log slope of gap vs n of the Beta(α) runs (seeds with >= 3 finite positive gaps)."""
    by_seed: dict[int, list[tuple[int, float]]] = {}
    for r in rows:
        if r["family"] == "beta" and r["alpha"] == alpha and math.isfinite(r["gap"]) and r["gap"] > 0:
            by_seed.setdefault(r["seed"], []).append((r["n"], r["gap"]))
    return {s: fit_loglog_slope(*zip(*pts))["slope"] for s, pts in by_seed.items() if len({n for n, _ in pts}) >= 3}


def _slope_claims(rows: list[dict]) -> list[Claim]:
    """slope(sphere) − slope(α=5) > 0.1 paired over seeds, and the half-width of that interval <= 0.05."""
    paper = "slope −0.38 at α = 5 vs ≈ 0 near the sphere"
    sphere, deep = seed_slopes(rows, 0.0), seed_slopes(rows, 5.0)
    seeds = sorted(set(sphere) & set(deep))
    if len(seeds) < 2:
        return [Claim("slope_contrast", paper, "fewer than 2 seeds with slopes", "needs >= 3 n per seed", False)]
    contrast = Claim.paired("slope_contrast", paper, [sphere[s] for s in seeds], [deep[s] for s in seeds], seeds,
                            margin=0.1, what="slope(sphere) − slope(α=5)")
    half = (contrast.per_seed["high"] - contrast.per_seed["low"]) / 2
    return [contrast, Claim.at_most("slope_precision", "(the slopes must be measured to ±0.05 to test the paper's "
                                    "contrast of 0.33)", half, 0.05, what="90% half-width of the slope difference")]


def _wide_claim(rows: list[dict]) -> Claim:
    """Every wide run trains at the edge of stability: |λ_max·η/2 − 1| <= 0.1 with <= 10% dead neurons."""
    ratios = [r["sharpness"] * r["eta"] / 2 for r in rows]
    ok = all(not r["diverged"] and abs(q - 1) <= 0.1 and r["dead_fraction"] <= 0.1 for r, q in zip(rows, ratios))
    measured = "; ".join(f"seed {r['seed']}: λ_max·η/2 = {q:.3f}, dead {r['dead_fraction']:.1%}, init scale "
                         f"{r['init_scale']:.3f}" for r, q in zip(rows, ratios))
    return Claim("wide_edge_of_stability", "GD trains at the edge of stability, λ_max → 2/η (width 1000)", measured,
                 f"width {rows[0]['width']}, n = {rows[0]['n']}, sphere, {len(rows)} seeds: every |λ_max·η/2 − 1| "
                 "<= 0.1 and dead neurons <= 10%", bool(rows) and ok)


def _path_norm_claim(rows: list[dict]) -> Claim:
    stable = [r for r in rows if not r["diverged"] and r["sharpness"] <= 2.0 / ETA]
    ratios = [r["path_norm"] / r["beos_bound"] for r in stable]
    violations = sum(q > 1.05 for q in ratios)
    worst = max(ratios, default=float("nan"))
    return Claim("path_norm_bound", "λ_max ≤ 2/η implies ‖θ‖_{path,g} ≤ 1/η − 1/2 + (R+1)·sqrt(2L) (inferred form)",
                 round(worst, 4), f"max path_norm/bound <= 1.05 over the {len(stable)} runs with λ_max <= 2/η "
                 f"({violations} violations)", bool(stable) and violations == 0)


def _run(scale_name: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    scale = SCALE_CONFIGS[check_scale(scale_name)]
    if scale.real and scale.real[0] == "mnist":
        mnist_dataset(rng=seed)  # fail before hours of GPU time when the local MNIST folder is missing
    seeds = derive_seeds(seed, scale.n_seeds)
    base = RunConfig(family="beta", width=scale.width, eta=ETA, steps=scale.steps, n_test=scale.n_test,
                     noise=SIGMA, sharpness_every=scale.sharpness_every, sharpness_iters=scale.sharpness_iters,
                     init_sharpness=scale.init_sharpness, plateau_window=scale.plateau_window)
    configs = [replace(base, alpha=a, n=n, seed=s) for s in seeds for a in scale.alphas for n in scale.ns]
    report_n = scale.memorisation_n

    def wants_report(c: RunConfig) -> bool:
        return c.family == "beta" and c.alpha in (0.0, 5.0) and c.n == report_n

    models: dict = {}
    rows = run_grid(configs, device, report_for=wants_report, models=models)
    intrinsic = []
    if scale.intrinsic_ds:
        configs = [replace(base, family=f, alpha=1.0, d=d, n=n, seed=s) for s in seeds for f in ("lines", "beta")
                   for d in scale.intrinsic_ds for n in scale.intrinsic_ns]
        intrinsic = run_grid(configs, device)
    real = []
    if scale.real:
        family, d, n, n_test = scale.real
        configs = [replace(base, family=f, d=d, n=n, n_test=n_test, seed=s) for s in seeds
                   for f in (family, "gaussian_shell")]
        real = run_grid(configs, device)

    result = Result()
    for r in rows:
        result.rows.append({"method": _name(r["alpha"]), **r})
    for r in intrinsic:
        result.rows.append({"method": f"{'lines(J=20)' if r['family'] == 'lines' else 'beta(α=1)'}@d={r['d']}", **r})
    for r in real:
        result.rows.append({"method": r["family"], **r})

    gap_at = {a: v for (a, n), v in mean_over_seeds(rows, ("alpha", "n"), "gap").items() if n == scale.ordering_n}
    train_at = {a: v for (a, n), v in mean_over_seeds(rows, ("alpha", "n"), "train_over_noise").items()
                if n == scale.memorisation_n}
    result.claims += [*_gap_claims(rows, scale.ordering_n), _beos_claim(rows + intrinsic + real),
                      *_memorisation_claims(rows, scale.memorisation_n), _self_influence_claim(rows, report_n),
                      _path_norm_claim(rows + intrinsic + real)]
    for a, v in gap_at.items():
        result.metrics[f"gap_{_name(a)}_n{scale.ordering_n}"] = v
    for a, v in train_at.items():
        result.metrics[f"train_mse_over_noise_{_name(a)}_n{scale.memorisation_n}"] = v
    result.metrics["max_final_sharpness"] = max((r["sharpness"] for r in rows if not r["diverged"]),
                                                default=float("nan"))
    result.metrics["two_over_eta"] = 2.0 / ETA
    result.metrics["plateaued_runs"] = sum(r["plateaued"] for r in rows)
    result.metrics["runs"] = len(rows)
    for (a,), v in mean_over_seeds([r for r in rows if "self_influence" in r], ("alpha",), "self_influence").items():
        result.metrics[f"self_influence_{_name(a)}_n{report_n}"] = v
    if scale.wide:
        width, n, steps = scale.wide
        wide = replace(base, width=width, n=n, steps=steps, alpha=0.0, init_sharpness=scale.init_sharpness or 0.5,
                       sharpness_every=0)
        wide_rows = [run_experiment(replace(wide, seed=s), device)[0] for s in seeds[:3]]
        result.rows += [{"method": f"sphere@width={width}", **r} for r in wide_rows]
        ratios = [r["sharpness"] * ETA / 2 for r in wide_rows]
        result.metrics.update(wide_sharpness_ratio_min=min(ratios), wide_sharpness_ratio_max=max(ratios),
                              wide_dead_fraction_max=max(r["dead_fraction"] for r in wide_rows))
        result.claims.append(_wide_claim(wide_rows))

    shattering = {r["alpha"]: r["n_shattering"] for r in rows if "n_shattering" in r and r["seed"] == seeds[0]}
    if 0.0 in shattering and 5.0 in shattering:
        result.metrics.update(shattering_neurons_sphere=shattering[0.0], shattering_neurons_alpha5=shattering[5.0])

    if len(scale.ns) >= 3:
        slopes = slopes_by(rows, "alpha")
        for a, fit in slopes.items():
            result.metrics[f"slope_{_name(a)}"] = fit["slope"]
            result.metrics[f"slope_r2_{_name(a)}"] = fit["r2"]
        slope_rows = rows
        if scale.slope_seeds > scale.n_seeds:  # sphere and α = 5 only: their slopes vary most between seeds
            extra = [replace(base, alpha=a, n=n, seed=s) for s in derive_seeds(seed, scale.slope_seeds)[scale.n_seeds:]
                     for a in (0.0, 5.0) for n in scale.ns]
            slope_rows = rows + run_grid(extra, device)
            result.rows += [{"method": _name(r["alpha"]), "slope_seed_only": True, **r} for r in slope_rows[len(rows):]]
        for a in (0.0, 5.0):  # the 90% half-width of each α's per-seed slopes (the claim pairs their difference)
            per_seed = list(seed_slopes(slope_rows, a).values())
            if len(per_seed) >= 2:
                _, low, high = t_interval(per_seed)
                result.metrics[f"slope_halfwidth_{_name(a)}"] = (high - low) / 2
        result.claims += _slope_claims(slope_rows)
        result.figures.append(plot_gap_vs_n(rows, "alpha", slopes, out_dir / "relu_geometry_gap_vs_n.png", _name))
    if intrinsic:
        n_top = max(scale.intrinsic_ns)
        gaps = mean_over_seeds([r for r in intrinsic if r["n"] == n_top], ("family", "d"), "gap")
        lo, hi = min(scale.intrinsic_ds), max(scale.intrinsic_ds)
        for family, paper_text, claim in (("lines", "lines: slopes ≈ −0.21 for d = 10…500, d-independent", "at_most"),
                                          ("beta", "isotropic α = 1 data worsens as d grows", "at_least")):
            ratio = gaps.get((family, hi), float("nan")) / gaps.get((family, lo), float("nan"))
            result.metrics[f"gap_ratio_{family}_d{hi}_over_d{lo}"] = ratio
            result.claims.append(getattr(Claim, claim)(f"intrinsic_dimension_{family}", paper_text, ratio, 1.3,
                                                       what=f"gap(d={hi})/gap(d={lo}) at n = {n_top}"))
        result.figures.append(plot_gap_vs_d(intrinsic, n_top, out_dir / "relu_geometry_gap_vs_d.png"))
    if real:
        gaps = mean_over_seeds(real, ("family",), "gap")
        family, d, n, _ = scale.real
        dg, gg = gaps.get((family,), float("nan")), gaps.get(("gaussian_shell",), float("nan"))
        result.metrics.update({f"gap_{family}": dg, "gap_gaussian_shell": gg})
        result.claims.append(Claim("real_vs_gaussian", "MNIST clean MSE ≈ 0.2 vs ≈ 1.0 for Gaussian inputs",
                                   f"gap {family} {dg:.4f}, Gaussian shell {gg:.4f}",
                                   f"gap({family}) < gap(Gaussian shell) at n = {n}, d = {d}", bool(dg < gg)))
    result.figures.append(plot_gap_vs_alpha(rows, scale.ordering_n, out_dir / "relu_geometry_gap_vs_alpha.png"))
    result.figures.append(_diagnose_figure(models, device, out_dir))
    return result


def _diagnose_figure(models: dict, device: str, out_dir: pathlib.Path) -> pathlib.Path:
    """Activation counts and shatter curves of the first seed's sphere and α = 5 runs."""
    reports, curves = {}, {}
    for config, model in sorted(models.items(), key=lambda kv: (kv[0].seed, kv[0].alpha)):
        name = _name(config.alpha)
        if name in reports:
            continue
        X = make_data(config, device)[0]
        reports[name] = activation_report(model, X)
        curves[name] = shatter_curve(X, n_dirs=200, rng=config.seed)
    return plot_diagnose(reports, curves, out_dir / "relu_geometry_diagnose.png")


BENCHMARK = Benchmark(name="relu-geometry", paper=PAPER, package="iclr26-relu-geometry", func=_run)
