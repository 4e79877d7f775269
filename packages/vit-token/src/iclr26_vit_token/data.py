"""``ShapesSeg``: procedural 32x32 images with dense shape masks and an 8-way global label, plus local loaders.

Each image has a textured background (diagonal stripes or random dots, two low-saturation colours)
and 2-4 objects (circle, square, triangle, cross) of circumscribed radius 4-9 px at random positions and
rotations, drawn in saturated random colours (colour carries no class information); later objects occlude
earlier ones. Dense label per pixel: 0 background, 1 circle, 2 square, 3 triangle, 4 cross. Global label:
``2 * (class of the object with the largest visible area) + (texture type)``, 8 classes, which needs global
aggregation while the masks need local detail. Rasterisation is vectorised numpy over the whole batch.
"""
from __future__ import annotations

import os
import pathlib
import zlib
from dataclasses import dataclass

import numpy as np

SHAPES = ("circle", "square", "triangle", "cross")
N_SEG_CLASSES = 1 + len(SHAPES)
N_GLOBAL_CLASSES = 2 * len(SHAPES)
IMG = 32


@dataclass
class ShapesSeg:
    """A batch of the procedural data.

    Attributes:
        images: ``(n, 32, 32, 3)`` uint8 RGB.
        masks: ``(n, 32, 32)`` uint8 dense labels in ``0..4``.
        labels: ``(n,)`` int64 global labels in ``0..7`` (-1: none, for user segmentation pairs).
        texture: ``(n,)`` int64 background type (0 stripes, 1 dots).
    """

    images: np.ndarray
    masks: np.ndarray
    labels: np.ndarray
    texture: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, index) -> ShapesSeg:
        """The images at ``index`` (any numpy index)."""
        return ShapesSeg(self.images[index], self.masks[index], self.labels[index], self.texture[index])


def _hsv_to_rgb(h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Vectorised HSV -> RGB, all inputs in [0, 1] with the same shape; returns ``(..., 3)``."""
    k = (np.stack([5.0, 3.0, 1.0], axis=-1) + h[..., None] * 6.0) % 6.0
    return v[..., None] - v[..., None] * s[..., None] * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)


def shape_masks(kind: np.ndarray, cx: np.ndarray, cy: np.ndarray, radius: np.ndarray, angle: np.ndarray,
                size: int = IMG) -> np.ndarray:
    """Boolean masks ``(n, size, size)`` of one shape per image; every argument is ``(n,)``.

    ``kind`` indexes ``SHAPES``; ``radius`` is the circumscribed radius of every shape. Circle: distance test;
    square: ``|u|, |v| <= r / sqrt(2)`` in the rotated frame; triangle (equilateral): three half-planes at the
    inradius ``r / 2``; cross: two perpendicular bars of width ``r / 2`` whose corners touch the circle.
    """
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    dx, dy = xx[None] - cx[:, None, None], yy[None] - cy[:, None, None]
    c, s = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    u, v = c * dx + s * dy, -s * dx + c * dy
    r = radius[:, None, None]
    circle = dx**2 + dy**2 <= r**2
    square = (np.abs(u) <= r / np.sqrt(2)) & (np.abs(v) <= r / np.sqrt(2))
    triangle = np.ones_like(circle)
    for k in range(3):
        phi = -np.pi / 2 + 2 * np.pi * k / 3
        triangle &= u * np.cos(phi) + v * np.sin(phi) <= r / 2
    half_len, half_w = r * np.sqrt(1 - 1 / 16), r / 4
    cross = ((np.abs(u) <= half_len) & (np.abs(v) <= half_w)) | ((np.abs(v) <= half_len) & (np.abs(u) <= half_w))
    k = kind[:, None, None]
    return np.where(k == 0, circle, np.where(k == 1, square, np.where(k == 2, triangle, cross)))


def _backgrounds(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Textured backgrounds ``(n, 32, 32, 3)`` float in [0, 1] and their texture type ``(n,)``."""
    texture = rng.integers(0, 2, n)
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float64)
    period = rng.uniform(4.0, 7.0, n)[:, None, None]
    theta = rng.uniform(0.0, np.pi, n)[:, None, None]
    phase = rng.uniform(0.0, 1.0, n)[:, None, None]
    stripes = (((xx * np.cos(theta) + yy * np.sin(theta)) / period + phase) % 1.0) < 0.5
    dots = rng.random((n, IMG, IMG)) < 0.25
    pattern = np.where(texture[:, None, None] == 0, stripes, dots)
    grey = rng.uniform(0.3, 0.7, (n, 1))
    c1 = np.clip(grey + rng.uniform(-0.06, 0.06, (n, 3)), 0, 1)
    c2 = np.clip(c1 + rng.choice([-1.0, 1.0], (n, 1)) * rng.uniform(0.12, 0.22, (n, 1)), 0, 1)
    bg = np.where(pattern[..., None], c2[:, None, None, :], c1[:, None, None, :])
    return bg, texture


