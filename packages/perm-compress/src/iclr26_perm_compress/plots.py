"""Figures and CSV tables of the experiments, written atomically."""
from __future__ import annotations

import csv
import pathlib
from collections.abc import Mapping, Sequence

import numpy as np
from iclr26_shared.bench import atomic_path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_csv(path: str | pathlib.Path, rows: Sequence[Mapping]) -> pathlib.Path:
    """Writes dict rows (same keys) to ``path`` atomically; returns the path."""
    path = pathlib.Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def plot_error_scaling(result: dict, path: str | pathlib.Path) -> pathlib.Path:
    """Log-log plot of the mean compression error (and the random-subset error) against d, per (m, k)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4))
    records = result["records"]
    for key in result["slopes"]:
        m, k = (int(s[1:]) for s in key.split("_"))
        rows = [r for r in records if r["m"] == m and r["k"] == k]
        ds = sorted({r["d"] for r in rows})
        err = [np.mean([r["error"] for r in rows if r["d"] == d]) for d in ds]
        rnd = [np.mean([r["random_error"] for r in rows if r["d"] == d]) for d in ds]
        ax.loglog(ds, err, "o-", label=f"moment matched m={m} k={k} (slope {result['slopes'][key]:.2f})")
        ax.loglog(ds, rnd, "x--", color="gray", alpha=0.6)
    ax.set_xlabel("d (objects)")
    ax.set_ylabel("|f(compressed) - f(full)|")
    ax.set_title("Error scaling (dashed: random 10% subset)")
    ax.legend(fontsize=7)
    return _save(fig, plt, path)


def plot_curves(curves: Mapping[str, Sequence[tuple[int, float]]], path: str | pathlib.Path, title: str,
                xlabel: str = "step") -> pathlib.Path:
    """Test-MSE curves, one line per method, log y axis."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, curve in curves.items():
        steps, values = zip(*curve)
        ax.semilogy(steps, values, "o-" if name == "full" else ".-", label=name, markersize=3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test MSE")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, plt, path)


def _save(fig, plt, path: str | pathlib.Path) -> pathlib.Path:
    path = pathlib.Path(path)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path
