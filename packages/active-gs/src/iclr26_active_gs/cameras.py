"""Pinhole cameras (OpenCV convention) and the SE(3) exponential / logarithm.

A ``Camera`` holds intrinsics ``K (3,3)`` and the world-to-camera pose ``T = [R | t]``
(x right, y down, z forward). Pose perturbations are twists ``xi = (omega, rho)`` applied on
the left: ``T' = Exp(xi) @ T``. Rotation angles are radians in the twist; the pose-noise
arguments of the capture API take degrees and say so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch


def _skew(v: torch.Tensor) -> torch.Tensor:
    """(3,) -> (3,3) cross-product matrix."""
    z = torch.zeros((), dtype=v.dtype, device=v.device)
    return torch.stack([torch.stack([z, -v[2], v[1]]), torch.stack([v[2], z, -v[0]]),
                        torch.stack([-v[1], v[0], z])])


def _so3_coeffs(theta2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A = sin t / t, B = (1 - cos t) / t^2, C = (t - sin t) / t^3, with Taylor series near 0."""
    small = theta2 < 1e-8
    t2 = torch.where(small, torch.ones_like(theta2), theta2)
    t = torch.sqrt(t2)
    a = torch.where(small, 1 - theta2 / 6, torch.sin(t) / t)
    b = torch.where(small, 0.5 - theta2 / 24, (1 - torch.cos(t)) / t2)
    c = torch.where(small, 1.0 / 6 - theta2 / 120, (t - torch.sin(t)) / (t2 * t))
    return a, b, c


def so3_exp(omega: torch.Tensor) -> torch.Tensor:
    """Rodrigues' formula: rotation vector ``omega (3,)`` (radians) -> rotation matrix ``(3,3)``."""
    a, b, _ = _so3_coeffs((omega * omega).sum())
    w = _skew(omega)
    eye = torch.eye(3, dtype=omega.dtype, device=omega.device)
    return eye + a * w + b * (w @ w)


def se3_exp(xi: torch.Tensor) -> torch.Tensor:
    """SE(3) exponential of a twist ``xi = (omega, rho)`` of shape ``(6,)`` -> ``(4,4)``.

    Rotation by Rodrigues' formula, translation ``V rho`` with the left Jacobian
    ``V = I + B [omega]x + C [omega]x^2``. Differentiable (also at ``xi = 0``).

    Raises:
        ValueError: ``xi`` is not a finite tensor of shape (6,).
    """
    xi = torch.as_tensor(xi)
    if xi.shape != (6,):
        raise ValueError(f"xi: expected shape (6,), got {tuple(xi.shape)}")
    if not torch.isfinite(xi).all():
        raise ValueError("xi: expected finite values")
    if not xi.is_floating_point():
        xi = xi.double()
    omega, rho = xi[:3], xi[3:]
    a, b, c = _so3_coeffs((omega * omega).sum())
    w = _skew(omega)
    w2 = w @ w
    eye = torch.eye(3, dtype=xi.dtype, device=xi.device)
    rot = eye + a * w + b * w2
    v = eye + b * w + c * w2
    top = torch.cat([rot, (v @ rho)[:, None]], dim=1)
    bottom = torch.tensor([[0.0, 0.0, 0.0, 1.0]], dtype=xi.dtype, device=xi.device)
    return torch.cat([top, bottom], dim=0)


def se3_log(T: torch.Tensor) -> torch.Tensor:
    """Inverse of ``se3_exp`` for rotation angles below pi: ``(4,4)`` -> twist ``(6,)``.

    Raises:
        ValueError: ``T`` is not a finite (4,4) tensor.
    """
    T = torch.as_tensor(T)
    if T.shape != (4, 4):
        raise ValueError(f"T: expected shape (4, 4), got {tuple(T.shape)}")
    if not torch.isfinite(T).all():
        raise ValueError("T: expected finite values")
    rot, trans = T[:3, :3], T[:3, 3]
    cos = ((torch.diagonal(rot).sum() - 1) / 2).clamp(-1.0, 1.0)
    theta = torch.arccos(cos)
    vee = torch.stack([rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]])
    small = theta < 1e-6
    scale = torch.where(small, 0.5 + theta**2 / 12, theta / (2 * torch.sin(torch.where(small, 1.0, theta))))
    omega = scale * vee
    _, b, c = _so3_coeffs((omega * omega).sum())
    w = _skew(omega)
    eye = torch.eye(3, dtype=T.dtype, device=T.device)
    v = eye + b * w + c * (w @ w)
    rho = torch.linalg.solve(v, trans)
    return torch.cat([omega, rho])


