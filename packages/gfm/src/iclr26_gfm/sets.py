"""Constraint sets with a Minkowski gauge about an interior point.

Every set ``C`` stores an interior point ``center`` (x_c, float64) and evaluates the gauge
``γ_C(y) = inf{λ > 0 : x_c + y/λ ∈ C}`` of offsets ``y`` (rows of an ``(n, d)`` tensor) in the
dtype and on the device of ``y``. ``x ∈ C ⇔ γ_C(x − x_c) ≤ 1``. Sets that are star-shaped about
``center`` (``StarUnion``) use the same interface; the gauge is then positively homogeneous but
not convex.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection

if TYPE_CHECKING:
    from .sphere import SphericalCap

Tensor = torch.Tensor


def _as_matrix(name: str, value, dim: int | None = None) -> Tensor:
    t = torch.as_tensor(np.asarray(value, dtype=np.float64) if not isinstance(value, Tensor) else value)
    t = t.detach().to(torch.float64).cpu()
    if t.ndim != 2 or (dim is not None and t.shape[1] != dim):
        want = f"(m, {dim})" if dim is not None else "(m, d)"
        raise ValueError(f"{name}: expected a 2-D array of shape {want}, got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name}: expected finite values, got NaN or Inf")
    return t


def _as_vector(name: str, value, dim: int | None = None) -> Tensor:
    t = torch.as_tensor(np.asarray(value, dtype=np.float64) if not isinstance(value, Tensor) else value)
    t = t.detach().to(torch.float64).cpu().reshape(-1) if t.ndim == 0 else t.detach().to(torch.float64).cpu()
    if t.ndim != 1 or (dim is not None and t.shape[0] != dim):
        want = f"({dim},)" if dim is not None else "(d,)"
        raise ValueError(f"{name}: expected a 1-D array of shape {want}, got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name}: expected finite values, got NaN or Inf")
    return t


def _check_points(name: str, x: Tensor, dim: int) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor of shape (n, {dim}), got {type(x).__name__}")
    if x.ndim != 2 or x.shape[1] != dim:
        raise ValueError(f"{name}: expected shape (n, {dim}), got {tuple(x.shape)}")
    return x


def chebyshev_center(A, b) -> tuple[Tensor, float]:
    """Centre and radius of the largest Euclidean ball inside ``{x : Ax ≤ b}``.

    Solves the LP ``max r s.t. a_iᵀx + r‖a_i‖ ≤ b_i, r ≥ 0`` with HiGHS.

    Args:
        A: ``(m, d)`` constraint matrix. b: ``(m,)`` right-hand side.

    Returns:
        ``(center (d,) float64 tensor, radius)``.

    Raises:
        ValueError: bad shapes, the polytope is empty or has no interior, or the LP is unbounded.
    """
    A = _as_matrix("A", A)
    b = _as_vector("b", b, A.shape[0])
    m, d = A.shape
    norms = torch.linalg.norm(A, dim=1)
    if (norms == 0).any():
        raise ValueError("A: every row must be non-zero, got an all-zero row")
    cost = np.zeros(d + 1)
    cost[-1] = -1.0
    lhs = np.hstack([A.numpy(), norms.numpy()[:, None]])
    res = linprog(cost, A_ub=lhs, b_ub=b.numpy(), bounds=[(None, None)] * d + [(0, None)], method="highs")
    if res.status == 2:
        raise ValueError("A, b: the polytope {x : Ax <= b} is empty (Chebyshev LP infeasible)")
    if res.status == 3:
        raise ValueError("A, b: the polytope {x : Ax <= b} is unbounded (Chebyshev LP unbounded)")
    if res.status != 0:
        raise ValueError(f"A, b: the Chebyshev LP failed: {res.message}")
    radius = float(res.x[-1])
    if radius <= 1e-12 * max(1.0, float(b.abs().max())):
        raise ValueError(f"A, b: the polytope has no interior (inscribed radius {radius:.3g})")
    return torch.as_tensor(res.x[:d], dtype=torch.float64), radius


class ConvexSet:
    """A compact set with non-empty interior, star-shaped about ``center`` (convex for all but ``StarUnion``).

    Attributes:
        dim: the dimension ``d``.
        center: ``(d,)`` float64 interior point ``x_c``.
    """

    dim: int
    center: Tensor

    def gauge_from(self, origin: Tensor, y: Tensor) -> Tensor:
        """Gauge of ``C − origin`` at offsets ``y`` ``(n, d)`` → ``(n,)``; ``origin`` must be interior."""
        raise TypeError(f"{type(self).__name__} does not define a gauge")

    def strictly_contains(self, x: Tensor) -> Tensor:
        """``(n, d)`` → ``(n,)`` bool: strictly interior points."""
        raise TypeError(f"{type(self).__name__} does not define strict membership")

    def bounding_box(self) -> tuple[Tensor, Tensor]:
        """``(lo, hi)``, two ``(d,)`` float64 tensors enclosing the set."""
        raise TypeError(f"{type(self).__name__} does not define a bounding box")

    def gauge(self, y: Tensor) -> Tensor:
        """``γ_C(y)`` for offsets ``y`` ``(n, d)`` from ``center``; returns ``(n,)`` in ``y``'s dtype."""
        _check_points("y", y, self.dim)
        return self.gauge_from(self.center.to(y.device, y.dtype), y)

    def contains(self, x: Tensor, tol: float = 1e-9) -> Tensor:
        """``(n, d)`` → ``(n,)`` bool: ``violation(x) ≤ tol``."""
        return self.violation(x) <= tol

    def violation(self, x: Tensor) -> Tensor:
        """``max(0, γ_C(x − x_c) − 1)`` per row ``(n,)``; zero exactly on ``C``."""
        _check_points("x", x, self.dim)
        return (self.gauge(x - self.center.to(x.device, x.dtype)) - 1).clamp(min=0)

    def log_volume(self) -> float:
        """``log vol(C)`` (Lebesgue measure in ``R^d``); used by the ``uniform_set`` source's density.

        Raises:
            ValueError: the set has no volume formula (only polytopes and ellipsoids have one).
        """
        raise ValueError(f"{type(self).__name__}: expected a set with a volume formula (a polytope or an "
                         "ellipsoid) for log vol(C), got none for this set")

    def normal(self, y: Tensor) -> Tensor:
        """Outward normals ``∇γ_C(y)`` ``(n, d)`` at offsets ``y`` ``(n, d)`` from ``center`` (float64), by central
        differences of the gauge (step ``1e-6·max(1, ‖y‖)``); sets with a closed form override it."""
        y64 = _check_points("y", y, self.dim).to(torch.float64)
        h = 1e-6 * torch.linalg.norm(y64, dim=1, keepdim=True).clamp(min=1.0)
        grad = torch.empty_like(y64)
        for j in range(self.dim):
            step = torch.zeros_like(y64)
            step[:, j:j + 1] = h
            grad[:, j] = (self.gauge(y64 + step) - self.gauge(y64 - step)) / (2 * h[:, 0])
        return grad

    def _exit_fraction(self, x_start: Tensor, w: Tensor, iters: int = 60) -> Tensor:
        """``λ ∈ [0, 1]`` ``(k,)`` where ``x_start + λw`` leaves ``C`` (``γ = 1``), by bisection; ``x_start`` in ``C``,
        ``x_start + w`` outside. A convex gauge crosses 1 once along the segment."""
        c = self.center.to(x_start.device, x_start.dtype)
        lo = torch.zeros(x_start.shape[0], dtype=x_start.dtype, device=x_start.device)
        hi = torch.ones_like(lo)
        for _ in range(iters):
            mid = (lo + hi) / 2
            inside = self.gauge(x_start + mid[:, None] * w - c) <= 1
            lo, hi = torch.where(inside, mid, lo), torch.where(inside, hi, mid)
        return lo

    def reflect(self, x_start: Tensor, x_end: Tensor, max_reflections: int = 8) -> Tensor:
        """Specular reflection at ``∂C`` of the steps ``x_start → x_end`` (``(n, d)``, ``x_start`` in ``C``).

        Rows of ``x_end`` outside ``C`` are reflected across the tangent plane at the point where the step leaves
        ``C`` (normal ``∇γ``), repeated from that point up to ``max_reflections`` times; rows still outside then
        keep the last exit point. Rows inside are returned unchanged. Generic version: exit point by bisection,
        normal by central differences (polytopes override both with closed forms).
        """
        c = self.center.to(x_end.device, x_end.dtype)
        out = x_end.clone()
        idx = torch.nonzero(self.gauge(x_end - c) > 1).squeeze(1)
        start, end = x_start[idx], x_end[idx]
        for _ in range(max_reflections):
            if idx.numel() == 0:
                return out
            p = start + self._exit_fraction(start, end - start)[:, None] * (end - start)
            n = self.normal(p - c).to(x_end.dtype)
            end = end - 2 * ((end - p) * n).sum(dim=1, keepdim=True) / (n * n).sum(dim=1, keepdim=True) * n
            start = p
            still = self.gauge(end - c) > 1
            out[idx[~still]] = end[~still]
            start, end, idx = start[still], end[still], idx[still]
        out[idx] = start
        return out

    def radial(self, u: Tensor) -> Tensor:
        """Radial function ``ρ_C(u) = 1/γ_C(u)`` for unit rows ``u`` ``(n, d)``.

        Raises:
            ValueError: ``γ_C(u) = 0`` for some direction (the set is unbounded along it).
        """
        g = self.gauge(u)
        if (g <= 0).any():
            raise ValueError("the set is unbounded along a sampled direction (gauge 0 on a unit vector)")
        return 1.0 / g

    def _check_center(self, center) -> Tensor:
        c = _as_vector("center", center, self.dim)
        if not bool(self.strictly_contains(c[None])[0]):
            raise ValueError(f"center: expected a point strictly inside the set, got {c.tolist()}")
        return c


