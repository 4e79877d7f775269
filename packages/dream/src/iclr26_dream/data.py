"""Multi-view data: preprocessing, the embedded mfeat digits (from iclr26-shared), the synthetic
semantic/structural set, and loaders for user files (``.mat``, ``.npz``). Nothing downloads."""
from __future__ import annotations

import os
import pathlib

import numpy as np
from iclr26_shared.datasets import load as load_dataset

EPS = 1e-8


PREPROCESS = ("zscore_l2", "zscore")


def preprocess_view(X, mode: str = "zscore_l2") -> np.ndarray:
    """z-score each feature (zero-variance features stay 0, no NaN), then (``"zscore_l2"``)
    ℓ2-normalise each row. ``"zscore"`` skips the row normalisation, which keeps information
    carried by the norm of a row (e.g. the radius of concentric rings).

    Args:
        X: ``(N, d)`` features.
        mode: ``"zscore_l2"`` (the paper's setting) or ``"zscore"``.

    Returns:
        ``(N, d)`` float64 array with unit-norm (or zero) rows.
    """
    X = np.asarray(X, dtype=np.float64)
    if mode not in PREPROCESS:
        raise ValueError(f"mode: expected one of {PREPROCESS}, got {mode!r}")
    Z = (X - X.mean(axis=0)) / (X.std(axis=0) + EPS)
    if mode == "zscore":
        return Z
    return Z / (np.linalg.norm(Z, axis=1, keepdims=True) + EPS)


def load_mfeat() -> tuple[list[np.ndarray], np.ndarray]:
    """HW: UCI multiple-features digits, 2000 x 6 views (fou, fac, kar, pix, zer, mor), 10 classes."""
    ds = load_dataset("mfeat")
    return list(ds.views), ds.y


def load_mfeat_uci3() -> tuple[list[np.ndarray], np.ndarray]:
    """UCI: the 3-view subset fou (76), fac (216), kar (64) of the same 2000 digits."""
    ds = load_dataset("mfeat_uci3")
    return list(ds.views), ds.y


def _check_generator_args(n, n_clusters, sep) -> None:
    if not isinstance(n_clusters, (int, np.integer)) or n_clusters < 2:
        raise ValueError(f"n_clusters: expected an integer >= 2, got {n_clusters!r}")
    if not isinstance(n, (int, np.integer)) or n < n_clusters:
        raise ValueError(f"n: expected an integer >= n_clusters = {n_clusters}, got {n!r}")
    if not sep > 0:
        raise ValueError(f"sep: expected a positive number, got {sep!r}")


def _gaussian_blobs(y, dim: int, sep: float, rng: np.random.Generator) -> np.ndarray:
    """``(N, dim)`` Gaussian blobs: K random unit directions scaled to norm ``sep/√2`` (centres ≈ ``sep``
    apart) plus N(0, I) noise, for the labels ``y (N,)`` in ``0..K-1``."""
    k = int(y.max()) + 1
    dirs = rng.normal(size=(k, dim))
    centres = dirs / np.linalg.norm(dirs, axis=1, keepdims=True) * (sep / np.sqrt(2.0))
    return centres[y] + rng.normal(size=(y.size, dim))


