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

from ._checks import check_order, check_points, check_weights
from .caratheodory import local_moment_matrix, reduce_block, reduce_support
from .moments import _CHUNK_ENTRIES, _features, monomial_exponents

STRATEGIES = ("hybrid", "greedy")


def _reduce_cluster(P: np.ndarray, c: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    return reduce_support(P, c, exponents, exponents.shape[0])


class MomentCompressor:
    """Compresses d weighted objects in R^m to ``target_size`` weighted objects by moment matching.

    Parameters (stored as given, checked in ``fit``):
        k: order of the matched moments (``N = C(m+k, k)`` monomials).
        target_size: wanted support size ``d'`` (>= N). Mutually exclusive with ``ratio``.
        ratio: ``d' = max(ceil(ratio * d), N)`` (the paper's Fig. 2 rule). Neither given: ``d' = N``.
        standardize: cluster in per-dimension standardised coordinates (moments are matched
            either way: an affine map sends degree <= k polynomials to degree <= k polynomials).
        kmeans_oversubscription: s >= 1; k-means uses ``ceil(|supp| / (N s))`` clusters.
        greedy_switch: switch from k-means rounds to the greedy phase once ``|supp| <= greedy_switch * d'``.
        strategy: ``"hybrid"`` (k-means rounds then greedy, the paper's experiments) or ``"greedy"``
            (greedy smallest-radius clusters only, the variant the theorems are proved for).
        random_state: seed of k-means.
        n_jobs: parallel workers (joblib) for the per-cluster reductions.

    Fitted attributes:
        support_: int array ``(d',)`` of kept indices into W (sorted).
        weights_: float array ``(d',)``, positive, ``sum = sum(sample_weight)``.
        points_: ``W[support_]``, shape ``(d', m)``.
        moment_error_: ``max |A (c' - c)| / max |A c|`` in the clustering coordinates.
        n_iter_: number of reduction rounds (k-means rounds + greedy rounds).
        timings_: seconds spent in ``kmeans``, ``reduce``, ``greedy`` and ``total``.
    """

    def __init__(self, k: int = 4, target_size: int | None = None, ratio: float | None = None,
                 standardize: bool = True, kmeans_oversubscription: float = 4, greedy_switch: float = 2.0,
                 strategy: str = "hybrid", random_state=None, n_jobs: int = 1):
        self.k = k
        self.target_size = target_size
        self.ratio = ratio
        self.standardize = standardize
        self.kmeans_oversubscription = kmeans_oversubscription
        self.greedy_switch = greedy_switch
        self.strategy = strategy
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
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy: expected one of {STRATEGIES}, got {self.strategy!r}")

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
            while (c > 0).sum() > self.greedy_switch * target:
                before = int((c > 0).sum())
                c = self._kmeans_round(P, c, target, rng)
                self.n_iter_ += 1
                if (c > 0).sum() > 0.95 * before:  # clusters too small to shrink further: go greedy
                    break
        while (c > 0).sum() > target:
            t0 = time.perf_counter()
            c = _greedy_round(P, c, self._exps, target)
            self.timings_["greedy"] += time.perf_counter() - t0
            self.n_iter_ += 1
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


def _greedy_round(P: np.ndarray, c: np.ndarray, exponents: np.ndarray, target: int) -> np.ndarray:
    """One round of the greedy phase: disjoint (N+1)-nearest-neighbour clusters, smallest radius first.

    Every live point is a candidate seed; its cluster is itself plus its N nearest live
    neighbours (``cKDTree``). Seeds are taken in order of increasing N-NN radius, skipping
    clusters that overlap one already used in this round, and each cluster loses one point
    by a Caratheodory step. The KD-tree is rebuilt in the next round.
    """
    n_feat = exponents.shape[0]
    live = np.flatnonzero(c > 0)
    excess = live.size - target
    size = min(n_feat + 1, live.size)
    dist, nbr = cKDTree(P[live]).query(P[live], k=size)
    radius = dist[:, -1] if dist.ndim == 2 else dist
    nbr = nbr.reshape(live.size, size)
    used = np.zeros(live.size, dtype=bool)
    c = c.copy()
    removed = 0
    for seed in np.argsort(radius, kind="stable"):
        if removed >= excess:
            break
        group = nbr[seed]
        if used[group].any():
            continue
        used[group] = True
        idx = live[group]
        new = reduce_block(local_moment_matrix(P[idx], exponents), c[idx], max_remove=1)
        removed += int((c[idx] > 0).sum() - (new > 0).sum())
        c[idx] = new
    return c


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
