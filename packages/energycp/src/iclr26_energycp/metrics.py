"""Metrics of prediction sets, as TorchCP defines them (the paper's code reports these).

``sets`` is a boolean (n, K) mask (numpy or torch), ``labels`` (n,) integers.

- coverage: fraction of rows whose set holds the label.
- average_size: mean number of labels per set.
- covgap: ``mean_k |cov_k - (1 - alpha)| * 100`` over the classes present in ``labels``.
- sscv: ``max`` over non-empty set-size strata of ``|cov_stratum - (1 - alpha)|``. Variants:
  ``min_stratum=m`` ignores strata with fewer than ``m`` rows (a handful of rows covered 100% otherwise
  counts as an ``alpha`` violation); ``one_sided=True`` counts only under-coverage ``max(0, 1 - alpha - cov)``.
- vio_classes: number of present classes whose coverage is below ``1 - alpha``.
- empty_rate: fraction of empty sets.
- diff_violation: like SSCV, but strata by the 1-based rank of the true label in the logits.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import NumpyOps, ops_for
from ._checks import check_alpha, check_labels, check_nonnegative_int

SIZE_STRATA = ((0, 1), (2, 3), (4, 10), (11, 100), (101, 1000))
RANK_STRATA = ((1, 1), (2, 3), (4, 6), (7, 10), (11, 100), (101, 1000))


def _sets(sets: Any) -> np.ndarray:
    a = ops_for(sets).to_numpy(sets)
    if a.ndim != 2 or a.dtype != np.bool_:
        raise ValueError(f"sets: expected a boolean (n, K) mask, got dtype {a.dtype} and shape {a.shape}")
    return a


def _sets_labels(sets: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    s = _sets(sets)
    y = check_labels(labels, s.shape[0], s.shape[1], NumpyOps())
    return s, y


def _covered(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    return s[np.arange(s.shape[0]), y]


def coverage(sets: Any, labels: Any) -> float:
    """Marginal coverage: the fraction of rows with ``sets[i, labels[i]]``."""
    s, y = _sets_labels(sets, labels)
    return float(_covered(s, y).mean())


def average_size(sets: Any) -> float:
    """Mean set size."""
    return float(_sets(sets).sum(1).mean())


def empty_rate(sets: Any) -> float:
    """Fraction of empty sets."""
    return float((~_sets(sets).any(1)).mean())


def _class_coverage(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(classes present, their coverage)."""
    hit = _covered(s, y)
    classes = np.unique(y)
    return classes, np.array([hit[y == k].mean() for k in classes])


def covgap(sets: Any, labels: Any, alpha: float, num_classes: int | None = None) -> float:
    """Class-conditional coverage gap ``mean_k |cov_k - (1 - alpha)| * 100`` over the present classes.

    ``num_classes`` (optional) checks that ``sets`` has that many columns.
    """
    alpha = check_alpha(alpha)
    s, y = _sets_labels(sets, labels)
    _check_k(s, num_classes)
    _, cov = _class_coverage(s, y)
    return float(np.abs(cov - (1.0 - alpha)).mean() * 100.0)


def vio_classes(sets: Any, labels: Any, alpha: float, num_classes: int | None = None) -> int:
    """Number of present classes whose coverage is below ``1 - alpha``."""
    alpha = check_alpha(alpha)
    s, y = _sets_labels(sets, labels)
    _check_k(s, num_classes)
    _, cov = _class_coverage(s, y)
    return int((cov < 1.0 - alpha).sum())


def _check_k(s: np.ndarray, num_classes: int | None) -> None:
    if num_classes is not None and num_classes != s.shape[1]:
        raise ValueError(f"num_classes: expected {s.shape[1]} (the columns of sets), got {num_classes}")


def _stratified_violation(hit: np.ndarray, key: np.ndarray, alpha: float, strata, min_stratum: int = 1,
                          one_sided: bool = False) -> float:
    worst = 0.0
    for lo, hi in strata:
        inside = (key >= lo) & (key <= hi)
        if inside.sum() >= max(min_stratum, 1):
            gap = 1.0 - alpha - hit[inside].mean()
            worst = max(worst, gap if one_sided else abs(gap))
    return float(worst)


def sscv(sets: Any, labels: Any, alpha: float, strata=SIZE_STRATA, min_stratum: int = 1,
         one_sided: bool = False) -> float:
    """Size-stratified coverage violation: ``max`` over non-empty strata of ``|1 - alpha - cov|`` (TorchCP's).

    ``strata`` are inclusive (low, high) set-size ranges. ``min_stratum``: strata with fewer rows are
    skipped (default 1: TorchCP's definition). ``one_sided``: only under-coverage counts,
    ``max(0, 1 - alpha - cov)``, so an over-covered stratum is not a violation.
    """
    alpha = check_alpha(alpha)
    min_stratum = check_nonnegative_int(min_stratum, "min_stratum")
    s, y = _sets_labels(sets, labels)
    return _stratified_violation(_covered(s, y), s.sum(1), alpha, strata, min_stratum, bool(one_sided))


def diff_violation(logits: Any, sets: Any, labels: Any, alpha: float, strata=RANK_STRATA) -> float:
    """Difficulty-stratified violation: strata by the 1-based rank of the true label in ``logits``
    (ties count the lower class index first)."""
    alpha = check_alpha(alpha)
    s, y = _sets_labels(sets, labels)
    z = np.asarray(ops_for(logits).to_numpy(logits), dtype=np.float64)
    if z.shape != s.shape:
        raise ValueError(f"logits: expected shape {s.shape} like sets, got {z.shape}")
    order = np.argsort(-z, axis=1, kind="stable")
    rank = np.argmax(order == y[:, None], axis=1) + 1
    return _stratified_violation(_covered(s, y), rank, alpha, strata)


def all_metrics(sets: Any, labels: Any, alpha: float, logits: Any = None) -> dict[str, float]:
    """Every metric above in one dict (``diff_violation`` only when ``logits`` is given)."""
    out = {
        "coverage": coverage(sets, labels),
        "size": average_size(sets),
        "sscv": sscv(sets, labels, alpha),
        "covgap": covgap(sets, labels, alpha),
        "vio_classes": float(vio_classes(sets, labels, alpha)),
        "empty_rate": empty_rate(sets),
    }
    if logits is not None:
        out["diff_violation"] = diff_violation(logits, sets, labels, alpha)
    return out
