"""Geodesic-convex sets on the unit sphere ``S^d ⊂ R^{d+1}``: the spherical cap and its log/exp chart.

GFM handles a cap by the Riemannian log map at the pole: ``Log_p`` sends the cap
``{x ∈ S^d : ∠(x, p) ≤ θ}`` onto the Euclidean ball of radius ``θ`` in the tangent space ``T_pS^d``
(coordinates in an orthonormal basis ``E`` of ``p^⊥``), flow matching runs there through that
ball's gauge map, and ``Exp_p`` maps samples back onto the cap **(inferred, spec "non-convex
extensions")**.
"""
from __future__ import annotations

import math

import torch

from .sets import Ball, _as_vector, _check_points

Tensor = torch.Tensor


class SphericalCap:
    """``{x ∈ S^d : ⟨x, p⟩ ≥ cos θ}`` for a pole ``p`` (normalised) and an angle ``0 < θ < π``.

    Geodesically convex for ``θ ≤ π/2``; for larger ``θ`` it is still star-shaped about ``p`` along
    geodesics, which is all GFM needs (``Log_p`` is a diffeomorphism on the open ball of radius π).

    Attributes:
        dim: ambient dimension ``d + 1`` (rows of data have this many columns).
        pole: ``(d+1,)`` float64 unit vector. angle: ``θ``.
        basis: ``(d+1, d)`` orthonormal basis of the tangent space ``p^⊥``.
        chart: ``Ball(0, θ)`` in ``R^d``, the cap's image under ``log``.

    Raises:
        ValueError: ``pole`` zero, not finite or of dimension < 2; ``angle`` not in (0, π).
    """

    def __init__(self, pole, angle: float):
        p = _as_vector("pole", pole)
        if p.shape[0] < 2 or float(torch.linalg.norm(p)) == 0:
            raise ValueError(f"pole: expected a non-zero vector of dimension >= 2, got {p.tolist()}")
        if not (isinstance(angle, (int, float)) and 0 < angle < math.pi):
            raise ValueError(f"angle: expected a number in (0, pi), got {angle!r}")
        self.pole = p / torch.linalg.norm(p)
        self.angle = float(angle)
        self.dim = p.shape[0]
        q, _ = torch.linalg.qr(torch.cat([self.pole[:, None], torch.eye(self.dim, dtype=torch.float64)], dim=1))
        self.basis = q[:, 1:self.dim]
        self.chart = Ball(torch.zeros(self.dim - 1, dtype=torch.float64), self.angle)

    def log(self, x: Tensor) -> Tensor:
        """``Log_p`` in tangent coordinates: ``(n, d+1)`` points of the sphere → ``(n, d)``, norm = ``∠(x, p)``.

        Rows are normalised first; the antipode ``−p`` (no unique geodesic) maps to a point at radius π.
        """
        _check_points("x", x, self.dim)
        x = x / torch.linalg.norm(x, dim=1, keepdim=True)
        w = x @ self.basis.to(x.device, x.dtype)
        s = torch.linalg.norm(w, dim=1, keepdim=True)
        r = torch.atan2(s, (x @ self.pole.to(x.device, x.dtype))[:, None])
        return torch.where(s > 0, w * (r / s.clamp(min=torch.finfo(x.dtype).tiny)), w)

    def exp(self, v: Tensor) -> Tensor:
        """``Exp_p``: ``(n, d)`` tangent coordinates → ``(n, d+1)`` unit vectors ``cos|v|·p + sin|v|·Ev/|v|``."""
        _check_points("v", v, self.dim - 1)
        r = torch.linalg.norm(v, dim=1, keepdim=True)
        sinc = torch.where(r > 0, torch.sin(r) / r.clamp(min=torch.finfo(v.dtype).tiny), 1.0)
        return torch.cos(r) * self.pole.to(v.device, v.dtype) + (v * sinc) @ self.basis.T.to(v.device, v.dtype)

    def log_abs_det_exp(self, v: Tensor) -> Tensor:
        """``log`` of the area factor of ``Exp_p`` at ``v`` ``(n, d)``: ``(d − 1)·log(sin|v|/|v|)``, shape ``(n,)``."""
        r = torch.linalg.norm(v, dim=1)
        sinc = torch.where(r > 0, torch.sin(r) / r.clamp(min=torch.finfo(v.dtype).tiny), 1.0)
        return (self.dim - 2) * torch.log(sinc)

    def violation(self, x: Tensor) -> Tensor:
        """``max(0, ∠(x, p) − θ) + |‖x‖ − 1|`` per row ``(n,)``: angular excess plus distance from the sphere."""
        _check_points("x", x, self.dim)
        angle = torch.linalg.norm(self.log(x), dim=1)
        return (angle - self.angle).clamp(min=0) + (torch.linalg.norm(x, dim=1) - 1).abs()

    def contains(self, x: Tensor, tol: float = 1e-9) -> Tensor:
        """``(n, d+1)`` → ``(n,)`` bool: ``violation(x) ≤ tol``."""
        return self.violation(x) <= tol

    def to_spec(self) -> dict:
        return {"type": "spherical_cap", "pole": self.pole.tolist(), "angle": self.angle}
