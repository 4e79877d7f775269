"""The gauge map ``T: C → B`` onto the unit ball, the uniform source on ``B`` and the ball's boundary step."""
from __future__ import annotations

import numpy as np
import torch

from .sets import ConvexSet, Polytope, _check_points, reflect_at_faces

Tensor = torch.Tensor
BOUNDARY_MODES = ("reflect", "radial", "project", "none")
"""Operators of ``ball_boundary_step`` (they need only the ball)."""
SET_BOUNDARY_MODES = (*BOUNDARY_MODES, "specular")
"""GFM's operators: the ball's, plus ``specular`` (reflection in ``C``: ``GaugeMap.specular_step``)."""


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

    def specular_step(self, z_prev: Tensor, z_new: Tensor, max_reflections: int = 8) -> tuple[Tensor, int]:
        """The ``specular`` operator: rows of ``z_new`` ``(n, d)`` with ``‖z‖ > 1`` are reflected in ``C`` itself.

        A step ``z → z'`` leaving the ball ends at ``T⁻¹(z')`` outside ``C`` (``T⁻¹`` extends to all of ``R^d``);
        ``C.reflect`` reflects it specularly at the face the step ``T⁻¹(z) → T⁻¹(z')`` crosses (as reflected flow
        matching does in ``C``), and ``T`` maps the result back into the ball (rows at ``‖z‖ > 1`` by rounding are
        rescaled to the sphere). The sphere reflection of ``reflect`` corresponds in ``C`` to a reflection along the
        ray through ``x_c``, which near edges and vertices (where that ray is oblique to the face) slides mass along
        the face away from them; this operator does not. Only the rows outside the ball are touched (in float64).
        Returns the new iterates (``z_new``'s dtype and device) and the number of rows that were outside.
        """
        _check_points("z_new", z_new, self.C.dim)
        if isinstance(self.C, Polytope):
            return self._specular_polytope(z_prev, z_new, max_reflections)
        out_idx = torch.nonzero(torch.linalg.vector_norm(z_new, dim=1) > 1).squeeze(1)
        if out_idx.numel() == 0:
            return z_new, 0
        start = self.from_ball(z_prev[out_idx].to(torch.float64))
        end = self.from_ball(z_new[out_idx].to(torch.float64))
        z = self.to_ball(self.C.reflect(start, end, max_reflections))
        norm = torch.linalg.vector_norm(z, dim=1, keepdim=True)
        result = z_new.clone()
        result[out_idx] = torch.where(norm > 1, z / norm, z).to(z_new.dtype)
        return result, out_idx.numel()

    def _specular_polytope(self, z_prev: Tensor, z_new: Tensor, max_reflections: int) -> tuple[Tensor, int]:
        """``specular_step`` on a polytope in NumPy (float64) on the rows outside the ball: the same maps
        ``T⁻¹(z) = x_c + ‖z‖/γ(z)·z`` and ``T(x) = γ(y)/‖y‖·y`` with ``γ(y) = max(0, maxᵢ aᵢᵀy/sᵢ)``,
        ``sᵢ = bᵢ − aᵢᵀx_c``, without the per-call cost of torch on a handful of rows."""
        e = z_new.detach().cpu().numpy()
        out_idx = np.flatnonzero(np.einsum("ij,ij->i", e, e) > 1)
        if out_idx.size == 0:
            return z_new, 0
        A, b, c = self.C.A.numpy(), self.C.b.numpy(), self.C.center.numpy()
        slack = b - A @ c

        def gauge(y):
            return np.maximum((y @ A.T / slack).max(axis=1), 0)

        def from_ball(z):
            norm = np.linalg.norm(z, axis=1)
            return c + z * np.where(norm > 0, norm / np.maximum(gauge(z), np.finfo(float).tiny), 0)[:, None]

        x = reflect_at_faces(A, b, from_ball(z_prev.detach().cpu().numpy()[out_idx].astype(np.float64)),
                             from_ball(e[out_idx].astype(np.float64)), max_reflections)
        y = x - c
        norm = np.linalg.norm(y, axis=1)
        z = y * np.where(norm > 0, gauge(y) / np.maximum(norm, np.finfo(float).tiny), 0)[:, None]
        z /= np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1)
        result = e.copy()
        result[out_idx] = z
        return torch.from_numpy(result).to(z_new.device), out_idx.size


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


