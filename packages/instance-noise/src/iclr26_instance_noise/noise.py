"""Instance-only dependent label noise generators: ``P(y~ != y | x, y) = rho(x)``.

The flip probability depends on the instance and not on its label, one number per instance.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.stats import truncnorm
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from .checks import RHO_MAX, as_binary_labels, check_features, check_rho, check_rho_max, check_same_length
from .losses import sigmoid

KINDS = ("region", "margin", "random")


def flip_labels(y: np.ndarray, rho: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Flips each label of ``y`` ``(n,)`` independently with probability ``rho`` ``(n,)``; returns ``(n,)`` int64."""
    return np.where(rng.random(len(y)) < rho, 1 - y, y).astype(np.int64)


def region_rho(X: np.ndarray, w: np.ndarray, v: np.ndarray, rho_max: float = RHO_MAX, shift: float = 0.0) -> np.ndarray:
    """``rho(x) = rho_max * sigma(3 v.x + 1.5 w.x + shift)``, shape ``(n,)``.

    Heavier noise on one side of the boundary ``w.x = 0`` and in one half-space of ``v``.
    """
    return rho_max * sigmoid(3.0 * (X @ v) + 1.5 * (X @ w) + shift)


def _unit_directions(d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random unit vector ``w`` and a unit ``v`` orthogonal to it (``v`` is only normalised when d == 1)."""
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    v = rng.normal(size=d)
    if d > 1:
        v -= (v @ w) * w
    return w, v / np.linalg.norm(v)


def _match_rate(make_rho, rate: float, lo: float, hi: float) -> np.ndarray:
    """``make_rho(s)`` with the scalar ``s`` in ``[lo, hi]`` chosen so that its mean equals ``rate``."""
    f_lo, f_hi = make_rho(lo).mean() - rate, make_rho(hi).mean() - rate
    if f_lo * f_hi > 0:
        reachable = sorted((f_lo + rate, f_hi + rate))
        raise ValueError(f"rate: expected a mean flip rate in [{reachable[0]:.3f}, {reachable[1]:.3f}] "
                         f"for this noise kind and rho_max, got {rate}")
    return make_rho(brentq(lambda s: make_rho(s).mean() - rate, lo, hi, xtol=1e-10))


def instance_only_flip(X, y, kind: str = "region", rho_max: float = RHO_MAX, rate: float | None = None,
                       random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Draws instance-only dependent label noise.

    Args:
        X: features ``(n, d)`` (standardised internally).
        y: clean binary labels ``(n,)``.
        kind: ``"region"``: ``rho = rho_max * sigma(3 v.z + 1.5 w.z)`` with random orthogonal unit
            directions ``w, v`` in the standardised feature space ``z``;
            ``"margin"``: ``rho = rho_max * exp(-|m(x)| / median|m|)`` with ``m`` the margin of a
            5-fold cross-fitted clean logistic model (hard instances are noisier);
            ``"random"``: ``rho_i ~ TruncNormal(rate, 0.1^2)`` on ``[0, rho_max]``, independent of ``x``
            (the binary IDN generator of Xia et al. 2020; rho cannot be estimated from ``x``).
        rho_max: the largest flip probability, in [0, 0.5).
        rate: the mean flip probability. ``"random"``: the truncated normal's centre (default 0.2).
            ``"region"``/``"margin"``: when given, a shift of the logit (region) or a scale of the
            margin (margin) is solved so that ``mean(rho) == rate``.
        random_state: seed or ``numpy.random.Generator``.

    Returns:
        ``(y_noisy, rho)``: noisy labels ``(n,)`` int64 and the true flip probabilities ``(n,)``.

    Raises:
        ValueError: bad ``X``/``y``/``kind``/``rho_max``, or a ``rate`` the kind cannot reach.
    """
    X = check_features(X)
    y = as_binary_labels(y, "y")
    check_same_length(len(X), len(y), "X, y")
    rho_max = check_rho_max(rho_max)
    if rho_max is None:
        raise ValueError("rho_max: expected a number in [0, 0.5), got None")
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
    if rate is not None and not 0.0 <= rate <= rho_max:
        raise ValueError(f"rate: expected a mean flip rate in [0, rho_max={rho_max}], got {rate}")
    rng = np.random.default_rng(random_state)
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    if kind == "region":
        w, v = _unit_directions(Z.shape[1], rng)
        rho = region_rho(Z, w, v, rho_max) if rate is None else _match_rate(
            lambda s: region_rho(Z, w, v, rho_max, s), rate, -40.0, 40.0)
    elif kind == "margin":
        folds = StratifiedKFold(5, shuffle=True, random_state=int(rng.integers(2**31)))
        m = np.abs(cross_val_predict(LogisticRegression(max_iter=1000), Z, y, cv=folds, method="decision_function"))
        scale = max(float(np.median(m)), 1e-12)
        rho = rho_max * np.exp(-m / scale) if rate is None else _match_rate(
            lambda s: rho_max * np.exp(-m / (scale * np.exp(s))), rate, -30.0, 30.0)
    else:
        centre = 0.2 if rate is None else rate
        a, b = (0.0 - centre) / 0.1, (rho_max - centre) / 0.1
        rho = truncnorm.rvs(a, b, loc=centre, scale=0.1, size=len(y), random_state=rng)
    rho = check_rho(rho, len(y), rho_max=None)
    return flip_labels(y, rho, rng), rho
