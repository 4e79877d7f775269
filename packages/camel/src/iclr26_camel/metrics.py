"""Clustering metrics: ACC (Hungarian-matched, from the shared package), NMI, ARI and purity."""
from __future__ import annotations

import numpy as np
from iclr26_shared.metrics import clustering_accuracy
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix

__all__ = ["ari", "clustering_accuracy", "evaluate", "nmi", "purity"]


def _pair(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(f"y_true, y_pred: expected two 1-D arrays of the same non-zero length, "
                         f"got shapes {y_true.shape} and {y_pred.shape}")
    return y_true, y_pred


def nmi(y_true, y_pred) -> float:
    """Normalized mutual information (arithmetic normalisation, scikit-learn's default), in [0, 1]."""
    return float(normalized_mutual_info_score(*_pair(y_true, y_pred)))


def ari(y_true, y_pred) -> float:
    """Adjusted Rand index, in [-0.5, 1]."""
    return float(adjusted_rand_score(*_pair(y_true, y_pred)))


def purity(y_true, y_pred) -> float:
    """Purity: each cluster votes for its majority class; the fraction of samples in their cluster's class."""
    table = contingency_matrix(*_pair(y_true, y_pred))
    return float(table.max(axis=0).sum() / table.sum())


def evaluate(y_true, y_pred) -> dict[str, float]:
    """``{"acc", "nmi", "ari", "purity"}`` of one partition, all computed on the same predictions."""
    return {"acc": clustering_accuracy(*_pair(y_true, y_pred)), "nmi": nmi(y_true, y_pred),
            "ari": ari(y_true, y_pred), "purity": purity(y_true, y_pred)}