def _reflect_once(z: np.ndarray, z_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Specular reflection of the steps ``z → z_new`` (rows with ``‖z‖ ≤ 1 < ‖z_new‖``) at the unit sphere.

    NumPy arrays ``(k, d)``. Returns the crossing points ``p`` (``‖p‖ = 1``, the positive root of
    ``‖z + s(z_new − z)‖ = 1``) and ``z_new − 2⟨z_new − p, p⟩p``.
    """
    w = z_new - z
    a = np.maximum(np.einsum("ij,ij->i", w, w), np.finfo(w.dtype).tiny)
    b = np.einsum("ij,ij->i", z, w)                                  # half the linear coefficient
    c = np.minimum(np.einsum("ij,ij->i", z, z) - 1, 0)
    s = (np.sqrt(np.maximum(b * b - a * c, 0)) - b) / a
    p = z + s[:, None] * w
    p /= np.sqrt(np.einsum("ij,ij->i", p, p))[:, None]
    return p, z_new - 2 * (np.einsum("ij,ij->i", z_new, p) - 1)[:, None] * p


def _reflect_rows(s: np.ndarray, e: np.ndarray, max_reflections: int) -> np.ndarray:
    """Repeated reflection of the steps ``s → e`` (``(k, d)``, every ``e`` outside the ball) → ``(k, d)``.

    Up to ``max_reflections`` reflections, then projection onto the sphere. One reflection brings almost every row
    back, so the rows still outside recurse on their own (a sampling step pays one reflection and one test).
    """
    if max_reflections == 0:
        return e / np.linalg.norm(e, axis=1, keepdims=True)
    p, r = _reflect_once(s, e)
    still = np.flatnonzero(np.einsum("ij,ij->i", r, r) > 1)
    if still.size:
        r[still] = _reflect_rows(p[still], r[still], max_reflections - 1)
    return r


def _outside_rows(s: np.ndarray, e: np.ndarray, mode: str, max_reflections: int) -> np.ndarray:
    """The operator on the rows ``e`` ``(k, d)`` outside the ball, stepped from ``s`` ``(k, d)`` → ``(k, d)``."""
    if mode == "project":
        return e / np.linalg.norm(e, axis=1, keepdims=True)
    if mode == "radial":
        norm = np.linalg.norm(e, axis=1, keepdims=True)
        return e * (np.clip(2 - norm, 0, None) / norm)
    return _reflect_rows(s, e, max_reflections)


def ball_boundary_step(z_prev: Tensor, z_new: Tensor, mode: str = "reflect", max_reflections: int = 8) -> Tensor:
    """Brings the rows of ``z_new`` with ``‖z‖ > 1`` back into the unit ball after a step from ``z_prev``.

    Modes: ``reflect`` (specular reflection at the crossing point, repeated up to ``max_reflections``
    times, then projection), ``radial`` (``z·(2 − ‖z‖)/‖z‖``, clamped at 0), ``project`` (``z/‖z‖``),
    ``none`` (unchanged). Shapes ``(n, d)``; ``z_prev`` must lie in the ball. A sampling operator, not
    differentiable (``reflect`` computes on the host in NumPy).

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


def boundary_step_counted(z_prev: Tensor, z_new: Tensor, mode: str = "reflect", max_reflections: int = 8,
                          inplace: bool = False) -> tuple[Tensor, int]:
    """``ball_boundary_step`` (arguments unchecked) plus the number of rows of ``z_new`` outside the ball.

    The rows outside are few, so the operator runs on them in NumPy on the host, where an operation on a
    handful of rows costs far less than a torch call; on the CPU the test ``‖z‖ > 1`` runs there too
    (NumPy views of the tensors, no copy). The result has ``z_new``'s device and dtype. ``inplace``: overwrite the
    rows of ``z_new`` (a tensor the caller owns, such as a fresh Euler step) instead of copying it.
    """
    if z_new.device.type == "cpu":
        e = z_new.detach().numpy()
        # squared norms as a BLAS product: right after the net's forward pass (cold caches) about half of einsum's time
        out_idx = np.flatnonzero(np.dot(e * e, np.ones(e.shape[1], e.dtype)) > 1)
        if mode == "none" or out_idx.size == 0:
            return z_new, out_idx.size
        result = e if inplace else e.copy()
        result[out_idx] = _outside_rows(z_prev.detach().numpy()[out_idx], e[out_idx], mode, max_reflections)
        return (z_new if inplace else torch.from_numpy(result)), out_idx.size
    out_idx = torch.nonzero(torch.linalg.vector_norm(z_new, dim=1) > 1).squeeze(1)
    n_out = out_idx.numel()
    if mode == "none" or n_out == 0:
        return z_new, n_out
    rows = _outside_rows(z_prev[out_idx].detach().cpu().numpy(), z_new[out_idx].detach().cpu().numpy(), mode,
                         max_reflections)
    result = z_new if inplace else z_new.clone()
    result[out_idx] = torch.from_numpy(rows).to(z_new.device)
    return result, n_out
