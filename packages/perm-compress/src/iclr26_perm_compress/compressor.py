"""Algorithm B: cluster, then match moments inside each cluster (the compression family).

``MomentCompressor`` keeps a subset of the original points and changes only their weights,
so that every moment of degree <= k is preserved exactly (up to round-off) while the
support shrinks to ``target_size``. Symmetric functions ``h(sum_j c_j g(w_j))`` with smooth
``g`` then change by ``O(d r^{k+1})`` where r is the cluster diameter.
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from scipy.spatial import cKDTree
from sklearn.cluster import KMeans

from ._checks import check_order, check_points, check_positive_int, check_weights
from .caratheodory import local_moment_matrix, reduce_one, reduce_support
from .moments import _CHUNK_ENTRIES, _features, monomial_exponents

STRATEGIES = ("hybrid", "greedy")
# how the greedy phase picks its next cluster of N + 1 points
SELECTIONS = ("sampled_diameter", "radius")
# k-means clusters of about N / 0.98, i.e. about N + 1 points each, as in the official construction
OFFICIAL_OVERSUBSCRIPTION = 1 / 0.98
# the earlier variant of this package: standardised coordinates, clusters of about 4 N points,
# greedy phase from 2 d' on (kept as an option: ``MomentCompressor(**STANDARDISED_VARIANT)``)
STANDARDISED_VARIANT = {"standardize": True, "kmeans_oversubscription": 4.0, "greedy_switch": 2.0,
                        "greedy_threshold": 0}


def _reduce_cluster(P: np.ndarray, c: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    return reduce_support(P, c, exponents, exponents.shape[0])


class MomentCompressor:
    """Compresses d weighted objects in R^m to ``target_size`` weighted objects by moment matching.

    The defaults follow the official construction: clustering on the raw coordinates, k-means
    rounds with clusters of about N + 1 points (each cluster with more than N points is reduced
    to N), and the pure greedy phase once at most ``d' + 2000`` points are alive.

    Parameters (stored as given, checked in ``fit``):
        k: order of the matched moments (``N = C(m+k, k)`` monomials).
        target_size: wanted support size ``d'`` (>= N). Mutually exclusive with ``ratio``.
        ratio: ``d' = max(ceil(ratio * d), N)`` (the paper's Fig. 2 rule). Neither given: ``d' = N``.
        standardize: cluster in per-dimension standardised coordinates (moments are matched
            either way: an affine map sends degree <= k polynomials to degree <= k polynomials).
        kmeans_oversubscription: s >= 1; k-means uses ``ceil(|supp| / (N s))`` clusters
            (default ``1 / 0.98``: clusters of about N + 1 points).
        greedy_switch, greedy_threshold: the k-means rounds stop, and the greedy phase starts, once
            ``|supp| <= max(greedy_switch * d', d' + greedy_threshold)`` (defaults 1 and 2000).
        strategy: ``"hybrid"`` (k-means rounds then greedy, the paper's experiments) or ``"greedy"``
            (greedy small clusters only, the variant the theorems are proved for).
        greedy_selection: ``"sampled_diameter"`` (official: each step draws 10 % of the live points, at
            most 5000, as seeds and reduces the seed cluster of smallest diameter) or ``"radius"`` (the
            seed of smallest N-NN radius over all live points, kept up to date incrementally).
        random_state: seed of k-means.
        n_jobs: parallel workers (joblib) for the per-cluster reductions.

    ``MomentCompressor(**STANDARDISED_VARIANT)`` gives the earlier variant (standardised
    coordinates, clusters of about 4 N points, greedy from ``2 d'``).

    Fitted attributes:
        support_: int array ``(d',)`` of kept indices into W (sorted).
        weights_: float array ``(d',)``, positive, ``sum = sum(sample_weight)``.
        points_: ``W[support_]``, shape ``(d', m)``.
        moment_error_: ``max |A (c' - c)| / max |A c|`` in the clustering coordinates.
        n_iter_: number of reduction rounds (k-means rounds + greedy steps).
        timings_: seconds spent in ``kmeans``, ``reduce``, ``greedy`` and ``total``.
    """

    def __init__(self, k: int = 4, target_size: int | None = None, ratio: float | None = None,
                 standardize: bool = False, kmeans_oversubscription: float = OFFICIAL_OVERSUBSCRIPTION,
                 greedy_switch: float = 1.0, greedy_threshold: int = 2000, strategy: str = "hybrid",
                 greedy_selection: str = "sampled_diameter", random_state=None, n_jobs: int = 1):
        self.k = k
        self.target_size = target_size
        self.ratio = ratio
        self.standardize = standardize
        self.kmeans_oversubscription = kmeans_oversubscription
        self.greedy_switch = greedy_switch
        self.greedy_threshold = greedy_threshold
        self.strategy = strategy
        self.greedy_selection = greedy_selection
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _target(self, d: int, n_feat: int) -> int:
        if self.target_size is not None and self.ratio is not None:
            raise ValueError("target_size, ratio: give at most one of them")
        if self.ratio is not None:
            if not 0 < float(self.ratio) <= 1:
                raise ValueError(f"ratio: expected a number in (0, 1], got {self.ratio!r}")
            return max(math.ceil(float(self.ratio) * d), n_feat)
        if self.target_size is None:
            return n_feat
        t = self.target_size
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise ValueError(f"target_size: expected an integer, got {t!r}")
        if t < n_feat:
            raise ValueError(f"target_size: expected >= the Tchakaloff bound N_(m,k) = {n_feat} "
                             f"(m = {len(self._exps[0])}, k = {self.k}), got {t}")
        return int(t)

    def _check_params(self) -> None:
        check_order(self.k)
        if not float(self.kmeans_oversubscription) >= 1:
            raise ValueError(f"kmeans_oversubscription: expected >= 1, got {self.kmeans_oversubscription!r}")
        if not float(self.greedy_switch) >= 1:
            raise ValueError(f"greedy_switch: expected >= 1, got {self.greedy_switch!r}")
        check_positive_int(self.greedy_threshold, "greedy_threshold", minimum=0)
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy: expected one of {STRATEGIES}, got {self.strategy!r}")
        if self.greedy_selection not in SELECTIONS:
            raise ValueError(f"greedy_selection: expected one of {SELECTIONS}, got {self.greedy_selection!r}")

    def fit(self, W, sample_weight=None) -> MomentCompressor:
        """Compresses the objects ``W`` (shape ``(d, m)``) with weights ``sample_weight`` (default 1).

        Returns:
            self, with the fitted attributes set.

        Raises:
            ValueError: NaN/inf in W, negative or non-finite weights, ``k < 1``,
                ``target_size < N_{m,k}``, bad parameters.
        """
        start = time.perf_counter()
        self._check_params()
        W = check_points(W)
        c0 = check_weights(sample_weight, W.shape[0], name="sample_weight")
        if not c0.sum() > 0:
            raise ValueError("sample_weight: expected at least one positive weight")
        self._exps = monomial_exponents(W.shape[1], self.k)
        n_feat = self._exps.shape[0]
        target = self._target(W.shape[0], n_feat)
        self.timings_ = {"kmeans": 0.0, "reduce": 0.0, "greedy": 0.0}
        self.n_iter_ = 0
        P = self._standardised(W)
        c = c0.copy()
        live = int((c > 0).sum())
        if live <= target:
            if self.target_size is not None and int(self.target_size) >= W.shape[0]:
                warnings.warn(f"target_size={self.target_size} >= d={W.shape[0]}: returning the identity",
                              stacklevel=2)
        else:
            c = self._compress(P, c, target)
        self.support_ = np.flatnonzero(c > 0)
        self.weights_ = c[self.support_]
        self.points_ = W[self.support_]
        self.moment_error_ = _relative_moment_error(P, c0, c, self._exps)
        if self.moment_error_ > 1e-6:
            warnings.warn(f"relative moment error {self.moment_error_:.2e} exceeds 1e-6 (ill-conditioned "
                          f"monomials; try standardize=True or a smaller k)", stacklevel=2)
        self.timings_["total"] = time.perf_counter() - start
        return self

    def _standardised(self, W: np.ndarray) -> np.ndarray:
        if not self.standardize:
            return W
        self.mean_ = W.mean(axis=0)
        std = W.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        return (W - self.mean_) / self.scale_

    def _compress(self, P: np.ndarray, c: np.ndarray, target: int) -> np.ndarray:
        rng = np.random.default_rng(self.random_state)
        if self.strategy == "hybrid":
            switch = max(float(self.greedy_switch) * target, target + int(self.greedy_threshold))
            while (c > 0).sum() > switch:
                before = int((c > 0).sum())
                c = self._kmeans_round(P, c, target, rng)
                self.n_iter_ += 1
                if (c > 0).sum() > 0.99 * before:  # clusters too small to shrink further: go greedy
                    break
        t0 = time.perf_counter()
        if self.greedy_selection == "radius":
            c, steps = _greedy_phase(P, c, self._exps, target)
        else:
            c, steps = _sampled_greedy_phase(P, c, self._exps, target, rng)
        self.timings_["greedy"] += time.perf_counter() - t0
        self.n_iter_ += steps
        return c

    def _kmeans_round(self, P: np.ndarray, c: np.ndarray, target: int, rng: np.random.Generator) -> np.ndarray:
        n_feat = self._exps.shape[0]
        live = np.flatnonzero(c > 0)
        n_clusters = max(math.ceil(live.size / (n_feat * float(self.kmeans_oversubscription))),
                         math.ceil(target / n_feat))
        n_clusters = min(n_clusters, live.size)
        t0 = time.perf_counter()
        km = KMeans(n_clusters=n_clusters, n_init=1, max_iter=100, random_state=int(rng.integers(2**31 - 1)))
        labels = km.fit_predict(P[live], sample_weight=c[live])
        self.timings_["kmeans"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(n_clusters + 1))
        groups = [live[order[a:b]] for a, b in zip(bounds[:-1], bounds[1:]) if b - a > n_feat]
        if self.n_jobs == 1:
            reduced = [_reduce_cluster(P[g], c[g], self._exps) for g in groups]
        else:
            reduced = Parallel(n_jobs=self.n_jobs)(delayed(_reduce_cluster)(P[g], c[g], self._exps) for g in groups)
        c = c.copy()
        for g, new in zip(groups, reduced):
            c[g] = new
        self.timings_["reduce"] += time.perf_counter() - t0
        return c

    def transform(self, W=None) -> tuple[np.ndarray, np.ndarray]:
        """The compressed set: ``(points, weights)`` of shapes ``(d', m)`` and ``(d',)``.

        With ``W`` given (an array of the same objects, e.g. updated values, shape ``(d, m')``),
        returns ``(W[support_], weights_)``.
        """
        if not hasattr(self, "support_"):
            raise ValueError("MomentCompressor: call fit(W) before transform()")
        if W is None:
            return self.points_, self.weights_
        arr = np.asarray(W)
        rows = int(self.support_.max(initial=0)) + 1
        if arr.ndim < 1 or arr.shape[0] < rows:
            raise ValueError(f"W: expected at least {rows} rows, got shape {arr.shape}")
        return arr[self.support_], self.weights_

    def fit_transform(self, W, sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
        """``fit(W, sample_weight).transform()``."""
        return self.fit(W, sample_weight).transform()


def _nearest_live(P: np.ndarray, rows: np.ndarray, alive: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``size`` nearest live points of each of ``rows`` (itself included), by brute force.

    Args:
        P: points ``(n, m)``; rows: query indices ``(q,)``; alive: mask ``(n,)``; size: neighbours.

    Returns:
        ``(neighbours (q, size) nearest first, radius = distance to the farthest (q,))``.
    """
    live = np.flatnonzero(alive)
    Q = P[live]
    sq = np.einsum("ij,ij->i", Q, Q)
    nbr, radius = np.empty((rows.size, size), dtype=np.intp), np.empty(rows.size)
    step = max(1, _CHUNK_ENTRIES // max(1, live.size))
    for a in range(0, rows.size, step):
        R = P[rows[a:a + step]]
        d2 = np.einsum("ij,ij->i", R, R)[:, None] + sq[None, :] - 2.0 * R @ Q.T
        part = np.argpartition(d2, size - 1, axis=1)[:, :size]
        order = np.argsort(np.take_along_axis(d2, part, axis=1), axis=1, kind="stable")
        part = np.take_along_axis(part, order, axis=1)
        nbr[a:a + step] = live[part]
        radius[a:a + step] = np.sqrt(np.maximum(np.take_along_axis(d2, part[:, -1:], axis=1)[:, 0], 0.0))
    return nbr, radius


def _greedy_phase(P: np.ndarray, c: np.ndarray, exponents: np.ndarray, target: int) -> tuple[np.ndarray, int]:
    """The greedy phase: one Caratheodory step at a time on the smallest live cluster.

    A cluster is a live seed plus its N nearest live neighbours (N + 1 points); each step takes
    the seed with the smallest N-NN radius, removes (at least) one point of its cluster by one
    step of Algorithm A, and recomputes the clusters of the seeds whose neighbours died. The
    first clusters come from a ``cKDTree``; the few recomputed ones per step by brute force.

    Returns:
        ``(new weights (d,), number of steps)``.
    """
    size = exponents.shape[0] + 1
    pool = np.flatnonzero(c > 0)
    if pool.size <= target:
        return c, 0
    c = c.copy()
    alive = np.ones(pool.size, dtype=bool)
    Q = P[pool]
    radius, nbr = cKDTree(Q).query(Q, k=size)
    radius, nbr = radius.reshape(pool.size, size)[:, -1], nbr.reshape(pool.size, size)
    steps = 0
    while alive.sum() > target:
        seed = int(np.argmin(radius))
        if not np.isfinite(radius[seed]):
            break  # every remaining cluster is degenerate beyond repair
        group = nbr[seed]
        idx = pool[group]
        new = reduce_one(local_moment_matrix(P[idx], exponents), c[idx])
        c[idx] = new
        dead = group[new <= 0]
        steps += 1
        if dead.size == 0:
            radius[seed] = np.inf  # no null vector moved a weight to 0: skip this seed
            continue
        alive[dead] = False
        radius[dead] = np.inf
        stale = np.flatnonzero(alive & np.isin(nbr, dead).any(axis=1))
        if stale.size and alive.sum() > target:
            nbr[stale], radius[stale] = _nearest_live(Q, stale, alive, size)
    return c, steps


def _sampled_greedy_phase(P: np.ndarray, c: np.ndarray, exponents: np.ndarray, target: int, rng: np.random.Generator,
                          fraction: float = 0.1, max_seeds: int = 5000) -> tuple[np.ndarray, int]:
    """The official greedy phase: per step, ``fraction`` of the live points (at most ``max_seeds``) are drawn
    as seeds, each with its N nearest live neighbours, and the cluster of smallest diameter loses (at least)
    one point by one step of Algorithm A. Points ``P`` ``(n, m)``, weights ``c`` ``(n,)``.

    Returns:
        ``(new weights (n,), number of steps)``.
    """
    size = exponents.shape[0] + 1
    c = c.copy()
    alive = c > 0
    steps = stalled = 0
    while alive.sum() > target and stalled < 50:
        live = np.flatnonzero(alive)
        n_seeds = int(min(max(1, fraction * live.size), max_seeds))
        seeds = live if n_seeds >= live.size else rng.choice(live, size=n_seeds, replace=False)
        nbr, _ = _nearest_live(P, seeds, alive, size)
        X = P[nbr]  # (seeds, N + 1, m)
        sq = np.einsum("qim,qim->qi", X, X)
        d2 = sq[:, :, None] + sq[:, None, :] - 2.0 * X @ X.transpose(0, 2, 1)
        idx = nbr[int(np.argmin(d2.reshape(len(seeds), -1).max(axis=1)))]
        new = reduce_one(local_moment_matrix(P[idx], exponents), c[idx])
        c[idx] = new
        dead = idx[new <= 0]
        alive[dead] = False
        steps += 1
        stalled = 0 if dead.size else stalled + 1  # no weight reached 0: draw other seeds
    return c, steps


def _relative_moment_error(P: np.ndarray, c0: np.ndarray, c: np.ndarray, exponents: np.ndarray) -> float:
    """``max |A (c - c0)| / max |A c0|``, accumulated a chunk of rows at a time."""
    step = max(1, _CHUNK_ENTRIES // exponents.shape[0])
    ref = np.zeros(exponents.shape[0])
    diff = np.zeros(exponents.shape[0])
    for a in range(0, P.shape[0], step):
        F = _features(P[a:a + step], exponents)
        ref += c0[a:a + step] @ F
        diff += (c[a:a + step] - c0[a:a + step]) @ F
    return float(np.abs(diff).max() / np.abs(ref).max())