class Polytope(ConvexSet):
    """``C = {x : Ax ≤ b}``, compact with interior; gauge ``γ(y) = max(0, maxᵢ aᵢᵀy / (bᵢ − aᵢᵀx_c))``.

    Args:
        A: ``(m, d)``; b: ``(m,)``; center: interior point, default the Chebyshev centre.

    Raises:
        ValueError: empty or unbounded polytope, or ``center`` not strictly interior.
    """

    def __init__(self, A, b, center=None):
        self.A = _as_matrix("A", A)
        self.b = _as_vector("b", b, self.A.shape[0])
        self.dim = self.A.shape[1]
        cheb, self.inradius = chebyshev_center(self.A, self.b)
        self._box = self._lp_bounding_box()
        self.center = cheb if center is None else self._check_center(center)

    def _lp_bounding_box(self) -> tuple[Tensor, Tensor]:
        lo, hi = torch.empty(self.dim, dtype=torch.float64), torch.empty(self.dim, dtype=torch.float64)
        for k in range(self.dim):
            for sign, out in ((1.0, lo), (-1.0, hi)):
                cost = np.zeros(self.dim)
                cost[k] = sign
                res = linprog(cost, A_ub=self.A.numpy(), b_ub=self.b.numpy(), bounds=[(None, None)] * self.dim,
                              method="highs")
                if res.status == 3:
                    raise ValueError(f"A, b: the polytope is unbounded along coordinate {k}")
                out[k] = float(res.x[k])
        return lo, hi

    def strictly_contains(self, x: Tensor) -> Tensor:
        scale = max(1.0, float(self.b.abs().max()))
        slack = self.b.to(x.device, x.dtype) - x @ self.A.to(x.device, x.dtype).T
        return slack.min(dim=1).values > 1e-12 * scale

    def gauge_from(self, origin: Tensor, y: Tensor) -> Tensor:
        A = self.A.to(y.device, y.dtype)
        slack = self.b.to(y.device, y.dtype) - A @ origin
        return ((y @ A.T) / slack).max(dim=1).values.clamp(min=0)

    def violation(self, x: Tensor) -> Tensor:
        """``max(0, maxᵢ aᵢᵀx − bᵢ)`` per row: the violation in the constraints' own units."""
        _check_points("x", x, self.dim)
        return (x @ self.A.to(x.device, x.dtype).T - self.b.to(x.device, x.dtype)).max(dim=1).values.clamp(min=0)

    def bounding_box(self) -> tuple[Tensor, Tensor]:
        return self._box[0].clone(), self._box[1].clone()

    def log_volume(self) -> float:
        """``log vol(C)``: volume of the hull of the vertices (``scipy.spatial.HalfspaceIntersection``)."""
        if self.dim == 1:
            lo, hi = self._box
            return float(torch.log(hi - lo)[0])
        halfspaces = np.hstack([self.A.numpy(), -self.b.numpy()[:, None]])
        vertices = HalfspaceIntersection(halfspaces, self.center.numpy()).intersections
        return float(np.log(ConvexHull(vertices).volume))

    def normal(self, y: Tensor) -> Tensor:
        """``∇γ(y) = a_i/(b_i − a_iᵀx_c)`` of the face ``i`` attaining the gauge at offsets ``y`` ``(n, d)``."""
        A = self.A.to(y.device, y.dtype)
        slack = self.b.to(y.device, y.dtype) - A @ self.center.to(y.device, y.dtype)
        face = ((y @ A.T) / slack).argmax(dim=1)
        return A[face] / slack[face, None]

    def reflect(self, x_start: Tensor, x_end: Tensor, max_reflections: int = 8) -> Tensor:
        """Specular reflection of the steps ``x_start → x_end`` at the first face each crosses (smallest crossing
        time), repeated up to ``max_reflections`` times, then the crossing point is kept (see
        :meth:`ConvexSet.reflect`). Every face is checked; the rows outside (usually few) are processed in NumPy
        on the host (float64), where an operation on a handful of rows costs far less than a torch call."""
        A, b = self.A.numpy(), self.b.numpy()
        end = x_end.detach().cpu().numpy()
        idx = np.flatnonzero((end @ A.T - b).max(axis=1) > 0)
        if idx.size == 0:
            return x_end
        out = end.copy()
        out[idx] = reflect_at_faces(A, b, x_start.detach().cpu().numpy()[idx].astype(np.float64),
                                    end[idx].astype(np.float64), max_reflections)
        return torch.from_numpy(out).to(x_end.device)

    def to_spec(self) -> dict:
        """A serialisable description (see ``set_from_spec``)."""
        return {"type": "polytope", "A": self.A.tolist(), "b": self.b.tolist(), "center": self.center.tolist()}


