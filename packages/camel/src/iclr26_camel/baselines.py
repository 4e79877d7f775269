"""Baselines of the paper's tables, all with ``fit_predict(Xs, mask=None) -> labels``.

- ``BestSingleView``: k-means on each view (Concat's per-view transform), the best view by ACC
  (an oracle that needs the labels, as in the IMVC literature).
- ``ConcatKMeans``: per view z-score with the observed rows' statistics, mean-fill missing rows,
  unit-l2 rows; concatenate; k-means (n_init 10).
- ``ConcatSpectral``: the same features, spectral clustering on a kNN graph.
- ``AverageAnchorGraph``: per view an anchor graph of the observed samples; the views' graphs are
  joined (concatenated anchors) and each sample's row divided by its number of available views, so
  the implied similarity averages the views a pair shares; anchor-graph spectral embedding
  (Liu et al. 2010), k-means (an IMVC-CBG-style reference).
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.utils import check_random_state

from .metrics import clustering_accuracy
from .views import check_views, minmax_l2, zscore_impute_l2


def _seed(random_state) -> int:
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def concat_features(Xs, mask=None) -> np.ndarray:
    """Concat's features ``(n, sum d_v)``: per view z-score (observed stats), mean-fill, unit-l2 rows."""
    views, mask = check_views(Xs, mask)
    return np.concatenate([zscore_impute_l2(X, mask[:, v]) for v, X in enumerate(views)], axis=1)


class _ConcatClusterer(ClusterMixin, BaseEstimator):
    """Shared ``fit`` of the concatenation baselines: ``labels_ = self._cluster(concat_features, seed)``."""

    def fit(self, Xs, mask=None, y=None):
        """Fits on views ``(n, d_v)`` with NaN rows or ``mask`` marking missing samples; returns self."""
        self.labels_ = self._cluster(concat_features(Xs, mask), _seed(self.random_state))
        return self


class ConcatKMeans(_ConcatClusterer):
    """k-means (``n_init`` restarts) on the concatenation of per-view z-scored, mean-imputed, l2-normalised views."""

    def __init__(self, n_clusters, n_init=10, random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.random_state = random_state

    def _cluster(self, F: np.ndarray, seed: int) -> np.ndarray:
        return KMeans(self.n_clusters, n_init=self.n_init, random_state=seed).fit_predict(F)


class ConcatSpectral(_ConcatClusterer):
    """Spectral clustering (kNN affinity, ``n_neighbors``) on Concat's features."""

    def __init__(self, n_clusters, n_neighbors=10, random_state=None):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.random_state = random_state

    def _cluster(self, F: np.ndarray, seed: int) -> np.ndarray:
        return SpectralClustering(self.n_clusters, affinity="nearest_neighbors", n_neighbors=self.n_neighbors,
                                  assign_labels="kmeans", random_state=seed).fit_predict(F)


class BestSingleView(ClusterMixin, BaseEstimator):
    """k-means on each view separately; ``labels_`` of the view with the best ACC against ``y`` (label oracle)."""

    def __init__(self, n_clusters, n_init=10, random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.random_state = random_state

    def fit(self, Xs, mask=None, y=None):
        """Fits every view; ``y`` ``(n,)`` is required to pick the best one.

        Raises:
            ValueError: ``y`` is missing or has the wrong length.
        """
        views, mask = check_views(Xs, mask)
        if y is None or np.asarray(y).shape != (mask.shape[0],):
            raise ValueError(f"y: BestSingleView picks the best view with the labels; expected shape "
                             f"({mask.shape[0]},), got {None if y is None else np.asarray(y).shape}")
        seed = _seed(self.random_state)
        self.view_labels_ = [KMeans(self.n_clusters, n_init=self.n_init, random_state=seed)
                             .fit_predict(zscore_impute_l2(X, mask[:, v])) for v, X in enumerate(views)]
        self.view_acc_ = [clustering_accuracy(y, lab) for lab in self.view_labels_]
        self.best_view_ = int(np.argmax(self.view_acc_))
        self.labels_ = self.view_labels_[self.best_view_]
        return self

    def fit_predict(self, Xs, mask=None, y=None):
        """``fit(Xs, mask, y).labels_``."""
        return self.fit(Xs, mask, y).labels_


def anchor_graph(X: np.ndarray, anchors: np.ndarray, k: int) -> np.ndarray:
    """Row-stochastic anchor graph ``(n, t)``: Gaussian weights to the ``k`` nearest anchors (bandwidth = mean
    squared distance to them)."""
    d2 = cdist(X, anchors, "sqeuclidean")
    k = min(k, anchors.shape[0])
    idx = np.argpartition(d2, k - 1, axis=1)[:, :k]
    near = np.take_along_axis(d2, idx, axis=1)
    sigma = np.maximum(near.mean(axis=1, keepdims=True), 1e-12)
    weights = np.exp(-near / sigma)
    weights /= weights.sum(axis=1, keepdims=True)
    Z = np.zeros_like(d2)
    np.put_along_axis(Z, idx, weights, axis=1)
    return Z


class AverageAnchorGraph(ClusterMixin, BaseEstimator):
    """Per-view anchor graphs on observed samples, averaged over available views, spectral embedding, k-means.

    ``n_anchors`` per view (default ``3 n_clusters``), ``n_neighbors`` nearest anchors per sample.
    """

    def __init__(self, n_clusters, n_anchors=None, n_neighbors=5, n_init=10, random_state=None):
        self.n_clusters = n_clusters
        self.n_anchors = n_anchors
        self.n_neighbors = n_neighbors
        self.n_init = n_init
        self.random_state = random_state

    def fit(self, Xs, mask=None, y=None):
        """Fits on views ``(n, d_v)`` with NaN rows or ``mask`` marking missing samples; returns self."""
        views, mask = check_views(Xs, mask, n_clusters=self.n_clusters)
        seed = _seed(self.random_state)
        t = self.n_anchors or 3 * self.n_clusters
        graphs = []
        for v, X in enumerate(views):
            obs = mask[:, v]
            Xv = minmax_l2(X, obs)
            anchors = KMeans(min(t, int(obs.sum())), n_init=1, random_state=seed).fit(Xv[obs]).cluster_centers_
            Zv = anchor_graph(Xv, anchors, self.n_neighbors)
            Zv[~obs] = 0.0
            graphs.append(Zv)
        Z = np.concatenate(graphs, axis=1) / mask.sum(axis=1, keepdims=True)
        col = Z.sum(axis=0)
        Zn = Z / np.sqrt(np.where(col > 0, col, 1.0))
        u, _, _ = np.linalg.svd(Zn, full_matrices=False)
        U = u[:, : self.n_clusters]
        U /= np.maximum(np.linalg.norm(U, axis=1, keepdims=True), 1e-12)
        self.labels_ = KMeans(self.n_clusters, n_init=self.n_init, random_state=seed).fit_predict(U)
        return self
