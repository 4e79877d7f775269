"""Consistent region partition of the Gaussians (inferred, spec section 5).

Descriptor per Gaussian (each block standardised column-wise over the Gaussians, then weighted):
position ``mu / extent`` (weight 1); colour (1); opacity and mean log-scale (0.5); visibility:
mean unit direction towards the observing training cameras, fraction of views observing it,
``log(1 + sum_v W_iv)`` (1). K-means into ``R`` clusters, each split into connected components of
the symmetric k-NN graph on the means (edges longer than twice the median k-NN distance removed);
components smaller than ``min_size`` join the nearest (centroid distance) large component that
they touch in the k-NN graph. Gaussians with opacity below 0.01 get the label -1.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.cluster import KMeans
from sklearn.neighbors import NearestNeighbors

from .cameras import Camera
from .model import GaussianModel

MIN_OPACITY = 0.01
OBSERVED = 1e-3


def _standardize(block: np.ndarray) -> np.ndarray:
    sd = block.std(0)
    return (block - block.mean(0)) / np.where(sd > 1e-12, sd, 1.0)


def region_descriptor(model: GaussianModel, cameras: list[Camera], contrib: np.ndarray,
                      extent: float = 1.0) -> np.ndarray:
    """(N, 14) weighted descriptor: position (3), colour (3), opacity + mean log-scale (2), visibility (5)."""
    mu = model.means.detach().cpu().double().numpy()
    centres = np.stack([c.center.detach().cpu().double().numpy() for c in cameras])  # (V,3)
    seen = contrib > OBSERVED  # (V,N)
    to_cam = centres[:, None, :] - mu[None]  # (V,N,3)
    to_cam /= np.linalg.norm(to_cam, axis=-1, keepdims=True).clip(1e-12)
    n_seen = seen.sum(0)
    mean_dir = (to_cam * seen[..., None]).sum(0) / np.maximum(n_seen, 1)[:, None]
    visibility = np.column_stack([mean_dir, n_seen / len(cameras), np.log1p(contrib.clip(0).sum(0))])
    appearance = np.column_stack([model.opacity.detach().cpu().double().numpy(),
                                  model.log_scales.detach().cpu().double().numpy().mean(1)])
    colour = model.colors.detach().cpu().double().numpy()
    blocks = [(mu / extent, 1.0), (colour, 1.0), (appearance, 0.5), (visibility, 1.0)]
    return np.concatenate([w * _standardize(b) for b, w in blocks], 1)


def knn_graph(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric k-NN edges (i, j, length) of ``points (M,3)``, each undirected edge once (i < j)."""
    k = min(k, len(points) - 1)
    if k < 1:
        return np.zeros(0, int), np.zeros(0, int), np.zeros(0)
    dist, idx = NearestNeighbors(n_neighbors=k + 1).fit(points).kneighbors(points)
    i = np.repeat(np.arange(len(points)), k)
    j, d = idx[:, 1:].ravel(), dist[:, 1:].ravel()
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    key, first = np.unique(lo * len(points) + hi, return_index=True)
    return key // len(points), key % len(points), d[first]


def _merge_small(labels: np.ndarray, points: np.ndarray, ei: np.ndarray, ej: np.ndarray, min_size: int) -> np.ndarray:
    """Merges components below ``min_size`` into the nearest-centroid adjacent component (large ones first)."""
    labels = labels.copy()
    while True:
        ids, sizes = np.unique(labels, return_counts=True)
        small = ids[sizes < min_size]
        if small.size == 0:
            return labels
        size_of = dict(zip(ids.tolist(), sizes.tolist(), strict=True))
        c = min(small.tolist(), key=lambda s: (size_of[s], s))
        a, b = labels[ei], labels[ej]
        touching = set(b[(a == c) & (b != c)].tolist()) | set(a[(b == c) & (a != c)].tolist())
        if not touching:
            return labels
        large = [t for t in touching if size_of[t] >= min_size]
        pool = sorted(large or touching)
        centre = points[labels == c].mean(0)
        dist = [np.linalg.norm(points[labels == t].mean(0) - centre) for t in pool]
        labels[labels == c] = pool[int(np.argmin(dist))]


def partition_regions(model: GaussianModel, cameras: list[Camera], contrib=None, n_regions: int = 16, knn: int = 8,
                      min_size: int = 5, seed: int = 0, extent: float | None = None) -> np.ndarray:
    """Region label per Gaussian, (N,) int, -1 for Gaussians with opacity below 0.01.

    Args:
        model: the Gaussians.
        cameras: the training cameras (for the visibility block).
        contrib: (V,N) ``W_iv`` of those cameras (rendered here when omitted).
        n_regions: K-means clusters R (16).
        knn: k of the k-NN graph (8).
        min_size: components smaller than this are merged (5).
        seed: K-means ``random_state``.
        extent: position scale (default: radius of the means' bounding sphere).

    Raises:
        ValueError: ``n_regions`` larger than the number of Gaussians with opacity >= 0.01, or < 1.
    """
    if not cameras:
        raise ValueError("cameras: expected at least one training camera")
    if contrib is None:
        from .render import render

        with torch.no_grad():
            contrib = torch.stack([render(model, c, return_contrib=True)["contrib"] for c in cameras])
    contrib = np.asarray(torch.as_tensor(contrib).detach().cpu().double())
    if contrib.shape != (len(cameras), len(model)):
        raise ValueError(f"contrib: expected shape ({len(cameras)}, {len(model)}), got {contrib.shape}")
    keep = (model.opacity.detach().cpu().numpy() >= MIN_OPACITY)
    n_keep = int(keep.sum())
    if not 1 <= n_regions <= n_keep:
        raise ValueError(f"n_regions: expected 1 <= n_regions <= {n_keep} (Gaussians with opacity >= "
                         f"{MIN_OPACITY}), got {n_regions}")
    mu = model.means.detach().cpu().double().numpy()
    if extent is None:
        extent = max(float(np.linalg.norm(mu - mu.mean(0), axis=1).max()), 1e-12)
    desc = region_descriptor(model, cameras, contrib, extent)[keep]
    clusters = KMeans(n_clusters=n_regions, n_init=4, random_state=seed).fit_predict(desc)
    points = mu[keep]
    ei, ej, length = knn_graph(points, knn)
    short = length <= 2 * np.median(length) if length.size else np.zeros(0, bool)
    same = clusters[ei] == clusters[ej]
    sel = short & same
    graph = coo_matrix((np.ones(int(sel.sum())), (ei[sel], ej[sel])), shape=(n_keep, n_keep))
    _, comp = connected_components(graph, directed=False)
    comp = _merge_small(comp, points, ei, ej, min_size)
    _, dense = np.unique(comp, return_inverse=True)
    labels = np.full(len(model), -1, dtype=np.int64)
    labels[keep] = dense
    return labels


def region_uncertainty(labels: np.ndarray, variance: np.ndarray, opacity: np.ndarray) -> np.ndarray:
    """``U_r = sum_{i in r} o_i var_i / sum_{i in r} o_i`` for r = 0 .. max(labels); shape (R,)."""
    labels, variance, opacity = (np.asarray(a, dtype=np.float64) for a in (labels, variance, opacity))
    inside = labels >= 0
    lab = labels[inside].astype(np.int64)
    R = int(lab.max()) + 1 if lab.size else 0
    num = np.bincount(lab, weights=opacity[inside] * variance[inside], minlength=R)
    den = np.bincount(lab, weights=opacity[inside], minlength=R)
    return num / np.where(den > 0, den, 1.0)
