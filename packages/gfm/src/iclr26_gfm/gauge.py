"""The gauge map ``T: C → B`` onto the unit ball, the uniform source on ``B`` and the ball's boundary step."""
from __future__ import annotations

import torch

from .sets import ConvexSet, _check_points

Tensor = torch.Tensor
BOUNDARY_MODES = ("reflect", "radial", "project", "none")


class GaugeMap:
    """The bijection ``T(x) = γ_C(x − x_c)/‖x − x_c‖·(x − x_c)`` between ``C`` and the unit ball ``B``.

    ``‖T(x)‖ = γ_C(x − x_c)``, ``T(x_c) = 0``, ``T(∂C) = ∂B``; the inverse is
    ``T⁻¹(z) = x_c + ‖z‖/γ_C(z)·z``. Maps are computed in the input's dtype and device.
    """

    def __init__(self, C: ConvexSet):
        if not isinstance(C, ConvexSet):
            raise TypeError(f"C: expected a ConvexSet, got {type(C).__name__}")
        self.C = C

    def to_ball(self, x: Tensor) -> Tensor:
        """``(n, d)`` points of ``C`` → ``(n, d)`` points of ``B``; ``x_c`` maps to 0 exactly."""
        _check_points("x", x, self.C.dim)
        y = x - self.C.center.to(x.device, x.dtype)
        norm = torch.linalg.norm(y, dim=1)
        scale = torch.where(norm > 0, self.C.gauge(y) / norm.clamp(min=torch.finfo(x.dtype).tiny), 0)
        return y * scale[:, None]

    def from_ball(self, z: Tensor) -> Tensor:
        """``(n, d)`` points of ``B`` → ``(n, d)`` points of ``C``; 0 maps to ``x_c`` exactly.

        Raises:
            ValueError: ``γ_C`` vanishes along a direction (the set is unbounded there).
        """
        _check_points("z", z, self.C.dim)
        norm = torch.linalg.norm(z, dim=1)
        g = self.C.gauge(z)
        if ((g <= 0) & (norm > 0)).any():
            raise ValueError("C: the gauge is 0 along a direction, the set is unbounded there")
        scale = torch.where(norm > 0, norm / g.clamp(min=torch.finfo(z.dtype).tiny), 0)
        return self.C.center.to(z.device, z.dtype) + z * scale[:, None]

    def log_abs_det_from_ball(self, z: Tensor) -> Tensor:
        """``log|det ∂T⁻¹/∂z| = −d·log γ_C(z/‖z‖)`` per row ``(n,)`` (undefined at ``z = 0``)."""
        _check_points("z", z, self.C.dim)
        u = z / torch.linalg.norm(z, dim=1, keepdim=True)
        return -self.C.dim * torch.log(self.C.gauge(u))


def uniform_ball(n: int, d: int, generator: torch.Generator | None = None, *, device=None,
                 dtype: torch.dtype = torch.float32) -> Tensor:
    """``n`` points uniform in the ``d``-dimensional unit ball: ``U^{1/d}·g/‖g‖``, ``g ~ N(0, I)``. Shape ``(n, d)``."""
    if n < 0 or d < 1:
        raise ValueError(f"n, d: expected n >= 0 and d >= 1, got n={n}, d={d}")
    if generator is not None:
        device = generator.device
    g = torch.randn(n, d, generator=generator, device=device, dtype=dtype)
    u = torch.rand(n, 1, generator=generator, device=device, dtype=dtype)
    return g / torch.linalg.norm(g, dim=1, keepdim=True) * u ** (1.0 / d)


def _reflect_once(z: Tensor, z_new: Tensor) -> tuple[Tensor, Tensor]:
    """Specular reflection of the step ``z → z_new`` (``‖z‖ ≤ 1 < ‖z_new‖``) at the unit sphere.

    Returns the crossing point ``p`` (``‖p‖ = 1``) and ``z_new − 2⟨z_new − p, p⟩p``.
    """
    w = z_new - z
    a = (w * w).sum(dim=1)
    b = 2 * (z * w).sum(dim=1)
    c = ((z * z).sum(dim=1) - 1).clamp(max=0)
    s = (-b + torch.sqrt((b * b - 4 * a * c).clamp(min=0))) / (2 * a)
    p = z + s[:, None] * w
    p = p / torch.linalg.norm(p, dim=1, keepdim=True)
    return p, z_new - 2 * ((z_new - p) * p).sum(dim=1, keepdim=True) * p


def ball_boundary_step(z_prev: Tensor, z_new: Tensor, mode: str = "reflect", max_reflections: int = 8) -> Tensor:
    """Brings the rows of ``z_new`` with ``‖z‖ > 1`` back into the unit ball after a step from ``z_prev``.

    Modes: ``reflect`` (specular reflection at the crossing point, repeated up to ``max_reflections``
    times, then projection), ``radial`` (``z·(2 − ‖z‖)/‖z‖``, clamped at 0), ``project`` (``z/‖z‖``),
    ``none`` (unchanged). Shapes ``(n, d)``; ``z_prev`` must lie in the ball.

    Raises:
        ValueError: unknown ``mode``, mismatched shapes or ``max_reflections < 0``.
    """
    if mode not in BOUNDARY_MODES:
        raise ValueError(f"mode: expected one of {BOUNDARY_MODES}, got {mode!r}")
    if z_prev.shape != z_new.shape or z_new.ndim != 2:
        raise ValueError(f"z_prev, z_new: expected equal shapes (n, d), "
                         f"got {tuple(z_prev.shape)}, {tuple(z_new.shape)}")
    if max_reflections < 0:
        raise ValueError(f"max_reflections: expected >= 0, got {max_reflections}")
    return boundary_step_counted(z_prev, z_new, mode, max_reflections)[0]


def boundary_step_counted(z_prev: Tensor, z_new: Tensor, mode: str = "reflect",
                          max_reflections: int = 8) -> tuple[Tensor, int]:
    """``ball_boundary_step`` (arguments unchecked) plus the number of rows of ``z_new`` outside the ball."""
    norm = torch.linalg.norm(z_new, dim=1)
    out_idx = torch.nonzero(norm > 1).squeeze(1)
    if mode == "none" or out_idx.numel() == 0:
        return z_new, out_idx.numel()
    result = z_new.clone()
    zo, no = z_new[out_idx], norm[out_idx, None]
    if mode == "project":
        result[out_idx] = zo / no
    elif mode == "radial":
        result[out_idx] = zo * ((2 - no).clamp(min=0) / no)
    else:
        start, end, idx = z_prev[out_idx], zo, out_idx
        for _ in range(max_reflections):
            start, end = _reflect_once(start, end)
            still = torch.linalg.norm(end, dim=1) > 1
            result[idx[~still]] = end[~still]
            start, end, idx = start[still], end[still], idx[still]
            if idx.numel() == 0:
                break
        if idx.numel():
            result[idx] = end / torch.linalg.norm(end, dim=1, keepdim=True)
    return result, out_idx.numel()