def reflect_at_faces(A: np.ndarray, b: np.ndarray, start: np.ndarray, end: np.ndarray,
                     max_reflections: int) -> np.ndarray:
    """NumPy core of :meth:`Polytope.reflect` on rows ``(k, d)`` whose ``end`` lies outside ``{Ax ≤ b}``."""
    out, idx = end.copy(), np.arange(end.shape[0])
    for _ in range(max_reflections):
        w = end - start
        aw = w @ A.T
        excess_start = np.maximum(b - start @ A.T, 0)
        with np.errstate(divide="ignore"):
            t = np.where(aw > 0, excess_start / np.maximum(aw, 1e-30), np.inf)
        face = t.argmin(axis=1)
        t_hit = np.minimum(t[np.arange(t.shape[0]), face], 1)
        p = start + t_hit[:, None] * w
        a = A[face]
        end = end - (2 * ((end * a).sum(axis=1) - b[face]) / (a * a).sum(axis=1))[:, None] * a
        start = p
        still = (end @ A.T - b).max(axis=1) > 0
        out[idx[~still]] = end[~still]
        start, end, idx = start[still], end[still], idx[still]
        if idx.size == 0:
            return out
    out[idx] = start
    return out


class Box(Polytope):
    """``[lo, hi]`` as a polytope with ``2d`` rows; default centre the box centre (radius half the smallest side)."""

    def __init__(self, lo, hi, center=None):
        lo_t = _as_vector("lo", lo)
        hi_t = _as_vector("hi", hi, lo_t.shape[0])
        if not (hi_t > lo_t).all():
            raise ValueError(f"hi: expected hi > lo in every coordinate, got lo={lo_t.tolist()}, hi={hi_t.tolist()}")
        self.lo, self.hi = lo_t, hi_t
        eye = torch.eye(lo_t.shape[0], dtype=torch.float64)
        self.A = torch.cat([eye, -eye])
        self.b = torch.cat([hi_t, -lo_t])
        self.dim = lo_t.shape[0]
        self.inradius = float((hi_t - lo_t).min()) / 2
        self._box = (lo_t, hi_t)
        self.center = (lo_t + hi_t) / 2 if center is None else self._check_center(center)

    def to_spec(self) -> dict:
        return {"type": "box", "lo": self.lo.tolist(), "hi": self.hi.tolist(), "center": self.center.tolist()}


