"""Image data as float tensors ``[N, C, H, W]`` in [0, 1] with int64 labels.

Embedded (no network): ``digits`` (scikit-learn's 8×8 digits, pixels/16, fixed stratified 70/30 split,
``random_state=0``: 1257 train / 540 test), ``digits16`` (the same images bilinearly up-sampled to
16×16) and ``bars`` (synthetic 8×8 bars, 4 classes). Local folders only (``root`` or ``$ICLR26_DATA``):
``cifar10``, ``cifar100`` (python pickle batches) and ``dvs_frames`` (an ``.npz`` holding
``frames [N, T, 2, H, W]`` and ``labels``).

``remap=(offset, scale)`` maps every pixel x to ``offset + scale·x`` (train and test alike), e.g. the spec's
criterion 3 setting ``(0.25, 0.5)``: no pixel is 0 or 1, so intensities vary and a Bernoulli (rate) draw of
every pixel has variance >= 0.1875.
"""
from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from iclr26_shared import datasets
from sklearn.model_selection import train_test_split

DATASETS = ("digits", "digits16", "bars", "cifar10", "cifar100", "dvs_frames")
CIFAR_MEAN = {"cifar10": (0.4914, 0.4822, 0.4465), "cifar100": (0.5071, 0.4865, 0.4409)}
CIFAR_STD = {"cifar10": (0.2470, 0.2435, 0.2616), "cifar100": (0.2673, 0.2564, 0.2762)}


class DatasetNotFoundError(FileNotFoundError):
    """A local dataset is missing; the message says what to put where. Nothing is downloaded."""


