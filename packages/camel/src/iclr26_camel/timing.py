"""Runtime against n: seconds per ADMM iteration for the constant degree versus the true degree.

The paper's efficiency argument is that ``D = beta I`` removes the degree computation; the true
degree ``Z^T (Z 1)`` costs O(t n), so this module measures how much that saves instead of asserting it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .data import make_incomplete_multiview_blobs
from .masks import apply_mask, make_incomplete_mask
from .model import CAMEL

SUBSTEPS = ("degree", "A", "Z", "E", "H", "G", "multipliers")


def time_iterations(n_values: Sequence[int], *, Xs=None, n_views: int = 3, dim: int = 100, n_clusters: int = 10,
                    n_anchors: int = 30, n_iter: int = 5, missing_rate: float = 0.3,
                    degrees: Sequence[str] = ("constant", "normalized"), seed: int = 0) -> list[dict[str, Any]]:
    """Times ``n_iter`` ADMM iterations (one BLAS thread, ``tol = 0`` so none stops early) at each ``n``.

    Args:
        n_values: sample sizes, increasing.
        Xs: optional views ``(N, d_v)`` to subsample (the first ``n`` rows of a fixed random
            permutation); default: synthetic blobs with ``n_views`` views of ``dim`` features.
        n_views, dim, n_clusters, n_anchors: the synthetic problem's size and CAMEL's ``c``, ``t``.
        n_iter: iterations timed per fit; the median per-iteration time is reported.
        missing_rate: the paired-protocol missing rate of the mask.
        degrees: degree modes to compare.
        seed: seed of the data, mask and fit.

    Returns:
        rows ``{"method": "camel_<degree>", "n", "degree", "seconds_per_iter", "cpu_seconds_per_iter",
        "seconds_<substep>"}`` (medians over iterations; wall-clock except ``cpu_seconds_per_iter``, the
        process CPU time, which other jobs on a shared machine do not inflate).

    Raises:
        ValueError: a non-positive ``n`` or one larger than the supplied views.
    """
    rows = []
    rng = np.random.default_rng(seed)
    order = rng.permutation(Xs[0].shape[0]) if Xs is not None else None
    for n in n_values:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= n_clusters:
            raise ValueError(f"n_values: expected integers > n_clusters={n_clusters}, got {n!r}")
        if Xs is None:
            views, _ = make_incomplete_multiview_blobs(n=int(n), n_clusters=n_clusters, n_views=n_views,
                                                       dims=(dim,) * n_views, random_state=seed)
        else:
            if n > order.size:
                raise ValueError(f"n_values: {n} exceeds the {order.size} samples supplied")
            views = [np.asarray(X)[order[:n]] for X in Xs]
        mask = make_incomplete_mask(int(n), len(views), missing_rate, rng=seed)
        masked = apply_mask(views, mask)
        for degree in degrees:
            model = CAMEL(n_clusters, n_anchors=n_anchors, degree=degree, max_iter=n_iter, tol=1e-300,
                          n_init_kmeans=1, n_threads=1, random_state=seed).fit(masked)
            h = model.history_
            row = {"method": f"camel_{degree}", "n": int(n), "degree": degree,
                   "seconds_per_iter": float(np.median(h["time_iteration"])),
                   "cpu_seconds_per_iter": float(np.median(h["cpu_time_iteration"]))}
            row.update({f"seconds_{s}": float(np.median(h[f"time_{s}"])) for s in SUBSTEPS})
            rows.append(row)
    return rows


def loglog_slope(n_values: Sequence[float], seconds: Sequence[float]) -> float:
    """Least-squares slope of ``log(seconds)`` against ``log(n)`` (1 = linear scaling)."""
    x, y = np.log(np.asarray(n_values, float)), np.log(np.asarray(seconds, float))
    if x.size < 2:
        raise ValueError(f"n_values: expected at least 2 sizes, got {x.size}")
    return float(np.polyfit(x, y, 1)[0])


def degree_time_ratio(rows: list[dict[str, Any]], key: str = "cpu_seconds_per_iter") -> float:
    """Median over ``n`` of ``key(constant) / key(normalized)`` (CPU seconds per iteration by default)."""
    by = {(r["n"], r["degree"]): r[key] for r in rows}
    ratios = [by[(n, "constant")] / by[(n, "normalized")] for n, d in by if d == "constant" and (n, "normalized") in by]
    if not ratios:
        raise ValueError("rows: expected timings of both degree modes at the same n")
    return float(np.median(ratios))