class Ellipsoid(ConvexSet):
    """``C = {x : (x − c)ᵀQ(x − c) ≤ 1}``, ``Q`` symmetric positive definite.

    Gauge about ``x_c`` with ``e = x_c − c``: ``γ(y) = (yᵀQe + sqrt((yᵀQe)² + yᵀQy·(1 − eᵀQe))) / (1 − eᵀQe)``,
    the reciprocal of the positive root of ``s²yᵀQy + 2s·yᵀQe + eᵀQe − 1 = 0``.

    Raises:
        ValueError: ``Q`` not symmetric or not positive definite; ``center`` not strictly interior.
    """

    def __init__(self, Q, c, center=None):
        self.Q = _as_matrix("Q", Q)
        d = self.Q.shape[0]
        if self.Q.shape != (d, d):
            raise ValueError(f"Q: expected a square matrix, got shape {tuple(self.Q.shape)}")
        if not torch.allclose(self.Q, self.Q.T, rtol=1e-10, atol=1e-12):
            raise ValueError("Q: expected a symmetric matrix")
        evals = torch.linalg.eigvalsh(self.Q)
        if evals.min() <= 0:
            raise ValueError(f"Q: expected a positive definite matrix, smallest eigenvalue {float(evals.min()):.3g}")
        self.c = _as_vector("c", c, d)
        self.dim = d
        self.center = self.c.clone() if center is None else self._check_center(center)

    def strictly_contains(self, x: Tensor) -> Tensor:
        e = x - self.c.to(x.device, x.dtype)
        return ((e @ self.Q.to(x.device, x.dtype)) * e).sum(dim=1) < 1

    def gauge_from(self, origin: Tensor, y: Tensor) -> Tensor:
        Q = self.Q.to(y.device, y.dtype)
        e = origin - self.c.to(y.device, y.dtype)
        q = 1 - e @ Q @ e
        yq = y @ Q
        a = (yq * y).sum(dim=1)
        bq = yq @ e
        return ((bq + torch.sqrt((bq * bq + a * q).clamp(min=0))) / q).clamp(min=0)

    def bounding_box(self) -> tuple[Tensor, Tensor]:
        half = torch.sqrt(torch.diagonal(torch.linalg.inv(self.Q)))
        return self.c - half, self.c + half

    def log_volume(self) -> float:
        """``log vol(C) = log vol(B_d) − ½ log det Q``."""
        d = self.dim
        return 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d + 1) - 0.5 * float(torch.linalg.slogdet(self.Q)[1])

    def to_spec(self) -> dict:
        return {"type": "ellipsoid", "Q": self.Q.tolist(), "c": self.c.tolist(), "center": self.center.tolist()}


