"""Rendering a scene through the camera: a uint8 (S, S, 3) image, 2x2 supersampled.

Each pixel's sub-samples are mapped back to the table with ``Hcam^-1`` and tested against the
shapes in table coordinates, so what is drawn is exactly what the homography projects.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .camera import Camera
from .scene import Scene, TableObject

RGB = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "yellow": (235, 205, 30),
       "purple": (140, 50, 180), "orange": (245, 130, 20)}
FLOOR = np.array([70.0, 70.0, 75.0])
PLATE_RGB = np.array([250.0, 250.0, 250.0])
SUPERSAMPLE = 2


@lru_cache(maxsize=8)
def _table_grid(camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Table coordinates (2, S*k, S*k) of every sub-sample centre (k = ``SUPERSAMPLE``)."""
    n = camera.size * SUPERSAMPLE
    c = (np.arange(n) + 0.5) / SUPERSAMPLE
    u, v = np.meshgrid(c, c)
    xy = camera.pixel_to_table(np.stack([u, v], -1))
    return xy[..., 0], xy[..., 1]


def shape_mask(obj: TableObject, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Boolean mask of the table points ``(x, y)`` covered by ``obj`` (square, circle or upward triangle).

    The triangle is equilateral with its centroid at the object centre and circumradius ``0.6 * size``.
    """
    dx, dy = x - obj.x, y - obj.y
    if obj.shape == "square":
        return (np.abs(dx) <= obj.size / 2) & (np.abs(dy) <= obj.size / 2)
    if obj.shape == "circle":
        return dx * dx + dy * dy <= (obj.size / 2) ** 2
    r = 0.6 * obj.size  # circumradius; the inradius is r / 2
    inside = dy >= -r / 2
    for angle in (np.pi / 6, 5 * np.pi / 6):  # the two upper edges' outward normals
        inside &= dx * np.cos(angle) + dy * np.sin(angle) <= r / 2
    return inside


def _downsample(a: np.ndarray) -> np.ndarray:
    n = a.shape[0] // SUPERSAMPLE
    return a.reshape(n, SUPERSAMPLE, n, SUPERSAMPLE, *a.shape[2:]).mean(axis=(1, 3))


def render(scene: Scene, camera: Camera) -> np.ndarray:
    """Renders ``scene``: wood-like table, plate ring, objects.

    Returns:
        uint8 array (S, S, 3), S = ``camera.size``.
    """
    x, y = _table_grid(camera)
    rng = np.random.default_rng(scene.texture_seed)
    phase, freq, tone = rng.uniform(0, 2 * np.pi), rng.uniform(25, 40), rng.uniform(-10, 10)
    grain = np.sin(freq * (x + 0.15 * np.sin(7 * y + phase)) + phase)
    img = np.array([205.0, 170.0, 125.0]) + tone + 12.0 * grain[..., None]
    img += rng.normal(0.0, 4.0, size=img.shape[:2])[..., None]
    on_table = (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)
    img[~on_table] = FLOOR
    if scene.plate is not None:
        d2 = (x - scene.plate[0]) ** 2 + (y - scene.plate[1]) ** 2
        img[d2 <= 0.075**2] = PLATE_RGB * 0.75
        img[d2 <= 0.06**2] = PLATE_RGB
    for obj in scene.objects:
        img[shape_mask(obj, x, y)] = RGB[obj.colour]
    return np.clip(np.rint(_downsample(img)), 0, 255).astype(np.uint8)


def object_coverage(obj: TableObject, camera: Camera) -> np.ndarray:
    """Fraction (S, S) of each pixel covered by ``obj`` (for centroid checks)."""
    x, y = _table_grid(camera)
    return _downsample(shape_mask(obj, x, y).astype(np.float64))


def draw_marker(img: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """A copy of ``img`` with a black cross with white centre at pixel coordinates ``uv`` (self-consistency task)."""
    out = img.copy()
    j, i = int(np.floor(uv[0])), int(np.floor(uv[1]))
    size = img.shape[0]
    for di, dj in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1), (-2, 0), (2, 0), (0, -2), (0, 2)):
        if 0 <= i + di < size and 0 <= j + dj < size:
            out[i + di, j + dj] = (255, 255, 255) if di == dj == 0 else (0, 0, 0)
    return out


def draw_polyline(img: np.ndarray, uv: np.ndarray, colour=(0, 0, 0)) -> np.ndarray:
    """A copy of ``img`` with the polyline through pixel points ``uv`` (K, 2) drawn, 1 px wide, end marked white."""
    out = img.copy()
    size = img.shape[0]
    for a, b in zip(uv[:-1], uv[1:], strict=True):
        n = int(np.ceil(np.abs(b - a).max() * 2)) + 1
        for t in np.linspace(0.0, 1.0, n):
            j, i = np.floor(a + t * (b - a)).astype(int)
            if 0 <= i < size and 0 <= j < size:
                out[i, j] = colour
    j, i = np.floor(uv[-1]).astype(int)
    if 0 <= i < size and 0 <= j < size:
        out[i, j] = (255, 255, 255)
    return out
