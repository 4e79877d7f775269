"""The fixed camera of ``TableTop2D``: a homography ``Hcam`` from table to image coordinates.

Conventions (never mixed up anywhere in the package):

- table coordinates ``(x, y)``: the unit square, x to the image right, y away from the robot
  (toward the image top);
- pixel coordinates ``(u, v)``: continuous, origin at the top-left corner of the image, u to the
  right, v **down**; pixel ``(i, j)`` covers ``[j, j+1) x [i, i+1)``, its centre is ``(j+0.5, i+0.5)``;
- normalised coordinates: FSD's integers in ``[0, 1000]`` over the (square) image, ``n = u * 1000 / S``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def apply_homography(H: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Maps points through a 3x3 homography.

    Args:
        H: (3, 3) matrix.
        pts: (..., 2) points.

    Returns:
        (..., 2) mapped points ``(H [p; 1])[:2] / (H [p; 1])[2]``.
    """
    pts = np.asarray(pts, dtype=np.float64)
    hom = pts @ H[:, :2].T + H[:, 2]
    return hom[..., :2] / hom[..., 2:3]


@dataclass(frozen=True)
class Camera:
    """Table -> image homography: slight rotation, scale and keystone (far side appears smaller).

    ``H = A @ K @ R @ F``: ``F`` centres the table and flips y (image v points down), ``R`` rotates
    by ``rotation_deg``, ``K`` is the keystone (``w = 1 - keystone * y_flipped``), ``A`` scales by
    ``scale * size`` pixels per table unit and moves the table centre to the image centre.

    Attributes:
        size: the side of the square image in pixels (64 by default).
        rotation_deg, scale, keystone: the pose of the camera.
        H: (3, 3) table -> pixel homography; ``H_inv`` its inverse.
    """

    size: int = 64
    rotation_deg: float = 8.0
    scale: float = 0.9
    keystone: float = 0.12
    H: np.ndarray = field(init=False, repr=False, compare=False)
    H_inv: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.size, (int, np.integer)) or self.size < 8:
            raise ValueError(f"size: expected an integer >= 8 pixels, got {self.size!r}")
        F = np.array([[1.0, 0.0, -0.5], [0.0, -1.0, 0.5], [0.0, 0.0, 1.0]])
        t = np.deg2rad(self.rotation_deg)
        R = np.array([[np.cos(t), -np.sin(t), 0.0], [np.sin(t), np.cos(t), 0.0], [0.0, 0.0, 1.0]])
        K = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -self.keystone, 1.0]])
        s = self.scale * self.size
        A = np.array([[s, 0.0, self.size / 2], [0.0, s, self.size / 2], [0.0, 0.0, 1.0]])
        H = A @ K @ R @ F
        object.__setattr__(self, "H", H)
        object.__setattr__(self, "H_inv", np.linalg.inv(H))

    def table_to_pixel(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) table coordinates -> (..., 2) pixel coordinates ``(u, v)``."""
        return apply_homography(self.H, xy)

    def pixel_to_table(self, uv: np.ndarray) -> np.ndarray:
        """(..., 2) pixel coordinates -> (..., 2) table coordinates (``Hcam^-1``)."""
        return apply_homography(self.H_inv, uv)

    def table_to_norm(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) table coordinates -> (..., 2) normalised image coordinates in [0, 1000] (floats)."""
        return self.table_to_pixel(xy) * (1000.0 / self.size)

    def norm_to_table(self, n: np.ndarray) -> np.ndarray:
        """(..., 2) normalised image coordinates -> (..., 2) table coordinates."""
        return self.pixel_to_table(np.asarray(n, dtype=np.float64) * (self.size / 1000.0))

    def table_box_to_norm(self, box: np.ndarray) -> np.ndarray:
        """Axis-aligned image box ``[x1, y1, x2, y2]`` (normalised) around a table box's projection.

        Args:
            box: (4,) table box ``[xmin, ymin, xmax, ymax]``.
        """
        x0, y0, x1, y1 = np.asarray(box, dtype=np.float64)
        corners = self.table_to_norm(np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]]))
        return np.concatenate([corners.min(0), corners.max(0)])
