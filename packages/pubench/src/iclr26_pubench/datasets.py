"""Binary source datasets for PU learning: embedded stand-ins and local-folder loaders.

``load_dataset(name, data_dir=None, random_state=0) -> BinaryDataset``. Embedded sets are
created on call (no network); real sets are read from ``data_dir`` (or ``$ICLR26_DATA``) and
raise ``DatasetNotFoundError`` naming the expected files when absent. Nothing downloads.
Embedded sets get a 70/30 stratified train/test split with ``random_state``; loaders with an
official split (MNIST, CIFAR-10, IMDb) keep it.
"""
from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from iclr26_shared.datasets import read_pickled_arrays
from sklearn import datasets as skd
from sklearn.model_selection import train_test_split

DATA_ENV = "ICLR26_DATA"


class DatasetNotFoundError(FileNotFoundError):
    """A local dataset was requested and its files are absent (the message lists what to put where)."""


@dataclass(frozen=True)
class BinaryDataset:
    """A binary source dataset before PU sampling.

    Attributes:
        name: registry key.
        X_train, X_test: features ``(n, d)`` float64 (tabular/text) or ``(n, C, H, W)`` float32 (images).
        y_train, y_test: labels ``(n,)`` int8 in {0, 1}; 1 = the positive class.
        modality: ``"tabular"``, ``"image"`` or ``"text"``.
        positive_classes, negative_classes: source classes mapped to 1 and 0.
        stand_in_for: for embedded stand-ins, the real dataset they imitate ("" for real data).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    modality: str
    positive_classes: tuple = (1,)
    negative_classes: tuple = (0,)
    stand_in_for: str = ""


@dataclass(frozen=True)
class DatasetInfo:
    """One line of ``list_datasets()``."""

    name: str
    kind: str  # "embedded" or "local"
    n: int | None
    d: str
    prior: float | None
    stand_in_for: str


_EMBEDDED: dict[str, Callable[[int], BinaryDataset]] = {}
_LOCAL: dict[str, Callable[[pathlib.Path], BinaryDataset]] = {}
_LOCAL_INFO: dict[str, tuple[str, float | None]] = {}


def _split(name, X, y, random_state, modality, stand_in, pos=(1,), neg=(0,), test_size=0.3) -> BinaryDataset:
    X_tr, X_te, y_tr, y_te = train_test_split(X, y.astype(np.int8), test_size=test_size, stratify=y,
                                              random_state=random_state)
    return BinaryDataset(name, X_tr, y_tr, X_te, y_te, modality, tuple(pos), tuple(neg), stand_in)


def _embedded(name):
    def wrap(fn):
        _EMBEDDED[name] = fn
        return fn

    return wrap


@_embedded("digits")
def _digits(random_state: int) -> BinaryDataset:
    X, y = skd.load_digits(return_X_y=True)
    return _split("digits", X / 16.0, (y % 2 == 0).astype(np.int8), random_state, "image", "MNIST",
                  pos=(0, 2, 4, 6, 8), neg=(1, 3, 5, 7, 9))


def _standardised(ds: BinaryDataset) -> BinaryDataset:
    mu, sd = ds.X_train.mean(0), ds.X_train.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return BinaryDataset(ds.name, (ds.X_train - mu) / sd, ds.y_train, (ds.X_test - mu) / sd, ds.y_test,
                         ds.modality, ds.positive_classes, ds.negative_classes, ds.stand_in_for)


@_embedded("breast_cancer")
def _breast_cancer(random_state: int) -> BinaryDataset:
    X, y = skd.load_breast_cancer(return_X_y=True)
    return _standardised(_split("breast_cancer", X, (y == 0).astype(np.int8), random_state, "tabular",
                                "small tabular", pos=("malignant",), neg=("benign",)))


@_embedded("wine")
def _wine(random_state: int) -> BinaryDataset:
    X, y = skd.load_wine(return_X_y=True)
    return _standardised(_split("wine", X, (y == 0).astype(np.int8), random_state, "tabular",
                                "tiny tabular smoke test", neg=(1, 2)))


@_embedded("spam_like")
def _spam_like(random_state: int) -> BinaryDataset:
    X, y = skd.make_classification(n_samples=4601, n_features=57, n_informative=20, n_redundant=10,
                                   weights=[0.606], flip_y=0.03, class_sep=1.0, random_state=0)
    X[:, ::2] = np.log1p(np.abs(X[:, ::2]))  # skewed, word-frequency-like columns
    return _split("spam_like", X, y.astype(np.int8), random_state, "tabular", "Spambase")


@_embedded("connect4_like")
def _connect4_like(random_state: int) -> BinaryDataset:
    rng = np.random.default_rng(0)
    cells = rng.choice(3, size=(10000, 42), p=[0.4, 0.3, 0.3])
    X = np.eye(3)[cells].reshape(10000, 126)
    score = X @ rng.normal(size=126)
    y = (score > np.quantile(score, 0.342)).astype(np.int8)
    flip = rng.random(10000) < 0.03
    y[flip] = 1 - y[flip]
    return _split("connect4_like", X, y, random_state, "tabular", "Connect-4")


@_embedded("embed_like")
def _embed_like(random_state: int) -> BinaryDataset:
    rng = np.random.default_rng(0)
    d, n = 384, 10000
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    y = (np.arange(n) % 2).astype(np.int8)
    topics = rng.normal(size=(2, 8, d)) / np.sqrt(d)  # 8 sub-topic offsets per class
    centre = np.where(y[:, None] == 1, 0.35, -0.35) * u
    X = centre + topics[y, rng.integers(8, size=n)] + rng.normal(scale=np.sqrt(0.05 / d), size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return _split("embed_like", X, y, random_state, "text", "IMDb / 20News SBERT embeddings")


def gauss2_sample(n: int, prior: float = 0.4,
                  rng: np.random.Generator | int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of the ``gauss2`` model: x|y=1 ~ N((1,1), I), x|y=0 ~ N((-1,-1), I).

    Exactly ``round(prior * n)`` positives. Returns ``(X (n, 2) float64, y (n,) int8)``.
    """
    rng = np.random.default_rng(rng)
    y = np.zeros(n, dtype=np.int8)
    y[: int(round(prior * n))] = 1
    y = rng.permutation(y)
    X = np.where(y[:, None] == 1, 1.0, -1.0) + rng.normal(size=(n, 2))
    return X, y


