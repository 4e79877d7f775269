"""Monomial moments of weighted point sets.

A weighted set ``{(c_j, w_j)}`` with ``w_j`` in R^m has the moment vector
``p = sum_j c_j phi(w_j)``, where ``phi(w) = (w^alpha)_{|alpha| <= k}`` lists every
monomial of degree at most k. There are ``N_{m,k} = C(m+k, k)`` of them, the
constant first (its moment is the total mass ``sum_j c_j``).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ._checks import check_order, check_points, check_weights

# Feature blocks are built a chunk of rows at a time so that a d x N matrix is never
# held whole when d * N is large (the spec's memory rule: N * d <= 5e8).
_CHUNK_ENTRIES = 2**24


def tchakaloff_bound(m: int, k: int) -> int:
    """``N_{m,k} = C(m+k, k)``: how many monomials of degree <= k exist in m variables.

    By Tchakaloff/Caratheodory, any weighted set can be reduced to this many points with
    non-negative weights and identical moments up to order k.

    Raises:
        ValueError: ``m < 1`` or ``k < 1``.
    """
    check_order(k)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m: expected an integer dimension >= 1, got {m!r}")
    return math.comb(int(m) + int(k), int(k))


def monomial_exponents(m: int, k: int) -> np.ndarray:
    """Multi-indices alpha with ``|alpha| <= k`` in graded order, the constant first.

    Returns:
        int ndarray of shape ``(N_{m,k}, m)``; row ``i`` holds the exponents of monomial i.
        Within one degree the rows are in descending lexicographic order.

    Raises:
        ValueError: ``m < 1`` or ``k < 1``.
    """
    tchakaloff_bound(m, k)
    rows: list[list[int]] = []
    for degree in range(int(k) + 1):
        block = []
        # compositions of `degree` into m non-negative parts, via stars and bars
        for bars in itertools.combinations(range(degree + m - 1), m - 1):
            edges = (-1, *bars, degree + m - 1)
            block.append([edges[i + 1] - edges[i] - 1 for i in range(m)])
        rows.extend(sorted(block, reverse=True))
    out = np.asarray(rows, dtype=np.int64).reshape(-1, m)
    return out


def _features(W: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """``phi(W)`` for checked float64 ``W`` of shape (d, m): shape (d, N)."""
    k = int(exponents.sum(axis=1).max())
    d, m = W.shape
    powers = np.ones((k + 1, d, m))
    for p in range(1, k + 1):
        powers[p] = powers[p - 1] * W
    out = np.ones((d, exponents.shape[0]))
    for i in range(m):
        out *= powers[exponents[:, i], :, i].T
    return out


def _resolve_exponents(m: int, k: int, exponents: np.ndarray | None) -> np.ndarray:
    if exponents is None:
        return monomial_exponents(m, k)
    e = np.asarray(exponents)
    if e.ndim != 2 or e.shape[1] != m or not np.issubdtype(e.dtype, np.integer) or (e < 0).any():
        raise ValueError(f"exponents: expected a non-negative integer array of shape (N, {m}), got {e.dtype} {e.shape}")
    return e


def moment_features(W, k: int, exponents: np.ndarray | None = None) -> np.ndarray:
    """The monomial feature matrix ``phi(W)``.

    Args:
        W: objects, shape ``(d, m)`` (a 1-D array is one coordinate per object).
        k: the order (maximal degree), ``k >= 1``.
        exponents: optional multi-indices of shape ``(N, m)``; default ``monomial_exponents(m, k)``.

    Returns:
        float64 ndarray of shape ``(d, N)``; column 0 is all ones.

    Raises:
        ValueError: bad ``k``, non-finite or wrongly shaped ``W``, bad ``exponents``.
    """
    check_order(k)
    W = check_points(W)
    return _features(W, _resolve_exponents(W.shape[1], k, exponents))


def moments(W, c, k: int) -> np.ndarray:
    """The moment vector ``p = sum_j c_j phi(w_j)``, computed a chunk of rows at a time.

    Args:
        W: objects, shape ``(d, m)``.
        c: non-negative weights, shape ``(d,)``.
        k: the order.

    Returns:
        float64 ndarray of shape ``(N_{m,k},)``; entry 0 is ``sum c``.

    Raises:
        ValueError: bad shapes, non-finite values, negative weights, ``k < 1``.
    """
    check_order(k)
    W = check_points(W)
    c = check_weights(c, W.shape[0])
    exps = monomial_exponents(W.shape[1], k)
    step = max(1, _CHUNK_ENTRIES // exps.shape[0])
    total = np.zeros(exps.shape[0])
    for start in range(0, W.shape[0], step):
        total += c[start:start + step] @ _features(W[start:start + step], exps)
    return total