class Ball(Ellipsoid):
    """Euclidean ball of radius ``r`` about ``c`` (``Q = I/r²``); centred at ``c``."""

    def __init__(self, c, r: float):
        if not (isinstance(r, (int, float)) and np.isfinite(r) and r > 0):
            raise ValueError(f"r: expected a positive finite radius, got {r!r}")
        c_t = _as_vector("c", c)
        super().__init__(torch.eye(c_t.shape[0], dtype=torch.float64) / float(r) ** 2, c_t)
        self.r = float(r)


def _check_members(sets: Sequence[ConvexSet]) -> list[ConvexSet]:
    sets = list(sets)
    if not sets or not all(isinstance(s, ConvexSet) for s in sets):
        raise TypeError("sets: expected a non-empty sequence of ConvexSet objects")
    dims = {s.dim for s in sets}
    if len(dims) != 1:
        raise ValueError(f"sets: expected members of one dimension, got dimensions {sorted(dims)}")
    return sets


class Intersection(ConvexSet):
    """``C = ∩ₖ Cₖ``: gauge ``γ_C = maxₖ γ_{Cₖ}`` about a common interior point.

    Args:
        sets: the members; center: a point strictly inside every member (default: the mean of the
            members' centres, which must then be strictly interior to all).
    """

    def __init__(self, sets: Sequence[ConvexSet], center=None):
        self.sets = _check_members(sets)
        self.dim = self.sets[0].dim
        if center is None:
            center = torch.stack([s.center for s in self.sets]).mean(dim=0)
        self.center = self._check_center(center)

    def strictly_contains(self, x: Tensor) -> Tensor:
        return torch.stack([s.strictly_contains(x) for s in self.sets]).all(dim=0)

    def gauge_from(self, origin: Tensor, y: Tensor) -> Tensor:
        return torch.stack([s.gauge_from(origin, y) for s in self.sets]).max(dim=0).values

    def bounding_box(self) -> tuple[Tensor, Tensor]:
        boxes = [s.bounding_box() for s in self.sets]
        lo = torch.stack([b[0] for b in boxes]).max(dim=0).values
        return lo, torch.stack([b[1] for b in boxes]).min(dim=0).values

    def to_spec(self) -> dict:
        return {"type": "intersection", "sets": [s.to_spec() for s in self.sets], "center": self.center.tolist()}


