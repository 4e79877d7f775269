"""Elkan-Noto (KDD 2008): a calibrated labeled-vs-unlabeled classifier g(x) = P(s=1|x) divided by c = P(s=1|y=1)."""
from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from .base import PUEstimator, set_params_from


class ElkanNoto(PUEstimator):
    """Fits ``estimator`` (default logistic regression) on s against x, keeping ``hold_out_ratio`` of the labeled
    and of the unlabeled rows out (the paper's validation set); c-hat = mean g(x) over the held-out labeled rows
    (the paper's estimator e1). The score is
    P(y=1|x) = g(x) / c-hat, predicted positive above ``threshold_`` = 0.5. Needs no prior; ``c_`` is c-hat.

    The identity P(y=1|x) = P(s=1|x)/c holds for one-sample (``scheme="single"``) SCAR data. Under the
    case-control scheme with L inside U the labeled share of the positives is c / (1 + c), which c-hat then
    estimates; the score is the posterior of the pooled sample.
    """

    needs_prior = False

    def __init__(self, *, estimator=None, hold_out_ratio=0.1, random_state=None):
        set_params_from(self, locals())

    def _fit(self, X, s, prior, val) -> None:
        if not 0 < self.hold_out_ratio < 1:
            raise ValueError(f"hold_out_ratio: expected a fraction in (0, 1), got {self.hold_out_ratio!r}")
        rng = np.random.default_rng(self.random_state)
        lab, unl = np.flatnonzero(s == 1), np.flatnonzero(s == 0)
        n_hold = max(1, int(round(self.hold_out_ratio * len(lab))))
        if n_hold >= len(lab):
            raise ValueError(f"s: Elkan-Noto needs at least 2 labeled rows to hold some out, got {len(lab)}")
        hold = rng.choice(lab, n_hold, replace=False)
        # the same share of U leaves the fit too, so the labeled share of the fitted rows stays that of the data
        unl_out = rng.choice(unl, int(round(self.hold_out_ratio * len(unl))), replace=False)
        keep = np.setdiff1d(np.arange(len(s)), np.concatenate([hold, unl_out]))
        flat = X.reshape(len(X), -1)
        base = LogisticRegression(max_iter=1000) if self.estimator is None else self.estimator
        self.estimator_ = clone(base).fit(flat[keep], s[keep])
        self.c_ = float(self.estimator_.predict_proba(flat[hold])[:, 1].mean())
        self.threshold_ = 0.5

    def _scores(self, X) -> np.ndarray:
        return self.estimator_.predict_proba(X.reshape(len(X), -1))[:, 1] / self.c_