@dataclass
class Camera:
    """A pinhole camera: ``K (3,3)``, world-to-camera ``R (3,3)``, ``t (3,)``, image ``width x height``.

    ``R`` and ``t`` may carry gradients (pose refinement renders through them).
    """

    K: torch.Tensor
    R: torch.Tensor
    t: torch.Tensor
    width: int
    height: int

    def __post_init__(self) -> None:
        self.K, self.R, self.t = (torch.as_tensor(x) for x in (self.K, self.R, self.t))
        if self.K.shape != (3, 3) or self.R.shape != (3, 3) or self.t.shape != (3,):
            raise ValueError(f"camera: expected K (3,3), R (3,3), t (3,), got {tuple(self.K.shape)}, "
                             f"{tuple(self.R.shape)}, {tuple(self.t.shape)}")
        for name in ("K", "R", "t"):
            if not torch.isfinite(getattr(self, name)).all():
                raise ValueError(f"camera.{name}: expected finite values")
        if float(self.K[0, 0]) <= 0 or float(self.K[1, 1]) <= 0:
            raise ValueError(f"camera.K: expected positive focal lengths, got fx={float(self.K[0, 0])}, "
                             f"fy={float(self.K[1, 1])}")
        if int(self.width) <= 0 or int(self.height) <= 0:
            raise ValueError(f"camera: expected positive width and height, got {self.width}x{self.height}")
        self.width, self.height = int(self.width), int(self.height)

    @property
    def center(self) -> torch.Tensor:
        """Camera centre in world coordinates ``-R^T t``, shape (3,)."""
        return -(self.R.T @ self.t)

    @property
    def viewmat(self) -> torch.Tensor:
        """World-to-camera matrix ``(4,4)``."""
        bottom = torch.tensor([[0.0, 0.0, 0.0, 1.0]], dtype=self.R.dtype, device=self.R.device)
        return torch.cat([torch.cat([self.R, self.t[:, None]], dim=1), bottom], dim=0)

    @property
    def forward(self) -> torch.Tensor:
        """Unit viewing direction (camera +z) in world coordinates, shape (3,)."""
        return self.R[2]

    def perturbed(self, xi: torch.Tensor) -> Camera:
        """The camera with pose ``Exp(xi) @ T`` (``xi = (omega, rho)``, radians); differentiable in ``xi``."""
        xi = torch.as_tensor(xi, dtype=self.R.dtype, device=self.R.device)
        T = se3_exp(xi) @ self.viewmat
        return Camera(self.K, T[:3, :3], T[:3, 3], self.width, self.height)

    def to(self, device=None, dtype=None) -> Camera:
        """A copy with tensors on ``device`` / of floating ``dtype``."""
        return Camera(*(x.to(device=device, dtype=dtype) for x in (self.K, self.R, self.t)), self.width, self.height)

    def detach(self) -> Camera:
        """A copy without autograd history."""
        return Camera(self.K.detach(), self.R.detach(), self.t.detach(), self.width, self.height)

    def scaled(self, factor: float) -> Camera:
        """The camera for an image downsampled by an integer ``factor`` (intrinsics scaled, pixel centres kept)."""
        k = self.K.clone()
        k[:2] = k[:2] / factor
        return Camera(k, self.R, self.t, self.width // factor, self.height // factor)

    def to_dict(self) -> dict:
        """JSON-friendly ``{"K", "viewmat", "width", "height"}`` (nested lists)."""
        return {"K": self.K.detach().cpu().double().tolist(), "viewmat": self.viewmat.detach().cpu().double().tolist(),
                "width": self.width, "height": self.height}

    @classmethod
    def from_dict(cls, d: dict) -> Camera:
        """Inverse of ``to_dict``; raises ``ValueError`` naming a missing key."""
        missing = [k for k in ("K", "viewmat", "width", "height") if k not in d]
        if missing:
            raise ValueError(f"camera: missing keys {missing} (expected K, viewmat, width, height)")
        T = torch.tensor(d["viewmat"], dtype=torch.float32)
        if T.shape != (4, 4):
            raise ValueError(f"camera.viewmat: expected a 4x4 matrix, got shape {tuple(T.shape)}")
        return cls(torch.tensor(d["K"], dtype=torch.float32), T[:3, :3], T[:3, 3], d["width"], d["height"])


def intrinsics(fov_deg: float, width: int, height: int) -> torch.Tensor:
    """``K (3,3)`` for a horizontal field of view in degrees and principal point at the image centre."""
    if not 0 < fov_deg < 180:
        raise ValueError(f"fov_deg: expected a value in (0, 180), got {fov_deg}")
    f = 0.5 * width / math.tan(math.radians(fov_deg) / 2)
    return torch.tensor([[f, 0.0, width / 2], [0.0, f, height / 2], [0.0, 0.0, 1.0]])


def look_at(eye, target=(0.0, 0.0, 0.0), up=(0.0, 0.0, 1.0), fov_deg: float = 45.0, width: int = 64,
            height: int = 64) -> Camera:
    """A camera at ``eye`` looking at ``target`` with image-up close to ``up`` (OpenCV axes).

    Raises:
        ValueError: ``eye == target``.
    """
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    z = target - eye
    if np.linalg.norm(z) < 1e-12:
        raise ValueError("look_at: eye and target coincide")
    z /= np.linalg.norm(z)
    x = np.cross(z, up)  # image y (down) then points along -up
    if np.linalg.norm(x) < 1e-8:  # looking along up: any perpendicular works
        x = np.cross(z, np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0]))
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    rot = np.stack([x, y, z])
    return Camera(intrinsics(fov_deg, width, height), torch.tensor(rot, dtype=torch.float32),
                  torch.tensor(-rot @ eye, dtype=torch.float32), width, height)


