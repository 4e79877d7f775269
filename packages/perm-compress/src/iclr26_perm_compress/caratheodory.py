"""Algorithm A: Caratheodory peeling, i.e. reduce the support while keeping every moment.

Given weighted points with moment matrix ``A`` (N x n, column j = ``phi(w_j)``, row 0 all
ones), a null vector ``z`` of ``A`` moves the weights as ``c <- c - t z`` without changing
``A c``. Choosing ``t = min_{z_j > 0} c_j / z_j`` zeroes at least one weight and keeps all
of them non-negative; repeating until ``n <= N`` gives a Tchakaloff rule.

Two implementations live side by side:

- ``caratheodory_step``: the reference, one SVD of the whole (small) matrix per removed point;
- ``reduce_block``: the fast path, one SVD per block of ``b`` points, then Gaussian
  elimination inside the block's null space removes up to ``b - rank`` points
  (the "batched SVD updates" of the spec). Tests check both against each other.
"""
from __future__ import annotations

import numpy as np

from ._checks import check_order, check_points, check_weights
from .moments import _features, monomial_exponents

_EPS = np.finfo(np.float64).eps


def _positive_direction(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flips ``z`` so that it has a clearly positive entry; returns ``(z, mask of z_j > 0)``."""
    scale = np.abs(z).max()
    if z.max() <= 1e-12 * scale:
        z = -z
    return z, z > 1e-12 * scale


def _step_along(c: np.ndarray, z: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, int]:
    """``c - t z`` with ``t = min_{pos} c_j / z_j``; the argmin weight is set to exactly 0."""
    ratios = np.full(c.shape, np.inf)
    ratios[pos] = c[pos] / z[pos]
    i = int(np.argmin(ratios))
    out = c - ratios[i] * z
    out[i] = 0.0
    return out, i


def _clamp(c: np.ndarray, tol: float) -> np.ndarray:
    """Sets weights ``<= tol * max(c)`` (round-off, including tiny negatives) to 0."""
    c = c.copy()
    c[c <= tol * max(c.max(), 0.0)] = 0.0
    return c


def caratheodory_step(A: np.ndarray, c: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """One step of Algorithm A (reference implementation).

    Args:
        A: moment matrix of shape ``(N, n)`` with ``n > rank(A)`` (e.g. ``n = N + 1``).
        c: positive weights, shape ``(n,)``.
        tol: weights ``<= tol * max(c)`` after the step are set to 0.

    Returns:
        New weights, shape ``(n,)``: ``A c_new = A c`` up to round-off, ``c_new >= 0``, and at
        least one more zero than ``c``. The null vector is the last right-singular vector; when
        the matrix has full column rank no step is possible and ``ValueError`` is raised.
    """
    A = np.asarray(A, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if A.ndim != 2 or c.shape != (A.shape[1],):
        raise ValueError(f"A, c: expected shapes (N, n) and (n,), got {A.shape} and {c.shape}")
    _, s, vt = np.linalg.svd(A, full_matrices=True)
    rank = int((s > s[0] * max(A.shape) * _EPS).sum()) if s.size else 0
    if rank >= A.shape[1]:
        raise ValueError(f"A: has full column rank {rank}; a Caratheodory step needs n > rank(A)")
    z, pos = _positive_direction(vt[-1])
    new, _ = _step_along(c, z, pos)
    return _clamp(new, tol)


def reduce_block(A: np.ndarray, c: np.ndarray, max_remove: int | None = None, tol: float = 1e-12) -> np.ndarray:
    """Removes up to ``min(max_remove, n - rank(A))`` points of a block at the cost of one SVD.

    The null space ``Z`` (n x r) of ``A`` is computed once. Each elimination moves ``c`` along
    the first column, zeroing weight ``i``, then subtracts multiples of that column from the
    others so that every remaining null vector vanishes at ``i`` (it can never revive it).

    Args:
        A: moment matrix, shape ``(N, n)``.
        c: non-negative weights, shape ``(n,)``.
        max_remove: at most this many eliminations (default: as many as the null space allows).
        tol: clamp tolerance, as in ``caratheodory_step``.

    Returns:
        New weights of shape ``(n,)`` with the same ``A c`` (round-off), non-negative.
    """
    _, s, vt = np.linalg.svd(A, full_matrices=True)
    rank = int((s > s[0] * max(A.shape) * _EPS).sum()) if s.size else 0
    Z = vt[rank:].T.copy()
    steps = Z.shape[1] if max_remove is None else min(Z.shape[1], max_remove)
    c = c.astype(np.float64, copy=True)
    for _ in range(steps):
        if not np.abs(Z[:, 0]).max() > 0:
            Z = Z[:, 1:]
            continue
        z, pos = _positive_direction(Z[:, 0])
        c, i = _step_along(c, z, pos)
        rest = Z[:, 1:]
        Z = rest - np.outer(z, rest[i] / z[i])
        Z[i] = 0.0
        norms = np.abs(Z).max(axis=0)
        Z /= np.where(norms > 0, norms, 1.0)
    return _clamp(c, tol)


def reduce_one(A: np.ndarray, c: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """One Caratheodory step on a block of ``n > N`` points, with a null vector from a QR of ``A^T``.

    The last column of the complete QR factor of ``A^T`` (shape ``(n, N)``, n > N) is orthogonal
    to the range of ``A^T``, hence a null vector of ``A`` whatever the rank; a QR is several
    times cheaper than the SVD of ``caratheodory_step``. Returns new weights ``(n,)`` with the same
    ``A c`` (round-off), non-negative, at least one more zero.
    """
    q, _ = np.linalg.qr(A.T, mode="complete")
    z, pos = _positive_direction(q[:, -1])
    new, _ = _step_along(c, z, pos)
    return _clamp(new, tol)


def local_moment_matrix(P: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """``phi`` of points centred and scaled to the unit box: shape ``(N, n)``.

    An affine change of coordinates maps polynomials of degree <= k onto themselves, so
    matching local moments is the same as matching raw ones, and far better conditioned.
    """
    centre = P.mean(axis=0)
    radius = np.abs(P - centre).max()
    scale = radius if radius > 0 else 1.0
    return _features((P - centre) / scale, exponents).T


def reduce_support(P: np.ndarray, c: np.ndarray, exponents: np.ndarray, target: int,
                   tol: float = 1e-12, block: int | None = None) -> np.ndarray:
    """Runs ``reduce_block`` over windows of the live points until at most ``target`` remain.

    Args:
        P: points, float64 of shape ``(n, m)`` (already checked).
        c: non-negative weights, shape ``(n,)``; zero weights are not support.
        exponents: monomial multi-indices, shape ``(N, m)``.
        target: stop once the support has at most ``max(target, N)`` points (at ``N``, a rank-deficient
            window is reduced to its rank, so duplicates merge).
        block: window size, default ``2 N``.

    Returns:
        New weights, shape ``(n,)``.
    """
    n_feat = exponents.shape[0]
    block = max(n_feat + 1, block or 2 * n_feat)
    target = max(int(target), n_feat)
    c = c.astype(np.float64, copy=True)
    live = np.flatnonzero(c > 0)
    while live.size > target:
        idx = live[:block]
        # at the Tchakaloff bound every null vector may be used (duplicates merge down to rank A);
        # above it, stop exactly at the target
        cap = None if target == n_feat else live.size - target
        new = reduce_block(local_moment_matrix(P[idx], exponents), c[idx], max_remove=cap, tol=tol)
        kept = new > 0
        if kept.all():  # only when the window has full column rank, i.e. it is not larger than N
            break
        c[idx] = new
        live = np.concatenate([idx[kept], live[block:]])
    return c


def caratheodory_reduce(W, c, k: int, target: int | None = None, tol: float = 1e-12) -> np.ndarray:
    """Algorithm A on a whole weighted set: support <= ``max(target, N_{m,k})``, same moments.

    Args:
        W: points, shape ``(d, m)``.
        c: non-negative weights, shape ``(d,)`` (``None``: all ones).
        k: order of the matched moments.
        target: wanted support size (default ``N_{m,k}``, the Tchakaloff bound).
        tol: weights ``<= tol * max(c)`` are set to 0.

    Returns:
        float64 weights of shape ``(d,)``: ``moments(W, c_new, k) == moments(W, c, k)`` up to
        round-off, ``c_new >= 0``, at most ``max(target, N)`` non-zeros.

    Raises:
        ValueError: bad shapes, NaN/inf, negative weights, ``k < 1`` or ``target < 1``.
    """
    k = check_order(k)
    W = check_points(W)
    c = check_weights(c, W.shape[0])
    exps = monomial_exponents(W.shape[1], k)
    if target is None:
        target = exps.shape[0]
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or target < 1:
        raise ValueError(f"target: expected an integer >= 1, got {target!r}")
    return reduce_support(W, c, exps, int(target), tol=tol)
