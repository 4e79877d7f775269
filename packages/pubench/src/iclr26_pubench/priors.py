"""Class-prior estimation by Best Bin Estimation (BBE, Garg et al. 2021)."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split


@dataclass(frozen=True)
class PriorEstimate:
    """An estimated mixture proportion: ``value`` (clipped to [0.01, 0.99]), the chosen ``threshold``
    on the scores, and the ``upper_bound`` that was minimised there."""

    value: float
    threshold: float
    upper_bound: float


def _check_scores(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: expected a non-empty array of finite scores, got size {x.size}")
    return x


def bbe_estimate(scores_p, scores_u, delta: float = 0.1, gamma: float = 0.01) -> PriorEstimate:
    """Best Bin Estimation of alpha = P(y=1) in the unlabeled sample.

    For every threshold t taken at a sorted unlabeled score: q_p(t) and q_u(t) are the fractions of
    positive and unlabeled scores >= t, alpha(t) = q_u/q_p, and
    UB(t) = alpha(t) + (1 + gamma)/q_p(t) * (sqrt(ln(4/delta)/(2 n_p)) + sqrt(ln(4/delta)/(2 n_u))).
    The estimate is alpha(t*) at t* = argmin UB, clipped to [0.01, 0.99].

    Args:
        scores_p: ``(n_p,)`` P-vs-U scores of held-out labeled positives (higher = more positive).
        scores_u: ``(n_u,)`` scores of held-out unlabeled rows.
    """
    sp, su = np.sort(_check_scores("scores_p", scores_p)), np.sort(_check_scores("scores_u", scores_u))
    if not 0 < delta < 1:
        raise ValueError(f"delta: expected a number in (0, 1), got {delta!r}")
    n_p, n_u = len(sp), len(su)
    t = np.unique(su)
    q_p = (n_p - np.searchsorted(sp, t, side="left")) / n_p
    q_u = (n_u - np.searchsorted(su, t, side="left")) / n_u
    ok = q_p > 0
    t, q_p, q_u = t[ok], q_p[ok], q_u[ok]
    eps = math.sqrt(math.log(4 / delta) / (2 * n_p)) + math.sqrt(math.log(4 / delta) / (2 * n_u))
    alpha = q_u / q_p
    ub = alpha + (1 + gamma) / q_p * eps
    i = int(np.argmin(ub))
    return PriorEstimate(float(np.clip(alpha[i], 0.01, 0.99)), float(t[i]), float(ub[i]))


def estimate_prior_bbe(X, s, holdout: float = 0.5, random_state: int | None = 0, delta: float = 0.1,
                       gamma: float = 0.01) -> PriorEstimate:
    """Two-stage BBE: a logistic P-vs-U classifier fitted on part of the rows scores the held-out part.

    Args:
        X: ``(n, ...)`` rows; s: ``(n,)`` 1 = labeled, 0 = unlabeled; holdout: share of rows held out.
    """
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    s = np.asarray(s)
    fit, held = train_test_split(np.arange(len(s)), test_size=holdout, stratify=s, random_state=random_state)
    clf = LogisticRegression(max_iter=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X[fit], s[fit])
    score = clf.decision_function(X[held])
    return bbe_estimate(score[s[held] == 1], score[s[held] == 0], delta, gamma)
