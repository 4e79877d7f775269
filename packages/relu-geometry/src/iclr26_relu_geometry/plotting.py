"""Figures: gap vs n (log-log, fitted slopes), gap vs α, gap vs ambient d, and the diagnose panel.

Each function writes one PNG atomically and returns its path. matplotlib runs headless (Agg).
"""
from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from iclr26_shared.bench import atomic_path  # noqa: E402

from .experiments import mean_over_seeds  # noqa: E402


def _save(fig, path) -> pathlib.Path:
    path = pathlib.Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(fig)
    return path


def plot_gap_vs_n(rows: list[dict], key: str, slopes: dict, path, label=str) -> pathlib.Path:
    """Log-log gap (mean over seeds) vs n, one line per value of ``key``, the fitted slope in the legend."""
    gaps = mean_over_seeds(rows, (key, "n"), "gap")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for value in sorted({k[0] for k in gaps}, key=str):
        ns = sorted(n for (v, n) in gaps if v == value)
        ys = [gaps[(value, n)] for n in ns]
        fit = slopes.get(value)
        text = f" (slope {fit['slope']:.2f})" if fit and np.isfinite(fit["slope"]) else ""
        ax.plot(ns, np.maximum(ys, 1e-6), "o-", label=f"{label(value)}{text}")
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="gap = clean test MSE + σ²(1 − train MSE/ε̄²)")
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_gap_vs_alpha(rows: list[dict], n: int, path) -> pathlib.Path:
    """Gap and train MSE vs α at one n (α = 0: the sphere)."""
    gaps = mean_over_seeds([r for r in rows if r["n"] == n], ("alpha",), "gap")
    train = mean_over_seeds([r for r in rows if r["n"] == n], ("alpha",), "train_mse")
    alphas = sorted(a for (a,) in gaps)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    labels = ["sphere" if a == 0 else f"{a:g}" for a in alphas]
    ax.plot(labels, [gaps[(a,)] for a in alphas], "o-", label="gap")
    ax.plot(labels, [train[(a,)] for a in alphas], "s--", label="train MSE")
    ax.set(xlabel="α (Beta(1, α) radius)", ylabel="MSE", title=f"n = {n}")
    ax.legend()
    return _save(fig, path)


def plot_gap_vs_d(rows: list[dict], n: int, path) -> pathlib.Path:
    """Gap vs ambient d at one n, for each family (lines vs isotropic)."""
    gaps = mean_over_seeds([r for r in rows if r["n"] == n], ("family", "d"), "gap")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for family in sorted({f for f, _ in gaps}):
        ds = sorted(d for f, d in gaps if f == family)
        ax.plot(ds, [gaps[(family, d)] for d in ds], "o-", label=family)
    ax.set(xscale="log", xlabel="ambient dimension d", ylabel="gap", title=f"n = {n}")
    ax.legend()
    return _save(fig, path)


def plot_diagnose(reports: dict[str, dict], curves: dict[str, dict], path) -> pathlib.Path:
    """Left: activation counts per neuron (histogram); right: the shatter curve (median g̃ vs cap mass)."""
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(10, 4))
    for name, rep in reports.items():
        a0.hist(rep["counts"], bins=40, alpha=0.5, label=f"{name}: {rep['n_shattering']} shattering")
    a0.set(xlabel="points activating the neuron", ylabel="neurons")
    a0.legend(fontsize=8)
    for name, curve in curves.items():
        a1.plot(curve["p"], curve["median_g"], "o-", label=name)
    a1.set(xscale="log", yscale="log", xlabel="cap mass p", ylabel="median g̃(u, t_p(u))")
    a1.legend(fontsize=8)
    return _save(fig, path)
