"""Estimators of the per-instance flip probability ``rho(x)``, one value per training instance.

Every estimator is cross-fitted: no instance's estimate comes from a model that saw its own
label (out-of-fold predictions for ``rho_posterior``, the instance itself left out of its
neighbourhood for ``rho_knn``).

The posterior and kNN estimators assume deterministic clean labels (``eta(x)`` in {0, 1}):
then ``eta~(x) = rho(x)`` or ``1 - rho(x)`` and ``rho = min(eta~, 1 - eta~)``. When the classes
truly overlap they overestimate ``rho`` by ``(1 - 2 rho) min(eta, 1 - eta)``; pass your own
``rho`` in that case.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neighbors import NearestNeighbors

from .checks import as_binary_labels, check_features, check_folds, check_same_length

METHODS = ("posterior", "knn", "constant")


def rho_from_posterior(p_noisy) -> np.ndarray:
    """``rho = min(p~, 1 - p~)`` for noisy posteriors ``p~`` ``(n,)`` in [0, 1].

    Exact when ``eta`` is 0/1 and ``p~ = eta~``.
    """
    p = np.asarray(p_noisy, dtype=np.float64)
    if p.ndim != 1 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"p_noisy: expected a 1-D array of probabilities in [0, 1], got shape {p.shape}")
    return np.minimum(p, 1.0 - p)


def posterior_model(max_iter: int = 500, random_state=None) -> HistGradientBoostingClassifier:
    """The default model of the noisy posterior: histogram gradient boosting early-stopped on the
    log-loss of a 10 % hold-out of its training fold (at most ``max_iter`` rounds).

    The stopping matters: the noisy posterior is flat at ``rho`` or ``1 - rho`` almost everywhere, and
    a fixed 200 rounds fits the flipped labels themselves, pushing ``p~`` towards 0 or 1 and ``rho^``
    towards 0 on the very instances that were flipped.
    """
    return HistGradientBoostingClassifier(max_iter=max_iter, early_stopping=True, random_state=random_state)


def noisy_posterior(X, y_noisy, estimator=None, cv: int = 5, random_state=None) -> np.ndarray:
    """Out-of-fold ``P(y~ = 1 | x)`` ``(n,)`` from ``cv``-fold stratified cross-fitting of ``estimator``.

    ``estimator``: any scikit-learn classifier with ``predict_proba``; default ``posterior_model()``
    (early-stopped gradient boosting). ``random_state``: int or None (fold shuffling and the default
    model's hold-out).

    Raises:
        ValueError: ``cv < 2``, too few instances of a class for ``cv`` folds, bad ``X``/``y_noisy``.
        TypeError: ``estimator`` has no ``predict_proba``.
    """
    X, y = check_features(X), as_binary_labels(y_noisy)
    check_same_length(len(X), len(y), "X, y_noisy")
    cv = check_folds(cv, " (cross-fitting is mandatory)")
    if np.bincount(y, minlength=2).min() < cv:
        raise ValueError(f"y_noisy: expected at least cv={cv} instances of each class, got counts "
                         f"{np.bincount(y, minlength=2).tolist()}")
    if estimator is None:
        estimator = posterior_model(random_state=random_state)
    if not hasattr(estimator, "predict_proba"):
        raise TypeError(f"estimator: expected a classifier with predict_proba, got {type(estimator).__name__}")
    folds = StratifiedKFold(cv, shuffle=True, random_state=random_state)
    return cross_val_predict(clone(estimator), X, y, cv=folds, method="predict_proba")[:, 1]


def rho_posterior(X, y_noisy, estimator=None, cv: int = 5, random_state=None) -> np.ndarray:
    """``rho^(x) = min(p~(x), 1 - p~(x))``, ``(n,)``, with ``p~`` the cross-fitted ``noisy_posterior``."""
    return rho_from_posterior(noisy_posterior(X, y_noisy, estimator, cv, random_state))


def rho_knn(X, y_noisy, k: int = 15) -> np.ndarray:
    """Fraction of the ``k`` nearest neighbours (the instance itself excluded) whose noisy label differs from
    the neighbourhood majority; ``(n,)`` in [0, 0.5].

    ``X`` may be the raw features or any embedding ``(n, d)``.

    Raises:
        ValueError: ``k`` not in ``[1, n - 1]``, bad ``X``/``y_noisy``.
    """
    X, y = check_features(X), as_binary_labels(y_noisy)
    check_same_length(len(X), len(y), "X, y_noisy")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < len(y):
        raise ValueError(f"k: expected an integer in [1, {len(y) - 1}], got {k!r}")
    _, idx = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    # the first k columns that are not the instance itself (it may sit anywhere among exact duplicates,
    # or be missing when k + 1 duplicates tie): a stable sort moves its column last
    others = np.argsort(idx == np.arange(len(y))[:, None], axis=1, kind="stable")[:, :k]
    neighbours = np.take_along_axis(idx, others, axis=1)
    frac = y[neighbours].mean(axis=1)
    return np.minimum(frac, 1.0 - frac)


def rho_annotators(Y_multi, a: float = 1.0) -> np.ndarray:
    """``rho^ = (minority votes + a) / (m + 2a)`` from ``m >= 2`` binary labels per instance, ``Y_multi`` ``(n, m)``.

    ``a`` is Laplace shrinkage towards 1/2 (default 1). Returns ``(n,)``, below 1/2.

    Raises:
        ValueError: not 2-D with at least 2 columns, labels not in {0, 1}, or ``a < 0``.
    """
    Y = np.asarray(Y_multi)
    if Y.ndim != 2 or Y.shape[1] < 2:
        raise ValueError(f"Y_multi: expected an (n, m) array of m >= 2 labels per instance, got shape {Y.shape}")
    if not np.all((Y == 0) | (Y == 1)):
        raise ValueError("Y_multi: expected binary labels in {0, 1}")
    if not a >= 0:
        raise ValueError(f"a: expected a shrinkage >= 0, got {a!r}")
    m, ones = Y.shape[1], Y.sum(axis=1)
    rho = (np.minimum(ones, m - ones) + a) / (m + 2.0 * a)
    return np.minimum(rho, np.nextafter(0.5, 0.0))


def majority_vote(Y_multi) -> np.ndarray:
    """The majority label ``(n,)`` of ``Y_multi`` ``(n, m)`` (ties go to 1)."""
    Y = np.asarray(Y_multi)
    if Y.ndim != 2:
        raise ValueError(f"Y_multi: expected an (n, m) array, got shape {Y.shape}")
    return (2 * Y.sum(axis=1) >= Y.shape[1]).astype(np.int64)


def rho_constant(X, y_noisy, value: float | None = None, random_state=None) -> np.ndarray:
    """The symmetric-noise baseline: one global flip rate for every instance, ``(n,)``.

    ``value``: the rate; default the mean of ``rho_posterior``.
    """
    n = len(as_binary_labels(y_noisy))
    if value is None:
        value = float(rho_posterior(X, y_noisy, random_state=random_state).mean())
    if not 0.0 <= value < 0.5:
        raise ValueError(f"value: expected a flip rate in [0, 0.5), got {value!r}")
    return np.full(n, float(value))


def resolve_rho(rho, X, y_noisy, random_state=None) -> np.ndarray | None:
    """What a learner's ``rho`` argument means, as an ``(n,)`` array (or None: no correction).

    ``rho``: None; ``"posterior"``, ``"knn"`` or ``"constant"`` (estimated here, cross-fitted);
    an array ``(n,)``; or a callable ``rho(X, y_noisy) -> (n,)``.
    """
    if rho is None:
        return None
    if isinstance(rho, str):
        if rho == "posterior":
            return rho_posterior(X, y_noisy, random_state=random_state)
        if rho == "knn":
            return rho_knn(X, y_noisy)
        if rho == "constant":
            return rho_constant(X, y_noisy, random_state=random_state)
        raise ValueError(f"rho: expected one of {METHODS}, an array, a callable or None, got {rho!r}")
    if isinstance(rho, Callable):
        return np.asarray(rho(X, y_noisy), dtype=np.float64)
    return np.asarray(rho, dtype=np.float64)
