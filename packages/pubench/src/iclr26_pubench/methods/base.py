"""The interface every PU learner implements, and the shared torch training machinery.

``PUEstimator.fit(X, s, prior=...)`` checks the input once; ``decision_function`` returns a real
score, positive when above ``threshold_``; ``predict_proba`` is sigma(score - threshold_).
``TorchPUEstimator`` adds the backbone, device handling, minibatching, per-epoch history and
model selection (``selection``: ``"proxy_acc"``, ``"proxy_auc"``, ``"lee_liu"`` (Lee-Liu r^2 / P(pred=1)),
``"oracle_f1"`` or ``"last"``).
"""
from __future__ import annotations

import copy
import time
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from torch import nn

from ..losses import negative_risk
from ..metrics import lee_liu_score, oracle_metrics, proxy_accuracy, proxy_auc
from .backbones import build_backbone

SELECTIONS = ("proxy_acc", "proxy_auc", "lee_liu", "oracle_f1", "last")
MIN_DELTA = 1e-4  # the benchmark's early-stopping tolerance on the monitored validation metric


class _EarlyStop(Exception):
    """Raised by ``_end_epoch`` when the monitored metric has not improved for ``patience`` epochs."""


def set_params_from(obj: Any, params: dict[str, Any]) -> None:
    """Stores constructor arguments verbatim (scikit-learn convention: no logic in ``__init__``)."""
    for k, v in params.items():
        if k not in ("self", "__class__"):
            setattr(obj, k, v)


def check_pu_labels(s, n: int | None = None) -> np.ndarray:
    """``s`` in {1, 0} or {1, -1} as int8 {1, 0}; needs at least one labeled and one unlabeled row."""
    s = np.asarray(s)
    if s.ndim != 1 or (n is not None and len(s) != n):
        raise ValueError(f"s: expected a 1-D array of {n} PU labels, got shape {s.shape}")
    values = set(np.unique(s).tolist())
    if not (values <= {0, 1} or values <= {1, -1}):
        raise ValueError(f"s: expected values in {{1, 0}} or {{1, -1}}, got {sorted(values)[:10]}")
    s = (s == 1).astype(np.int8)
    if s.sum() == 0 or s.sum() == len(s):
        raise ValueError(f"s: expected at least one labeled and one unlabeled row, got {int(s.sum())} labeled "
                         f"of {len(s)}")
    return s