@_embedded("gauss2")
def _gauss2(random_state: int) -> BinaryDataset:
    X, y = gauss2_sample(4000, 0.4, 0)
    return _split("gauss2", X, y, random_state, "tabular", "closed-form checks")


def _local(name: str, d: str, prior: float | None = None):
    def wrap(fn):
        _LOCAL[name] = fn
        _LOCAL_INFO[name] = (d, prior)
        return fn

    return wrap


def _need(folder: pathlib.Path, name: str, alternatives: list[list[str]]) -> list[pathlib.Path]:
    """The first complete file set among ``alternatives`` (each file may also exist as ``.gz``)."""
    for files in alternatives:
        found = [folder / f if (folder / f).exists() else folder / f"{f}.gz" for f in files]
        if all(p.exists() for p in found):
            return found
    wanted = " or ".join(str(a) for a in alternatives)
    raise DatasetNotFoundError(f"{name}: expected {wanted} in data_dir {str(folder)!r}; nothing is downloaded")


def _read_idx(path: pathlib.Path) -> np.ndarray:
    from iclr26_shared.datasets import read_idx

    return read_idx(path.with_suffix("") if path.suffix == ".gz" else path)


def _idx_or_npz(folder: pathlib.Path, name: str):
    files = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
    for sub in (folder / name, folder / name.upper(), folder):
        if (sub / f"{name}.npz").exists():
            with np.load(sub / f"{name}.npz") as z:
                return z["x_train"], z["y_train"], z["x_test"], z["y_test"]
        if all((sub / f).exists() or (sub / f"{f}.gz").exists() for f in files):
            paths = _need(sub, name, [files])
            return tuple(_read_idx(p) for p in paths)
    raise DatasetNotFoundError(f"{name}: expected the four IDX files {files} (optionally .gz) or {name}.npz "
                               f"in {str(folder / name)!r} or {str(folder)!r}; nothing is downloaded")


def _image_dataset(name, arrays, positive, stand_in="") -> BinaryDataset:
    X_tr, y_tr, X_te, y_te = arrays
    pos = np.asarray(sorted(positive))

    def prep(X):
        X = np.asarray(X, dtype=np.float32) / 255.0
        return X[:, None] if X.ndim == 3 else X.transpose(0, 3, 1, 2)

    neg = tuple(sorted(set(np.unique(y_tr).tolist()) - set(positive)))
    return BinaryDataset(name, prep(X_tr), np.isin(y_tr, pos).astype(np.int8), prep(X_te),
                         np.isin(y_te, pos).astype(np.int8), "image", tuple(positive), neg, stand_in)


@_local("mnist", "1x28x28", 0.49)
def _mnist(folder: pathlib.Path) -> BinaryDataset:
    return _image_dataset("mnist", _idx_or_npz(folder, "mnist"), (0, 2, 4, 6, 8))


@_local("fashion_mnist", "1x28x28", 0.5)
def _fashion_mnist(folder: pathlib.Path) -> BinaryDataset:
    return _image_dataset("fashion_mnist", _idx_or_npz(folder, "fashion_mnist"), (0, 2, 3, 4, 6))


