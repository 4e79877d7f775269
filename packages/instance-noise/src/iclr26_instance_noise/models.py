"""Learners trained on the corrected loss, with the scikit-learn estimator API.

All three share ``fit(X, y_noisy, rho=None)``, ``predict_proba``, ``predict`` and
``decision_function``; the output is the *clean* posterior ``P(y = 1 | x)``. ``rho`` (the
constructor argument) is ``"posterior"`` (cross-fitted estimate, the default), ``"knn"``,
``"constant"``, an array ``(n,)``, a callable ``rho(X, y_noisy)``, or None for plain
cross-entropy (the "noisy" baseline goes through the same code); an array passed to
``fit(..., rho=...)`` overrides it. ``mode="none"`` also means plain cross-entropy.

The backward loss is unbounded below when its target ``y' = (y~ - rho)/(1 - 2 rho)`` leaves
[0, 1]: a flexible model can push such logits to infinity. Hence L2 (linear), early stopping
on a held-out corrected loss plus leaf L2, ``min_samples_leaf`` and logit clipping (GBM), and
weight decay plus early stopping (MLP).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.tree import DecisionTreeRegressor

from .checks import (
    RHO_MAX,
    as_binary_labels,
    check_features,
    check_folds,
    check_mode,
    check_rho,
    check_same_length,
)
from .estimate import resolve_rho
from .losses import backward_target, raw_grad_hess, sigmoid

LOGIT_CLIP = 20.0
LAM_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def corrected_ce(t: np.ndarray, y: np.ndarray, rho: np.ndarray, mode: str) -> float:
    """Mean corrected CE of logits ``t`` ``(n,)`` (no checks; ``rho`` zeros gives plain CE)."""
    if mode == "backward":
        return float(np.mean(np.logaddexp(0.0, t) - backward_target(y, rho) * t))
    p_noisy = rho + (1.0 - 2.0 * rho) * sigmoid(t)
    return float(-np.mean(y * np.log(p_noisy) + (1.0 - y) * np.log1p(-p_noisy)))


class _CorrectedClassifier(ClassifierMixin, BaseEstimator):
    """Shared input handling and prediction of the corrected learners."""

    def _fit_inputs(self, X, y_noisy, rho):
        """Checked ``X`` ``(n, d)``, float labels ``(n,)``, clipped ``rho`` ``(n,)`` and the effective mode."""
        X = check_features(X)
        y = as_binary_labels(y_noisy)
        check_same_length(len(X), len(y), "X, y_noisy")
        mode = check_mode(self.mode, allow_none=True)
        raw = resolve_rho(self.rho if rho is None else rho, X, y, self.random_state)
        if mode == "none" or raw is None:
            self.rho_ = None
            return X, y.astype(np.float64), np.zeros(len(y)), "backward"
        self.rho_ = check_rho(raw, len(y), self.rho_max)
        return X, y.astype(np.float64), self.rho_, mode

    def predict_proba(self, X) -> np.ndarray:
        """``(n, 2)``: the clean posteriors ``[P(y=0|x), P(y=1|x)]``."""
        p = sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """``(n,)`` labels in {0, 1}."""
        return (self.decision_function(X) > 0).astype(np.int64)

    def _check_predict_X(self, X) -> np.ndarray:
        if not hasattr(self, "n_features_in_"):
            raise ValueError(f"{type(self).__name__}: call fit before predicting")
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X: expected {self.n_features_in_} features, got {X.shape[1]}")
        return X


def _split(y: np.ndarray, fraction: float, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (train, validation) indices; ``fraction`` of the instances are held out."""
    idx = np.arange(len(y))
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_fraction: expected a number in (0, 1) or None, got {fraction!r}")
    return train_test_split(idx, test_size=fraction, stratify=y, random_state=random_state)