class StarUnion(ConvexSet):
    """Union of convex sets whose interiors all contain ``center``: star-shaped, gauge ``minₖ γ_{Cₖ}``.

    Raises:
        ValueError: ``center`` is not strictly inside every member.
    """

    def __init__(self, sets: Sequence[ConvexSet], center):
        self.sets = _check_members(sets)
        self.dim = self.sets[0].dim
        c = _as_vector("center", center, self.dim)
        outside = [k for k, s in enumerate(self.sets) if not bool(s.strictly_contains(c[None])[0])]
        if outside:
            raise ValueError(f"center: expected a point strictly inside every member, not inside members {outside}")
        self.center = c

    def strictly_contains(self, x: Tensor) -> Tensor:
        return torch.stack([s.strictly_contains(x) for s in self.sets]).any(dim=0)

    def gauge_from(self, origin: Tensor, y: Tensor) -> Tensor:
        return torch.stack([s.gauge_from(origin, y) for s in self.sets]).min(dim=0).values

    def bounding_box(self) -> tuple[Tensor, Tensor]:
        boxes = [s.bounding_box() for s in self.sets]
        lo = torch.stack([b[0] for b in boxes]).min(dim=0).values
        return lo, torch.stack([b[1] for b in boxes]).max(dim=0).values

    def to_spec(self) -> dict:
        return {"type": "star_union", "sets": [s.to_spec() for s in self.sets], "center": self.center.tolist()}


