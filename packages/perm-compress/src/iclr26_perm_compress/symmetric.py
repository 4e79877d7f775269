"""Symmetric functions of weighted object sets: ``f(theta') = h(sum_j c_j g(w_j))``.

The two benchmark functions of the paper are averages over the objects, normalised by the
total mass ``sum_j c_j`` (= d for the uncompressed set), so compression changes them only
through the moments of the objects.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._checks import check_points, check_weights


def symmetric_value(W, c, g: Callable[[np.ndarray], np.ndarray], h: Callable = lambda s: s):
    """``h(sum_j c_j g(w_j))``.

    Args:
        W: objects, shape ``(d, m)``.
        c: non-negative weights, shape ``(d,)`` (``None``: all ones).
        g: maps the ``(d, m)`` array to per-object values of shape ``(d,)`` or ``(d, q)``.
        h: applied to the weighted sum (scalar or ``(q,)``).

    Raises:
        ValueError: bad shapes, NaN/inf, negative weights, or ``g`` returning the wrong leading shape.
    """
    W = check_points(W)
    c = check_weights(c, W.shape[0])
    values = np.asarray(g(W), dtype=np.float64)
    if values.shape[:1] != (W.shape[0],):
        raise ValueError(f"g: expected values with leading dimension {W.shape[0]}, got shape {values.shape}")
    return h(np.tensordot(c, values, axes=1))


def _probe_points(W: np.ndarray, X, name: str = "X") -> np.ndarray:
    X = check_points(X, name=name)
    if X.shape[1] != W.shape[1]:
        raise ValueError(f"{name}: expected shape (A, {W.shape[1]}) to match W, got {X.shape}")
    return X


def sigmoid_benchmark(W, c, X) -> float:
    """The Fig. 2 function ``(1 / sum c) sum_j c_j (1/A) sum_a sigmoid(<w_j, x_a>)``.

    Args:
        W: objects, shape ``(d, m)``; c: weights ``(d,)`` or ``None``; X: probes, shape ``(A, m)``.
    """
    W = check_points(W)
    c = check_weights(c, W.shape[0])
    X = _probe_points(W, X)
    per_object = (0.5 * (1.0 + np.tanh(0.5 * (W @ X.T)))).mean(axis=1)
    return float(c @ per_object / c.sum())


def rational_benchmark(W, c, X, A: float) -> float:
    """The Fig. 8 function ``(1 / sum c) sum_j c_j (1/|X|) sum_a 1 / (A + <w_j, x_a>)``.

    Args:
        W: objects ``(d, m)``; c: weights ``(d,)`` or ``None``; X: probes ``(n_a, m)``;
        A: offset, larger than ``max |<w, x>|`` so that no pole is hit (1.05 for m = 1, 2.05 for m = 2 in the paper).

    Raises:
        ValueError: ``A + <w_j, x_a>`` vanishes or changes sign (a pole inside the data).
    """
    W = check_points(W)
    c = check_weights(c, W.shape[0])
    X = _probe_points(W, X)
    denom = float(A) + W @ X.T
    if (denom <= 0).any():
        raise ValueError(f"A: expected A + <w, x> > 0 for all objects and probes, got minimum {denom.min():.3g}")
    return float(c @ (1.0 / denom).mean(axis=1) / c.sum())
