"""Multi-view data: the embedded UCI multiple-features digits (via the shared package), a synthetic
generator, and loaders for the user's own data (MATLAB ``.mat``, ``.npz``, a folder of CSV files).

Every loader returns ``(Xs, y, mask)``: a list of views ``(n, d_v)`` float64, labels ``(n,)`` int64
or None, and a boolean observation mask ``(n, m)`` or None (then NaN rows mark missing samples).
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
from iclr26_shared.datasets import load as load_dataset


def load_mfeat(views=None) -> tuple[list[np.ndarray], np.ndarray]:
    """UCI multiple-features digits (2,000 samples, 10 classes, shipped with ``iclr26-shared``; CC BY 4.0).

    Args:
        views: names among ``fou`` (76), ``fac`` (216), ``kar`` (64), ``pix`` (240), ``zer`` (47),
            ``mor`` (6); default all six.

    Returns:
        ``(Xs, y)``: list of ``(2000, d_v)`` float64 arrays and labels ``(2000,)``.

    Raises:
        ValueError: unknown view name.
    """
    ds = load_dataset("mfeat")
    names = list(ds.view_names)
    chosen = names if views is None else list(views)
    unknown = [v for v in chosen if v not in names]
    if unknown or not chosen:
        raise ValueError(f"views: expected names among {names}, got {views!r}")
    return [ds.views[names.index(v)] for v in chosen], ds.y


def load_mfeat_uci3() -> tuple[list[np.ndarray], np.ndarray]:
    """The 3-view subset of mfeat used by many IMVC papers: fou, fac, kar."""
    return load_mfeat(("fou", "fac", "kar"))


def make_incomplete_multiview_blobs(n=1000, n_clusters=5, n_views=3, dims=(30, 50, 20), separation=3.0, noise=1.0,
                                    random_state=None) -> tuple[list[np.ndarray], np.ndarray]:
    """Synthetic non-negative multi-view clusters.

    Per view: cluster means from ``N(0, separation^2 I)`` in ``dims[v]`` dimensions, samples
    ``mean + noise * N(0, I)``, then a random non-negative lifting ``ReLU(x W)`` with ``W`` Gaussian
    ``(dims[v], dims[v])``. Labels are balanced (``i % n_clusters``, shuffled).

    Returns:
        ``(Xs, y)``: ``n_views`` arrays ``(n, dims[v])`` and labels ``(n,)``. Complete; make it
        incomplete with ``make_incomplete_mask`` and ``apply_mask``.

    Raises:
        ValueError: ``len(dims) != n_views`` or non-positive sizes.
    """
    for name, value in (("n", n), ("n_clusters", n_clusters), ("n_views", n_views)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    dims = tuple(int(d) for d in dims)
    if len(dims) != n_views or min(dims) < 1:
        raise ValueError(f"dims: expected {n_views} positive sizes, got {dims}")
    if not separation > 0 or not noise >= 0:
        raise ValueError(f"separation, noise: expected > 0 and >= 0, got {separation}, {noise}")
    rng = np.random.default_rng(random_state)
    y = rng.permutation(np.arange(n) % n_clusters).astype(np.int64)
    Xs = []
    for d in dims:
        means = rng.normal(0.0, separation, size=(n_clusters, d))
        latent = means[y] + noise * rng.standard_normal((n, d))
        Xs.append(np.maximum(latent @ rng.standard_normal((d, d)) / np.sqrt(d), 0.0))
    return Xs, y


def _labels(y, n: int) -> np.ndarray:
    y = np.asarray(y).ravel()
    if y.shape != (n,):
        raise ValueError(f"labels: expected {n} labels, got {y.size}")
    _, codes = np.unique(y, return_inverse=True)
    return codes.astype(np.int64)


def load_mat(path, x_key: str = "X", y_key: str = "Y"):
    """The common MATLAB multi-view format: a cell array of views (``d_v x n`` or ``n x d_v``) and labels.

    The orientation of each view is detected by matching the label count ``n``.

    Returns:
        ``(Xs, y, None)``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a v7.3 (HDF5) file, missing keys, or a view that matches ``n`` in neither orientation.
    """
    from scipy.io import loadmat

    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    with open(path, "rb") as fh:
        if b"MATLAB 7.3" in fh.read(128):
            raise ValueError(f"{path.name}: MATLAB v7.3 (HDF5) files are not supported; re-save with "
                             "save(..., '-v7') or convert to .npz (keys X0..X{m-1}, y)")
    data = loadmat(path)
    for key in (x_key, y_key):
        if key not in data:
            found = sorted(k for k in data if not k.startswith("_"))
            raise ValueError(f"{path.name}: expected key {key!r}; found {found}")
    y_raw = np.asarray(data[y_key]).ravel()
    n = y_raw.size
    Xs = []
    for v, cell in enumerate(np.asarray(data[x_key], dtype=object).ravel()):
        M = np.asarray(cell, dtype=np.float64)
        if M.ndim != 2:
            raise ValueError(f"{path.name}: view {v} is not a matrix (shape {M.shape})")
        if M.shape[0] == n:
            Xs.append(M)
        elif M.shape[1] == n:
            Xs.append(M.T)
        else:
            raise ValueError(f"{path.name}: view {v} has shape {M.shape}; neither side matches the {n} labels")
    return Xs, _labels(y_raw, n), None


def load_npz(path):
    """An ``.npz`` with views ``X0 .. X{m-1}`` ``(n, d_v)``, optional labels ``y`` and mask ``mask`` ``(n, m)``.

    Returns:
        ``(Xs, y or None, mask or None)``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: no ``X0``.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    with np.load(path, allow_pickle=False) as npz:
        keys = set(npz.files)
        if "X0" not in keys:
            raise ValueError(f"{path.name}: expected keys X0..X{{m-1}} (and optionally y, mask); found {sorted(keys)}")
        Xs, v = [], 0
        while f"X{v}" in keys:
            Xs.append(np.asarray(npz[f"X{v}"], dtype=np.float64))
            v += 1
        y = _labels(npz["y"], Xs[0].shape[0]) if "y" in keys else None
        mask = np.asarray(npz["mask"]) if "mask" in keys else None
    return Xs, y, mask