class FunctionalSet(ConvexSet):
    """``C = {x : g_j(x) ≤ 0 ∀j}`` from callables; gauge by bisection along each ray.

    For a direction ``u`` the largest feasible ``s ∈ [0, r_max]`` with ``max_j g_j(x_c + s·u) ≤ 0``
    is bracketed to ``tol·r_max`` (or ``max_iter`` halvings); the feasible end is kept, so
    ``x_c + ρ(u)u`` is always in ``C`` and ``γ(y) = ‖y‖/ρ(y/‖y‖)``.

    Args:
        constraints: callables mapping an ``(n, d)`` tensor to ``(n,)`` values (``≤ 0`` inside).
        center: a point where every constraint is ``< 0``. r_max: a radius about ``center``
            that leaves the set in every direction.

    Raises:
        ValueError: a constraint does not hold strictly at ``center``; at evaluation, a ray still
            feasible at ``r_max`` (no bracket).
    """

    def __init__(self, constraints: Sequence[Callable[[Tensor], Tensor]], center, r_max: float,
                 tol: float = 1e-10, max_iter: int = 60):
        self.constraints = list(constraints)
        if not self.constraints or not all(callable(g) for g in self.constraints):
            raise TypeError("constraints: expected a non-empty list of callables g(x) -> (n,) tensor")
        if not (np.isfinite(r_max) and r_max > 0):
            raise ValueError(f"r_max: expected a positive finite radius, got {r_max!r}")
        if not (tol > 0 and max_iter >= 1):
            raise ValueError(f"tol, max_iter: expected tol > 0 and max_iter >= 1, got {tol}, {max_iter}")
        c = _as_vector("center", center)
        self.dim = c.shape[0]
        self.r_max, self.tol, self.max_iter = float(r_max), float(tol), int(max_iter)
        values = self._g(c[None])
        if not bool(values[0] < 0):
            raise ValueError(f"center: expected every constraint < 0 at the centre, max g = {float(values[0]):.3g}")
        self.center = c

    def _g(self, x: Tensor) -> Tensor:
        return torch.stack([torch.as_tensor(g(x)).reshape(-1) for g in self.constraints]).max(dim=0).values

    def strictly_contains(self, x: Tensor) -> Tensor:
        return self._g(x) < 0

    def gauge_from(self, origin: Tensor, y: Tensor) -> Tensor:
        norm = torch.linalg.norm(y, dim=1)
        nonzero = norm > 0
        u = y[nonzero] / norm[nonzero, None]
        lo = torch.zeros(u.shape[0], dtype=y.dtype, device=y.device)
        hi = torch.full_like(lo, self.r_max)
        if (self._g(origin + hi[:, None] * u) <= 0).any():
            raise ValueError(f"r_max: the set is not bracketed, a ray is still feasible at r_max={self.r_max}")
        for _ in range(self.max_iter):
            if float((hi - lo).max()) <= self.tol * self.r_max:
                break
            mid = (lo + hi) / 2
            inside = self._g(origin + mid[:, None] * u) <= 0
            lo = torch.where(inside, mid, lo)
            hi = torch.where(inside, hi, mid)
        out = torch.zeros_like(norm)
        out[nonzero] = norm[nonzero] / lo
        return out

    def violation(self, x: Tensor) -> Tensor:
        """``max(0, max_j g_j(x))`` per row."""
        _check_points("x", x, self.dim)
        return self._g(x).clamp(min=0)

    def bounding_box(self) -> tuple[Tensor, Tensor]:
        return self.center - self.r_max, self.center + self.r_max


def uniform_in_set(C: ConvexSet, n: int, generator: torch.Generator) -> Tensor:
    """``n`` points ``(n, d)`` float32 uniform on ``C``, by rejection from its bounding box (on the generator's device).

    The acceptance is ``vol(C)/vol(box)``: fine in low dimension, exponentially small in high dimension.
    """
    lo, hi = (v.to(generator.device, torch.float32) for v in C.bounding_box())
    out, have = [], 0
    while have < n:
        x = lo + (hi - lo) * torch.rand(2 * (n - have) + 16, C.dim, generator=generator, device=generator.device)
        x = x[C.violation(x) <= 0]
        out.append(x)
        have += x.shape[0]
    return torch.cat(out)[:n]


def set_from_spec(spec: dict) -> ConvexSet | SphericalCap:
    """Rebuilds a set from ``to_spec()`` output (``FunctionalSet`` holds callables and has none).

    Raises:
        ValueError: unknown ``type``.
    """
    kind = spec.get("type")
    if kind == "polytope":
        return Polytope(spec["A"], spec["b"], spec.get("center"))
    if kind == "box":
        return Box(spec["lo"], spec["hi"], spec.get("center"))
    if kind == "ellipsoid":
        return Ellipsoid(spec["Q"], spec["c"], spec.get("center"))
    if kind == "intersection":
        return Intersection([set_from_spec(s) for s in spec["sets"]], spec.get("center"))
    if kind == "star_union":
        return StarUnion([set_from_spec(s) for s in spec["sets"]], spec["center"])
    if kind == "spherical_cap":
        from .sphere import SphericalCap

        return SphericalCap(spec["pole"], spec["angle"])
    raise ValueError("spec['type']: expected polytope, box, ellipsoid, intersection, star_union or spherical_cap, "
                     f"got {kind!r}")
