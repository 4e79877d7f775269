"""The evaluation protocol: named methods run on masked views, one row of metrics per (method, rate, seed).

Used by the benchmark and by the CLI's ``sweep`` and ``tune``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from .baselines import AverageAnchorGraph, BestSingleView, ConcatKMeans, ConcatSpectral
from .masks import apply_mask, make_incomplete_mask
from .metrics import evaluate
from .model import CAMEL

# name -> (description, CAMEL overrides or a baseline factory)
METHODS: dict[str, tuple[str, Any]] = {
    "camel": ("CAMEL (constant degree, l_delta)", {}),
    "camel_noconn": ("CAMEL without the connectivity term (lambda2 = 0)", {"lambda2": 0.0}),
    "camel_normdeg": ("CAMEL with the true (normalized) degree", {"degree": "normalized"}),
    "camel_tnn": ("CAMEL with the tensor nuclear norm instead of l_delta", {"tensor_norm": "tnn"}),
    "bsv": ("best single view k-means (label oracle)", BestSingleView),
    "concat": ("z-scored, mean-imputed concatenation + k-means", ConcatKMeans),
    "concat_spectral": ("concatenation + spectral clustering", ConcatSpectral),
    "avg_anchor": ("averaged anchor graphs + spectral embedding", AverageAnchorGraph),
}


def check_methods(methods: Sequence[str]) -> list[str]:
    """Returns ``methods`` as a list; raises ``ValueError`` naming the known ones for an unknown name."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods: expected names among {sorted(METHODS)}, got {list(methods)}")
    return list(methods)


def make_estimator(method: str, n_clusters: int, seed: int, hyper: dict[str, Any] | None = None):
    """The estimator behind a method name; ``hyper`` overrides CAMEL's defaults (ignored by baselines)."""
    check_methods([method])
    spec = METHODS[method][1]
    if isinstance(spec, dict):
        return CAMEL(n_clusters, random_state=seed, **{**(hyper or {}), **spec})
    return spec(n_clusters, random_state=seed)


def run_one(method: str, Xs, y, mask, seed: int, hyper: dict[str, Any] | None = None,
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fits one method on masked views and scores it.

    Returns:
        ``{"method", "seed", **extra, "acc", "nmi", "ari", "purity", "seconds"}`` and, for CAMEL variants,
        ``"n_iter"``, ``"converged"``, ``"final_residual"`` and ``"objective_finite"``.
    """
    n_clusters = int(np.unique(y).size)
    est = make_estimator(method, n_clusters, seed, hyper)
    start = time.perf_counter()
    labels = est.fit_predict(Xs, mask, y) if method == "bsv" else est.fit_predict(Xs, mask)
    row: dict[str, Any] = {"method": method, "seed": seed, **(extra or {}), **evaluate(y, labels),
                           "seconds": time.perf_counter() - start}
    if isinstance(est, CAMEL):
        h = est.history_
        row.update(n_iter=est.n_iter_, converged=bool(est.converged_),
                   final_residual=max(h["residual_x"][-1], h["residual_h"][-1]),
                   objective_finite=bool(np.all(np.isfinite(h["objective"]))))
    return row


def masked_views(Xs, rate: float, seed: int, protocol: str = "paired"):
    """``(views with NaN rows, mask)`` for one missing rate and seed."""
    mask = make_incomplete_mask(Xs[0].shape[0], len(Xs), rate, rng=seed, protocol=protocol)
    return apply_mask(Xs, mask), mask


def sweep(Xs, y, methods: Sequence[str], rates: Sequence[float], seeds: Sequence[int],
          hyper: dict[str, Any] | None = None, n_jobs: int = 1,
          progress: Callable | None = None) -> list[dict[str, Any]]:
    """Every method x missing rate x seed on the same masks (mask seed = run seed).

    Returns:
        rows as in ``run_one`` with ``"rate"`` added, in method/rate/seed order.
    """
    methods = check_methods(methods)
    jobs = []
    for rate in rates:
        for seed in seeds:
            views, mask = masked_views(Xs, rate, seed)
            jobs.extend((m, views, mask, seed, rate) for m in methods)
    calls = (delayed(run_one)(m, v, y, mask, s, hyper, {"rate": r}) for m, v, mask, s, r in jobs)
    if progress is not None:
        calls = progress(calls, total=len(jobs), desc="fits")
    rows = Parallel(n_jobs=n_jobs)(calls) if n_jobs != 1 else [f(*a, **k) for f, a, k in calls]
    order = {m: i for i, m in enumerate(methods)}
    return sorted(rows, key=lambda r: (order[r["method"]], r["rate"], r["seed"]))


def summarize(rows: list[dict[str, Any]], keys=("method", "rate"), metrics=("acc", "nmi", "ari", "purity", "seconds")):
    """Mean and standard deviation of ``metrics`` per group of ``keys``: dicts ``{key..., metric, metric_std}``."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for group, members in groups.items():
        entry: dict[str, Any] = dict(zip(keys, group))
        entry["runs"] = len(members)
        for metric in metrics:
            values = np.asarray([r[metric] for r in members], dtype=float)
            entry[metric], entry[f"{metric}_std"] = float(values.mean()), float(values.std())
        out.append(entry)
    return out


def mean_of(rows: list[dict[str, Any]], metric: str, **where) -> float:
    """Mean of ``metric`` over the rows matching every ``key=value`` in ``where``.

    Raises:
        ValueError: no row matches.
    """
    values = [r[metric] for r in rows if all(np.isclose(r[k], v) if isinstance(v, float) else r[k] == v
                                             for k, v in where.items())]
    if not values:
        raise ValueError(f"no rows match {where}")
    return float(np.mean(values))