def load_csv_dir(path):
    """A folder of ``view_*.csv`` files (rows = samples, an empty row = missing) and optional ``labels.csv``.

    Returns:
        ``(Xs, y or None, None)``; missing rows are NaN.

    Raises:
        FileNotFoundError: no such folder or no ``view_*.csv`` inside.
    """
    folder = pathlib.Path(path)
    files = sorted(folder.glob("view_*.csv")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"path: expected a folder with view_*.csv files, got {str(folder)!r}")
    Xs = []
    for f in files:
        rows = f.read_text(encoding="utf-8").splitlines()
        parsed = [[float(x) for x in r.split(",")] if r.strip() else None for r in rows]
        d = max((len(r) for r in parsed if r is not None), default=0)
        X = np.full((len(parsed), d), np.nan)
        for i, r in enumerate(parsed):
            if r is not None:
                if len(r) != d:
                    raise ValueError(f"{f.name}: row {i} has {len(r)} values, expected {d}")
                X[i] = r
        Xs.append(X)
    labels = folder / "labels.csv"
    y = _labels(np.loadtxt(labels, delimiter=",", dtype=np.int64, ndmin=1), Xs[0].shape[0]) if labels.exists() else None
    return Xs, y, None


def load_views(spec: str | os.PathLike, n_synthetic: int = 1000, random_state=0):
    """What the CLI's ``--data`` accepts: ``"mfeat"``, ``"mfeat_uci3"``, ``"synthetic"`` or a path
    (``.mat``, ``.npz`` or a folder of CSV files). Returns ``(Xs, y, mask)``.

    Raises:
        FileNotFoundError: a path that does not exist.
        ValueError: a file of another kind.
    """
    name = str(spec)
    if name == "mfeat":
        return (*load_mfeat(), None)
    if name == "mfeat_uci3":
        return (*load_mfeat_uci3(), None)
    if name == "synthetic":
        return (*make_incomplete_multiview_blobs(n=n_synthetic, random_state=random_state), None)
    path = pathlib.Path(name)
    if path.is_dir():
        return load_csv_dir(path)
    if not path.exists():
        raise FileNotFoundError(f"data: expected 'mfeat', 'mfeat_uci3', 'synthetic' or an existing path, got {name!r}")
    if path.suffix == ".mat":
        return load_mat(path)
    if path.suffix == ".npz":
        return load_npz(path)
    raise ValueError(f"data: expected a .mat or .npz file or a folder of view_*.csv, got {name!r}")