@_local("cifar10", "3x32x32", 0.4)
def _cifar10(folder: pathlib.Path) -> BinaryDataset:
    sub = folder / "cifar-10-batches-py"
    paths = _need(sub, "cifar10", [[f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]])

    def read(ps):
        parts = [read_pickled_arrays(p) for p in ps]
        X = np.concatenate([q[b"data"] for q in parts]).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return X, np.concatenate([q[b"labels"] for q in parts])

    (X_tr, y_tr), (X_te, y_te) = read(paths[:5]), read(paths[5:])
    return _image_dataset("cifar10", (X_tr, y_tr, X_te, y_te), (0, 1, 8, 9))


def _tabular_split(name, X, y, pos, neg, test_size=0.2) -> BinaryDataset:
    return _standardised(_split(name, X.astype(np.float64), y, 0, "tabular", "", pos, neg, test_size))


@_local("spambase", "57", 0.394)
def _spambase(folder: pathlib.Path) -> BinaryDataset:
    (path,) = _need(folder, "spambase", [["spambase.data"]])
    raw = np.loadtxt(path, delimiter=",")
    return _tabular_split("spambase", raw[:, :-1], raw[:, -1].astype(np.int8), ("spam",), ("not spam",))


def _one_hot(columns: np.ndarray) -> np.ndarray:
    blocks = [(col[:, None] == np.unique(col)[None]).astype(np.float64) for col in columns.T]
    return np.concatenate(blocks, axis=1)


@_local("connect4", "126", 0.658)
def _connect4(folder: pathlib.Path) -> BinaryDataset:
    (path,) = _need(folder, "connect4", [["connect-4.data"]])
    rows = np.array([line.strip().split(",") for line in path.read_text().splitlines() if line.strip()])
    cells = rows[:, :42]
    X = np.concatenate([(cells == v).astype(np.float64) for v in ("b", "x", "o")], axis=1)
    return _tabular_split("connect4", X, (rows[:, 42] == "win").astype(np.int8), ("win",), ("loss", "draw"))


@_local("mushrooms", "one-hot", 0.482)
def _mushrooms(folder: pathlib.Path) -> BinaryDataset:
    (path,) = _need(folder, "mushrooms", [["agaricus-lepiota.data"]])
    rows = np.array([line.strip().split(",") for line in path.read_text().splitlines() if line.strip()])
    return _tabular_split("mushrooms", _one_hot(rows[:, 1:]), (rows[:, 0] == "p").astype(np.int8),
                          ("poisonous",), ("edible",))


def _embeddings(name: str, folder: pathlib.Path) -> BinaryDataset:
    sub = folder / name
    paths = _need(sub, name, [["X_train.npy", "y_train.npy", "X_test.npy", "y_test.npy"]])
    X_tr, y_tr, X_te, y_te = (np.load(p) for p in paths)
    return BinaryDataset(name, X_tr.astype(np.float64), y_tr.astype(np.int8), X_te.astype(np.float64),
                         y_te.astype(np.int8), "text")


@_local("imdb_sbert", "384", 0.5)
def _imdb(folder: pathlib.Path) -> BinaryDataset:
    return _embeddings("imdb_sbert", folder)


@_local("news20_sbert", "384", 0.56)
def _news20(folder: pathlib.Path) -> BinaryDataset:
    return _embeddings("news20_sbert", folder)


ALZHEIMER_CLASSES = ("NonDemented", "VeryMildDemented", "MildDemented", "ModerateDemented")


@_local("alzheimer_mri", "1x128x128", 0.5)
def _alzheimer(folder: pathlib.Path) -> BinaryDataset:
    base = folder / "alzheimer_mri"
    parts = [base / "train", base / "test"] if (base / "train").is_dir() else [base]
    if not all((p / c).is_dir() for p in parts for c in ALZHEIMER_CLASSES):
        raise DatasetNotFoundError(f"alzheimer_mri: expected folders {list(ALZHEIMER_CLASSES)} of .jpg images in "
                                   f"{str(base)!r} (optionally under train/ and test/); nothing is downloaded")
    from PIL import Image

    def read(p):
        X, y = [], []
        for k, cls in enumerate(ALZHEIMER_CLASSES):
            for f in sorted((p / cls).glob("*.jpg")):
                X.append(np.asarray(Image.open(f).convert("L").resize((128, 128)), dtype=np.float32) / 255.0)
                y.append(int(k == 0))
        return np.stack(X)[:, None], np.asarray(y, dtype=np.int8)

    if len(parts) == 2:
        (X_tr, y_tr), (X_te, y_te) = read(parts[0]), read(parts[1])
        return BinaryDataset("alzheimer_mri", X_tr, y_tr, X_te, y_te, "image", ("NonDemented",), ALZHEIMER_CLASSES[1:])
    X, y = read(parts[0])
    return _split("alzheimer_mri", X, y, 0, "image", "", ("NonDemented",), ALZHEIMER_CLASSES[1:], 0.2)


