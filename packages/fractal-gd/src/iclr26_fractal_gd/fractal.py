"""Fractal measures of basin boundaries: boundary masks, box counting, the uncertainty exponent."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import _checks
from .basins import classify_points


def boundary_mask(labels, connectivity: int = 4) -> np.ndarray:
    """Pixels whose label differs from a neighbour's: the right or lower one (4), plus both lower diagonals (8).

    Args:
        labels: (H, W) integer labels (no NaN can occur: diverged pixels carry label 0).
        connectivity: 4 or 8.

    Returns:
        (H, W) bool mask; each boundary edge marks the pixel on its upper/left side.
    """
    lab = np.asarray(labels)
    if lab.ndim != 2 or min(lab.shape) < 2:
        raise ValueError(f"labels: expected a 2-D array of at least 2x2, got shape {lab.shape}")
    if not np.issubdtype(lab.dtype, np.integer) and lab.dtype != bool:
        raise TypeError(f"labels: expected integer labels, got dtype {lab.dtype}")
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity: expected 4 or 8, got {connectivity!r}")
    mask = np.zeros(lab.shape, dtype=bool)
    mask[:, :-1] |= lab[:, :-1] != lab[:, 1:]
    mask[:-1, :] |= lab[:-1, :] != lab[1:, :]
    if connectivity == 8:
        mask[:-1, :-1] |= lab[:-1, :-1] != lab[1:, 1:]
        mask[:-1, 1:] |= lab[:-1, 1:] != lab[1:, :-1]
    return mask


@dataclass
class BoxCountResult:
    """A box-counting fit: log N(s) = −D log s + c over the fitted sizes.

    Attributes:
        D: the dimension (minus the fitted slope). r2: R² of the fit.
        sizes: (k,) box sizes in pixels (all that were counted). counts: (k,) occupied boxes per size.
        fit_range: (s_min, s_max) of the sizes used in the fit.
    """

    D: float
    sizes: np.ndarray
    counts: np.ndarray
    r2: float
    fit_range: tuple[int, int]

    def table(self) -> str:
        """Sizes and counts, one line each, the fitted ones starred."""
        lo, hi = self.fit_range
        lines = [f"{'size':>6} {'count':>10}"]
        for s, c in zip(self.sizes, self.counts):
            lines.append(f"{int(s):>6} {int(c):>10}{' *' if lo <= s <= hi else ''}")
        return "\n".join(lines)


def _count_boxes(mask: np.ndarray, s: int) -> int:
    h, w = mask.shape
    ph, pw = -h % s, -w % s
    m = np.pad(mask, ((0, ph), (0, pw))) if ph or pw else mask
    return int(m.reshape(m.shape[0] // s, s, m.shape[1] // s, s).any(axis=(1, 3)).sum())


def box_counting_dimension(mask, box_sizes=None, fit_range=None) -> BoxCountResult:
    """Box-counting dimension of a 2-D boolean mask (for example ``boundary_mask(labels)``).

    Args:
        mask: (H, W) bool.
        box_sizes: box sides in pixels (default: powers of two up to min(H, W)).
        fit_range: (s_min, s_max) of the sizes used in the fit (default: 2 to min(H, W)/4).

    Returns:
        ``BoxCountResult``; warns when R² < 0.98.

    Raises:
        ValueError: an empty mask, or fewer than 3 box sizes inside ``fit_range``.
    """
    m = np.asarray(mask)
    if m.ndim != 2:
        raise ValueError(f"mask: expected a 2-D array, got shape {m.shape}")
    if m.dtype != bool:
        raise TypeError(f"mask: expected a boolean array, got dtype {m.dtype}")
    if not m.any():
        raise ValueError("mask: the boundary is empty (no True pixel); no dimension to measure")
    side = min(m.shape)
    if box_sizes is None:
        sizes = 2 ** np.arange(int(np.log2(side)) + 1)
    else:
        sizes = np.unique(np.asarray([_checks.positive_int("box_sizes", int(s)) for s in box_sizes]))
    lo, hi = (2, max(2, side // 4)) if fit_range is None else (int(fit_range[0]), int(fit_range[1]))
    if lo > hi:
        raise ValueError(f"fit_range: expected s_min <= s_max, got {fit_range}")
    counts = np.array([_count_boxes(m, int(s)) for s in sizes])
    sel = (sizes >= lo) & (sizes <= hi)
    if sel.sum() < 3:
        raise ValueError(f"box_sizes/fit_range: expected >= 3 box sizes in [{lo}, {hi}], got {sel.sum()} "
                         f"(sizes {sizes.tolist()})")
    x, yv = np.log(sizes[sel]), np.log(counts[sel])
    slope, icpt = np.polyfit(x, yv, 1)
    resid = yv - (slope * x + icpt)
    ss_tot = float(np.sum((yv - yv.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    if r2 < 0.98:
        warnings.warn(f"box_counting_dimension: poor power-law fit, R^2 = {r2:.3f} < 0.98", stacklevel=2)
    return BoxCountResult(float(-slope), sizes, counts, r2, (lo, hi))


def uncertainty_exponent(eta, y, lam, eps_list, n_samples: int, rng: np.random.Generator,
                         extent=(-4, 4, -4, 4), labels: str = "branch", **classify_kwargs) -> tuple[float, float]:
    """The Grebogi–McDonald–Ott–Yorke uncertainty exponent α and D = 2 − α.

    For each ε, ``n_samples`` uniform points x of ``extent`` are uncertain when the label of x − εe or
    x + εe (e a random unit vector) differs from the label of x; the uncertain fraction f(ε) ∝ ε^α.

    Returns:
        ``(alpha, 2 − alpha)``.

    Raises:
        ValueError: fewer than 2 values of ε, a non-positive ε, or fewer than 2 ε with f(ε) > 0.
    """
    eps = np.asarray([_checks.real_scalar("eps_list", e) for e in eps_list])
    if eps.size < 2 or np.any(eps <= 0):
        raise ValueError(f"eps_list: expected >= 2 positive values, got {eps.tolist()}")
    n = _checks.positive_int("n_samples", n_samples)
    u_min, u_max, v_min, v_max = extent
    fracs = []
    for e in eps:
        x = np.column_stack([rng.uniform(u_min, u_max, n), rng.uniform(v_min, v_max, n)])
        ang = rng.uniform(0, 2 * np.pi, n)
        d = e * np.column_stack([np.cos(ang), np.sin(ang)])
        pts = np.concatenate([x, x - d, x + d])
        lab = classify_points(pts[:, 0], pts[:, 1], y, eta, lam, labels=labels, **classify_kwargs)["labels"]
        c, lo, hi = lab[:n], lab[n:2 * n], lab[2 * n:]
        fracs.append(float(np.mean((c != lo) | (c != hi))))
    fracs = np.asarray(fracs)
    pos = fracs > 0
    if pos.sum() < 2:
        raise ValueError(f"eps_list: fewer than 2 scales with uncertain points (fractions {fracs.tolist()}); "
                         "use larger eps or more samples")
    alpha = float(np.polyfit(np.log(eps[pos]), np.log(fracs[pos]), 1)[0])
    return alpha, 2.0 - alpha
