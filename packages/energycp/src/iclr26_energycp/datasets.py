"""Logits to work on: the embedded corrupted-digits logits, and loaders for user files.

``make_digits_logits`` builds the package's default data without any download (scikit-learn
ships the digits): an MLP trained on corrupted 8x8 digits, its logits on a held-out pool of
corrupted digits, and on 500 noise "images" that serve as unfamiliar (OOD) inputs.
The result is cached under the user cache directory, keyed on the scikit-learn version.
"""
from __future__ import annotations

import csv
import os
import pathlib
import warnings
from importlib.metadata import version
from typing import Any

import numpy as np
from iclr26_shared.bench import atomic_path
from iclr26_shared.cache import cache_dir

from ._checks import check_labels, check_matrix

_KEYS = ("train_logits", "train_labels", "pool_logits", "pool_labels", "ood_logits")


def _corrupt(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per image severity ``s = U(0,1)^2``; ``X + N(0,1) 0.5 s``; then each pixel zeroed with prob. ``0.5 s``."""
    s = rng.random(X.shape[0]) ** 2
    out = X + rng.standard_normal(X.shape) * (0.5 * s)[:, None]
    out[rng.random(X.shape) < (0.5 * s)[:, None]] = 0.0
    return out


def _mlp_logits(mlp, X: np.ndarray) -> np.ndarray:
    """Pre-softmax output of a fitted one-hidden-layer ReLU ``MLPClassifier``: ``relu(X W1 + b1) W2 + b2``,
    (n, 64) -> (n, 10)."""
    h = np.maximum(X @ mlp.coefs_[0] + mlp.intercepts_[0], 0.0)
    return h @ mlp.coefs_[1] + mlp.intercepts_[1]


def _build(random_state: int) -> dict[str, np.ndarray]:
    # scikit-learn is imported here, not at module level: importing it costs seconds (the CLI's --help included)
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    X_tr, X_pool, y_tr, y_pool = train_test_split(X, y, test_size=0.6, random_state=random_state, stratify=y)
    rng = np.random.default_rng(random_state)
    X_tr, X_pool = _corrupt(X_tr, rng), _corrupt(X_pool, rng)
    mlp = MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X_tr, y_tr)
    X_ood = np.clip(np.random.default_rng(random_state + 5).normal(0.3, 0.35, size=(500, 64)), 0.0, 1.0)
    return {"train_logits": _mlp_logits(mlp, X_tr), "train_labels": y_tr.astype(np.int64),
            "pool_logits": _mlp_logits(mlp, X_pool), "pool_labels": y_pool.astype(np.int64),
            "ood_logits": _mlp_logits(mlp, X_ood)}


def make_digits_logits(random_state: int = 0, cache: bool = True) -> dict[str, np.ndarray]:
    """The embedded corrupted-digits logits (about 5-25 s to build once, then cached).

    Recipe: digits / 16; stratified 718 train / 1,079 pool split; corruption from one
    ``default_rng(random_state)`` applied to train then pool; ``MLPClassifier((64,), max_iter=300)``;
    OOD = 500 rows of ``clip(N(0.3, 0.35), 0, 1)`` from ``default_rng(random_state + 5)``.

    Returns:
        dict with ``train_logits`` (718, 10), ``train_labels`` (718,), ``pool_logits`` (1079, 10),
        ``pool_labels`` (1079,), ``ood_logits`` (500, 10); float64 logits, int64 labels.
        Split the pool with ``tune_pool_split`` to keep tuning disjoint from calibration and test.

    Raises:
        ValueError: ``random_state`` is not a non-negative int.
    """
    if isinstance(random_state, bool) or not isinstance(random_state, int) or random_state < 0:
        raise ValueError(f"random_state: expected a non-negative int, got {random_state!r}")
    path = cache_dir("energycp") / f"digits_logits_rs{random_state}_sklearn{version('scikit-learn')}.npz"
    if cache and path.exists():
        with np.load(path) as f:
            if all(k in f for k in _KEYS):
                return {k: f[k] for k in _KEYS}
    data = _build(random_state)
    if cache:
        try:
            with atomic_path(path) as tmp:
                np.savez(tmp, **data)
        except OSError as err:
            warnings.warn(f"could not cache the digits logits at {path}: {err}", UserWarning, stacklevel=2)
    return data


def tune_pool_split(logits: Any, labels: Any, n_tune: int = 300, random_state: int = 99):
    """Shuffles the rows with ``default_rng(random_state)``: the first ``n_tune`` form the tuning split.

    Returns:
        ``(tune_logits, tune_labels, eval_logits, eval_labels)``.
    """
    z = np.asarray(logits)
    if not 0 < n_tune < z.shape[0]:
        raise ValueError(f"n_tune: expected 0 < n_tune < {z.shape[0]}, got {n_tune}")
    idx = np.random.default_rng(random_state).permutation(z.shape[0])
    y = np.asarray(labels)
    return z[idx[:n_tune]], y[idx[:n_tune]], z[idx[n_tune:]], y[idx[n_tune:]]


def _from_pair(logits: Any, labels: Any, path: pathlib.Path):
    z, ops = check_matrix(logits, f"logits in {path.name}")
    z = ops.to_numpy(z)
    if labels is None:
        return z, None
    return z, ops.to_numpy(check_labels(labels, z.shape[0], z.shape[1], ops, f"labels in {path.name}"))


def load_logits(path: str | os.PathLike, labels_path: str | os.PathLike | None = None):
    """Reads user logits (and labels, when present) from a file; nothing is downloaded.

    Formats:
        ``.npy``: an (n, K) float array (labels from ``labels_path``, an (n,) int ``.npy``, if given);
        ``.npz``: keys ``logits`` and optionally ``labels``;
        ``.pt``: a dict with those keys or a ``(logits, labels)`` tuple (needs torch);
        ``.csv``: K numeric columns and an optional ``label`` column, with a header row.

    Returns:
        ``(logits (n, K) float64 numpy, labels (n,) int64 numpy or None)``.

    Raises:
        FileNotFoundError: no such file. ValueError: unknown suffix or malformed content.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no such file {str(p)!r}")
    suffix = p.suffix.lower()
    labels = None
    if suffix == ".npy":
        logits = np.load(p, allow_pickle=False)
    elif suffix == ".npz":
        with np.load(p, allow_pickle=False) as f:
            if "logits" not in f:
                raise ValueError(f"path: {p.name} has keys {sorted(f.keys())}, expected 'logits' (and 'labels')")
            logits, labels = f["logits"], (f["labels"] if "labels" in f else None)
    elif suffix == ".pt":
        import torch

        obj = torch.load(p, map_location="cpu", weights_only=True)
        if isinstance(obj, dict) and "logits" in obj:
            logits, labels = obj["logits"], obj.get("labels")
        elif isinstance(obj, (tuple, list)) and len(obj) in (1, 2):
            logits, labels = obj[0], (obj[1] if len(obj) == 2 else None)
        else:
            raise ValueError(f"path: {p.name} must hold a dict with 'logits' (and 'labels') or a tuple")
        logits = logits.detach().cpu().numpy() if hasattr(logits, "detach") else logits
        labels = labels.detach().cpu().numpy() if hasattr(labels, "detach") else labels
    elif suffix == ".csv":
        logits, labels = _read_csv(p)
    else:
        raise ValueError(f"path: expected a .npy, .npz, .pt or .csv file, got {p.name!r}")
    if labels_path is not None:
        labels = load_labels(labels_path)
    return _from_pair(logits, labels, p)


def load_labels(path: str | os.PathLike) -> np.ndarray:
    """Reads an (n,) integer label array from ``.npy``, ``.npz`` (key ``labels``), ``.pt``, ``.csv`` or ``.txt``."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"labels path: no such file {str(p)!r}")
    suffix = p.suffix.lower()
    if suffix in (".npz", ".pt") or (suffix == ".csv" and "label" in p.read_text().splitlines()[0].split(",")):
        _, labels = load_logits(p) if suffix != ".csv" else _read_csv(p)
        if labels is None:
            raise ValueError(f"labels path: {p.name} holds no labels")
        return np.asarray(labels)
    if suffix == ".npy":
        return np.load(p, allow_pickle=False)
    if suffix in (".csv", ".txt"):
        return np.loadtxt(p, ndmin=1)
    raise ValueError(f"labels path: expected .npy, .npz, .pt, .csv or .txt, got {p.name!r}")


def _read_csv(p: pathlib.Path):
    with open(p, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise ValueError(f"path: {p.name} needs a header row and at least one data row")
    header, body = rows[0], rows[1:]
    try:
        table = np.array(body, dtype=np.float64)
    except ValueError as err:
        raise ValueError(f"path: {p.name} has non-numeric cells: {err}") from None
    if "label" in header:
        j = header.index("label")
        return np.delete(table, j, axis=1), table[:, j]
    return table, None
