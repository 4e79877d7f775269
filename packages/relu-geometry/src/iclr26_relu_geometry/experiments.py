"""Experiments: one GD run on one data geometry (``RunConfig`` → ``run_experiment``), the sweeps of the paper
(gap vs n across α; lines vs isotropic data across ambient d; digits vs Gaussian shell) and log-log slope fits.

Gap = clean test MSE + σ²·(1 − train MSE/ε̄²) (plain MSEs), ε̄² = mean((y − y*)²) the label-noise energy actually
drawn for the training set: the expected noisy test MSE minus the train MSE rescaled to the nominal noise level σ².
A train MSE carries the luck of its own noise draw (ε̄²/σ² has standard deviation sqrt(2/n): ±0.011 at n = 1024,
σ = 0.5, as large as the gap at α = 5); dividing it out removes that term and leaves the same gap in expectation.
``gap_sigma`` = clean test MSE + σ² − train MSE keeps the noise draw; ``gap_noisy`` also has fresh test-label noise.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from ._checks import positive_int, real
from .activations import activation_report
from .data import ball_mixture, beta_radial, digits_dataset, gaussian_shell, make_targets, mnist_dataset
from .memorisation import kernel_self_influence
from .model import TwoLayerReLU, mse_loss
from .regularity import beos_bound, weighted_path_norm
from .sharpness import top_eigenpair
from .training import stable_init, train_gd

FAMILIES = ("beta", "mixture", "lines", "gaussian_shell", "digits", "mnist", "user")
REAL_SIZES = {"digits": 1797, "mnist": 60000}


@dataclass(frozen=True)
class RunConfig:
    """One GD run. ``family``: ``"beta"`` (uses ``alpha``; 0 = sphere), ``"mixture"`` (``m``, ``J``),
    ``"lines"`` (m = 1, ``J``), ``"gaussian_shell"``, ``"digits"`` (d = 64, n + n_test <= 1797) or ``"mnist"``
    (d = 784, n + n_test <= 60000, read from the local data folder ``$ICLR26_DATA``); ``"user"``: a user's own
    arrays, passed to ``run_experiment`` as ``data`` (``make_data`` refuses it).

    ``sharpness_every = 0`` measures λ_max only at the end (``sharpness_iters`` power iterations).
    ``init_sharpness > 0`` scales the initialisation down until λ_max ≤ ``init_sharpness · 2/η`` (``stable_init``);
    0 keeps the torch default. ``plateau_window > 0`` stops GD once the train MSE plateaus (``train_gd``), with
    ``steps`` as the cap.
    """

    family: str = "beta"
    alpha: float = 0.0
    d: int = 5
    m: int = 1
    J: int = 20
    n: int = 512
    n_test: int = 2000
    width: int = 256
    eta: float = 0.2
    steps: int = 4000
    noise: float = 0.5
    target: str = "ridge"
    seed: int = 0
    sharpness_every: int = 0
    sharpness_iters: int = 30
    log_every: int = 100
    init: str = "torch_default"
    loss_scale: float = 0.5
    init_sharpness: float = 0.0
    plateau_window: int = 0
    plateau_tol: float = 0.01

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"family: expected one of {FAMILIES}, got {self.family!r}")
        positive_int("n", self.n, 2)
        positive_int("n_test", self.n_test, 2)
        positive_int("width", self.width)
        positive_int("steps", self.steps)
        real("eta", self.eta, positive=True)
        real("alpha", self.alpha, nonnegative=True)
        if not 0 <= real("init_sharpness", self.init_sharpness) <= 1:
            raise ValueError(f"init_sharpness: expected a fraction of 2/η in [0, 1], got {self.init_sharpness}")
        if self.family == "mixture" and not 1 <= self.m < self.d:
            raise ValueError(f"m: expected 1 <= m < d = {self.d}, got {self.m}")
        size = REAL_SIZES.get(self.family)
        if size is not None and self.n + self.n_test > size:
            raise ValueError(f"n, n_test: {self.family} has {size} points, got n + n_test = {self.n + self.n_test}")


def make_data(config: RunConfig, device: str | torch.device = "cpu"):
    """Train and test sets of one run, drawn from one seeded distribution.

    Returns:
        ``(X (n, d), y (n,), X_test (n_test, d), y_test (n_test,), y_test_clean (n_test,), y_clean (n,))`` float32
        tensors; ``y_clean`` are the training points' clean targets.
    """
    if config.family == "user":
        raise ValueError("family: expected a family make_data can draw, got 'user' (pass the arrays as data=)")
    rng = np.random.default_rng(config.seed)
    total = config.n + config.n_test
    if config.family in REAL_SIZES:
        loader = digits_dataset if config.family == "digits" else mnist_dataset
        X, y, clean = loader(config.noise, rng)
        order = torch.from_numpy(rng.permutation(X.shape[0])[:total])
        X, y, clean = X[order], y[order], clean[order]
    else:
        if config.family == "beta":
            X = beta_radial(total, config.d, config.alpha, rng)
        elif config.family == "gaussian_shell":
            X = gaussian_shell(total, config.d, rng)
        else:
            m = 1 if config.family == "lines" else config.m
            X = ball_mixture(total, config.d, m, config.J, rng=rng)
        y, clean = make_targets(X, config.target, config.noise, rng)
    n = config.n
    X, y, clean = (t.to(device) for t in (X, y, clean))
    return X[:n], y[:n], X[n:], y[n:], clean[n:], clean[:n]


def _last(values: list[float]) -> float:
    return values[-1] if values else float("nan")


def run_experiment(config: RunConfig, device: str | torch.device = "cpu", report: bool = False, data=None):
    """Trains one network by full-batch GD and measures it.

    Args:
        config: the run; its data family is used unless ``data`` is given.
        report: add the activation-report and memorisation numbers.
        data: ``(X (n, d), y (n,), X_test (m, d) | None, y_test (m,) | None, y_test_clean (m,) | None)`` float32
            tensors to train on instead, optionally followed by the clean training targets ``(n,)`` as
            ``make_data`` returns them (a user's own data; without clean test targets ``gap`` is NaN and only
            ``gap_noisy`` is measured; without clean training targets ε̄² is taken as σ², so ``gap = gap_sigma``).

    Returns:
        ``(row, model, history)``; ``row`` holds the configuration and ``train_mse``, ``test_mse``,
        ``test_mse_clean``, ``noise_energy`` (ε̄²), ``train_over_noise`` (train MSE/ε̄²), ``gap`` (clean test MSE
        + σ²·(1 − train MSE/ε̄²)), ``gap_sigma`` (clean test MSE + σ² − train MSE), ``gap_noisy`` (noisy test
        − train MSE),
        ``sharpness`` (final λ_max), ``two_over_eta``, ``sharpness_max`` (over the tracked values),
        ``diverged``, ``steps_run``, ``plateaued``, ``init_scale`` (the factor of ``stable_init``), ``dead_fraction``
        (neurons active on no training point), ``path_norm``, ``beos_bound``, ``R``, ``seconds`` and, with
        ``report``, ``n_shattering``, ``n_patterns``, ``sole_activator_fraction``, ``n_dead`` and
        ``self_influence`` (``kernel_self_influence``).
    """
    start = time.perf_counter()
    X, y, X_test, y_test, y_clean, y_train_clean = make_data(config, device) if data is None else (
        data if len(data) == 6 else (*data, None))
    sigma2 = config.noise**2
    energy = sigma2 if y_train_clean is None else float(torch.mean((y - y_train_clean) ** 2))
    gen = torch.Generator().manual_seed(config.seed)
    model = TwoLayerReLU(X.shape[1], config.width, init=config.init, generator=gen).to(device)
    scale = (stable_init(model, X, y, config.eta, config.init_sharpness, config.loss_scale)
             if config.init_sharpness > 0 else 1.0)
    hist = train_gd(model, X, y, config.eta, config.steps, X_test, y_test, y_clean, log_every=config.log_every,
                    sharpness_every=config.sharpness_every, sharpness_iters=config.sharpness_iters,
                    loss_scale=config.loss_scale, plateau_window=config.plateau_window,
                    plateau_tol=config.plateau_tol)
    row = {**asdict(config), "n": X.shape[0], "d": X.shape[1], "two_over_eta": 2.0 / config.eta,
           "diverged": hist.diverged, "steps_run": hist.steps[-1], "plateaued": hist.plateaued, "init_scale": scale}
    nan = float("nan")
    if hist.diverged:
        row.update(train_mse=nan, test_mse=nan, test_mse_clean=nan, noise_energy=energy, train_over_noise=nan,
                   gap=nan, gap_sigma=nan, gap_noisy=nan, sharpness=nan, sharpness_max=nan, dead_fraction=nan,
                   path_norm=nan, beos_bound=nan, R=nan)
    else:
        if hist.sharpness_steps and hist.sharpness_steps[-1] == hist.steps[-1]:
            lam = hist.sharpness[-1]
        else:
            lam, _, ok = top_eigenpair(model, X, y, config.sharpness_iters, 1e-4, config.loss_scale)
            hist.sharpness_steps.append(hist.steps[-1])
            hist.sharpness.append(lam)
            hist.sharpness_converged.append(ok)
        R = float(X.norm(dim=1).max())
        with torch.no_grad():
            loss = float(mse_loss(model, X, y, config.loss_scale))
            dead = float((model.preactivations(X) > 0).sum(0).eq(0).float().mean())
        train, clean = hist.train_mse[-1], _last(hist.test_mse_clean)
        unfitted = train / energy if energy > 0 else nan  # the share of the drawn noise energy GD left unfitted
        train_at_sigma = train * sigma2 / energy if energy > 0 else train  # the train MSE at the nominal noise level
        row.update(train_mse=train, test_mse=_last(hist.test_mse), test_mse_clean=clean, noise_energy=energy,
                   train_over_noise=unfitted,
                   gap=clean + sigma2 - train_at_sigma, gap_sigma=clean + sigma2 - train,
                   gap_noisy=_last(hist.test_mse) - train, sharpness=lam,
                   sharpness_max=max(hist.sharpness), dead_fraction=dead, path_norm=weighted_path_norm(model, X),
                   beos_bound=beos_bound(config.eta, loss, R, X), R=R)
        if report:
            rep = activation_report(model, X)
            row.update({k: rep[k] for k in ("n_shattering", "n_patterns", "sole_activator_fraction", "n_dead")})
            influence = kernel_self_influence(model, X, config.eta, max(hist.steps[-1], 1), config.loss_scale)
            row["self_influence"] = float(influence.mean())
    row["seconds"] = time.perf_counter() - start
    return row, model, hist


def fit_loglog_slope(ns, gaps) -> dict:
    """Least-squares fit of ``log gap = a + slope·log n``.

    Points with a non-finite or non-positive gap cannot be on a log scale: they are excluded with a warning.

    Returns:
        ``{"slope", "intercept", "r2", "n_points", "excluded"}``; slope/intercept/r2 are NaN when fewer than
        3 distinct n remain.

    Raises:
        ValueError: fewer than 3 distinct n were given, or ``ns`` and ``gaps`` differ in length.
    """
    ns, gaps = np.asarray(ns, dtype=np.float64), np.asarray(gaps, dtype=np.float64)
    if ns.shape != gaps.shape or ns.ndim != 1:
        raise ValueError(f"ns, gaps: expected two 1-D arrays of one length, got {ns.shape} and {gaps.shape}")
    if np.unique(ns).size < 3:
        raise ValueError(f"ns: a gap-vs-n fit needs at least 3 distinct n, got {np.unique(ns).tolist()}")
    keep = np.isfinite(gaps) & (gaps > 0) & (ns > 0)
    excluded = ns[~keep].tolist()
    if excluded:
        warnings.warn(f"fit_loglog_slope: excluded n = {excluded} (non-positive or non-finite gap)",
                      RuntimeWarning, stacklevel=2)
    nan = float("nan")
    if np.unique(ns[keep]).size < 3:
        return {"slope": nan, "intercept": nan, "r2": nan, "n_points": int(keep.sum()), "excluded": excluded}
    lx, ly = np.log(ns[keep]), np.log(gaps[keep])
    slope, intercept = np.polyfit(lx, ly, 1)
    resid = ly - (intercept + slope * lx)
    total = np.sum((ly - ly.mean()) ** 2)
    r2 = 1.0 - np.sum(resid**2) / total if total > 0 else nan
    return {"slope": float(slope), "intercept": float(intercept), "r2": float(r2), "n_points": int(keep.sum()),
            "excluded": excluded}


def mean_over_seeds(rows: list[dict], keys: tuple[str, ...], value: str) -> dict[tuple, float]:
    """Mean of ``value`` over the rows sharing ``keys`` (diverged rows, whose value is NaN, are left out)."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        v = r[value]
        if isinstance(v, (int, float)) and math.isfinite(v) and not r.get("diverged", False):
            groups.setdefault(tuple(r[k] for k in keys), []).append(float(v))
    return {k: float(np.mean(v)) for k, v in groups.items()}


