"""Reading user data: images, pose JSON files, NeRF-Synthetic (Blender) and COLMAP text folders.

Nothing is downloaded; every reader raises ``ValueError`` naming the file it misses.
"""
from __future__ import annotations

import json
import math
import os
import pathlib

import numpy as np
import torch

from .cameras import Camera, intrinsics

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def read_image(path: str | os.PathLike, downscale: int = 1, bg=(1.0, 1.0, 1.0)) -> torch.Tensor:
    """An (H,W,3) float tensor in [0,1]; RGBA is composited on ``bg``; area-downsampled by ``downscale``."""
    from skimage.io import imread

    p = pathlib.Path(path)
    if not p.is_file():
        raise ValueError(f"image: {p} does not exist")
    a = imread(p)
    a = a.astype(np.float64) / (255.0 if a.dtype == np.uint8 else 65535.0 if a.dtype == np.uint16 else 1.0)
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, -1)
    if a.shape[-1] == 4:
        a = a[..., :3] * a[..., 3:] + np.asarray(bg) * (1 - a[..., 3:])
    if downscale > 1:
        H, W = (a.shape[0] // downscale) * downscale, (a.shape[1] // downscale) * downscale
        a = a[:H, :W].reshape(H // downscale, downscale, W // downscale, downscale, 3).mean((1, 3))
    return torch.tensor(np.clip(a[..., :3], 0, 1), dtype=torch.float32)


def write_png(path: str | os.PathLike, image) -> pathlib.Path:
    """Writes an (H,W,3) image in [0,1] as an 8-bit PNG, atomically."""
    from iclr26_shared.bench import atomic_path
    from skimage.io import imsave

    a = np.asarray(torch.as_tensor(image).detach().cpu().float().clamp(0, 1).numpy())
    with atomic_path(path) as tmp:
        imsave(tmp, (a * 255).round().astype(np.uint8), check_contrast=False)
    return pathlib.Path(path)


def read_poses(path: str | os.PathLike) -> dict[str, Camera]:
    """Reads ``{"name": {"K": 3x3, "viewmat": 4x4 world-to-camera (OpenCV), "width", "height"}, ...}``
    (or a list of such objects, named by position) into cameras."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise ValueError(f"poses: {p} does not exist")
    data = json.loads(p.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "K" in data:
        data = [data]
    items = data.items() if isinstance(data, dict) else ((str(i), d) for i, d in enumerate(data))
    return {str(k): Camera.from_dict(v) for k, v in items}


def load_image_folder(folder: str | os.PathLike, poses: str | os.PathLike) -> tuple[list[torch.Tensor], list[Camera]]:
    """Images of ``folder`` paired with the cameras of ``poses`` by file stem (or file name).

    Raises:
        ValueError: missing folder, an image without a pose, or no images at all.
    """
    root = pathlib.Path(folder)
    if not root.is_dir():
        raise ValueError(f"images: folder {root} does not exist")
    cams = read_poses(poses)
    files = sorted(f for f in root.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(f"images: no {IMAGE_SUFFIXES} files in {root}")
    images, cameras = [], []
    for f in files:
        cam = cams.get(f.stem, cams.get(f.name))
        if cam is None:
            raise ValueError(f"poses: no entry named {f.stem!r} for image {f.name} in {poses}")
        images.append(read_image(f))
        cameras.append(cam)
    return images, cameras


_GL_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])


def load_blender(folder: str | os.PathLike, split: str = "train", downscale: int = 1,
                 bg=(1.0, 1.0, 1.0)) -> tuple[list[torch.Tensor], list[Camera]]:
    """A NeRF-Synthetic scene: ``transforms_{split}.json`` (``camera_angle_x``, OpenGL camera-to-world
    ``transform_matrix``) converted to OpenCV world-to-camera cameras (y and z camera axes flipped).

    Raises:
        ValueError: the JSON file or an image it names is missing.
    """
    root = pathlib.Path(folder)
    meta_path = root / f"transforms_{split}.json"
    if not meta_path.is_file():
        raise ValueError(f"load_blender: {meta_path} does not exist (expected the NeRF-Synthetic layout)")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    images, cameras = [], []
    for frame in meta["frames"]:
        stem = root / frame["file_path"]
        path = stem if stem.suffix else stem.with_suffix(".png")
        img = read_image(path, downscale, bg)
        H, W = img.shape[:2]
        fov = math.degrees(float(meta["camera_angle_x"]))
        c2w = np.asarray(frame["transform_matrix"], dtype=np.float64) @ _GL_TO_CV
        w2c = np.linalg.inv(c2w)
        cameras.append(Camera(intrinsics(fov, W, H), torch.tensor(w2c[:3, :3], dtype=torch.float32),
                              torch.tensor(w2c[:3, 3], dtype=torch.float32), W, H))
        images.append(img)
    return images, cameras


def _qvec_to_rotmat(q) -> np.ndarray:
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def load_colmap_text(folder: str | os.PathLike, downscale: int = 1) -> tuple[list[torch.Tensor], list[Camera]]:
    """A COLMAP text model: ``cameras.txt`` (PINHOLE, SIMPLE_PINHOLE, SIMPLE_RADIAL or OPENCV intrinsics;
    distortion ignored), ``images.txt`` (world-to-camera quaternion and translation), ``images/``.

    Raises:
        ValueError: a missing file, or an unsupported camera model.
    """
    root = pathlib.Path(folder)
    for name in ("cameras.txt", "images.txt", "images"):
        if not (root / name).exists():
            raise ValueError(f"load_colmap_text: {root / name} does not exist")
    intr = {}
    for line in (root / "cameras.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cid, model, w, h, *params = line.split()
        p = [float(v) for v in params]
        if model in ("SIMPLE_PINHOLE", "SIMPLE_RADIAL"):
            fx = fy = p[0]
            cx, cy = p[1], p[2]
        elif model in ("PINHOLE", "OPENCV"):
            fx, fy, cx, cy = p[:4]
        else:
            raise ValueError(f"load_colmap_text: camera model {model} is not supported (use PINHOLE or OPENCV)")
        intr[cid] = (fx, fy, cx, cy, int(w), int(h))
    lines = [ln for ln in (root / "images.txt").read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.startswith("#")]
    images, cameras = [], []
    for line in lines[::2]:  # every other line lists 2-D points
        parts = line.split()
        q, t, cid, name = [float(v) for v in parts[1:5]], [float(v) for v in parts[5:8]], parts[8], parts[9]
        fx, fy, cx, cy, W, H = intr[cid]
        img = read_image(root / "images" / name, downscale)
        s = img.shape[1] / W
        K = torch.tensor([[fx * s, 0, cx * s], [0, fy * s, cy * s], [0, 0, 1]], dtype=torch.float32)
        cameras.append(Camera(K, torch.tensor(_qvec_to_rotmat(q), dtype=torch.float32),
                              torch.tensor(t, dtype=torch.float32), img.shape[1], img.shape[0]))
        images.append(img)
    return images, cameras
