"""Datasets: an embedded registry plus local-folder loaders that never download.

``load(name, root=None, **options) -> Dataset``. Embedded sets need no network:
scikit-learn's shipped data (``digits``, ``breast_cancer``, ``wine``, ``iris``),
generators (``blobs``, ``moons``, ``gaussian_mixture``) and the UCI
multiple-features digits shipped inside this package (``mfeat``, 6 views;
``mfeat_uci3``, the fou/fac/kar views). Standard sets (``mnist``,
``fashion_mnist``, ``cifar10``, ``cifar100``) are read from a local folder given as
``root`` or through the ``ICLR26_DATA`` environment variable; when it is missing or
incomplete the error says which files are expected where.
"""
from __future__ import annotations

import gzip
import os
import pathlib
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources

import numpy as np
from sklearn import datasets as skd
from sklearn.model_selection import train_test_split

DATA_ENV = "ICLR26_DATA"


@dataclass(frozen=True)
class Dataset:
    """A loaded dataset.

    Attributes:
        name: registry name.
        X: features ``(n, d)`` float64 for tabular sets; images ``(n, H, W)`` (MNIST) or
            ``(n, H, W, 3)`` (CIFAR) uint8 for image sets; for multi-view sets the
            column-wise concatenation of ``views``.
        y: labels ``(n,)`` int64 in ``0..n_classes-1``.
        n_classes: number of classes.
        views: for multi-view sets, the per-view arrays ``(n, d_v)`` float64; else ``None``.
        view_names: names of the views, aligned with ``views``.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    n_classes: int
    views: tuple[np.ndarray, ...] | None = None
    view_names: tuple[str, ...] | None = None


_REGISTRY: dict[str, Callable[..., Dataset]] = {}


def register(name: str):
    """Decorator adding a loader ``f(root=None, **options) -> Dataset`` to the registry."""

    def wrap(fn):
        _REGISTRY[name] = fn
        return fn

    return wrap


def available() -> list[str]:
    """Names accepted by ``load``."""
    return sorted(_REGISTRY)


def load(name: str, root: str | os.PathLike | None = None, **options) -> Dataset:
    """Loads a registered dataset.

    Args:
        name: one of ``available()``.
        root: folder holding local datasets (defaults to ``$ICLR26_DATA``); ignored by embedded sets.
        **options: loader options, e.g. ``n_samples``/``seed`` for generators, ``split`` for MNIST/CIFAR.

    Raises:
        ValueError: unknown ``name``.
        FileNotFoundError: a local dataset's folder or files are missing (the message says what to put where).
    """
    if name not in _REGISTRY:
        raise ValueError(f"name: expected one of {available()}, got {name!r}")
    return _REGISTRY[name](root=root, **options)


def _labelled(name: str, X, y, **extra) -> Dataset:
    y = np.asarray(y, dtype=np.int64)
    return Dataset(name=name, X=np.asarray(X), y=y, n_classes=int(y.max()) + 1, **extra)


def _sklearn_loader(name: str, fn) -> None:
    @register(name)
    def _load(root=None) -> Dataset:
        X, y = fn(return_X_y=True)
        return _labelled(name, X.astype(np.float64), y)


for _name, _fn in {"digits": skd.load_digits, "breast_cancer": skd.load_breast_cancer,
                   "wine": skd.load_wine, "iris": skd.load_iris}.items():
    _sklearn_loader(_name, _fn)


@register("blobs")
def _blobs(root=None, n_samples: int = 1000, n_features: int = 2, centers: int = 3,
           cluster_std: float = 1.0, seed: int = 0) -> Dataset:
    X, y = skd.make_blobs(n_samples=n_samples, n_features=n_features, centers=centers,
                          cluster_std=cluster_std, random_state=seed)
    return _labelled("blobs", X, y)


@register("moons")
def _moons(root=None, n_samples: int = 1000, noise: float = 0.1, seed: int = 0) -> Dataset:
    X, y = skd.make_moons(n_samples=n_samples, noise=noise, random_state=seed)
    return _labelled("moons", X, y)


@register("gaussian_mixture")
def _gaussian_mixture(root=None, n_samples: int = 1000, n_features: int = 2, n_components: int = 3,
                      separation: float = 3.0, weights=None, seed: int = 0) -> Dataset:
    """Isotropic unit-variance Gaussians with means drawn from ``N(0, separation^2 I)``."""
    if n_components < 1:
        raise ValueError(f"n_components: expected >= 1, got {n_components}")
    rng = np.random.default_rng(seed)
    w = np.full(n_components, 1.0 / n_components) if weights is None else np.asarray(weights, float)
    if w.shape != (n_components,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError(f"weights: expected {n_components} non-negative numbers summing to 1, got {weights!r}")
    means = rng.normal(0.0, separation, size=(n_components, n_features))
    y = rng.choice(n_components, size=n_samples, p=w)
    X = means[y] + rng.normal(size=(n_samples, n_features))
    return _labelled("gaussian_mixture", X, y)


MFEAT_VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")


def _mfeat(name: str, views: tuple[str, ...]) -> Dataset:
    with resources.files("iclr26_shared").joinpath("data/mfeat.npz").open("rb") as fh, np.load(fh) as npz:
        arrays = tuple(npz[v].astype(np.float64) for v in views)
        y = npz["labels"]
    return _labelled(name, np.concatenate(arrays, axis=1), y, views=arrays, view_names=views)


@register("mfeat")
def _mfeat_all(root=None) -> Dataset:
    """UCI multiple-features digits: 2,000 x 6 views (fou 76, fac 216, kar 64, pix 240, zer 47, mor 6), 10 classes.

    Rows are sorted by digit (200 per class). UCI data, CC BY 4.0.
    """
    return _mfeat("mfeat", MFEAT_VIEWS)


@register("mfeat_uci3")
def _mfeat_uci3(root=None) -> Dataset:
    """The usual 3-view "UCI digits" subset of mfeat: fou (76), fac (216), kar (64)."""
    return _mfeat("mfeat_uci3", ("fou", "fac", "kar"))


def data_root(root: str | os.PathLike | None = None) -> pathlib.Path:
    """The folder for local datasets: ``root`` if given, else ``$ICLR26_DATA``.

    Raises:
        FileNotFoundError: neither is set, or the folder does not exist.
    """
    chosen = root if root is not None else os.environ.get(DATA_ENV)
    if chosen is None:
        raise FileNotFoundError(f"no data folder: pass root=/path (CLI: --data-root) or set {DATA_ENV}")
    path = pathlib.Path(chosen).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"data folder {str(path)!r} does not exist")
    return path


def _find_files(name: str, root, subdirs: tuple[str, ...], files: tuple[str, ...], hint: str) -> pathlib.Path:
    """The first of ``root/<subdir>`` that holds every file in ``files`` (each may also be ``.gz``)."""
    base = data_root(root)
    for sub in subdirs:
        folder = base / sub
        if all((folder / f).exists() or (folder / f"{f}.gz").exists() for f in files):
            return folder
    tried = ", ".join(str(base / s) for s in subdirs)
    raise FileNotFoundError(
        f"{name}: expected the files {list(files)} (optionally .gz) in one of: {tried}. {hint} "
        "Nothing is downloaded automatically.")


def _open(path: pathlib.Path):
    return gzip.open(f"{path}.gz", "rb") if not path.exists() else open(path, "rb")


def read_idx(path: pathlib.Path) -> np.ndarray:
    """Reads an IDX file (the MNIST format; ``path`` or ``path.gz``) into a uint8 array."""
    with _open(path) as fh:
        data = fh.read()
    zero, dtype_code, ndim = data[0:2], data[2], data[3]
    if zero != b"\x00\x00" or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _idx_loader(name: str, folder_names: tuple[str, ...]) -> None:
    files = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    subdirs = tuple(s for f in folder_names for s in (f, f"{f}/raw")) + (".",)

    @register(name)
    def _load(root=None, split: str = "train") -> Dataset:
        """Images ``(n, 28, 28)`` uint8 and labels; ``split`` is ``"train"`` (60,000) or ``"test"`` (10,000)."""
        if split not in ("train", "test"):
            raise ValueError(f"split: expected 'train' or 'test', got {split!r}")
        folder = _find_files(name, root, subdirs, files,
                             "Get them from the dataset's official distribution (IDX format).")
        prefix = "train" if split == "train" else "t10k"
        images = read_idx(folder / f"{prefix}-images-idx3-ubyte")
        labels = read_idx(folder / f"{prefix}-labels-idx1-ubyte")
        return Dataset(name=name, X=images, y=labels.astype(np.int64), n_classes=10)


_idx_loader("mnist", ("mnist", "MNIST"))
_idx_loader("fashion_mnist", ("fashion_mnist", "FashionMNIST", "fashion-mnist"))


# What a dataset pickle may construct: numpy arrays and dtypes (under numpy 1's and 2's module names) and bytes
# (protocol 2 writes them through codecs.encode), nothing else; containers, numbers and strings need no lookup.
_PICKLE_ALLOWED = {(f"numpy.{core}.{mod}", name) for core in ("core", "_core")
                   for mod, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"),
                                     ("numeric", "_frombuffer"))} | {("numpy", "ndarray"), ("numpy", "dtype"),
                                                                     ("_codecs", "encode")}


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in _PICKLE_ALLOWED:
            raise pickle.UnpicklingError(f"refusing to construct {module}.{name}: only numpy arrays are allowed")
        return super().find_class(module, name)


def read_pickled_arrays(path: str | os.PathLike) -> dict:
    """A dataset pickle (CIFAR's python batches) read without running code: only dicts, lists, numbers,
    strings, bytes and numpy arrays may be in it; anything else raises ``ValueError`` naming the file."""
    with open(path, "rb") as fh:
        try:
            return _ArrayUnpickler(fh, encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, AttributeError) as err:
            raise ValueError(f"{path}: not a dataset pickle of plain data and numpy arrays ({err})") from None


@register("cifar10")
def _cifar10(root=None, split: str = "train") -> Dataset:
    """CIFAR-10 from the python pickle batches: images ``(n, 32, 32, 3)`` uint8, 10 classes."""
    if split not in ("train", "test"):
        raise ValueError(f"split: expected 'train' or 'test', got {split!r}")
    batches = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)
    folder = _find_files("cifar10", root, ("cifar-10-batches-py", "cifar10"), batches,
                         "Unpack cifar-10-python.tar.gz there.")
    parts = [read_pickled_arrays(folder / b) for b in (batches[:5] if split == "train" else batches[5:])]
    return _cifar_dataset("cifar10", parts, b"labels", 10)


@register("cifar100")
def _cifar100(root=None, split: str = "train", label: str = "fine") -> Dataset:
    """CIFAR-100 from the python pickles: images ``(n, 32, 32, 3)`` uint8; ``label`` fine (100) or coarse (20)."""
    if split not in ("train", "test"):
        raise ValueError(f"split: expected 'train' or 'test', got {split!r}")
    if label not in ("fine", "coarse"):
        raise ValueError(f"label: expected 'fine' or 'coarse', got {label!r}")
    folder = _find_files("cifar100", root, ("cifar-100-python", "cifar100"), ("train", "test"),
                         "Unpack cifar-100-python.tar.gz there.")
    part = read_pickled_arrays(folder / split)
    return _cifar_dataset("cifar100", [part], f"{label}_labels".encode(), 100 if label == "fine" else 20)


def _cifar_dataset(name: str, parts: list[dict], key: bytes, n_classes: int) -> Dataset:
    images = np.concatenate([p[b"data"] for p in parts]).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    labels = np.concatenate([np.asarray(p[key]) for p in parts]).astype(np.int64)
    return Dataset(name=name, X=np.ascontiguousarray(images, dtype=np.uint8), y=labels, n_classes=n_classes)


def stratified_split_indices(y, fractions: Mapping[str, float], seed: int = 0) -> dict[str, np.ndarray]:
    """Stratified, disjoint index sets covering ``range(len(y))``.

    Args:
        y: labels ``(n,)``.
        fractions: name -> fraction, e.g. ``{"train": 0.6, "cal": 0.2, "test": 0.2}``; positive, summing to 1.
        seed: random seed.

    Returns:
        name -> sorted int64 indices, in the order of ``fractions``; each class keeps
        (up to rounding) the same proportion in every part.

    Raises:
        ValueError: fractions not positive or not summing to 1, or ``y`` not 1-D.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
    names, fr = list(fractions), np.asarray(list(fractions.values()), dtype=float)
    if len(names) < 2 or np.any(fr <= 0) or not np.isclose(fr.sum(), 1.0):
        raise ValueError(f"fractions: expected two or more positive fractions summing to 1, got {dict(fractions)}")
    out: dict[str, np.ndarray] = {}
    rest, remaining = np.arange(len(y)), 1.0
    for i, name in enumerate(names[:-1]):
        share = fr[i] / remaining
        take, rest = train_test_split(rest, train_size=share, stratify=y[rest], random_state=seed + i)
        out[name] = np.sort(take)
        remaining -= fr[i]
    out[names[-1]] = np.sort(rest)
    return out


def stratified_split(X, y, fractions: Mapping[str, float], seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``stratified_split_indices`` applied to ``X`` (rows) and ``y``: name -> ``(X_part, y_part)``."""
    X, y = np.asarray(X), np.asarray(y)
    if len(X) != len(y):
        raise ValueError(f"X, y: expected the same number of rows, got {len(X)} and {len(y)}")
    return {k: (X[i], y[i]) for k, i in stratified_split_indices(y, fractions, seed).items()}
