"""Baselines: probabilistic-classifier density-ratio estimation and the KSG k-NN MI estimator."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from .validation import check_positive_int, check_samples

MODELS = ("logistic", "mlp")


class ClassifierDRE:
    """``log r(x) = logit P(num | x) + log(n_den / n_num)`` from a classifier of numerator vs denominator.

    Args:
        model: ``"logistic"`` or ``"mlp"`` (scikit-learn ``MLPClassifier``, ReLU).
        quadratic_features: add all degree-2 monomials (logistic: then well specified for Gaussians).
        hidden: MLP widths; max_iter, early_stopping: MLP training budget.
        seed: ``random_state``.

    The MLP logit is computed from its weights (no saturation of ``predict_proba``).
    """

    def __init__(self, model: str = "logistic", quadratic_features: bool = False, hidden: Sequence[int] = (256, 256),
                 max_iter: int = 100, early_stopping: bool = True, seed: int = 0):
        self.model = model
        self.quadratic_features = quadratic_features
        self.hidden = hidden
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.seed = seed

    def fit(self, X_num, X_den) -> ClassifierDRE:
        """Fits on ``X_num (n, d)`` (label 1) and ``X_den (m, d)`` (label 0); returns ``self``.

        Raises:
            ValueError: unknown model, different feature dimensions, NaN/Inf, fewer than 2 samples.
        """
        if self.model not in MODELS:
            raise ValueError(f"model: expected one of {MODELS}, got {self.model!r}")
        num, den = check_samples("X_num", X_num), check_samples("X_den", X_den)
        if num.shape[1] != den.shape[1]:
            raise ValueError("X_num, X_den: expected the same number of features, "
                             f"got {num.shape[1]} and {den.shape[1]}")
        X = np.concatenate([num, den])
        y = np.r_[np.ones(len(num)), np.zeros(len(den))]
        steps = [PolynomialFeatures(2, include_bias=False)] if self.quadratic_features else []
        steps.append(StandardScaler())
        if self.model == "logistic":
            clf = LogisticRegression(C=1e4, max_iter=2000)
        else:
            clf = MLPClassifier(tuple(self.hidden), max_iter=check_positive_int("max_iter", self.max_iter),
                                early_stopping=self.early_stopping, random_state=self.seed)
        self.pipeline_ = make_pipeline(*steps, clf).fit(X, y)
        self.log_prior_ratio_ = math.log(len(den) / len(num))
        self.n_features_in_ = num.shape[1]
        return self

    def _logit(self, X: np.ndarray) -> np.ndarray:
        features = self.pipeline_[:-1].transform(X)
        clf = self.pipeline_[-1]
        if isinstance(clf, LogisticRegression):
            return clf.decision_function(features)
        h = features
        for W, b in zip(clf.coefs_[:-1], clf.intercepts_[:-1]):
            h = np.maximum(h @ W + b, 0.0)
        return (h @ clf.coefs_[-1] + clf.intercepts_[-1]).ravel()

    def log_ratio(self, X) -> np.ndarray:
        """``log p(x)/q(x)`` for ``X (n, d)``; returns ``(n,)``."""
        if not hasattr(self, "pipeline_"):
            raise RuntimeError("this ClassifierDRE is not fitted yet; call fit(X_num, X_den) first")
        X = check_samples("X", X, min_samples=1)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X: expected {self.n_features_in_} features (as in fit), got {X.shape[1]}")
        return self._logit(X) + self.log_prior_ratio_

    def kl_divergence(self, X_num) -> float:
        """``mean log r`` over numerator samples."""
        return float(np.mean(self.log_ratio(X_num)))


def ksg_mi(X, Y, k: int = 3) -> float:
    """Kraskov–Stögbauer–Grassberger estimator (algorithm 1) of ``I(X; Y)`` in nats.

    ``ψ(k) + ψ(n) − mean[ψ(n_x + 1) + ψ(n_y + 1)]`` with max-norm neighbourhoods; reliable for a few
    dimensions only (it is a reference for low-dimensional checks, not a high-dimensional estimator).

    Args:
        X: ``(n, dx)`` or ``(n,)``; Y: ``(n, dy)`` or ``(n,)``; k: neighbours (>= 1, < n).

    Raises:
        ValueError: different numbers of samples, ``k`` out of range, NaN/Inf.
    """
    X, Y = check_samples("X", X), check_samples("Y", Y)
    if len(X) != len(Y):
        raise ValueError(f"X, Y: expected the same number of samples, got {len(X)} and {len(Y)}")
    k = check_positive_int("k", k)
    n = len(X)
    if k >= n:
        raise ValueError(f"k: expected k < n = {n}, got {k}")
    joint = np.concatenate([X, Y], axis=1)
    radius = cKDTree(joint).query(joint, k=k + 1, p=np.inf)[0][:, -1]
    shrink = np.nextafter(radius, 0)
    n_x = cKDTree(X).query_ball_point(X, shrink, p=np.inf, return_length=True) - 1
    n_y = cKDTree(Y).query_ball_point(Y, shrink, p=np.inf, return_length=True) - 1
    return float(digamma(k) + digamma(n) - np.mean(digamma(n_x + 1) + digamma(n_y + 1)))
