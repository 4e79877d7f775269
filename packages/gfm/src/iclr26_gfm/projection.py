"""Exact Euclidean projections onto constraint sets, batched in numpy (used by ``ProjectedFM``).

Box: clip. Capped simplex ``{x ≥ 0, Σx ≤ 1}``: clip at 0, and where the sum exceeds 1 the
sort-based projection onto the probability simplex. 2-D polygon: nearest point over the edge
segments. Ellipsoid: 1-D root find on the Lagrange multiplier. General polytope: Dykstra's
alternating projections onto the half-spaces.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.spatial import HalfspaceIntersection

from .sets import Box, ConvexSet, Ellipsoid, Polytope


def project_simplex(X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` ``(n, d)`` projected onto ``{x ≥ 0, Σx = 1}`` (sort-and-threshold)."""
    d = X.shape[1]
    s = -np.sort(-X, axis=1)
    css = np.cumsum(s, axis=1) - 1
    k = np.arange(1, d + 1)
    rho = (s - css / k > 0).sum(axis=1)
    theta = css[np.arange(X.shape[0]), rho - 1] / rho
    return np.maximum(X - theta[:, None], 0)


def project_capped_simplex(X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` ``(n, d)`` projected onto ``{x ≥ 0, Σx ≤ 1}``."""
    out = np.maximum(X, 0)
    over = out.sum(axis=1) > 1
    if over.any():
        out[over] = project_simplex(X[over])
    return out


def _is_capped_simplex(C: Polytope) -> bool:
    d = C.dim
    A, b = C.A.numpy(), C.b.numpy()
    if A.shape[0] != d + 1:
        return False
    ref_A = np.vstack([-np.eye(d), np.ones((1, d))])
    ref_b = np.r_[np.zeros(d), 1.0]
    rows = {tuple(np.round(np.r_[a, bb], 12)) for a, bb in zip(A, b)}
    return rows == {tuple(np.r_[a, bb]) for a, bb in zip(ref_A, ref_b)}


def polygon_vertices(C: Polytope) -> np.ndarray:
    """Vertices ``(k, 2)`` of a 2-D polytope in counter-clockwise order."""
    hs = HalfspaceIntersection(np.hstack([C.A.numpy(), -C.b.numpy()[:, None]]), C.center.numpy())
    v = hs.intersections
    c = v.mean(axis=0)
    return v[np.argsort(np.arctan2(v[:, 1] - c[1], v[:, 0] - c[0]))]


def project_polygon(X: np.ndarray, C: Polytope) -> np.ndarray:
    """Rows of ``X`` ``(n, 2)`` projected onto the polygon ``C`` (outside points: nearest edge point)."""
    out = X.copy()
    outside = (X @ C.A.numpy().T - C.b.numpy()).max(axis=1) > 0
    if not outside.any():
        return out
    V = polygon_vertices(C)
    P, Q = V, np.roll(V, -1, axis=0)
    Y = X[outside][:, None, :]
    E = Q - P
    s = np.clip(((Y - P) * E).sum(-1) / (E * E).sum(-1), 0, 1)
    near = P + s[..., None] * E
    dist = ((Y - near) ** 2).sum(-1)
    out[outside] = near[np.arange(Y.shape[0]), dist.argmin(axis=1)]
    return out


def project_ellipsoid(X: np.ndarray, C: Ellipsoid, iters: int = 200) -> np.ndarray:
    """Rows of ``X`` projected onto ``{(x − c)ᵀQ(x − c) ≤ 1}``.

    ``x = c + (I + λQ)⁻¹(y − c)`` with the multiplier λ ≥ 0 found by bisection.
    """
    Q, c = C.Q.numpy(), C.c.numpy()
    w, U = np.linalg.eigh(Q)
    Y = (X - c) @ U
    out = X.copy()
    outside = (Y * Y * w).sum(axis=1) > 1
    if not outside.any():
        return out
    Yo = Y[outside]
    lo, hi = np.zeros(len(Yo)), np.ones(len(Yo))
    while True:
        f = (w * (Yo / (1 + hi[:, None] * w)) ** 2).sum(axis=1)
        if (f <= 1).all():
            break
        hi = np.where(f > 1, hi * 2, hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        f = (w * (Yo / (1 + mid[:, None] * w)) ** 2).sum(axis=1)
        lo, hi = np.where(f > 1, mid, lo), np.where(f > 1, hi, mid)
    out[outside] = c + (Yo / (1 + hi[:, None] * w)) @ U.T
    return out


def project_dykstra(X: np.ndarray, A: np.ndarray, b: np.ndarray, tol: float = 1e-12, max_iter: int = 10_000):
    """Rows of ``X`` projected onto ``{Ax ≤ b}`` by Dykstra's alternating projections (to ``tol``)."""
    x = X.copy()
    incr = np.zeros((A.shape[0],) + X.shape)
    norms2 = (A * A).sum(axis=1)
    for _ in range(max_iter):
        x_old = x.copy()
        for i in range(A.shape[0]):
            y = x + incr[i]
            excess = np.maximum(y @ A[i] - b[i], 0)
            x = y - (excess / norms2[i])[:, None] * A[i]
            incr[i] = y - x
        if np.abs(x - x_old).max() <= tol:
            break
    return x


def project(C: ConvexSet, X) -> torch.Tensor:
    """Exact Euclidean projection of the rows of ``X`` ``(n, d)`` onto ``C``; float64 tensor ``(n, d)``.

    Raises:
        TypeError: ``C`` is not a box, polytope or ellipsoid.
    """
    Xn = torch.as_tensor(X).detach().cpu().to(torch.float64).numpy()
    if isinstance(C, Box):
        out = np.clip(Xn, C.lo.numpy(), C.hi.numpy())
    elif isinstance(C, Polytope) and _is_capped_simplex(C):
        out = project_capped_simplex(Xn)
    elif isinstance(C, Polytope) and C.dim == 2:
        out = project_polygon(Xn, C)
    elif isinstance(C, Polytope):
        out = project_dykstra(Xn, C.A.numpy(), C.b.numpy())
    elif isinstance(C, Ellipsoid):
        out = project_ellipsoid(Xn, C)
    else:
        raise TypeError(f"C: exact projection is implemented for Box, Polytope and Ellipsoid, got {type(C).__name__}")
    return torch.as_tensor(out)
