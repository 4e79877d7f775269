"""Half-space (Tukey) depth ``depth(x; P) = inf_{u ∈ S^{d−1}} P(uᵀ(X − x) >= 0)``: empirical and population.

For d <= 2 the empirical depth is exact (d = 2: angular sweep around the query). For larger d the infimum is
taken over random directions (both u and −u) plus, per query, the direction away from the data mean (the optimum
for centrally symmetric data); the result is an upper bound of the exact depth.
"""
from __future__ import annotations

import numpy as np
from scipy import integrate, special

from ._checks import as_rng, matrix, positive_int, real

_CHUNK = 4_000_000  # entries of a projection matrix handled at once


def _exact_1d(Q: np.ndarray, x: np.ndarray) -> np.ndarray:
    xs = np.sort(x)
    n = xs.size
    below = np.searchsorted(xs, Q, side="right")  # #{x <= q}
    above = n - np.searchsorted(xs, Q, side="left")  # #{x >= q}
    return np.minimum(below, above) / n


def _exact_2d(Q: np.ndarray, X: np.ndarray) -> np.ndarray:
    n = X.shape[0]
    out = np.empty(Q.shape[0])
    for i, q in enumerate(Q):
        diff = X - q
        at_q = np.all(diff == 0, axis=1)
        ang = np.sort(np.arctan2(diff[~at_q, 1], diff[~at_q, 0]))
        if ang.size == 0:
            out[i] = 1.0
            continue
        # minimum over closed half-planes = minimum over i of #{angles in (φ_i, φ_i + π]}
        ext = np.concatenate([ang, ang + 2 * np.pi])
        count = np.searchsorted(ext, ang + np.pi, side="right") - np.searchsorted(ext, ang, side="right")
        out[i] = (count.min() + at_q.sum()) / n
    return out


def halfspace_depth(points, X, n_dirs: int = 2000, rng=None, exact_if_d_le: int = 2, return_method: bool = False):
    """Empirical Tukey depth of query ``points`` ``(q, d)`` with respect to data ``X`` ``(n, d)``.

    Args:
        n_dirs: random directions for d > ``exact_if_d_le`` (each used with both signs).
        rng: seeds the random directions (reproducible).
        exact_if_d_le: use the exact method when d is at most this (exact methods exist for d <= 2).
        return_method: also return ``"exact"`` or ``"approximate (upper bound)"``.

    Returns:
        ``(q,)`` depths in [0, 1] (and the method label when ``return_method``).
    """
    X = matrix("X", X)
    Q = matrix("points", points, X.shape[1])
    n_dirs = positive_int("n_dirs", n_dirs)
    d = X.shape[1]
    if d <= min(exact_if_d_le, 2):
        depth = _exact_1d(Q[:, 0], X[:, 0]) if d == 1 else _exact_2d(Q, X)
        return (depth, "exact") if return_method else depth
    G = as_rng(rng).standard_normal((n_dirs, d))
    depth = np.minimum(_directional_depth(Q, X, G / np.linalg.norm(G, axis=1, keepdims=True)), _centroid_depth(Q, X))
    return (depth, "approximate (upper bound)") if return_method else depth


def _directional_depth(Q: np.ndarray, X: np.ndarray, U: np.ndarray) -> np.ndarray:
    """min over the rows u of U (each with both signs) of the mass of ``{x : ±uᵀ(x − q) >= 0}``; ``(q,)``."""
    n = X.shape[0]
    depth = np.ones(Q.shape[0])
    step = max(1, _CHUNK // n)
    for lo in range(0, U.shape[0], step):
        Uc = U[lo:lo + step]
        PX = np.sort(X @ Uc.T, axis=0)  # (n, c)
        PQ = Q @ Uc.T  # (q, c)
        for j in range(Uc.shape[0]):
            at_least = n - np.searchsorted(PX[:, j], PQ[:, j], side="left")
            at_most = np.searchsorted(PX[:, j], PQ[:, j], side="right")
            depth = np.minimum(depth, np.minimum(at_least, at_most) / n)
    return depth


def _centroid_depth(Q: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The mass beyond each query in the direction away from the data mean (exact for symmetric data); ``(q,)``."""
    diff = Q - X.mean(axis=0)
    norms = np.linalg.norm(diff, axis=1)
    out = np.ones(Q.shape[0])
    for i in np.flatnonzero(norms > 0):
        u = diff[i] / norms[i]
        out[i] = np.mean(X @ u >= Q[i] @ u)
    return out


def sphere_cap_mass(a, d: int):
    """``P(U_1 >= a)`` for U uniform on S^{d−1} (d >= 2), ``a ∈ [−1, 1]``: ``½ I_{1−a²}((d−1)/2, ½)`` for a >= 0."""
    d = positive_int("d", d, 2)
    a = np.clip(np.asarray(a, dtype=np.float64), -1.0, 1.0)
    upper = 0.5 * special.betainc((d - 1) / 2.0, 0.5, 1.0 - a**2)
    return np.where(a >= 0, upper, 1.0 - upper)


def depth_beta_radial(s: float, d: int, alpha) -> float:
    """Population Tukey depth of a point at radius s in the isotropic Beta(α) radial family.

    By symmetry the worst direction is ``x/‖x‖``, so ``depth = P(X_1 >= s) = ∫_0^1 P(U_1 >= s/h(r)) dr`` over the
    radius ``h(r) = 1 − (1 − r)^{1/α}`` with r ~ U[0, 1] (a smooth 1-D quadrature). ``alpha = 0``/``"sphere"``:
    ``P(U_1 >= s)``.
    """
    s = real("s", s, nonnegative=True)
    d = positive_int("d", d, 2)
    a = 0.0 if isinstance(alpha, str) and alpha == "sphere" else real("alpha", alpha, nonnegative=True)
    if s > 1:
        return 0.0
    if a == 0.0:
        return float(sphere_cap_mass(s, d))
    if s == 0:
        return 0.5
    r_s = 1.0 - (1.0 - s) ** a  # radius h(r) >= s exactly when r >= r_s

    def integrand(r: float) -> float:
        return float(sphere_cap_mass(s / (1.0 - (1.0 - r) ** (1.0 / a)), d))

    value, _ = integrate.quad(integrand, r_s, 1.0, limit=200)
    return float(value)