@dataclass(frozen=True)
class ImageData:
    """Train and test tensors: ``x_* [N, C, H, W]`` float32 in [0, 1], ``y_* [N]`` int64."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int

    @property
    def shape(self) -> tuple[int, int, int]:
        """(C, H, W)."""
        return tuple(self.x_train.shape[1:])


def remap_intensity(x: torch.Tensor, remap: tuple[float, float]) -> torch.Tensor:
    """``offset + scale·x`` for ``remap = (offset, scale)``; ``x`` any shape in [0, 1], the result in
    [offset, offset + scale] ⊆ [0, 1].

    Raises:
        ValueError: ``remap`` is not two numbers with offset >= 0, scale > 0 and offset + scale <= 1.
    """
    try:
        offset, scale = (float(v) for v in remap)
    except (TypeError, ValueError):
        offset = scale = float("nan")
    if not (offset >= 0 and scale > 0 and offset + scale <= 1):
        raise ValueError("remap: expected (offset, scale) with offset >= 0, scale > 0 and offset + scale <= 1, "
                         f"got {remap!r}")
    return offset + scale * x


def _tensors(x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.int64)


def digits(size: int = 8) -> ImageData:
    """scikit-learn digits as ``[N, 1, size, size]``; ``size`` 8 (native) or 16 (bilinear up-sampling)."""
    ds = datasets.load("digits")
    x = (ds.X / 16.0).reshape(-1, 1, 8, 8)
    idx_train, idx_test = train_test_split(np.arange(len(ds.y)), test_size=0.3, stratify=ds.y, random_state=0)
    xt, yt = _tensors(x, ds.y)
    if size != 8:
        xt = F.interpolate(xt, size=(size, size), mode="bilinear", align_corners=False).clamp(0, 1)
    idx_train, idx_test = torch.as_tensor(np.sort(idx_train)), torch.as_tensor(np.sort(idx_test))
    return ImageData(f"digits{'' if size == 8 else size}", xt[idx_train], yt[idx_train], xt[idx_test],
                     yt[idx_test], 10)


def bars(n_train: int = 512, n_test: int = 128, seed: int = 0, noise: float = 0.1) -> ImageData:
    """Synthetic 1×8×8 images holding one bar + N(0, noise²), clipped to [0, 1].

    Classes: 0 horizontal bar in the top half, 1 horizontal bottom, 2 vertical left, 3 vertical right.
    """
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = rng.integers(0, 4, size=n)
    pos = rng.integers(0, 4, size=n) + np.where(y % 2 == 1, 4, 0)
    x = np.zeros((n, 8, 8))
    horizontal = y < 2
    x[np.flatnonzero(horizontal), pos[horizontal], :] = 1.0
    x[np.flatnonzero(~horizontal), :, pos[~horizontal]] = 1.0
    x = np.clip(x + rng.normal(0.0, noise, size=x.shape), 0.0, 1.0)[:, None]
    xt, yt = _tensors(x, y)
    return ImageData("bars", xt[:n_train], yt[:n_train], xt[n_train:], yt[n_train:], 4)


def _cifar(name: str, root) -> ImageData:
    try:
        train, test = datasets.load(name, root=root, split="train"), datasets.load(name, root=root, split="test")
    except FileNotFoundError as err:
        raise DatasetNotFoundError(f"{name}: {err}") from None

    def to_tensor(ds):
        return torch.as_tensor(ds.X).permute(0, 3, 1, 2).float().div(255.0), torch.as_tensor(ds.y)

    (xtr, ytr), (xte, yte) = to_tensor(train), to_tensor(test)
    return ImageData(name, xtr, ytr, xte, yte, train.n_classes)


def dvs_frames(root=None, file: str = "dvs_frames.npz", test_fraction: float = 0.2) -> ImageData:
    """Pre-framed event data from ``<root>/<file>``: ``frames [N, T, 2, H, W]`` (scaled to [0, 1] per sample)
    and ``labels [N]``; returned with the time axis folded into channels (``[N, 2T, H, W]``)."""
    path = pathlib.Path(root or os.environ.get(datasets.DATA_ENV, "")) / file
    if not path.is_file():
        raise DatasetNotFoundError(f"dvs_frames: expected {str(path)!r}, an .npz holding frames [N, T, 2, H, W] and "
                                   "labels [N] (pass --data-root or set ICLR26_DATA). Nothing is downloaded.")
    with np.load(path) as npz:
        frames, labels = npz["frames"].astype(np.float32), npz["labels"].astype(np.int64)
    if frames.ndim != 5 or frames.shape[2] != 2:
        raise ValueError(f"dvs_frames: expected frames [N, T, 2, H, W], got shape {frames.shape}")
    peak = frames.reshape(len(frames), -1).max(1).clip(min=1e-12)
    frames = (frames / peak[:, None, None, None, None]).reshape(len(frames), -1, *frames.shape[3:])
    tr, te = train_test_split(np.arange(len(labels)), test_size=test_fraction, stratify=labels, random_state=0)
    xt, yt = _tensors(frames, labels)
    return ImageData("dvs_frames", xt[tr], yt[tr], xt[te], yt[te], int(labels.max()) + 1)


def load_images(name: str, root: str | os.PathLike | None = None, seed: int = 0,
                remap: tuple[float, float] | None = None) -> ImageData:
    """One of ``DATASETS`` (``seed`` only affects ``bars``), with every image (train and test) mapped by
    ``remap_intensity(x, remap)`` when ``remap = (offset, scale)`` is given.

    Raises:
        ValueError: unknown name or bad ``remap``. DatasetNotFoundError: a local dataset is missing.
    """
    if remap is not None:
        remap_intensity(torch.zeros(()), remap)  # refuse a bad remap before loading anything
    if name == "digits":
        data = digits(8)
    elif name == "digits16":
        data = digits(16)
    elif name == "bars":
        data = bars(seed=seed)
    elif name in ("cifar10", "cifar100"):
        data = _cifar(name, root)
    elif name == "dvs_frames":
        data = dvs_frames(root)
    else:
        raise ValueError(f"dataset: expected one of {DATASETS}, got {name!r}")
    if remap is None:
        return data
    return replace(data, x_train=remap_intensity(data.x_train, remap),
                               x_test=remap_intensity(data.x_test, remap))


class TensorBatches:
    """A re-iterable of ``(x, y)`` mini-batches; shuffled with its own seeded generator when ``shuffle``.

    Args:
        x: ``[N, ...]``; y: ``[N]``; batch_size: >= 1; shuffle: reshuffle at every pass;
        seed: the shuffling seed; device: where the batches are moved.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int = 64, shuffle: bool = False,
                 seed: int = 0, device: str | torch.device = "cpu"):
        if len(x) != len(y):
            raise ValueError(f"x, y: expected the same length, got {len(x)} and {len(y)}")
        if batch_size < 1:
            raise ValueError(f"batch_size: expected >= 1, got {batch_size}")
        self.x, self.y = x.to(device), y.to(device)
        self.batch_size, self.shuffle = int(batch_size), bool(shuffle)
        self._gen = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return -(-len(self.y) // self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        n = len(self.y)
        order = torch.randperm(n, generator=self._gen) if self.shuffle else torch.arange(n)
        order = order.to(self.x.device)
        for i in range(0, n, self.batch_size):
            idx = order[i:i + self.batch_size]
            yield self.x[idx], self.y[idx]
