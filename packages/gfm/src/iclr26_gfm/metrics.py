"""Feasibility and distribution metrics: violation rate, boundary atoms, mass near the faces, sliced Wasserstein-2,
RBF MMD."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .model import check_data
from .sets import ConvexSet, Polytope

Tensor = torch.Tensor


def violation_rate(C: ConvexSet, X, tol: float = 1e-9) -> float:
    """Share of rows of ``X`` ``(n, d)`` with ``C.violation(x) > tol`` (float64 evaluation)."""
    return float((C.violation(check_data(X, C.dim)) > tol).double().mean())


def max_violation(C: ConvexSet, X) -> float:
    """Largest ``C.violation(x)`` over the rows of ``X`` (0 when every row is in ``C``)."""
    return float(C.violation(check_data(X, C.dim)).max())


def boundary_atom_fraction(C: ConvexSet, X, tol: float = 1e-6) -> float:
    """Share of rows with ``γ_C(x − x_c) > 1 − tol``: mass piled on (or beyond) the boundary."""
    X64 = check_data(X, C.dim)
    return float((C.gauge(X64 - C.center) > 1 - tol).double().mean())


def near_boundary_fraction(C: Polytope, X, dist: float = 0.01, faces: int = 1) -> float:
    """Share of rows of ``X`` ``(n, d)`` within Euclidean distance ``dist`` of at least ``faces`` faces of the
    polytope ``C`` (distance to face ``i``: ``(b_i − a_iᵀx)/‖a_i‖``): how much mass a model puts near the boundary
    (``faces=1``) or near its edges and vertices (``faces=2``; issue 33).

    Raises:
        TypeError: ``C`` is not a ``Polytope``. ValueError: ``dist`` not positive, ``faces`` not in ``1..m``.
    """
    if not isinstance(C, Polytope):
        raise TypeError(f"C: expected a Polytope (distance to its faces), got {type(C).__name__}")
    if not dist > 0:
        raise ValueError(f"dist: expected a positive distance, got {dist!r}")
    if not (isinstance(faces, int) and 1 <= faces <= C.A.shape[0]):
        raise ValueError(f"faces: expected an integer in 1..{C.A.shape[0]} (the number of faces), got {faces!r}")
    X64 = check_data(X, C.dim)
    slack = (C.b - X64 @ C.A.T) / torch.linalg.norm(C.A, dim=1)
    return float(((slack < dist).sum(dim=1) >= faces).double().mean())


def sliced_wasserstein(X, Y, n_projections: int = 512, seed: int = 0) -> float:
    """Sliced Wasserstein-2 distance ``sqrt(E_θ W₂²(θᵀX, θᵀY))`` over ``n_projections`` random directions.

    Unequal sample sizes are compared through ``max(n, m)`` matched quantiles. To compare many samples with the same
    ``Y``, :class:`SlicedW2To` sorts ``Y``'s projections once (same values).
    """
    return SlicedW2To(Y, n_projections, seed)(X)


class SlicedW2To:
    """``SlicedW2To(Y, n_projections, seed)(X) == sliced_wasserstein(X, Y, n_projections, seed)`` for a fixed
    reference ``Y`` ``(m, d)``, whose sorted projections ``(n_projections, m)`` are computed once."""

    def __init__(self, Y, n_projections: int = 512, seed: int = 0):
        Y64 = check_data(Y, name="Y")
        g = torch.Generator().manual_seed(seed)
        theta = torch.randn(Y64.shape[1], n_projections, generator=g, dtype=torch.float64)
        self.theta = theta / torch.linalg.norm(theta, dim=0, keepdim=True)
        self.y_sorted = self._sorted(Y64)

    def _sorted(self, Z: Tensor) -> Tensor:
        # one contiguous row per direction: sorting along the last dimension is the fast path
        return torch.sort((Z @ self.theta).T.contiguous(), dim=1).values

    def __call__(self, X) -> float:
        """The distance from ``X`` ``(n, d)`` to ``Y``."""
        X64 = check_data(X, name="X")
        if X64.shape[1] != self.theta.shape[0]:
            raise ValueError(f"Y: expected {X64.shape[1]} columns like X, got {self.theta.shape[0]}")
        px, py = self._sorted(X64), self.y_sorted
        m = max(px.shape[1], py.shape[1])
        px, py = _sorted_quantiles(px, m), _sorted_quantiles(py, m)
        return float(((px - py) ** 2).mean().sqrt())


def _sorted_quantiles(p: Tensor, m: int) -> Tensor:
    """The ``m`` evenly spaced quantiles (linear interpolation, as ``torch.quantile``) of each row of the
    row-sorted ``p`` ``(k, n)`` → ``(k, m)``; ``p`` itself when ``m == n``."""
    n = p.shape[1]
    if m == n:
        return p
    if n == 1:
        return p.expand(-1, m)
    pos = torch.linspace(0, n - 1, m, dtype=torch.float64)
    lo = pos.floor().long().clamp_(max=n - 2)
    return torch.lerp(p[:, lo], p[:, lo + 1], pos - lo)


def mmd_rbf(X, Y, bandwidths: Sequence[float] = (0.05, 0.1, 0.2, 0.5, 1.0), block: int = 2048) -> float:
    """Unbiased squared MMD with the kernel ``Σ_σ exp(−‖x − y‖²/(2σ²))``, computed in blocks."""
    X64, Y64 = check_data(X, name="X"), check_data(Y, name="Y")
    if X64.shape[0] < 2 or Y64.shape[0] < 2:
        raise ValueError("X, Y: the unbiased MMD needs at least 2 rows each")
    inv = [1.0 / (2 * s * s) for s in bandwidths]

    def kernel_sum(P: Tensor, R: Tensor) -> float:
        total = 0.0
        for i in range(0, P.shape[0], block):
            d2 = torch.cdist(P[i:i + block], R).pow_(2)
            buf = torch.empty_like(d2)                  # one (block, m) buffer reused per bandwidth
            total += sum(float(torch.mul(d2, -c, out=buf).exp_().sum()) for c in inv)
        return total

    n, m, k = X64.shape[0], Y64.shape[0], len(bandwidths)
    kxx = (kernel_sum(X64, X64) - n * k) / (n * (n - 1))
    kyy = (kernel_sum(Y64, Y64) - m * k) / (m * (m - 1))
    return kxx + kyy - 2 * kernel_sum(X64, Y64) / (n * m)
