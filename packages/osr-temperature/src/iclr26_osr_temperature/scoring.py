"""Open-set scores (higher = known): max logit, max softmax, energy, and kNN in feature space."""
from __future__ import annotations

import numbers

import numpy as np
import torch
from sklearn.neighbors import NearestNeighbors

__all__ = ["max_logit", "max_softmax", "energy", "KNNScorer"]


def _logits(logits):
    if isinstance(logits, torch.Tensor):
        if logits.dim() != 2 or logits.shape[1] == 0:
            raise ValueError(f"logits: expected shape (n, n_classes), got {tuple(logits.shape)}")
        return logits
    arr = np.asarray(logits, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"logits: expected shape (n, n_classes), got {arr.shape}")
    return torch.from_numpy(arr)


def _like(result: torch.Tensor, logits):
    return result if isinstance(logits, torch.Tensor) else result.numpy()


def max_logit(logits):
    """MLS (Vaze et al. 2022): ``max_k f_k(x)``; ``(n, C)`` -> ``(n,)``, tensor in tensor out, else numpy."""
    return _like(_logits(logits).max(dim=1).values, logits)


def max_softmax(logits):
    """MSP: ``max_k softmax(f(x))_k``; ``(n, C)`` -> ``(n,)``."""
    return _like(torch.softmax(_logits(logits), dim=1).max(dim=1).values, logits)


def energy(logits, temperature: float = 1.0):
    """Negative free energy ``T * logsumexp(f(x) / T)``; ``(n, C)`` -> ``(n,)``."""
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or temperature <= 0:
        raise ValueError(f"temperature: expected a number > 0, got {temperature!r}")
    return _like(temperature * torch.logsumexp(_logits(logits) / temperature, dim=1), logits)


def _features(name: str, x, dim: int | None = None) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or (dim is not None and arr.shape[1] != dim):
        want = f"(n, {dim})" if dim is not None else "(n, d) with n > 0"
        raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got NaN/inf")
    return arr


class KNNScorer:
    """kNN open-set scoring in a (normalised) feature space, as used for SupCon models.

    ``method="dist"``: ``score = exp(-max_j dist_j)`` over the ``k`` nearest training features (Euclidean);
    ``method="prob"``: ``score`` = the largest class frequency among them. Predictions are the majority
    class of the ``k`` neighbours (ties to the smallest label). Uses sklearn's brute-force search.

    Attributes (after ``fit``):
        nn_: the fitted ``NearestNeighbors``; labels_: ``(n_train,)`` labels; classes_: sorted labels.
    """

    def __init__(self, k: int = 100, method: str = "dist"):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k <= 0:
            raise ValueError(f"k: expected an integer > 0, got {k!r}")
        if method not in ("dist", "prob"):
            raise ValueError(f"method: expected 'dist' or 'prob', got {method!r}")
        self.k = int(k)
        self.method = method

    def fit(self, train_feats, train_y) -> KNNScorer:
        """Stores ``train_feats`` ``(n, d)`` and ``train_y`` ``(n,)``; returns ``self``.

        Raises:
            ValueError: shapes disagree, or ``k`` exceeds the number of training samples.
        """
        feats = _features("train_feats", train_feats)
        y = np.asarray(train_y.detach().cpu() if isinstance(train_y, torch.Tensor) else train_y)
        if y.shape != (feats.shape[0],):
            raise ValueError(f"train_y: expected shape ({feats.shape[0]},), got {y.shape}")
        if self.k > feats.shape[0]:
            raise ValueError(f"k: expected at most the {feats.shape[0]} training samples, got {self.k}")
        self.classes_, self.labels_ = np.unique(y, return_inverse=True)
        self.nn_ = NearestNeighbors(n_neighbors=self.k, algorithm="brute").fit(feats)
        return self

    def score(self, feats) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, preds)``, each ``(n,)``, for ``feats`` ``(n, d)``.

        Raises:
            RuntimeError: called before ``fit``. ValueError: wrong feature dimension.
        """
        if not hasattr(self, "nn_"):
            raise RuntimeError("KNNScorer.score: call fit(train_feats, train_y) first")
        x = _features("feats", feats, self.nn_.n_features_in_)
        dist, idx = self.nn_.kneighbors(x)
        votes = np.zeros((x.shape[0], self.classes_.size))
        np.add.at(votes, (np.repeat(np.arange(x.shape[0]), self.k), self.labels_[idx].ravel()), 1.0)
        preds = self.classes_[votes.argmax(axis=1)]
        if self.method == "dist":
            return np.exp(-dist.max(axis=1)), preds
        return votes.max(axis=1) / self.k, preds