def make_semantic_structural_views(n: int = 1200, n_clusters: int = 4, sep: float = 2.0,
                                   random_state=None) -> tuple[list[np.ndarray], np.ndarray]:
    """Two views whose reliability differs by source (the paper's motivation).

    View 1 ("semantic"): Gaussian blobs in 20-D, centres = K random unit directions scaled to
    norm ``sep/√2`` (so ≈ ``sep`` apart), N(0, I) noise. View 2 ("structural"): K concentric
    rings in 2-D (class y on radius y+1, radial noise N(0, 0.05²), uniform angle) mapped into
    20-D by a random orthonormal 20x2 matrix plus N(0, 0.02²) noise: k-means fails on it, its
    kNN graph is block-diagonal.

    Returns:
        ``([X_blob (n, 20), X_ring (n, 20)], y (n,))`` with ``n // n_clusters`` samples per class.

    Raises:
        ValueError: ``n < n_clusters``, ``n_clusters < 2`` or ``sep <= 0``.
    """
    _check_generator_args(n, n_clusters, sep)
    rng = np.random.default_rng(random_state)
    y = np.repeat(np.arange(n_clusters), n // n_clusters)
    blob = _gaussian_blobs(y, 20, sep, rng)
    radius = y + 1.0 + rng.normal(0.0, 0.05, size=y.size)
    angle = rng.uniform(0.0, 2.0 * np.pi, size=y.size)
    ring2d = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    basis, _ = np.linalg.qr(rng.normal(size=(20, 2)))
    ring = ring2d @ basis.T + rng.normal(0.0, 0.02, size=(y.size, 20))
    return [blob, ring], y


def make_community_views(n: int = 1200, n_clusters: int = 4, within_degree: float = 9.0,
                         between_degree: float = 1.0, sep: float = 1.0, dim: int = 20,
                         random_state=None) -> tuple[list[np.ndarray], np.ndarray, list]:
    """Two views whose reliability differs by source, with structure a two-hop GCN can see.

    View 0 ("features"): Gaussian blobs in ``dim``-D at centre distance ≈ ``sep`` (at the default
    sep = 1 k-means on it is near chance), clustered through a kNN graph on these features. View 1
    ("graph"): featureless nodes (one-hot identities, ``(n, n)``) on a stochastic block model: each
    node has on average ``within_degree`` neighbours in its own class and ``between_degree`` in the
    others. The classes are communities of the graph that no feature separates; the reliable signal is
    the graph view's structural branch.

    Returns:
        ``([X_blob (n, dim), X_id (n, n)], y (n,), graphs)`` with ``n // n_clusters`` samples per class
        (``n`` rounded down to a multiple) and ``graphs = [None, A]``: ``None`` = build the kNN graph from
        the features, ``A`` the ``(n, n)`` binary symmetric CSR block-model adjacency (no self-loops).

    Raises:
        ValueError: ``n < n_clusters``, ``n_clusters < 2``, ``sep <= 0``, a negative degree or one that
        asks for more neighbours than exist, ``dim < 1``.
    """
    import scipy.sparse as sp

    _check_generator_args(n, n_clusters, sep)
    if not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim: expected an integer >= 1, got {dim!r}")
    per = n // n_clusters
    for name, degree, pool in (("within_degree", within_degree, per - 1), ("between_degree", between_degree,
                                                                            per * (n_clusters - 1))):
        if not 0 <= degree <= pool:
            raise ValueError(f"{name}: expected a number in [0, {pool}], got {degree!r}")
    rng = np.random.default_rng(random_state)
    y = np.repeat(np.arange(n_clusters), per)
    blob = _gaussian_blobs(y, dim, sep, rng)
    m = y.size
    same = y[:, None] == y[None, :]
    prob = np.where(same, within_degree / max(per - 1, 1), between_degree / max(per * (n_clusters - 1), 1))
    upper = np.triu(rng.random((m, m)) < prob, k=1)
    A = sp.csr_matrix((upper | upper.T).astype(np.float64))
    return [blob, np.eye(m)], y, [None, A]


def _labels_0k(y) -> np.ndarray:
    return np.unique(np.asarray(y).ravel(), return_inverse=True)[1].astype(np.int64)


def load_mat(path) -> tuple[list[np.ndarray], np.ndarray]:
    """Reads the common MATLAB multi-view layout: a cell array ``X`` of views and labels ``Y``/``gt``.

    Each view may be stored ``(N, d)`` or ``(d, N)``; the orientation is detected by matching N
    from the labels. Labels are mapped to ``0..K-1``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a v7.3 (HDF5) file, or missing/inconsistent keys.
    """
    from scipy.io import loadmat

    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    try:
        mat = loadmat(path)
    except NotImplementedError as err:
        raise ValueError(f"path: {path.name} is a MATLAB v7.3 (HDF5) file; re-save it with "
                         "save(..., '-v7') or convert it to .npz with keys X0, X1, ..., y") from err
    ykey = next((k for k in ("Y", "y", "gt", "truth", "labels", "label") if k in mat), None)
    xkey = next((k for k in ("X", "data", "fea") if k in mat), None)
    if ykey is None or xkey is None:
        found = sorted(k for k in mat if not k.startswith("__"))
        raise ValueError(f"path: expected a cell array 'X' and labels 'Y' or 'gt' in {path.name}, found {found}")
    y = _labels_0k(mat[ykey])
    views = []
    for cell in np.asarray(mat[xkey], dtype=object).ravel():
        v = np.asarray(cell.toarray() if hasattr(cell, "toarray") else cell, dtype=np.float64)
        if v.ndim != 2 or y.size not in v.shape:
            raise ValueError(f"path: a view of shape {v.shape} in {path.name} does not match {y.size} labels")
        views.append(v if v.shape[0] == y.size else v.T)
    return views, y


def load_npz(path) -> tuple[list[np.ndarray], np.ndarray]:
    """Reads an ``.npz`` with views ``X0, X1, ...`` (each ``(N, d_v)``) and labels ``y``.

    Raises:
        FileNotFoundError, ValueError: missing file or keys.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    with np.load(path) as npz:
        keys = sorted((k for k in npz.files if k.startswith("X") and k[1:].isdigit()), key=lambda k: int(k[1:]))
        if not keys or "y" not in npz.files:
            raise ValueError(f"path: expected keys X0, X1, ... and y in {path.name}, found {npz.files}")
        return [np.asarray(npz[k], dtype=np.float64) for k in keys], _labels_0k(npz["y"])


DATA_NAMES = ("hw", "uci3", "synthetic", "communities")


def load_views(spec: str | os.PathLike, random_state=0) -> tuple[list[np.ndarray], np.ndarray]:
    """``"hw"``, ``"uci3"``, ``"synthetic"`` (seeded by ``random_state``) or a ``.mat``/``.npz`` path.

    Raises:
        ValueError: an unknown name or file type, or ``"communities"`` (it comes with a graph: use
        ``load_graph_views``).
    """
    name = str(spec)
    if name == "hw":
        return load_mfeat()
    if name == "uci3":
        return load_mfeat_uci3()
    if name == "synthetic":
        return make_semantic_structural_views(random_state=random_state)
    if name == "communities":
        raise ValueError("data: 'communities' is clustered through its supplied block-model graph; load it with "
                         "load_graph_views (or make_community_views)")
    suffix = pathlib.Path(name).suffix.lower()
    if suffix == ".mat":
        return load_mat(name)
    if suffix == ".npz":
        return load_npz(name)
    raise ValueError(f"data: expected one of {DATA_NAMES} or a .mat/.npz file, got {name!r}")


def load_graph_views(spec: str | os.PathLike, random_state=0) -> tuple[list[np.ndarray], np.ndarray, list]:
    """``load_views(spec)`` plus the graphs to pass to ``DREAM.fit(..., graphs=)``: one entry per view,
    ``None`` (build the kNN graph from that view's features) or an ``(N, N)`` adjacency.

    ``"communities"`` gives ``make_community_views(random_state=random_state)`` with its block-model graph on
    view 1; an ``.npz`` may hold adjacencies ``A0, A1, ...`` (``Av`` for view ``v``, dense ``(N, N)``) beside
    ``X0, X1, ..., y``; every other source gives ``[None] * V``.

    Raises:
        ValueError: as ``load_views``, or an ``.npz`` key ``Av`` with no view ``Xv``.
    """
    name = str(spec)
    if name == "communities":
        return make_community_views(random_state=random_state)
    Xs, y = load_views(name, random_state=random_state)
    if pathlib.Path(name).suffix.lower() != ".npz":
        return Xs, y, [None] * len(Xs)
    with np.load(name) as npz:
        keys = [k for k in npz.files if k.startswith("A") and k[1:].isdigit()]
        stray = sorted(k for k in keys if int(k[1:]) >= len(Xs))
        if stray:
            raise ValueError(f"path: graph keys {stray} in {pathlib.Path(name).name} have no view "
                             f"(views X0..X{len(Xs) - 1})")
        return Xs, y, [np.asarray(npz[f"A{v}"], dtype=np.float64) if f"A{v}" in keys else None for v in range(len(Xs))]