def check_features(X, name: str = "X") -> np.ndarray:
    """``X`` as a finite float32 array of shape ``(n, ...)`` with n >= 1."""
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name}: expected an array of shape (n, d), got {type(X).__name__}")
    X = np.asarray(X)
    if X.ndim < 2 or len(X) == 0:
        raise ValueError(f"{name}: expected an array of shape (n, d) or (n, C, H, W), got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) and X.dtype != bool:
        raise TypeError(f"{name}: expected numbers, got dtype {X.dtype}")
    X = X.astype(np.float32)
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return X


class PUEstimator(ClassifierMixin, BaseEstimator):
    """Base class of the PU learners (scikit-learn compatible).

    Subclasses implement ``_fit(X, s, prior, val)`` and ``_scores(X)``; ``needs_prior`` says whether
    ``fit`` requires ``prior``.
    """

    needs_prior: ClassVar[bool] = True

    def fit(self, X, s, *, prior: float | None = None, X_val=None, s_val=None, y_val=None) -> PUEstimator:
        """Fits on PU data.

        Args:
            X: ``(n, d)`` or ``(n, C, H, W)`` finite features.
            s: ``(n,)`` PU labels in {1, 0} or {1, -1}; 1 = labeled positive.
            prior: pi_U, the fraction of positives among the unlabeled rows, in (0, 1).
            X_val, s_val, y_val: optional validation rows for model selection (PU labels; true
                labels only for ``selection="oracle_f1"``).

        Raises:
            ValueError, TypeError: malformed input, or a missing/out-of-range ``prior``.
        """
        X = check_features(X)
        s = check_pu_labels(s, len(X))
        prior = self._check_prior(prior)
        val = None
        if X_val is not None:
            X_val = check_features(X_val, "X_val")
            s_val = check_pu_labels(s_val, len(X_val))
            val = (X_val, s_val, None if y_val is None else np.asarray(y_val))
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = int(np.prod(X.shape[1:]))
        self.prior_ = prior
        self.threshold_ = 0.0
        self.history_: list[dict[str, float]] = []
        start, cpu_start = time.perf_counter(), time.process_time()
        self._fit(X, s, prior, val)
        self.fit_time_ = time.perf_counter() - start
        self.fit_cpu_time_ = time.process_time() - cpu_start  # all threads of this process: load-independent
        return self

    def _check_prior(self, prior):
        if prior is None:
            if self.needs_prior:
                raise ValueError(f"prior: {type(self).__name__} needs the class prior pi_U of the unlabeled rows; "
                                 "pass prior= or use BBEPU, which estimates it")
            return None
        if isinstance(prior, bool) or not isinstance(prior, (int, float, np.floating)) or not 0 < prior < 1:
            raise ValueError(f"prior: expected a number in (0, 1), got {prior!r}")
        return float(prior)

    def _check_fitted_X(self, X) -> np.ndarray:
        if not hasattr(self, "threshold_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(X, s) first")
        X = check_features(X)
        if int(np.prod(X.shape[1:])) != self.n_features_in_:
            raise ValueError(f"X: expected {self.n_features_in_} features per row, got shape {X.shape}")
        return X

    def decision_function(self, X) -> np.ndarray:
        """Real scores ``(n,)``; rows scoring above ``threshold_`` are predicted positive."""
        return self._scores(self._check_fitted_X(X))

    def predict_proba(self, X) -> np.ndarray:
        """``(n, 2)``; column 1 = sigma(score - threshold_), the estimate of P(y=1|x)."""
        p = 1.0 / (1.0 + np.exp(-(self.decision_function(X) - self.threshold_)))
        return np.stack([1 - p, p], axis=1)

    def predict(self, X) -> np.ndarray:
        """``(n,)`` int8 predictions in {0, 1}."""
        return (self.decision_function(X) > self.threshold_).astype(np.int8)


class IndexStream:
    """An endless stream of rows of ``index``: hands out the next ``k`` of a random order and reshuffles with
    ``gen`` whenever the order is used up (a repeated, shuffled data loader)."""

    def __init__(self, index: torch.Tensor, gen: torch.Generator):
        self.index, self.gen = index, gen
        self._order, self._cursor = self._shuffle(), 0

    def _shuffle(self) -> torch.Tensor:
        return self.index[torch.randperm(len(self.index), generator=self.gen).to(self.index.device)]

    def take(self, k: int) -> torch.Tensor:
        """The next ``k`` indices ``(k,)``."""
        parts = []
        while k > 0:
            if self._cursor >= len(self._order):
                self._order, self._cursor = self._shuffle(), 0
            part = self._order[self._cursor:self._cursor + k]
            parts.append(part)
            self._cursor += len(part)
            k -= len(part)
        return torch.cat(parts)


def minibatches(n: int, batch_size: int, gen: torch.Generator, device) -> list[torch.Tensor]:
    """A random partition of ``range(n)`` into index tensors of size ``batch_size`` (last one smaller)."""
    perm = torch.randperm(n, generator=gen).to(device)
    return list(perm.split(batch_size))


def cycled_batches(index: torch.Tensor, batch_size: int, gen: torch.Generator):
    """Endless minibatches of ``index`` (a data loader with shuffling, restarted when exhausted): each pass is a
    fresh random partition into batches of ``batch_size`` (last one smaller); batches of one row are skipped
    when ``index`` has more (batch normalisation needs two)."""
    while True:
        for batch in index[torch.randperm(len(index), generator=gen).to(index.device)].split(batch_size):
            if len(batch) > 1 or len(index) == 1:
                yield batch


class TorchPUEstimator(PUEstimator):
    """Shared training loop of the torch learners.

    The default ``_train`` runs Adam over shuffled minibatches for ``epochs`` epochs and calls the
    subclass's ``_batch_loss(model, x, s, idx, epoch)``; learners with their own schedule override
    ``_train`` and call ``_end_epoch`` once per epoch for the history and model selection.

    Early stopping (the benchmark's rule): with ``patience`` set and a validation set, training ends once the
    selection metric has not improved by more than ``MIN_DELTA`` for ``patience`` epochs (``stopped_epoch_``);
    the best checkpoint is then restored as usual.
    """

    risk_loss: ClassVar[str] = "sigmoid"

    def _fit(self, X, s, prior, val) -> None:
        from iclr26_shared.device import resolve_device

        if self.selection not in SELECTIONS:
            raise ValueError(f"selection: expected one of {list(SELECTIONS)}, got {self.selection!r}")
        if self.selection == "oracle_f1" and (val is None or val[2] is None):
            raise ValueError("selection: 'oracle_f1' needs X_val, s_val and y_val")
        self.device_ = resolve_device(self.device)
        seed = 0 if self.random_state is None else int(self.random_state)
        self._gen = torch.Generator().manual_seed(seed)
        self.selection_used_ = self.selection if val is not None else "last"
        self._best = (-np.inf, None)
        self._stale, self.stopped_epoch_ = 0, None
        devices = [self.device_] if self.device_.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            Xt = torch.as_tensor(X, device=self.device_)
            st = torch.as_tensor(s, device=self.device_)
            self._val = None if val is None else (torch.as_tensor(val[0], device=self.device_), *val[1:])
            self.model_ = self._make_model(X.shape[1:]).to(self.device_)
            try:
                self._train(Xt, st, prior)
            except _EarlyStop:
                self.stopped_epoch_ = self.history_[-1]["epoch"]
        if self._best[1] is not None and self.selection_used_ != "last":
            self.model_.load_state_dict(self._best[1])
        self._finish(Xt, st, prior)
        del self._val, self._gen

    def _make_model(self, shape) -> nn.Module:
        return build_backbone(self.backbone, shape)

    def _finish(self, X, s, prior) -> None:
        """Hook after training (e.g. PUSB's threshold); default: nothing."""

    def _optimizer(self, params, lr=None, weight_decay=None):
        # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
        return torch.optim.Adam(params, lr=self.lr if lr is None else lr, foreach=True,
                                weight_decay=self.weight_decay if weight_decay is None else weight_decay)

    def _train(self, X, s, prior) -> None:
        opt = self._optimizer(self.model_.parameters())
        for epoch in range(self.epochs):
            self.model_.train()
            self._start_epoch(epoch, X, s, prior)
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                loss = self._batch_loss(self.model_, X[idx], s[idx], idx, epoch, prior)
                opt.zero_grad()
                loss.backward()
                opt.step()
            self._end_epoch(epoch, X, s, prior)

    def _start_epoch(self, epoch: int, X, s, prior) -> None:
        """Hook at the start of each epoch of the default loop (pseudo-label refreshes); default: nothing."""

    def _batch_loss(self, model, x, s, idx, epoch, prior) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} must define _batch_loss or override _train")

    @torch.no_grad()
    def _logits(self, X: torch.Tensor, model: nn.Module | None = None) -> torch.Tensor:
        model = self.model_ if model is None else model
        was = model.training
        model.eval()
        out = torch.cat([model(X[i:i + 4096]).reshape(-1) for i in range(0, len(X), 4096)])
        model.train(was)
        return out

    def _end_epoch(self, epoch: int, X, s, prior, extra: dict | None = None, stop: bool = True) -> None:
        """Records the epoch (training risks, validation proxies) and keeps the best checkpoint; with ``stop``
        false (a warm-up stage) early stopping is suspended."""
        g = self._logits(X)
        rec: dict[str, float] = {"epoch": epoch}
        if prior is not None:
            rec["train_neg_risk"] = float(negative_risk(g, s, prior, self.risk_loss))
        rec.update(extra or {})
        if self._val is not None:
            Xv, sv, yv = self._val
            gv = self._logits(Xv).cpu().numpy()
            pred = (gv > self._current_threshold(g, s, prior)).astype(np.int8)
            p = self.prior_ if self.prior_ is not None else rec.get("prior_estimate", 0.5)
            rec["val_proxy_acc"] = proxy_accuracy(sv, pred, p) if 0 < sv.sum() < len(sv) else float("nan")
            rec["val_proxy_auc"] = proxy_auc(sv, gv) if 0 < sv.sum() < len(sv) else float("nan")
            rec["val_lee_liu"] = lee_liu_score(sv, pred) if 0 < sv.sum() < len(sv) else float("nan")
            if yv is not None:
                rec["val_f1"] = oracle_metrics(yv, gv, pred)["f1"]
            key = {"proxy_acc": "val_proxy_acc", "proxy_auc": "val_proxy_auc", "lee_liu": "val_lee_liu",
                   "oracle_f1": "val_f1"}.get(
                self.selection_used_)
            if key is not None:
                value = rec.get(key, -np.inf)
                self._stale = 0 if value > self._best[0] + MIN_DELTA else self._stale + 1
                if value > self._best[0]:
                    self._best = (value, copy.deepcopy(self.model_.state_dict()))
        self.history_.append(rec)
        if self.verbose:
            print(f"{type(self).__name__} epoch {epoch}: " + ", ".join(f"{k}={v:.4g}" for k, v in rec.items()))
        if stop and self.patience is not None and self._stale >= int(self.patience):
            raise _EarlyStop

    def _current_threshold(self, g, s, prior) -> float:
        return 0.0

    def _scores(self, X: np.ndarray) -> np.ndarray:
        return self._logits(torch.as_tensor(X, device=self.device_)).cpu().numpy().astype(np.float64)