class CorrectedLogisticRegression(_CorrectedClassifier):
    """L2-regularised logistic regression on the corrected loss, solved with L-BFGS.

    Objective: ``mean_i l~(w.x_i + b, y~_i; rho_i) + lam/2 ||w||^2`` (bias unpenalised).
    Both modes are smooth; backward is convex.

    Args:
        mode: ``"backward"`` (default, unbiased), ``"forward"`` or ``"none"``.
        lam: L2 strength, > 0.
        rho: see the module docstring; default ``"posterior"``.
        rho_max: clip level for ``rho``, in [0, 0.5).
        max_iter, tol: L-BFGS iteration cap and gradient tolerance.
        random_state: seed of the ``rho`` estimator's folds.

    Attributes:
        coef_ ``(d,)``, intercept_ (float), rho_ ``(n,)`` or None, n_iter_, classes_.
    """

    def __init__(self, mode: str = "backward", lam: float = 1e-2, rho="posterior", rho_max: float = RHO_MAX,
                 max_iter: int = 10000, tol: float = 1e-10, random_state=None):
        self.mode = mode
        self.lam = lam
        self.rho = rho
        self.rho_max = rho_max
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y_noisy, rho=None):
        """Fits on noisy labels; ``rho`` ``(n,)`` overrides the constructor's. Returns ``self``."""
        if not self.lam > 0:
            raise ValueError(f"lam: expected an L2 strength > 0, got {self.lam!r}")
        X, y, r, mode = self._fit_inputs(X, y_noisy, rho)
        n, d = X.shape
        lam = float(self.lam)

        def objective(theta):
            w, b = theta[:d], theta[d]
            t = X @ w + b
            g, _ = raw_grad_hess(t, y, r, mode)
            value = corrected_ce(t, y, r, mode) + 0.5 * lam * (w @ w)
            return value, np.append(X.T @ g / n + lam * w, g.mean())

        res = minimize(objective, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                       options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": self.tol * 1e-3})
        self.coef_, self.intercept_ = res.x[:d], float(res.x[d])
        self.n_iter_, self.classes_, self.n_features_in_ = int(res.nit), np.array([0, 1]), d
        return self

    def decision_function(self, X) -> np.ndarray:
        """Logits ``(n,)``."""
        return self._check_predict_X(X) @ self.coef_ + self.intercept_


def newton_leaves(tree: DecisionTreeRegressor, leaves: np.ndarray, g: np.ndarray, h: np.ndarray, reg_lambda: float,
                  max_delta_step: float | None) -> np.ndarray:
    """Sets every leaf of a fitted ``tree`` to ``-G/(H + reg_lambda)``, clipped to +-``max_delta_step``.

    ``leaves`` ``(n,)``: the leaf of each training row (``tree.apply``); ``G``, ``H``: the sums of the
    gradients ``g`` ``(n,)`` and curvatures ``h`` ``(n,)`` of the rows in the leaf. Returns the new
    value of each row's leaf, ``(n,)``.
    """
    size = tree.tree_.node_count
    G, H = np.bincount(leaves, weights=g, minlength=size), np.bincount(leaves, weights=h, minlength=size)
    used = np.unique(leaves)
    step = -G[used] / np.maximum(H[used] + reg_lambda, 1e-12)
    if max_delta_step is not None:
        step = np.clip(step, -max_delta_step, max_delta_step)
    tree.tree_.value[used, 0, 0] = step
    return tree.tree_.value[leaves, 0, 0]


def cross_validated_lam(X, y_noisy, rho=None, mode: str = "backward", lams=LAM_GRID, cv: int = 5,
                        random_state=None) -> tuple[float, np.ndarray]:
    """The L2 strength of ``CorrectedLogisticRegression`` chosen by ``cv``-fold cross-validation.

    Each ``lam`` in ``lams`` is scored by the mean held-out *corrected* loss of the same arm: the
    ``mode`` loss with the held-out instances' ``rho`` (plain CE when ``rho`` is None or
    ``mode="none"``), which estimates the clean risk (backward: unbiased) or the noisy likelihood
    of the corrected model (forward) without any clean label.

    Args:
        X ``(n, d)``, y_noisy ``(n,)``, rho ``(n,)`` or None, mode: as ``CorrectedLogisticRegression.fit``.
        lams: candidate strengths, each > 0. cv: folds, >= 2. random_state: fold shuffling.

    Returns:
        ``(best lam, mean held-out loss per lam (len(lams),))``.
    """
    X, y = check_features(X), as_binary_labels(y_noisy)
    check_same_length(len(X), len(y), "X, y_noisy")
    mode = check_mode(mode, allow_none=True)
    cv = check_folds(cv)
    r = np.zeros(len(y)) if rho is None or mode == "none" else check_rho(rho, len(y))
    score_mode = "backward" if rho is None or mode == "none" else mode
    losses = np.zeros(len(lams))
    for train, val in StratifiedKFold(cv, shuffle=True, random_state=random_state).split(X, y):
        for j, lam in enumerate(lams):
            model = CorrectedLogisticRegression(mode=score_mode, lam=lam, rho=None, rho_max=None)
            model.fit(X[train], y[train], rho=r[train])
            losses[j] += corrected_ce(X[val] @ model.coef_ + model.intercept_, y[val], r[val], score_mode) / cv
    return float(lams[int(np.argmin(losses))]), losses


class CorrectedGradientBoosting(_CorrectedClassifier):
    """Newton boosting of regression trees on the corrected loss, with regularised leaves.

    Each round grows a ``DecisionTreeRegressor`` on ``-g/h`` with sample weight ``h`` (``g, h`` from
    ``losses.grad_hess``; the Fisher curvature in forward mode), which picks the splits of the
    Newton gain ``G_L^2/H_L + G_R^2/H_R``. Every leaf value is then replaced by the regularised
    Newton step of XGBoost and LightGBM, ``-G/(H + reg_lambda)`` over the leaf's instances, clipped
    to ``[-max_delta_step, max_delta_step]`` when that is given; the round adds
    ``learning_rate * tree`` and logits are clipped to +-20. The leaf L2 matters for the forward
    correction: its Fisher curvature vanishes as ``p`` saturates, and the unregularised step
    ``-G/H`` then explodes.

    With ``validation_fraction`` (default 0.2) a stratified part of the noisy training data is held
    out and the number of rounds is the one minimising the ``stopping`` loss on it:
    ``"forward"`` (default), the forward-corrected CE, i.e. the likelihood of the noisy labels
    under ``p~ = rho + (1 - 2 rho) p`` (bounded, a proper score of the noisy posterior), or
    ``"backward"``, the backward-corrected CE, unbiased for the clean risk but with targets up to
    +-4.5 and a large variance on small splits. Without correction both are plain noisy CE. With
    ``stopping_cv`` (cross-fitted stopping) the round minimises the ``stopping`` loss averaged over
    ``stopping_cv`` stratified folds, each held out from a booster grown on the others, and the
    model is then refitted on all the data for that many rounds (``stopping_cv + 1`` boosters).

    Args:
        mode: ``"forward"`` (default: stable), ``"backward"`` or ``"none"``.
        n_estimators, learning_rate, max_depth, min_samples_leaf: the booster.
        reg_lambda: leaf L2 strength, >= 0 (default 1, XGBoost's).
        max_delta_step: largest absolute leaf value before the learning rate, > 0, or None (no limit).
        validation_fraction: held-out share for early stopping, or None for all rounds.
        stopping: the held-out loss that picks the round, ``"forward"`` or ``"backward"``.
        stopping_cv: folds (>= 2) of cross-fitted stopping, or None (default: one hold-out).
        rho, rho_max, random_state: as ``CorrectedLogisticRegression``.

    Attributes:
        estimators_ (trees kept), init_ (initial logit), n_estimators_, validation_loss_ ``(rounds + 1,)``, rho_.
    """

    def __init__(self, mode: str = "forward", n_estimators: int = 300, learning_rate: float = 0.05,
                 max_depth: int = 3, min_samples_leaf: int = 20, reg_lambda: float = 1.0,
                 max_delta_step: float | None = None, validation_fraction: float | None = 0.2,
                 stopping: str = "forward", stopping_cv: int | None = None, rho="posterior",
                 rho_max: float = RHO_MAX, random_state=None):
        self.mode = mode
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.reg_lambda = reg_lambda
        self.max_delta_step = max_delta_step
        self.validation_fraction = validation_fraction
        self.stopping = stopping
        self.stopping_cv = stopping_cv
        self.rho = rho
        self.rho_max = rho_max
        self.random_state = random_state

    def fit(self, X, y_noisy, rho=None):
        """Fits on noisy labels; ``rho`` ``(n,)`` overrides the constructor's. Returns ``self``."""
        if not (isinstance(self.n_estimators, (int, np.integer)) and self.n_estimators >= 1):
            raise ValueError(f"n_estimators: expected an integer >= 1, got {self.n_estimators!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate: expected > 0, got {self.learning_rate!r}")
        if not self.reg_lambda >= 0:
            raise ValueError(f"reg_lambda: expected a leaf L2 strength >= 0, got {self.reg_lambda!r}")
        if self.max_delta_step is not None and not self.max_delta_step > 0:
            raise ValueError(f"max_delta_step: expected a number > 0 or None, got {self.max_delta_step!r}")
        if self.stopping not in ("forward", "backward"):
            raise ValueError(f"stopping: expected 'forward' or 'backward', got {self.stopping!r}")
        cv = self.stopping_cv
        if cv is not None and (isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2):
            raise ValueError(f"stopping_cv: expected an integer number of folds >= 2 or None, got {cv!r}")
        X, y, r, mode = self._fit_inputs(X, y_noisy, rho)
        everything, none = np.arange(len(y)), np.arange(0)
        if cv is not None:  # the mean held-out loss over the folds picks the round; then a refit on all rows
            folds = StratifiedKFold(int(cv), shuffle=True, random_state=self.random_state).split(X, y)
            val_loss = sum(len(val) * self._boost(X, y, r, mode, train, val, self.n_estimators)[2]
                           for train, val in folds) / len(y)
            best = int(np.argmin(val_loss))
            self.init_, trees, _ = self._boost(X, y, r, mode, everything, none, best)
        else:
            train, val = ((everything, none) if self.validation_fraction is None
                          else _split(y, self.validation_fraction, self.random_state))
            self.init_, trees, val_loss = self._boost(X, y, r, mode, train, val, self.n_estimators)
            best = int(np.argmin(val_loss)) if len(val) else len(trees)
        self.validation_loss_ = np.asarray(val_loss)
        self.estimators_, self.n_estimators_ = trees[:best], best
        self.classes_, self.n_features_in_ = np.array([0, 1]), X.shape[1]
        return self

    def _boost(self, X, y, r, mode, train, val, rounds):
        """``rounds`` rounds on the instances ``train``; returns the initial logit, the trees and the
        ``stopping`` loss on the instances ``val`` after each round, ``(rounds + 1,)`` (empty without ``val``)."""
        target = np.clip(backward_target(y[train], r[train]).mean(), 1e-3, 1 - 1e-3)
        init = float(np.log(target / (1.0 - target)))
        f_train, f_val = np.full(len(train), init), np.full(len(val), init)
        val_loss = [corrected_ce(f_val, y[val], r[val], self.stopping)] if len(val) else []
        rng = np.random.default_rng(self.random_state)
        X_train, X_val = (np.ascontiguousarray(X[i], dtype=np.float32) for i in (train, val))  # the trees' dtype
        trees = []
        for _ in range(rounds):
            g, h = raw_grad_hess(f_train, y[train], r[train], mode)
            h = np.maximum(h, 1e-12)
            tree = DecisionTreeRegressor(max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
                                         random_state=int(rng.integers(2**31)))
            tree.fit(X_train, -g / h, sample_weight=h, check_input=False)
            step = newton_leaves(tree, tree.tree_.apply(X_train), g, h, self.reg_lambda, self.max_delta_step)
            trees.append(tree)
            f_train = np.clip(f_train + self.learning_rate * step, -LOGIT_CLIP, LOGIT_CLIP)
            if len(val):
                f_val = np.clip(f_val + self.learning_rate * tree.tree_.predict(X_val)[:, 0], -LOGIT_CLIP, LOGIT_CLIP)
                val_loss.append(corrected_ce(f_val, y[val], r[val], self.stopping))
        return init, trees, np.asarray(val_loss)

    def decision_function(self, X) -> np.ndarray:
        """Logits ``(n,)`` (clipped to +-20 after every round, as in training)."""
        X = self._check_predict_X(X)
        f = np.full(len(X), self.init_)
        for tree in self.estimators_:
            f = np.clip(f + self.learning_rate * tree.predict(X), -LOGIT_CLIP, LOGIT_CLIP)
        return f


class CorrectedMLP(_CorrectedClassifier):
    """A torch multilayer perceptron trained with ``InstanceCorrectedBCE`` (Adam, weight decay, early stopping).

    Inputs are standardised with the training mean and deviation. With ``validation_fraction``
    (default 0.2) the weights of the epoch with the lowest held-out backward-corrected CE are kept.

    Args:
        hidden: hidden layer widths.
        mode: ``"forward"`` (default: the spec's prototype found backward with estimated ``rho``
            harmful), ``"backward"`` or ``"none"``.
        epochs, lr, weight_decay, batch_size: Adam training.
        validation_fraction: held-out share for early stopping, or None.
        rho, rho_max, random_state: as ``CorrectedLogisticRegression``.
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    """

    def __init__(self, hidden=(128,), mode: str = "forward", epochs: int = 100, lr: float = 1e-3,
                 weight_decay: float = 1e-4, batch_size: int = 128, validation_fraction: float | None = 0.2,
                 rho="posterior", rho_max: float = RHO_MAX, random_state=None, device: str = "cpu"):
        self.hidden = hidden
        self.mode = mode
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.rho = rho
        self.rho_max = rho_max
        self.random_state = random_state
        self.device = device

    def fit(self, X, y_noisy, rho=None):
        """Fits on noisy labels; ``rho`` ``(n,)`` overrides the constructor's. Returns ``self``."""
        import torch
        from iclr26_shared.device import resolve_device

        from .training import train_corrected

        X, y, r, mode = self._fit_inputs(X, y_noisy, rho)
        dev = resolve_device(self.device)
        seed = 0 if self.random_state is None else int(self.random_state)
        torch.manual_seed(seed)
        self.mean_, self.scale_ = X.mean(axis=0), np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        if self.validation_fraction is None:
            train, val = np.arange(len(y)), np.arange(0)
        else:
            train, val = _split(y, self.validation_fraction, self.random_state)
        layers, width = [], X.shape[1]
        for h in self.hidden:
            layers += [torch.nn.Linear(width, int(h)), torch.nn.ReLU()]
            width = int(h)
        net = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1)).to(dev)

        def tensor(a):
            return torch.as_tensor(a, dtype=torch.float32, device=dev)

        net, history = train_corrected(net, tensor((X - self.mean_) / self.scale_), tensor(y), tensor(r), mode,
                                       train, val, self.epochs, self.lr, self.weight_decay, self.batch_size, seed)
        self.net_, self.device_, self.validation_loss_ = net, dev, np.asarray(history)
        self.classes_, self.n_features_in_ = np.array([0, 1]), X.shape[1]
        return self

    def decision_function(self, X) -> np.ndarray:
        """Logits ``(n,)``."""
        import torch

        X = self._check_predict_X(X)
        Z = torch.as_tensor((X - self.mean_) / self.scale_, dtype=torch.float32, device=self.device_)
        with torch.no_grad():
            return self.net_(Z).squeeze(1).double().cpu().numpy()
