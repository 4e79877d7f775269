"""Input checking and preprocessing of incomplete multi-view data (shared by CAMEL and the baselines)."""
from __future__ import annotations

import warnings

import numpy as np


def check_views(Xs, mask=None, n_clusters: int | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Validates a list of views and returns ``(views, mask)``.

    Missing rows are given either by ``mask`` or, when ``mask`` is None, as rows that are NaN in
    every column. A NaN or inf inside an observed row is an error (only whole-row NaN means missing).

    Args:
        Xs: list of ``m >= 2`` arrays ``(n, d_v)``.
        mask: optional boolean-castable ``(n, m)`` array; True = observed.
        n_clusters: when given, every view must observe at least this many samples.

    Returns:
        views as float64 ``(n, d_v)`` with unobserved rows set to 0, and the boolean mask ``(n, m)``.

    Raises:
        TypeError: ``Xs`` is not a list/tuple of arrays.
        ValueError: fewer than 2 views, row counts differ, a partly-NaN or infinite observed row,
            a mask of the wrong shape or with values other than 0/1, a sample missing in every view,
            a view observing fewer than ``n_clusters`` samples.
    """
    if not isinstance(Xs, (list, tuple)):
        raise TypeError(f"Xs: expected a list of arrays (n, d_v), got {type(Xs).__name__}")
    if len(Xs) < 2:
        raise ValueError(f"Xs: expected at least 2 views, got {len(Xs)}")
    views = []
    for v, X in enumerate(Xs):
        try:
            X = np.array(X, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"Xs[{v}]: expected a numeric array (n, d_v)") from err
        if X.ndim != 2 or X.shape[1] < 1:
            raise ValueError(f"Xs[{v}]: expected a 2-D array (n, d_v) with d_v >= 1, got shape {X.shape}")
        views.append(X)
    n = views[0].shape[0]
    if any(X.shape[0] != n for X in views):
        raise ValueError(f"Xs: expected the same number of rows in every view, got {[X.shape[0] for X in views]}")
    m = len(views)
    if mask is None:
        mask = np.stack([~np.all(np.isnan(X), axis=1) for X in views], axis=1)
    else:
        raw = np.asarray(mask)
        if raw.shape != (n, m):
            raise ValueError(f"mask: expected shape ({n}, {m}), got {raw.shape}")
        if raw.dtype != bool:
            try:
                numeric = raw.astype(np.float64)
            except (TypeError, ValueError) as err:
                raise ValueError(f"mask: expected booleans or 0/1, got dtype {raw.dtype}") from err
            if not np.all((numeric == 0) | (numeric == 1)):
                raise ValueError("mask: expected booleans or 0/1 values only")
        mask = raw.astype(bool)
    for v, X in enumerate(views):
        observed = X[mask[:, v]]
        if not np.all(np.isfinite(observed)):
            raise ValueError(f"Xs[{v}]: NaN or inf inside an observed row (only a whole-row NaN marks a "
                             "missing sample; pass mask= to mark rows explicitly)")
        X[~mask[:, v]] = 0.0
    lost = np.flatnonzero(~mask.any(axis=1))
    if lost.size:
        raise ValueError(f"mask: {lost.size} sample(s) are missing in every view (first: {lost[:5].tolist()}); "
                         "every sample needs at least one observed view")
    if n_clusters is not None:
        counts = mask.sum(axis=0)
        for v, count in enumerate(counts):
            if count < n_clusters:
                raise ValueError(f"Xs[{v}]: observed for {count} samples, fewer than n_clusters={n_clusters}")
    return views, mask


def minmax_l2(X: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Per-feature min-max scaling fitted on the observed rows, then unit-l2 rows; missing rows 0.

    Args:
        X: ``(n, d)`` view.
        observed: boolean ``(n,)``.

    Returns:
        ``(n, d)`` float64, non-negative; constant features become 0.
    """
    Xo = X[observed]
    lo, hi = Xo.min(axis=0), Xo.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    out = np.where(hi > lo, (X - lo) / span, 0.0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    out[~observed] = 0.0
    return out


def zscore_impute_l2(X: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """z-score each feature with the observed rows' mean/std, fill missing rows with the mean (0), unit-l2 rows.

    This is the ``Concat`` baseline's per-view transform.
    """
    Xo = X[observed]
    mean, std = Xo.mean(axis=0), Xo.std(axis=0)
    out = (X - mean) / np.where(std > 0, std, 1.0)
    out[~observed] = 0.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def preprocess_views(views: list[np.ndarray], mask: np.ndarray, method: str | None, strict: bool = False):
    """Applies CAMEL's preprocessing to every view.

    Args:
        views: checked views ``(n, d_v)`` (missing rows 0).
        mask: ``(n, m)`` boolean.
        method: ``"minmax_l2"`` or None (use as given; the non-negative coefficients Z assume
            non-negative inputs).
        strict: with ``method=None``, raise on negative values instead of warning.

    Raises:
        ValueError: unknown ``method``; negative inputs with ``method=None`` and ``strict``.
    """
    if method == "minmax_l2":
        return [minmax_l2(X, mask[:, v]) for v, X in enumerate(views)]
    if method is None:
        if any(np.any(X < 0) for X in views):
            msg = ("Xs: negative values with preprocess=None; CAMEL's coefficients Z >= 0 assume "
                   "non-negative inputs (use preprocess='minmax_l2')")
            if strict:
                raise ValueError(msg)
            warnings.warn(msg, UserWarning, stacklevel=3)
        return [X.copy() for X in views]
    raise ValueError(f"preprocess: expected 'minmax_l2' or None, got {method!r}")
