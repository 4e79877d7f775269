"""Bagging PU (Mordelet and Vert, Pattern Recognition Letters 2014): L against bootstrap samples of U."""
from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.tree import DecisionTreeClassifier

from .base import PUEstimator, set_params_from


class BaggingPU(PUEstimator):
    """``n_estimators`` copies of ``estimator`` (default a decision tree), each fit on all of L (label 1) against
    ``max_samples`` rows of U (default |L|) drawn with replacement (label 0). The score of a row is the mean
    predicted probability of the models; ``oob_score_`` holds, for each U row, the mean over the models it was
    not drawn for (NaN if none): the paper's out-of-bag scores. Predicted positive above ``threshold_`` = 0.5.
    """

    needs_prior = False

    def __init__(self, *, estimator=None, n_estimators=100, max_samples=None, bootstrap=True, random_state=None):
        set_params_from(self, locals())

    def _fit(self, X, s, prior, val) -> None:
        if int(self.n_estimators) < 1:
            raise ValueError(f"n_estimators: expected a positive integer, got {self.n_estimators!r}")
        rng = np.random.default_rng(self.random_state)
        flat = X.reshape(len(X), -1)
        lab, unl = np.flatnonzero(s == 1), np.flatnonzero(s == 0)
        k = len(lab) if self.max_samples is None else int(self.max_samples)
        if k < 1 or (not self.bootstrap and k > len(unl)):
            raise ValueError(f"max_samples: expected 1..{len(unl)} unlabeled rows per model, got {k}")
        base = DecisionTreeClassifier() if self.estimator is None else self.estimator
        self.estimators_ = []
        oob_sum, oob_n = np.zeros(len(unl)), np.zeros(len(unl))
        for _ in range(int(self.n_estimators)):
            pick = rng.integers(len(unl), size=k) if self.bootstrap else rng.choice(len(unl), k, replace=False)
            rows = np.concatenate([lab, unl[pick]])
            target = np.concatenate([np.ones(len(lab), np.int8), np.zeros(k, np.int8)])
            params = {"random_state": int(rng.integers(2**31))} if "random_state" in base.get_params() else {}
            model = clone(base).set_params(**params).fit(flat[rows], target)
            self.estimators_.append(model)
            out = np.ones(len(unl), bool)
            out[pick] = False
            if out.any():
                oob_sum[out] += model.predict_proba(flat[unl[out]])[:, 1]
                oob_n[out] += 1
        self.oob_score_ = np.where(oob_n > 0, oob_sum / np.maximum(oob_n, 1), np.nan)
        self.threshold_ = 0.5

    def _scores(self, X) -> np.ndarray:
        flat = X.reshape(len(X), -1)
        return np.mean([m.predict_proba(flat)[:, 1] for m in self.estimators_], axis=0)
