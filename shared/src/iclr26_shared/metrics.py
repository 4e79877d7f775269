"""Metrics that several packages share and no dependency provides."""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics.cluster import contingency_matrix


def clustering_accuracy(y_true, y_pred) -> float:
    """Clustering accuracy (ACC): the best one-to-one mapping of clusters to classes (Hungarian matching).

    Args:
        y_true: ``(n,)`` class labels.
        y_pred: ``(n,)`` cluster labels; the numbers of clusters and classes may differ.

    Returns:
        The fraction of samples whose matched cluster equals their class, in [0, 1].

    Raises:
        ValueError: the arrays are not 1-D of the same non-zero length.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(f"y_true, y_pred: expected two 1-D arrays of the same non-zero length, "
                         f"got shapes {y_true.shape} and {y_pred.shape}")
    table = contingency_matrix(y_true, y_pred)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / y_true.size)