FILE_SUFFIXES = (".npz", ".csv")


def is_file_dataset(name) -> bool:
    """Whether ``name`` names a user's own data file (``.npz`` or ``.csv``) rather than a registry key."""
    return isinstance(name, (str, os.PathLike)) and pathlib.Path(name).suffix.lower() in FILE_SUFFIXES


def load_file_dataset(path: str | os.PathLike, random_state: int = 0) -> BinaryDataset:
    """A user's own binary data from one file, split 70/30 stratified with ``random_state``.

    ``.npz``: arrays ``X`` ``(n, ...)`` and ``y`` ``(n,)``, or ``X_train, y_train, X_test, y_test`` (kept as
    given). ``.csv``: comma-separated numbers, an optional header row; the label is the column named ``y`` in
    the header, else the last column. Labels must be in {0, 1} (1 = the positive class).

    Raises:
        DatasetNotFoundError: the file is absent. ValueError: wrong suffix, missing arrays, non-binary labels.
    """
    from .data import check_binary_labels

    path = pathlib.Path(path).expanduser()
    if path.suffix.lower() not in FILE_SUFFIXES:
        raise ValueError(f"data: expected a .npz or .csv file, got {str(path)!r}")
    if not path.is_file():
        raise DatasetNotFoundError(f"data: expected a file with X and y at {str(path)!r}, none found")
    if path.suffix.lower() == ".npz":
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        if {"X_train", "y_train", "X_test", "y_test"} <= set(arrays):
            return BinaryDataset(path.name, arrays["X_train"], check_binary_labels(arrays["y_train"], "y_train"),
                                 arrays["X_test"], check_binary_labels(arrays["y_test"], "y_test"), "tabular")
        if not {"X", "y"} <= set(arrays):
            raise ValueError(f"data: expected arrays X and y (or X_train, y_train, X_test, y_test) in {path.name}, "
                             f"got {sorted(arrays)}")
        X, y = arrays["X"], arrays["y"]
    else:
        first = path.read_text(encoding="utf-8").split("\n", 1)[0].split(",")
        try:
            [float(v) for v in first]
            header = None
        except ValueError:
            header = [v.strip() for v in first]
        table = np.loadtxt(path, delimiter=",", skiprows=0 if header is None else 1, ndmin=2)
        col = header.index("y") if header is not None and "y" in header else table.shape[1] - 1
        X, y = np.delete(table, col, axis=1), table[:, col]
    y = check_binary_labels(y, "y")
    if len(X) != len(y):
        raise ValueError(f"data: expected X and y of one length, got {len(X)} and {len(y)} rows")
    return _split(path.name, np.asarray(X, dtype=np.float64), y, random_state, "tabular", "")


def dataset_names() -> list[str]:
    """Every key ``load_dataset`` accepts, embedded first."""
    return list(_EMBEDDED) + list(_LOCAL)


def load_dataset(name: str, data_dir: str | os.PathLike | None = None, random_state: int = 0) -> BinaryDataset:
    """Loads a binary source dataset.

    Args:
        name: one of ``dataset_names()``, or the path of a user's ``.npz`` / ``.csv`` file (``load_file_dataset``).
        data_dir: folder of local datasets (default ``$ICLR26_DATA``); embedded sets ignore it.
        random_state: seed of the 70/30 stratified train/test split of embedded sets.

    Raises:
        ValueError: unknown ``name``.
        DatasetNotFoundError: a local dataset's files are absent.
    """
    if name in _EMBEDDED:
        return _EMBEDDED[name](int(random_state))
    if is_file_dataset(name):
        return load_file_dataset(name, random_state)
    if name not in _LOCAL:
        raise ValueError(f"dataset: expected one of {dataset_names()}, got {name!r}")
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_ENV)
    if chosen is None or not pathlib.Path(chosen).expanduser().is_dir():
        raise DatasetNotFoundError(f"{name}: a local dataset; pass data_dir= (CLI: --data-root) or set {DATA_ENV} "
                                   f"to a folder holding its files (searched: {chosen!r}); nothing is downloaded")
    return _LOCAL[name](pathlib.Path(chosen).expanduser())


def list_datasets() -> list[DatasetInfo]:
    """Name, embedded or local, size, dimension, prior and stand-in of every dataset (embedded ones are built)."""
    out = []
    for name in _EMBEDDED:
        ds = _EMBEDDED[name](0)
        n = len(ds.y_train) + len(ds.y_test)
        prior = float((ds.y_train.sum() + ds.y_test.sum()) / n)
        out.append(DatasetInfo(name, "embedded", n, "x".join(map(str, ds.X_train.shape[1:])), prior, ds.stand_in_for))
    for name, (d, prior) in _LOCAL_INFO.items():
        out.append(DatasetInfo(name, "local", None, d, prior, ""))
    return out