def make_shapes_seg(n: int, seed: int = 0) -> ShapesSeg:
    """Generates ``n`` ShapesSeg images with ``numpy.random.default_rng(seed)``.

    Raises:
        ValueError: ``n`` < 1.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    image, texture = _backgrounds(rng, n)
    masks = np.zeros((n, IMG, IMG), np.uint8)
    owner = np.full((n, IMG, IMG), -1, np.int64)  # which object slot is visible at each pixel
    n_obj = rng.integers(2, 5, n)
    kinds = rng.integers(0, len(SHAPES), (n, 4))
    for j in range(4):
        active = n_obj > j
        m = shape_masks(kinds[:, j], rng.uniform(3.0, IMG - 3.0, n), rng.uniform(3.0, IMG - 3.0, n),
                        rng.uniform(4.0, 9.0, n), rng.uniform(0.0, 2 * np.pi, n)) & active[:, None, None]
        colour = _hsv_to_rgb(rng.random(n), rng.uniform(0.75, 1.0, n), rng.uniform(0.7, 1.0, n))
        image = np.where(m[..., None], colour[:, None, None, :], image)
        masks[m] = np.broadcast_to(kinds[:, j, None, None] + 1, m.shape)[m]
        owner[m] = j
    area = np.stack([(owner == j).sum(axis=(1, 2)) for j in range(4)], axis=1)  # (n, 4) visible pixels
    largest = kinds[np.arange(n), area.argmax(axis=1)]
    image = np.clip(image + rng.normal(0.0, 0.02, image.shape), 0.0, 1.0)
    return ShapesSeg(images=(image * 255).round().astype(np.uint8), masks=masks,
                     labels=(2 * largest + texture).astype(np.int64), texture=texture.astype(np.int64))


def shapes_seg_splits(sizes: dict[str, int], seed: int = 0) -> dict[str, ShapesSeg]:
    """Disjoint ShapesSeg sets, e.g. ``{"pretrain": 8000, "probe_train": 2000, "probe_test": 1000}``.

    The part ``name`` is generated from the seed sequence ``(seed, crc32(name))``: parts never share a random
    stream, and a part depends only on its name, size and ``seed`` (not on the other parts).
    """
    return {name: make_shapes_seg(n, seed=int(np.random.SeedSequence([seed, zlib.crc32(name.encode())])
                                              .generate_state(1)[0]))
            for name, n in sizes.items()}


def _read_png(path: pathlib.Path) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError("reading image folders needs pillow: pip install 'iclr26-vit-token[images]'") from err
    with Image.open(path) as im:
        return np.asarray(im)


def _folder(root: str | os.PathLike) -> pathlib.Path:
    path = pathlib.Path(root).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"root: folder {str(path)!r} does not exist; nothing is downloaded")
    return path


def load_image_folder(root: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """An ImageFolder layout ``root/<class>/*.png|jpg``: images ``(n, H, W, 3)`` uint8, labels ``(n,)``, class names.

    All images must share one size. Raises ``FileNotFoundError`` when the folder or its images are absent.
    """
    base = _folder(root)
    classes = sorted(p.name for p in base.iterdir() if p.is_dir())
    images, labels = [], []
    for c, name in enumerate(classes):
        for f in sorted((base / name).iterdir()):
            if f.suffix.lower() in (".png", ".jpg", ".jpeg"):
                images.append(_read_png(f)[..., :3])
                labels.append(c)
    if not images:
        raise FileNotFoundError(f"root: expected {base}/<class>/*.png (ImageFolder layout), found no images")
    return np.stack(images), np.asarray(labels, dtype=np.int64), classes


def load_seg_pairs(root: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """``root/images/*.png`` with integer masks ``root/masks/*.png`` of the same stem (e.g. a local ADE20k/VOC
    export): images ``(n, H, W, 3)`` uint8 and masks ``(n, H, W)`` int64.

    Raises:
        FileNotFoundError: folders absent, no images, or an image without its mask.
    """
    base = _folder(root)
    img_dir, mask_dir = base / "images", base / "masks"
    files = sorted(img_dir.glob("*.png")) if img_dir.is_dir() else []
    if not files or not mask_dir.is_dir():
        raise FileNotFoundError(f"root: expected {img_dir}/*.png and {mask_dir}/*.png (integer masks)")
    missing = [f.name for f in files if not (mask_dir / f.name).exists()]
    if missing:
        raise FileNotFoundError(f"root: masks missing in {mask_dir} for {missing[:5]}")
    images = np.stack([_read_png(f)[..., :3] for f in files])
    masks = np.stack([_read_png(mask_dir / f.name) for f in files]).astype(np.int64)
    return images, masks


def load_seg_split(root: str | os.PathLike) -> dict[str, ShapesSeg]:
    """A user segmentation dataset for the probes (``--data-root``): ``root/train`` and ``root/test``, each in the
    ``load_seg_pairs`` layout (``images/*.png`` RGB, ``masks/*.png`` integer labels of the same stem and size).

    Returns ``{"train", "test"}`` as ``ShapesSeg`` with the user's images and masks and no global labels (-1).

    Raises:
        FileNotFoundError: a part or its images/masks are absent (the message names the expected layout).
    """
    base = _folder(root)
    parts = {}
    for name in ("train", "test"):
        if not (base / name).is_dir():
            raise FileNotFoundError(f"root: expected {base / name}/images/*.png and {base / name}/masks/*.png")
        images, masks = load_seg_pairs(base / name)
        none = np.full(len(images), -1, dtype=np.int64)
        parts[name] = ShapesSeg(images, masks, none, none.copy())
    return parts
