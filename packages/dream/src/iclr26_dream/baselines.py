"""Simple multi-view baselines run next to DREAM, on the same preprocessing (z-score + row ℓ2)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from iclr26_shared.metrics import clustering_accuracy
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.metrics import silhouette_score

from .data import preprocess_view
from .graph import check_graphs, knn_graph, normalize_adjacency
from .model import check_views


def _concat(Xs) -> np.ndarray:
    return np.concatenate([preprocess_view(X) for X in check_views(Xs)], axis=1)


class ConcatKMeans(ClusterMixin, BaseEstimator):
    """k-means (``n_init`` restarts) on the concatenation of the preprocessed views."""

    def __init__(self, n_clusters: int, n_init: int = 10, random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.random_state = random_state

    def fit(self, Xs, y=None):
        """Fits on a list of views ``(N, d_v)``; sets ``labels_ (N,)``."""
        km = KMeans(self.n_clusters, n_init=self.n_init, random_state=self.random_state).fit(_concat(Xs))
        self.labels_ = km.labels_
        return self


class PropagatedKMeans(ClusterMixin, BaseEstimator):
    """Parameter-free graph baseline: k-means on the concatenated row-ℓ2-normalised Â^hops X^{(v)}.

    Per view: the preprocessed X (N, d_v), the cosine kNN graph DREAM's GCN uses (``n_neighbors``) or the
    graph passed to ``fit`` for that view,
    Â = D̃^{-1/2}(A + I)D̃^{-1/2}, ``hops`` propagation steps, row ℓ2; then k-means (``n_init``) on the
    concatenation (N, Σ d_v). With ``hops=2`` it is DREAM's two-layer GCN without weights or training.
    ``preprocess`` and ``metric`` as in ``DREAM``. Sets ``labels_ (N,)``.
    """

    def __init__(self, n_clusters: int, hops: int = 2, n_neighbors: int = 10, n_init: int = 10,
                 preprocess: str = "zscore_l2", metric: str = "cosine", random_state=None):
        self.n_clusters = n_clusters
        self.hops = hops
        self.n_neighbors = n_neighbors
        self.n_init = n_init
        self.preprocess = preprocess
        self.metric = metric
        self.random_state = random_state

    def fit(self, Xs, y=None, graphs=None):
        """Fits on a list of views ``(N, d_v)``; ``graphs`` as in ``DREAM.fit`` (``None`` entries: kNN graphs).
        Sets ``labels_ (N,)``."""
        if isinstance(self.hops, bool) or not isinstance(self.hops, (int, np.integer)) or self.hops < 0:
            raise ValueError(f"hops: expected a non-negative integer, got {self.hops!r}")
        parts = []
        views = check_views(Xs)
        for X, G in zip(views, check_graphs(graphs, views[0].shape[0], len(views))):
            Z = preprocess_view(X, self.preprocess)
            G = knn_graph(Z, k=self.n_neighbors, metric=self.metric) if G is None else G
            a_hat = normalize_adjacency(G, dtype=torch.float64)
            H = torch.as_tensor(Z)
            for _ in range(self.hops):
                H = torch.sparse.mm(a_hat, H)
            H = H.numpy()
            parts.append(H / (np.linalg.norm(H, axis=1, keepdims=True) + 1e-12))
        km = KMeans(self.n_clusters, n_init=self.n_init, random_state=self.random_state)
        self.labels_ = km.fit_predict(np.concatenate(parts, axis=1))
        return self


class ConcatSpectral(ClusterMixin, BaseEstimator):
    """scikit-learn spectral clustering (kNN affinity, ``n_neighbors``, cluster_qr) on the concatenation."""

    def __init__(self, n_clusters: int, n_neighbors: int = 10, random_state=None):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.random_state = random_state

    def fit(self, Xs, y=None):
        """Fits on a list of views ``(N, d_v)``; sets ``labels_ (N,)``."""
        sc = SpectralClustering(self.n_clusters, affinity="nearest_neighbors", n_neighbors=self.n_neighbors,
                                assign_labels="cluster_qr", random_state=self.random_state)
        self.labels_ = sc.fit_predict(_concat(Xs))
        return self


class AverageGraphSpectral(ClusterMixin, BaseEstimator):
    """Spectral clustering on the mean of the per-view cosine kNN graphs (the graphs DREAM's GCN uses)."""

    def __init__(self, n_clusters: int, n_neighbors: int = 10, random_state=None):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.random_state = random_state

    def fit(self, Xs, y=None):
        """Fits on a list of views ``(N, d_v)``; sets ``labels_ (N,)`` and ``affinity_`` (sparse)."""
        views = check_views(Xs)
        graphs = [knn_graph(preprocess_view(X), k=self.n_neighbors) for X in views]
        self.affinity_ = sp.csr_matrix(sum(graphs) / len(graphs))
        sc = SpectralClustering(self.n_clusters, affinity="precomputed", assign_labels="cluster_qr",
                                random_state=self.random_state)
        self.labels_ = sc.fit_predict(self.affinity_)
        return self


class BestViewKMeans(ClusterMixin, BaseEstimator):
    """k-means on each preprocessed view; keeps the best view.

    "Best" is the highest clustering accuracy when ``y`` is passed to ``fit`` (an oracle choice, as
    in the usual best-single-view baseline row) and the highest silhouette score otherwise.
    Sets ``labels_``, ``best_view_`` and ``scores_`` (one per view).
    """

    def __init__(self, n_clusters: int, n_init: int = 10, random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.random_state = random_state

    def fit(self, Xs, y=None):
        """Fits on a list of views ``(N, d_v)``; ``y`` (optional) selects the view by accuracy."""
        labels, scores = [], []
        for X in check_views(Xs):
            Z = preprocess_view(X)
            lab = KMeans(self.n_clusters, n_init=self.n_init, random_state=self.random_state).fit_predict(Z)
            labels.append(lab)
            scores.append(clustering_accuracy(y, lab) if y is not None else float(silhouette_score(Z, lab)))
        self.scores_ = np.asarray(scores)
        self.best_view_ = int(np.argmax(self.scores_))
        self.labels_ = labels[self.best_view_]
        return self