def fibonacci_directions(n: int, hemisphere: bool = False, offset: float = 0.0) -> np.ndarray:
    """``n`` nearly uniform unit vectors ``(n,3)`` on the sphere (or the z >= 0 hemisphere).

    ``offset`` in [0, 1) shifts the spiral, giving a different set of the same density.
    """
    if n < 1:
        raise ValueError(f"n: expected a positive integer, got {n}")
    i = np.arange(n) + 0.5
    z = 1 - i / n if hemisphere else 1 - 2 * i / n
    r = np.sqrt(np.clip(1 - z * z, 0.0, None))
    phi = np.pi * (3 - np.sqrt(5)) * np.arange(n) + 2 * np.pi * offset
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def fibonacci_sphere_cameras(n: int, radius: float = 3.0, hemisphere: bool = False, offset: float = 0.0,
                             **cam_kw) -> list[Camera]:
    """``n`` cameras on a Fibonacci sphere of ``radius`` looking at the origin (``look_at`` keywords pass through)."""
    if radius <= 0:
        raise ValueError(f"radius: expected > 0, got {radius}")
    return [look_at(radius * d, **cam_kw) for d in fibonacci_directions(n, hemisphere, offset)]


def pose_errors(estimated: Camera, true: Camera) -> tuple[float, float]:
    """(rotation error in degrees, camera-centre distance) between two cameras."""
    rel = estimated.R.detach().double() @ true.R.detach().double().T
    cos = float(((torch.diagonal(rel).sum() - 1) / 2).clamp(-1, 1))
    dist = float(torch.linalg.norm(estimated.center.detach().double() - true.center.detach().double()))
    return math.degrees(math.acos(cos)), dist
