"""Signals: the images scikit-image ships, coordinates, the photon-noise model, analytic 3-D shapes.

Nothing downloads. ``load_image`` reads the images inside the scikit-image wheel or a local
PNG/JPEG (Kodak, DIV2K folders you supply).
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
import torch

OFFLINE_IMAGES = ("camera", "astronaut", "coffee", "chelsea", "rocket", "cat", "coins", "moon", "brick", "grass",
                  "gravel", "text", "page", "clock", "colorwheel", "immunohistochemistry", "retina",
                  "hubble_deep_field", "logo", "shepp_logan_phantom")
DOWNLOAD_IMAGES = ("cells3d", "brain", "kidney", "lily", "eagle", "skin", "human_mitosis", "nickel_solidification",
                   "protein_transport", "microaneurysms", "palisades_of_vogt", "vortex", "lfw_subset")
SHAPES = ("union", "torus", "gyroid_sphere")


def _to_unit_float(image: np.ndarray, what: str) -> np.ndarray:
    from skimage.util import img_as_float32

    image = np.asarray(image)
    if image.size == 0:
        raise ValueError(f"{what}: the image is empty (shape {image.shape})")
    if image.dtype == np.bool_ or np.issubdtype(image.dtype, np.integer):
        return img_as_float32(image)
    return image.astype(np.float32)


def check_image(image, name: str = "image") -> np.ndarray:
    """Returns ``image`` as float32 ``(H, W)`` or ``(H, W, C)`` if it is non-empty, finite and in [0, 1].

    Raises:
        ValueError: empty, wrong rank, NaN/Inf, or values outside [0, 1] (with how to scale them).
    """
    x = np.asarray(image.detach().cpu() if isinstance(image, torch.Tensor) else image)
    if x.size == 0:
        raise ValueError(f"{name}: the image is empty (shape {x.shape})")
    if x.ndim not in (2, 3):
        raise ValueError(f"{name}: expected shape (H, W) or (H, W, C), got {x.shape}")
    if np.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_:
        x = _to_unit_float(x, name)
    x = x.astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError(f"{name}: contains NaN or Inf")
    if x.min() < 0 or x.max() > 1:
        raise ValueError(f"{name}: values must lie in [0, 1], got [{x.min():.4g}, {x.max():.4g}]; divide 8-bit "
                         "images by 255 or min-max normalise: (x - x.min()) / (x.max() - x.min())")
    return x


def load_image(name: str | os.PathLike, size: int | tuple[int, int] | None = None, gray: bool = False) -> np.ndarray:
    """An image as float32 in [0, 1]: ``(H, W)`` (gray) or ``(H, W, 3)``.

    Args:
        name: one of ``OFFLINE_IMAGES`` (shipped inside scikit-image) or a path to a PNG/JPEG.
        size: resize (anti-aliased) to ``size × size`` or ``(H, W)``.
        gray: convert colour images to luminance.

    Raises:
        ValueError: an image that would need a download, an unknown name, an empty image, a bad size.
        FileNotFoundError: a path that does not exist.
    """
    from skimage import color, data, io, transform

    key = str(name)
    if key in DOWNLOAD_IMAGES:
        raise ValueError(f"image: {key!r} needs a download, which this package never does; "
                         f"offline images: {', '.join(OFFLINE_IMAGES)}, or pass a local file path")
    if key in OFFLINE_IMAGES:
        image = getattr(data, key)()
    else:
        path = pathlib.Path(key)
        if path.suffix.lower() not in (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp"):
            raise ValueError(f"image: expected one of {', '.join(OFFLINE_IMAGES)} or an image file path, got {key!r}")
        if not path.is_file():
            raise FileNotFoundError(f"image: no such file {path}")
        image = io.imread(path)
    image = _to_unit_float(image, "image")
    if image.ndim == 3 and image.shape[2] == 4:
        image = image[..., :3]
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[..., 0]
    if gray and image.ndim == 3:
        image = color.rgb2gray(image).astype(np.float32)
    if size is not None:
        shape = (size, size) if isinstance(size, int) else tuple(size)
        if len(shape) != 2 or any(int(s) != s or s < 1 for s in shape):
            raise ValueError(f"size: expected a positive integer or (H, W), got {size!r}")
        image = transform.resize(image, shape + image.shape[2:], anti_aliasing=True).astype(np.float32)
    return np.clip(image, 0.0, 1.0)


def load_folder(root: str | os.PathLike, pattern: str = "*.png", size=None, gray: bool = False) -> list[np.ndarray]:
    """Every image in ``root`` matching ``pattern`` (sorted), e.g. a Kodak or DIV2K folder.

    Raises:
        FileNotFoundError: the folder is missing or has no matching file.
    """
    folder = pathlib.Path(root)
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"root: no {pattern!r} files in {folder}; put the images there (e.g. Kodak "
                                "kodim01.png..kodim24.png) and pass --data-root")
    return [load_image(f, size=size, gray=gray) for f in files]


def get_coords(*shape: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """Grid coordinates in [−1, 1]^d (``linspace(−1, 1, n)`` per axis, row-major): ``(prod(shape), d)``.

    Raises:
        ValueError: a non-positive size.
    """
    if not shape or any(int(s) != s or s < 1 for s in shape):
        raise ValueError(f"shape: expected positive integer sizes, got {shape}")
    axes = [torch.linspace(-1.0, 1.0, int(s), device=device, dtype=dtype) for s in shape]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(-1, len(shape))


def photon_noise(x: np.ndarray, tau: float = 40.0, readout: float = 2.0,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """WIRE's measurement model: y = (Poisson(τ x) + N(0, readout²)) / τ (signed Poisson for x < 0).

    Raises:
        ValueError: τ not positive or readout negative.
    """
    if not tau > 0:
        raise ValueError(f"tau: expected a positive photon count, got {tau}")
    if readout < 0:
        raise ValueError(f"readout: expected >= 0, got {readout}")
    rng = np.random.default_rng() if rng is None else rng
    x = np.asarray(x, dtype=np.float64)
    counts = np.sign(x) * rng.poisson(np.abs(x) * tau)
    return (counts + readout * rng.standard_normal(x.shape)) / tau


def min_max(x: np.ndarray) -> np.ndarray:
    """(x − min) / (max − min) as float32 (a constant image maps to zeros)."""
    lo, hi = float(np.min(x)), float(np.max(x))
    return ((x - lo) / (hi - lo if hi > lo else 1.0)).astype(np.float32)


def occupancy(shape: str = "gyroid_sphere", grid: int = 64, freq: float = 6.0) -> np.ndarray:
    """An analytic 3-D occupancy grid ``(grid, grid, grid)`` of 0/1 float32 on [−1, 1]³.

    - ``"union"``: two spheres and a box.
    - ``"torus"``: major radius 0.6, minor 0.25.
    - ``"gyroid_sphere"``: ball of radius 0.9 ∩ {sin fx cos fy + sin fy cos fz + sin fz cos fx > 0}, f = ``freq``.

    Raises:
        ValueError: unknown shape or grid < 2.
    """
    if shape not in SHAPES:
        raise ValueError(f"shape: expected one of {SHAPES}, got {shape!r}")
    if int(grid) != grid or grid < 2:
        raise ValueError(f"grid: expected an integer >= 2, got {grid}")
    x, y, z = np.meshgrid(*[np.linspace(-1, 1, int(grid))] * 3, indexing="ij")
    if shape == "union":
        inside = ((x + 0.35) ** 2 + y**2 + z**2 < 0.45**2) | ((x - 0.4) ** 2 + (y - 0.2) ** 2 + z**2 < 0.3**2)
        inside |= (np.abs(x) < 0.7) & (np.abs(y + 0.5) < 0.15) & (np.abs(z) < 0.4)
    elif shape == "torus":
        inside = (np.sqrt(x**2 + y**2) - 0.6) ** 2 + z**2 < 0.25**2
    else:
        g = (np.sin(freq * x) * np.cos(freq * y) + np.sin(freq * y) * np.cos(freq * z)
             + np.sin(freq * z) * np.cos(freq * x))
        inside = (x**2 + y**2 + z**2 < 0.9**2) & (g > 0)
    return inside.astype(np.float32)


def gradient_image(size: int = 16) -> np.ndarray:
    """A smooth test image ``(size, size)`` in [0, 1]: a diagonal ramp plus a soft bump."""
    y, x = np.meshgrid(np.linspace(0, 1, size), np.linspace(0, 1, size), indexing="ij")
    img = 0.5 * (x + y) / 2 + 0.5 * np.exp(-((x - 0.6) ** 2 + (y - 0.4) ** 2) / 0.1)
    return min_max(img)
