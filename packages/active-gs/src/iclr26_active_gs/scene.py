"""The embedded procedural ground truth ``toy-object`` (and its control ``toy-symmetric``).

The ground truth is itself a Gaussian scene of about 3,000 small isotropic Gaussians (scale
0.012-0.02, opacity 0.95), so the forward model is exactly representable:

1. a sphere (radius 0.55) with a smooth longitude colour gradient (part 1, easy);
2. a cube (side 0.35) at (0.55, 0, -0.2), an 8x8 two-colour checkerboard on each face (part 2);
3. the hidden detail: a striped disc (radius 0.18, 6 stripes) on the -x face of a thin plate at
   x = -0.6, inside a short grey shroud, so that it is seen only from within about 50 degrees of
   the -x axis (part 3);
4. a grey ground ring (radius 0.9, z = -0.55), plus the grey plate and shroud (part 4).

``toy-symmetric`` keeps only the sphere and the ring.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .cameras import Camera, fibonacci_directions, look_at
from .model import GaussianModel
from .render import render

SCENES = ("toy-object", "toy-symmetric")
HIDDEN_PART = 3
OPACITY = 0.95
GREY = (0.55, 0.55, 0.55)


def _sphere(rng, n):
    d = fibonacci_directions(n) + rng.normal(0, 0.002, (n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    lon = np.arctan2(d[:, 1], d[:, 0])
    col = np.stack([0.55 + 0.35 * np.cos(lon), 0.55 + 0.35 * np.sin(lon), 0.5 + 0.3 * d[:, 2]], 1)
    return 0.55 * d, col


def _cube(rng, per_face):
    side, centre = 0.35, np.array([0.55, 0.0, -0.2])
    pts, cols = [], []
    m = int(math.sqrt(per_face))
    g = (np.arange(m) + 0.5) / m
    a, b = np.meshgrid(g, g, indexing="ij")
    a, b = a.ravel(), b.ravel()
    check = ((np.floor(a * 8) + np.floor(b * 8)) % 2).astype(bool)
    col = np.where(check[:, None], np.array([0.9, 0.1, 0.1]), np.array([0.1, 0.2, 0.9]))
    for axis in range(3):
        for sign in (-1.0, 1.0):
            p = np.zeros((a.size, 3))
            u, v = [k for k in range(3) if k != axis]
            p[:, axis] = sign * side / 2
            p[:, u], p[:, v] = (a - 0.5) * side, (b - 0.5) * side
            pts.append(p + centre)
            cols.append(col)
    pts = np.concatenate(pts) + rng.normal(0, 0.001, (len(cols) * a.size, 3))
    return pts, np.concatenate(cols)


def _disc_assembly(rng):
    """Striped disc (part 3) on the -x face of a plate at x = -0.6, in a short shroud (grey, part 4)."""
    x0, r_disc = -0.6, 0.18
    # disc: jittered grid in the (y, z) plane, 6 vertical stripes
    g = np.linspace(-r_disc, r_disc, 19)
    y, z = np.meshgrid(g, g, indexing="ij")
    keep = y**2 + z**2 <= r_disc**2
    y, z = y[keep] + rng.normal(0, 0.002, keep.sum()), z[keep] + rng.normal(0, 0.002, keep.sum())
    stripe = np.floor((y + r_disc) / (2 * r_disc) * 6).clip(0, 5).astype(int) % 2
    disc = np.stack([np.full_like(y, x0 - 0.02), y, z], 1)
    disc_col = np.where(stripe[:, None] == 1, np.array([1.0, 0.85, 0.0]), np.array([0.05, 0.05, 0.05]))
    # plate: square of side 0.5 at x0
    g = np.linspace(-0.25, 0.25, 12)
    py, pz = np.meshgrid(g, g, indexing="ij")
    plate = np.stack([np.full(py.size, x0), py.ravel(), pz.ravel()], 1)
    # shroud: a tube of radius 0.21 from x0 to x0 - 0.2 around the disc
    ang = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    depth = np.linspace(0.0, 0.2, 6)
    a, d = np.meshgrid(ang, depth, indexing="ij")
    shroud = np.stack([x0 - d.ravel(), 0.21 * np.cos(a.ravel()), 0.21 * np.sin(a.ravel())], 1)
    grey = np.concatenate([plate, shroud])
    return disc, disc_col, grey


def _ring(rng, n):
    ang = rng.uniform(0, 2 * np.pi, n)
    rad = 0.9 + rng.uniform(-0.05, 0.05, n)
    return np.stack([rad * np.cos(ang), rad * np.sin(ang), np.full(n, -0.55)], 1)


def toy_gaussians(name: str = "toy-object", seed: int = 0) -> tuple[GaussianModel, np.ndarray]:
    """The ground-truth Gaussians of a procedural scene and their part ids (N,) in 1..4.

    The model carries one-hot part features (N,4) so that part masks render like colours.
    """
    if name not in SCENES:
        raise ValueError(f"scene: expected one of {SCENES}, got {name!r}")
    rng = np.random.default_rng(seed)
    pts, cols, parts = [], [], []
    sphere, sphere_col = _sphere(rng, 1500)
    pts.append(sphere), cols.append(sphere_col), parts.append(np.full(len(sphere), 1))
    if name == "toy-object":
        cube, cube_col = _cube(rng, 100)
        disc, disc_col, grey = _disc_assembly(rng)
        pts += [cube, disc, grey]
        cols += [cube_col, disc_col, np.tile(GREY, (len(grey), 1))]
        parts += [np.full(len(cube), 2), np.full(len(disc), HIDDEN_PART), np.full(len(grey), 4)]
    ring = _ring(rng, 700)
    pts.append(ring), cols.append(np.tile(GREY, (len(ring), 1))), parts.append(np.full(len(ring), 4))
    means = np.concatenate(pts)
    part = np.concatenate(parts).astype(np.int64)
    n = len(means)
    scales = rng.uniform(0.012, 0.02, n)
    col = np.clip(np.concatenate(cols), 0.02, 0.98)
    quats = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    model = GaussianModel.from_arrays(means, np.log(np.repeat(scales[:, None], 3, 1)), quats,
                                      np.full(n, math.log(OPACITY / (1 - OPACITY))), np.log(col / (1 - col)),
                                      features=np.eye(4)[part - 1])
    return model, part


class SyntheticObjectScene:
    """The procedural environment of the active loop: ground truth, candidate and test cameras.

    Args:
        name: ``"toy-object"`` (default) or ``"toy-symmetric"``.
        image_size: square image edge in pixels (64).
        n_candidates: candidate cameras on a Fibonacci full sphere of radius 3 (60).
        n_test: test cameras on a Fibonacci sphere with another offset (24), plus 6 within 40 degrees of -x.
        seed: seeds the Gaussians' jitter and scales.
        fov_deg, radius: field of view (45) and camera distance (3.0).

    Attributes:
        gt: the ground-truth ``GaussianModel``; parts: (N,) part ids.
        candidates, test_cameras: lists of ``Camera``; test_images: list of (H,W,3) tensors in [0,1];
        test_masks: their ground-truth part masks (H,W).
        extent: radius of the camera rig (3.0), the 3DGS learning-rate scale.
        object_radius: radius of the ball the reconstruction is initialised in (1.0).
        bg: background colour (white).
    """

    def __init__(self, name: str = "toy-object", image_size: int = 64, n_candidates: int = 60, n_test: int = 24,
                 seed: int = 0, fov_deg: float = 45.0, radius: float = 3.0):
        if image_size < 8:
            raise ValueError(f"image_size: expected >= 8, got {image_size}")
        if n_candidates < 2 or n_test < 0:
            raise ValueError(f"n_candidates >= 2 and n_test >= 0 expected, got {n_candidates}, {n_test}")
        self.name, self.image_size, self.seed = name, int(image_size), int(seed)
        self.gt, self.parts = toy_gaussians(name, seed)
        self.bg = (1.0, 1.0, 1.0)
        self.extent, self.object_radius = float(radius), 1.0
        kw = {"fov_deg": fov_deg, "width": self.image_size, "height": self.image_size}
        self.candidates = [look_at(radius * d, **kw) for d in fibonacci_directions(n_candidates)]
        test_dirs = list(fibonacci_directions(n_test, offset=0.37)) if n_test else []
        for k in range(6):  # guaranteed views of the hidden disc: 12..37 degrees from -x
            theta, phi = math.radians(12 + 5 * k), 2 * math.pi * k / 6
            test_dirs.append(np.array([-math.cos(theta), math.sin(theta) * math.cos(phi),
                                       math.sin(theta) * math.sin(phi)]))
        self.test_cameras = [look_at(radius * d, **kw) for d in test_dirs]
        self.test_images, self.test_masks = [], []
        for cam in self.test_cameras:
            image, mask = self._render_with_parts(cam)
            self.test_images.append(image)
            self.test_masks.append(mask)

    def _render_with_parts(self, camera: Camera) -> tuple[torch.Tensor, np.ndarray]:
        """(image (H,W,3), part mask (H,W)): the part with the largest blend weight, 0 where alpha <= 0.5."""
        with torch.no_grad():
            out = render(self.gt, camera, bg=self.bg, backend="torch", return_features=True)
        part = out["features"].argmax(-1) + 1
        mask = torch.where(out["alpha"] > 0.5, part, torch.zeros_like(part)).cpu().numpy()
        return out["rgb"].clamp(0, 1), mask

    def render_gt(self, camera: Camera) -> torch.Tensor:
        """The ground-truth image (H,W,3) at ``camera``."""
        with torch.no_grad():
            return render(self.gt, camera, bg=self.bg, backend="torch")["rgb"].clamp(0, 1)

    def capture(self, camera: Camera, pose_noise=(0.0, 0.0), rng: np.random.Generator | None = None):
        """Takes a picture at ``camera``; the reported pose carries noise.

        Args:
            camera: the true pose.
            pose_noise: ``(s_rot in degrees, s_trans in scene units)``: standard deviations of the
                left twist ``delta ~ N(0, diag(s_rot^2 I3, s_trans^2 I3))`` of the reported pose.
            rng: numpy generator of the noise (required when the noise is non-zero).

        Returns:
            (image (H,W,3) in [0,1], reported ``Camera`` = ``Exp(delta) @ T_true``).
        """
        return self.render_gt(camera), reported_pose(camera, pose_noise, rng)

    def part_masks(self, camera: Camera) -> np.ndarray:
        """Ground-truth part id per pixel (H,W) int: the part with the largest blend weight, 0 = background."""
        return self._render_with_parts(camera)[1]

    def angle_to_minus_x(self, camera: Camera) -> float:
        """Angle in degrees between the camera centre direction and the -x axis."""
        c = camera.center.detach().double()
        return math.degrees(math.acos(float((-c[0] / c.norm()).clamp(-1, 1))))


def reported_pose(camera: Camera, pose_noise=(0.0, 0.0), rng: np.random.Generator | None = None) -> Camera:
    """The pose a capture at ``camera`` reports: ``Exp(delta) @ T_true`` with a random left twist.

    Args:
        camera: the true pose.
        pose_noise: ``(s_rot in degrees, s_trans in scene units)``: standard deviations of
            ``delta ~ N(0, diag(s_rot^2 I3, s_trans^2 I3))``.
        rng: numpy generator of the noise (required when the noise is non-zero).
    """
    s_rot, s_trans = (float(v) for v in pose_noise)
    if s_rot < 0 or s_trans < 0 or not (math.isfinite(s_rot) and math.isfinite(s_trans)):
        raise ValueError(f"pose_noise: expected two finite non-negative numbers (degrees, units), got {pose_noise}")
    if s_rot == 0 and s_trans == 0:
        return camera
    if rng is None:
        raise ValueError("rng: a numpy Generator is required when pose_noise is non-zero")
    delta = np.concatenate([rng.normal(0, math.radians(s_rot), 3), rng.normal(0, s_trans, 3)])
    return camera.perturbed(torch.tensor(delta, dtype=camera.R.dtype)).detach()


class CapturedScene:
    """A real capture (e.g. NeRF-Synthetic or COLMAP) as the scene of the active loop.

    The candidate views are the captured training views; "capturing" a candidate returns its stored
    image. There is no hidden part (``test_masks`` are all background, so hidden-part PSNR is NaN).

    Args:
        images, cameras: the candidate views, (H,W,3) tensors in [0,1] and their ``Camera``.
        test_images, test_cameras: the held-out views the reconstruction is scored on.
        bg: background colour the images were composited on.
        object_radius: radius of the initialisation ball (default: a third of ``extent``, as the
            procedural scene's 1.0 against its 3.0 camera distance).

    Attributes:
        candidates, test_cameras, test_images, test_masks, extent (largest camera-centre norm, the
        3DGS learning-rate scale), object_radius, bg.

    Raises:
        ValueError: mismatched lengths, fewer than 2 candidates or no test view, images of a size
            other than their camera's.
    """

    def __init__(self, images, cameras, test_images, test_cameras, bg=(1.0, 1.0, 1.0),
                 object_radius: float | None = None):
        if len(images) != len(cameras) or len(test_images) != len(test_cameras):
            raise ValueError(f"images, cameras: expected equal lengths, got {len(images)}, {len(cameras)} "
                             f"(test: {len(test_images)}, {len(test_cameras)})")
        if len(cameras) < 2 or not test_cameras:
            raise ValueError(f"expected >= 2 candidate views and >= 1 test view, got {len(cameras)}, "
                             f"{len(test_cameras)}")
        for im, cam in zip([*images, *test_images], [*cameras, *test_cameras], strict=True):
            if tuple(im.shape) != (cam.height, cam.width, 3):
                raise ValueError(f"images: expected ({cam.height}, {cam.width}, 3) to match the camera, "
                                 f"got {tuple(im.shape)}")
        self.candidates, self.test_cameras = list(cameras), list(test_cameras)
        self.test_images = [torch.as_tensor(im) for im in test_images]
        self.test_masks = [np.zeros(im.shape[:2], dtype=np.int64) for im in self.test_images]
        self._images = {id(c): torch.as_tensor(im) for c, im in zip(cameras, images, strict=True)}
        self.bg = tuple(bg)
        self.extent = max(float(c.center.detach().norm()) for c in self.candidates)
        self.object_radius = self.extent / 3 if object_radius is None else float(object_radius)

    @classmethod
    def from_blender(cls, folder, downscale: int = 1, n_test: int | None = None, **kw) -> CapturedScene:
        """NeRF-Synthetic: ``train`` views as candidates, the first ``n_test`` ``test`` views (all by default)."""
        from .io import load_blender

        images, cameras = load_blender(folder, "train", downscale)
        test_images, test_cameras = load_blender(folder, "test", downscale)
        return cls(images, cameras, test_images[:n_test], test_cameras[:n_test], **kw)

    @classmethod
    def from_colmap(cls, folder, downscale: int = 1, test_every: int = 8, **kw) -> CapturedScene:
        """A COLMAP text model; every ``test_every``-th image is held out for testing (the LLFF convention)."""
        from .io import load_colmap_text

        images, cameras = load_colmap_text(folder, downscale)
        train = [j for j in range(len(images)) if j % test_every]
        test = [j for j in range(len(images)) if not j % test_every]
        return cls([images[j] for j in train], [cameras[j] for j in train], [images[j] for j in test],
                   [cameras[j] for j in test], **kw)

    def to(self, device) -> CapturedScene:
        """Moves the images and cameras to ``device`` (in place; returns the scene)."""
        images = [self._images[id(c)].to(device) for c in self.candidates]
        self.candidates = [c.to(device) for c in self.candidates]
        self._images = {id(c): im for c, im in zip(self.candidates, images, strict=True)}
        self.test_cameras = [c.to(device) for c in self.test_cameras]
        self.test_images = [im.to(device) for im in self.test_images]
        return self

    def render_gt(self, camera: Camera) -> torch.Tensor:
        """The captured image (H,W,3) of candidate ``camera``.

        Raises:
            ValueError: ``camera`` is not one of ``candidates``.
        """
        if id(camera) not in self._images:
            raise ValueError("camera: expected one of the scene's candidate cameras (a captured view)")
        return self._images[id(camera)]

    def capture(self, camera: Camera, pose_noise=(0.0, 0.0), rng: np.random.Generator | None = None):
        """(captured image (H,W,3), reported ``Camera``) for candidate ``camera``; see ``reported_pose``."""
        return self.render_gt(camera), reported_pose(camera, pose_noise, rng)

    def angle_to_minus_x(self, camera: Camera) -> float:
        """NaN: a captured scene has no designated hidden side."""
        return math.nan