def run_grid(configs: list[RunConfig], device="cpu", report_for=lambda c: False, progress=lambda it, **kw: it,
             models: dict | None = None) -> list[dict]:
    """Runs every configuration; returns the list of rows. Diverged runs are warned about and kept (NaN).

    ``report_for(config)`` selects the runs that get an activation report; their trained models are stored in
    ``models[config]`` when a dict is given.
    """
    rows = []
    for c in progress(configs, total=len(configs), desc="GD runs"):
        report = report_for(c)
        row, model, _ = run_experiment(c, device, report=report)
        if row["diverged"]:
            warnings.warn(f"run diverged and is excluded from fits: {c}", RuntimeWarning, stacklevel=2)
        if report and models is not None:
            models[c] = model
        rows.append(row)
    return rows


def slopes_by(rows: list[dict], key: str) -> dict:
    """Log-log slope fits of the seed-mean gap vs n, one per value of ``key`` having >= 3 distinct n."""
    gaps = mean_over_seeds(rows, (key, "n"), "gap")
    out = {}
    for value in sorted({k[0] for k in gaps}):
        ns = sorted(n for (v, n) in gaps if v == value)
        if len(ns) >= 3:
            out[value] = fit_loglog_slope(ns, [gaps[(value, n)] for n in ns])
    return out


