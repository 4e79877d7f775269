"""Open-set splits: known/unknown classes, the embedded digits and blobs tasks, and local image folders.

Every task is a dict with ``Xtr`` ``(n_tr, ...)`` float32 and ``ytr`` ``(n_tr,)`` int64 in
``0..n_known-1`` (known classes only), ``Xte_known``/``yte_known`` (test samples of known classes,
labels remapped the same way), ``Xte_unknown`` (test samples of the other classes), and the original
``known_classes``/``unknown_classes``. Nothing is downloaded: digits ships with scikit-learn, blobs
are generated, CIFAR and ImageFolder sets are read from a local folder.
"""
from __future__ import annotations

import numbers
import os
import pathlib

import numpy as np
from iclr26_shared import datasets

__all__ = ["make_osr_split", "digits_osr", "make_blobs_osr", "cifar_osr", "image_folder_osr", "N_SPLITS"]

N_SPLITS = 5
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


def _index(name: str, value, upper: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0 or (
            upper is not None and value >= upper):
        bound = f" and < {upper}" if upper is not None else ""
        raise ValueError(f"{name}: expected an integer >= 0{bound}, got {value!r}")
    return int(value)


def make_osr_split(y, n_known: int, split_idx: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Known and unknown classes of split ``split_idx``: ``known = sort(default_rng(seed + split_idx)
    .permutation(classes)[:n_known])`` (for digits with ``seed=0`` that is ``default_rng(i).permutation(10)[:6]``).

    Args:
        y: ``(n,)`` labels; the classes are its distinct values.
        n_known: number of known classes, ``1 <= n_known < n_classes``.
        split_idx, seed: integers >= 0.

    Returns:
        ``(known_classes, unknown_classes)``, sorted 1-D arrays.

    Raises:
        ValueError: ``n_known`` out of range, or bad ``split_idx``/``seed``.
    """
    classes = np.unique(np.asarray(y))
    if isinstance(n_known, bool) or not isinstance(n_known, numbers.Integral) or not 1 <= n_known < classes.size:
        raise ValueError(f"n_known: expected an integer in [1, {classes.size - 1}] (fewer than the "
                         f"{classes.size} classes), got {n_known!r}")
    rng = np.random.default_rng(_index("seed", seed) + _index("split_idx", split_idx))
    perm = classes[rng.permutation(classes.size)]
    return np.sort(perm[:n_known]), np.sort(perm[n_known:])


def _task(X, y, train_idx, test_idx, known, unknown) -> dict[str, np.ndarray]:
    remap = {int(c): i for i, c in enumerate(known)}
    is_known = np.isin(y, known)
    tr = train_idx[is_known[train_idx]]
    te_k = test_idx[is_known[test_idx]]
    te_u = test_idx[~is_known[test_idx]]
    relabel = np.vectorize(lambda c: remap[int(c)], otypes=[np.int64])
    return {"Xtr": X[tr], "ytr": relabel(y[tr]), "Xte_known": X[te_k], "yte_known": relabel(y[te_k]),
            "Xte_unknown": X[te_u], "known_classes": known, "unknown_classes": unknown}


def digits_osr(split_idx: int = 0, n_known: int = 6) -> dict[str, np.ndarray]:
    """The embedded digits OSR task (scikit-learn ``load_digits``, 1,797 8x8 images scaled to [0, 1]).

    Known classes from :func:`make_osr_split` (``seed=0``); ``idx = default_rng(100 + split_idx)
    .permutation(1797)``: the first 900 form the train pool (known classes only are kept), the other 897
    the test set. ``X`` arrays are ``(n, 64)`` float32.
    """
    _index("split_idx", split_idx)
    ds = datasets.load("digits")
    X = (ds.X / 16.0).astype(np.float32)
    known, unknown = make_osr_split(ds.y, n_known, split_idx, seed=0)
    idx = np.random.default_rng(100 + split_idx).permutation(ds.y.size)
    return _task(X, ds.y, idx[:900], idx[900:], known, unknown)


def make_blobs_osr(split_idx: int = 0, n_classes: int = 20, n_known: int = 12, dim: int = 32,
                   n_per_class: int = 100, spread: float = 4.0) -> dict[str, np.ndarray]:
    """Synthetic OSR task: ``n_classes`` unit-variance Gaussians in ``dim`` dimensions.

    Known means are drawn ``N(0, spread^2 I)``; each unknown mean is the midpoint of two random known
    means (so unknowns sit between known classes, the hard case). Half of every class is train, half test.
    Classes ``0..n_known-1`` are the known ones; everything is drawn from ``default_rng(split_idx)``.
    """
    _index("split_idx", split_idx)
    if isinstance(n_known, bool) or not isinstance(n_known, numbers.Integral) or not 1 <= n_known < n_classes:
        raise ValueError(f"n_known: expected an integer in [1, {n_classes - 1}], got {n_known!r}")
    for name, value in (("dim", dim), ("n_per_class", n_per_class)):
        _index(name, value)
    if n_per_class < 2 or dim < 1:
        raise ValueError(f"dim, n_per_class: expected dim >= 1 and n_per_class >= 2, got {dim}, {n_per_class}")
    rng = np.random.default_rng(split_idx)
    known_means = rng.normal(0.0, spread, size=(n_known, dim))
    pairs = np.array([rng.choice(n_known, size=2, replace=False) for _ in range(n_classes - n_known)])
    means = np.concatenate([known_means, known_means[pairs].mean(axis=1)]).reshape(n_classes, dim)
    y = np.repeat(np.arange(n_classes), n_per_class)
    X = (means[y] + rng.normal(size=(y.size, dim))).astype(np.float32)
    order = rng.permutation(y.size)
    half = y.size // 2
    return _task(X, y, order[:half], order[half:], np.arange(n_known), np.arange(n_known, n_classes))


def cifar_osr(split_idx: int = 0, variant: str = "cifar10", root: str | os.PathLike | None = None):
    """CIFAR OSR tasks from the local CIFAR python pickles (``--data-root``/``ICLR26_DATA``).

    ``"cifar10"``: 6 known / 4 unknown CIFAR-10 classes (:func:`make_osr_split`). ``"cifar+10"``,
    ``"cifar+50"``: 4 known CIFAR-10 classes, unknowns are 10 or 50 CIFAR-100 classes. Images are
    ``(n, 3, 32, 32)`` float32 in [0, 1]; train = the official train set, test = the official test set.

    Raises:
        FileNotFoundError: the pickles are not there (the message says where to put them).
        ValueError: unknown ``variant``.
    """
    if variant not in ("cifar10", "cifar+10", "cifar+50"):
        raise ValueError(f"variant: expected 'cifar10', 'cifar+10' or 'cifar+50', got {variant!r}")
    train, test = (datasets.load("cifar10", root=root, split=s) for s in ("train", "test"))
    X_tr, X_te = _chw(train.X), _chw(test.X)
    n_known = 6 if variant == "cifar10" else 4
    known, unknown = make_osr_split(train.y, n_known, split_idx)
    n_tr = train.y.size
    X = np.concatenate([X_tr, X_te])
    y = np.concatenate([train.y, test.y])
    task = _task(X, y, np.arange(n_tr), np.arange(n_tr, y.size), known, unknown)
    if variant != "cifar10":
        extra = datasets.load("cifar100", root=root, split="test")
        n_unknown = int(variant.split("+")[1])
        chosen = np.sort(np.random.default_rng(split_idx).permutation(100)[:n_unknown])
        task["Xte_unknown"] = _chw(extra.X[np.isin(extra.y, chosen)])
        task["unknown_classes"] = chosen
    return task


def _chw(images: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(images.transpose(0, 3, 1, 2), dtype=np.float32) / 255.0


def _read_folder(folder: pathlib.Path, classes: list[str], size: int) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    images, labels = [], []
    for label, name in enumerate(classes):
        for f in sorted((folder / name).rglob("*")):
            if f.suffix.lower() in IMAGE_SUFFIXES:
                with Image.open(f) as im:
                    images.append(np.asarray(im.convert("RGB").resize((size, size), Image.BILINEAR)))
                labels.append(label)
    if not images:
        raise FileNotFoundError(f"{folder}: no images ({', '.join(IMAGE_SUFFIXES)}) under its class folders")
    return _chw(np.stack(images)), np.asarray(labels, dtype=np.int64)


def image_folder_osr(name: str, split_idx: int = 0, n_known: int = 20, image_size: int = 64,
                     root: str | os.PathLike | None = None, known_classes=None) -> dict[str, np.ndarray]:
    """An OSR task from a local ImageFolder dataset ``<root>/<name>/{train,val}/<class>/<image>``.

    For TinyImageNet: ``name="tinyimagenet"``, 20 known / 180 unknown. For SSB sets pass the official
    ``known_classes`` (class-folder indices in sorted order, e.g. from the anchor repository's split
    pickles); otherwise :func:`make_osr_split` draws them. Needs Pillow. Images are resized to
    ``image_size`` and returned as ``(n, 3, image_size, image_size)`` float32 in [0, 1].

    Raises:
        FileNotFoundError: the folders are missing (the message names them).
    """
    base = datasets.data_root(root) / name
    train_dir, val_dir = base / "train", base / "val"
    if not train_dir.is_dir() or not val_dir.is_dir():
        raise FileNotFoundError(f"{name}: expected ImageFolder layout {train_dir}/<class>/*.jpg and "
                                f"{val_dir}/<class>/*.jpg (val images sorted into class folders). "
                                "Nothing is downloaded automatically.")
    classes = sorted(p.name for p in train_dir.iterdir() if p.is_dir())
    X_tr, y_tr = _read_folder(train_dir, classes, image_size)
    X_te, y_te = _read_folder(val_dir, classes, image_size)
    if known_classes is None:
        known, unknown = make_osr_split(y_tr, n_known, split_idx)
    else:
        known = np.sort(np.asarray(known_classes, dtype=np.int64))
        unknown = np.setdiff1d(np.arange(len(classes)), known)
    X = np.concatenate([X_tr, X_te])
    y = np.concatenate([y_tr, y_te])
    return _task(X, y, np.arange(y_tr.size), np.arange(y_tr.size, y.size), known, unknown)
