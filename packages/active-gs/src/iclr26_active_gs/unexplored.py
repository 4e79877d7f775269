"""Never-observed space as a region of its own *(inferred)*.

The Gaussians only cover what the training views explained, so a part of the scene that no training
view has seen may hold no Gaussian at all and no variance to score. A regular grid of probe points
over the Gaussians' bounding sphere stands in for that space: a probe is *observed* once it projects
into a training image in front of the rendered surface there (``z <= depth + margin``, or anywhere
along an empty ray), and a candidate *sees* an unobserved probe under the same test with its own
render. Each probe sees weight ``(f h / z)^2`` (the pixel footprint of its grid cell, in the units of a
Gaussian's contribution ``W_i``), so the probes join the semantic-variance selector as pseudo-Gaussians
with the prior variance and opacity 1: one extra region whose uncertainty falls as views observe it.
"""
from __future__ import annotations

import numpy as np

from .cameras import Camera
from .model import GaussianModel

SURFACE_ALPHA = 0.5  # a ray whose accumulated opacity stays below this is empty


def probe_points(model: GaussianModel, grid: int = 16) -> tuple[np.ndarray, float]:
    """Grid points inside the bounding sphere of the Gaussians' means: ``(probes (P,3), spacing h)``.

    Raises:
        ValueError: ``grid < 2``.
    """
    if grid < 2:
        raise ValueError(f"grid: expected >= 2, got {grid}")
    mu = model.means.detach().cpu().double().numpy()
    centre = mu.mean(0)
    radius = max(float(np.linalg.norm(mu - centre, axis=1).max()), 1e-6)
    axis = np.linspace(-radius, radius, grid)
    pts = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
    return centre + pts[np.linalg.norm(pts, axis=1) <= radius], float(axis[1] - axis[0])


def probe_footprint(probes: np.ndarray, spacing: float, camera: Camera, rendered: dict,
                    margin: float | None = None) -> np.ndarray:
    """Pixel footprint ``(f h / z)^2`` of each probe that ``camera`` sees, 0 for the others; shape (P,).

    ``rendered`` is ``render(model, camera)``'s output (its ``alpha`` and ``depth``). A probe is seen when
    it projects inside the image, in front of the camera, and no deeper than the rendered surface plus
    ``margin`` (default one grid spacing); a pixel with accumulated opacity below 0.5 has no surface.
    """
    margin = spacing if margin is None else margin
    alpha = rendered["alpha"].detach().cpu().double().numpy()
    depth = rendered["depth"].detach().cpu().double().numpy() / np.maximum(alpha, 1e-12)
    surface = np.where(alpha >= SURFACE_ALPHA, depth, np.inf)
    R, t = camera.R.detach().cpu().double().numpy(), camera.t.detach().cpu().double().numpy()
    K = camera.K.detach().cpu().double().numpy()
    cam = probes @ R.T + t
    z = cam[:, 2]
    front = z > 1e-6
    u = np.where(front, K[0, 0] * cam[:, 0] / np.where(front, z, 1) + K[0, 2], -1)
    v = np.where(front, K[1, 1] * cam[:, 1] / np.where(front, z, 1) + K[1, 2], -1)
    inside = front & (u >= 0) & (u < camera.width) & (v >= 0) & (v < camera.height)
    px = np.clip(u.astype(np.int64), 0, camera.width - 1)
    py = np.clip(v.astype(np.int64), 0, camera.height - 1)
    seen = inside & (z <= surface[py, px] + margin)
    return np.where(seen, (K[0, 0] * spacing / np.where(front, z, 1)) ** 2, 0.0)