def run_alpha_sweep(d: int = 5, alphas=(0.0, 0.3, 1.5, 5.0), ns=(128, 256, 512, 1024), width: int = 256,
                    eta: float = 0.2, steps: int = 4000, seeds=(0, 1), n_test: int = 4000, noise: float = 0.5,
                    sharpness_every: int = 500, sharpness_iters: int = 50, device="cpu", **kw) -> dict:
    """Gap vs n on the isotropic Beta(α) family (α = 0: the sphere) with slope fits per α.

    Returns:
        ``{"rows": [...], "slopes": {alpha: fit}}``.
    """
    base = RunConfig(family="beta", d=d, width=width, eta=eta, steps=steps, n_test=n_test, noise=noise,
                     sharpness_every=sharpness_every, sharpness_iters=sharpness_iters)
    configs = [replace(base, alpha=float(a), n=int(n), seed=int(s)) for s in seeds for a in alphas for n in ns]
    rows = run_grid(configs, device, **kw)
    return {"rows": rows, "slopes": slopes_by(rows, "alpha")}


def run_intrinsic_sweep(m: int = 1, J: int = 20, ds=(5, 20, 50), ns=(256, 1024), alpha: float = 1.0,
                        width: int = 256, eta: float = 0.2, steps: int = 4000, seeds=(0, 1), n_test: int = 4000,
                        noise: float = 0.5, sharpness_every: int = 500, sharpness_iters: int = 50, device="cpu",
                        **kw) -> dict:
    """Mixtures of J m-dimensional balls (m = 1: lines) vs isotropic Beta(α) data, across ambient d.

    Returns:
        ``{"rows": [...], "slopes": {(family, d): fit}}`` (slopes only with >= 3 distinct n).
    """
    family = "lines" if m == 1 else "mixture"
    base = RunConfig(m=m, J=J, width=width, eta=eta, steps=steps, n_test=n_test, noise=noise, alpha=alpha,
                     sharpness_every=sharpness_every, sharpness_iters=sharpness_iters)
    configs = [replace(base, family=f, d=int(d), n=int(n), seed=int(s))
               for s in seeds for f in (family, "beta") for d in ds for n in ns]
    rows = run_grid(configs, device, **kw)
    for r in rows:
        r["geometry"] = f"{r['family']}@d={r['d']}"
    return {"rows": rows, "slopes": slopes_by(rows, "geometry")}


def run_real_vs_gaussian(n: int = 1000, n_test: int = 797, width: int = 256, eta: float = 0.2, steps: int = 4000,
                         seeds=(0,), noise: float = 0.5, device="cpu", **kw) -> dict:
    """Digits (64-d, low intrinsic dimension, max-norm 1) vs the Gaussian shell ``N(0, I/64)`` at equal n and d.

    The Gaussian inputs carry the ``ridge`` target with the same noise level σ.

    Returns:
        ``{"rows": [...]}`` with one row per (family, seed).
    """
    base = RunConfig(d=64, n=n, n_test=n_test, width=width, eta=eta, steps=steps, noise=noise)
    configs = [replace(base, family=f, seed=int(s)) for s in seeds for f in ("digits", "gaussian_shell")]
    return {"rows": run_grid(configs, device, **kw)}

