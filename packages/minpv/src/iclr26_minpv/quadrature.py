"""``log r(x) = ∫ s(x, t) dt``: the time integral of a time score by the trapezoid rule, batched over ``t``."""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .paths import check_eps


def time_grid(n_points: int, eps: float = 1e-5, grading: float = 1.0, dtype=torch.float32,
              device=None) -> Tensor:
    """``n_points`` increasing times on ``[ε, 1 − ε]``: ``t_i = ε + (1 − 2ε) u_i^grading``, ``u`` uniform on [0, 1].

    ``grading = 1`` is the uniform grid (the method's default); ``grading > 1`` clusters points near
    ``t = 0``, where schedules whose ``β_t`` grows like ``t^{1/2}`` (``vp``, the Kumaraswamy path with
    ``a < 1``) give a time score with an integrable ``t^{-1/2}``-type singularity.

    Returns:
        Tensor of shape ``(n_points,)``.
    """
    if isinstance(n_points, bool) or not isinstance(n_points, int) or n_points < 2:
        raise ValueError(f"n_points: expected an int >= 2, got {n_points!r}")
    eps = check_eps(eps)
    if not grading >= 1.0:
        raise ValueError(f"grading: expected a number >= 1, got {grading!r}")
    u = torch.linspace(0.0, 1.0, n_points, dtype=torch.float64)
    return (eps + (1.0 - 2.0 * eps) * u**grading).to(dtype=dtype, device=device)


def integrate_time_score(score: Callable[[Tensor, Tensor], Tensor], x: Tensor, n_points: int = 100,
                         eps: float = 1e-5, max_batch: int = 262_144, grading: float = 1.0) -> Tensor:
    """``∫_ε^{1−ε} score(x, t) dt`` by the trapezoid rule on ``time_grid(n_points, eps, grading)``.

    The time grid is stacked with the points (one call evaluates ``score`` on up to ``max_batch``
    rows), so the cost is ``n_points · N`` evaluations without a Python loop over ``t``.

    Args:
        score: ``score(x: (M, d), t: (M, 1)) -> (M, 1)``.
        x: points, shape ``(N, d)``.
        n_points: trapezoid points (>= 2).
        eps: the interval is ``[ε, 1 − ε]``.
        max_batch: rows per call of ``score``.
        grading: ``1`` (default) for equally spaced times, ``> 1`` to refine the grid near ``t = 0``.

    Returns:
        Tensor of shape ``(N,)`` on ``x``'s device.
    """
    grid = time_grid(n_points, eps, grading, dtype=x.dtype, device=x.device)
    chunk = max(1, max_batch // n_points)
    out = []
    for start in range(0, x.shape[0], chunk):
        xb = x[start:start + chunk]
        n = xb.shape[0]
        xs = xb.unsqueeze(0).expand(n_points, n, xb.shape[1]).reshape(-1, xb.shape[1])
        ts = grid.repeat_interleave(n).reshape(-1, 1)
        values = score(xs, ts).reshape(n_points, n)
        out.append(torch.trapezoid(values, grid, dim=0))
    return torch.cat(out) if out else x.new_zeros(0)
