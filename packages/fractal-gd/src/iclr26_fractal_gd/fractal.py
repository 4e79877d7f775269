"""Fractal measures of basin boundaries: boundary masks, box counting, the uncertainty exponent."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import _checks
from .basins import classify_points


def _label_image(labels) -> np.ndarray:
    """``labels`` as a 2-D integer (or bool) array of at least 2x2; raises otherwise."""
    lab = np.asarray(labels)
    if lab.ndim != 2 or min(lab.shape) < 2:
        raise ValueError(f"labels: expected a 2-D array of at least 2x2, got shape {lab.shape}")
    if not np.issubdtype(lab.dtype, np.integer) and lab.dtype != bool:
        raise TypeError(f"labels: expected integer labels, got dtype {lab.dtype}")
    return lab


def boundary_mask(labels, connectivity: int = 4) -> np.ndarray:
    """Pixels whose label differs from a neighbour's: the right or lower one (4), plus both lower diagonals (8).

    Args:
        labels: (H, W) integer labels (no NaN can occur: diverged pixels carry label 0).
        connectivity: 4 or 8.

    Returns:
        (H, W) bool mask; each boundary edge marks the pixel on its upper/left side.
    """
    lab = _label_image(labels)
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


def _fit(sizes: np.ndarray, counts: np.ndarray, fit_range, side: int) -> tuple[float, float, tuple[int, int]]:
    """Least-squares slope of log count against log size over ``fit_range`` (default 2 to side/4) on an image
    of shorter side ``side``; returns (D, R², (lo, hi))."""
    lo, hi = (2, max(2, side // 4)) if fit_range is None else (int(fit_range[0]), int(fit_range[1]))
    if lo > hi:
        raise ValueError(f"fit_range: expected s_min <= s_max, got {fit_range}")
    sel = (sizes >= lo) & (sizes <= hi) & (counts > 0)
    if sel.sum() < 3:
        raise ValueError(f"box_sizes/fit_range: expected >= 3 box sizes in [{lo}, {hi}], got {sel.sum()} "
                         f"(sizes {sizes.tolist()})")
    x, yv = np.log(sizes[sel]), np.log(counts[sel])
    slope, icpt = np.polyfit(x, yv, 1)
    resid = yv - (slope * x + icpt)
    ss_tot = float(np.sum((yv - yv.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    if r2 < 0.98:
        warnings.warn(f"box_counting_dimension: poor power-law fit, R^2 = {r2:.3f} < 0.98", stacklevel=3)
    return float(-slope), r2, (lo, hi)


def _sizes(side: int, box_sizes) -> np.ndarray:
    if box_sizes is None:
        return 2 ** np.arange(int(np.log2(side)) + 1)
    return np.unique(np.asarray([_checks.positive_int("box_sizes", int(s)) for s in box_sizes]))


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
    sizes = _sizes(min(m.shape), box_sizes)
    counts = np.array([_count_boxes(m, int(s)) for s in sizes])
    D, r2, rng = _fit(sizes, counts, fit_range, min(m.shape))
    return BoxCountResult(D, sizes, counts, r2, rng)


CONVENTIONS = ("edge4", "edge8", "mixed_box")


def _count_mixed(lab: np.ndarray, s: int) -> int:
    """Boxes of side ``s`` holding two or more labels (the image is edge-padded to a multiple of s)."""
    h, w = lab.shape
    m = np.pad(lab, ((0, -h % s), (0, -w % s)), mode="edge")
    blocks = m.reshape(m.shape[0] // s, s, m.shape[1] // s, s)
    return int(np.count_nonzero(blocks.min(axis=(1, 3)) != blocks.max(axis=(1, 3))))


def _convention_counts(labels, convention: str) -> tuple[np.ndarray, np.ndarray]:
    """Box sizes (powers of two ≥ 2) and the boundary's box counts under ``convention``."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention: expected one of {CONVENTIONS}, got {convention!r}")
    lab = _label_image(labels)
    sizes = _sizes(min(lab.shape), None)
    sizes = sizes[sizes >= 2]
    if convention == "mixed_box":
        lab = lab.astype(np.int16)
        counts = np.array([_count_mixed(lab, int(s)) for s in sizes])
    else:
        mask = boundary_mask(lab, 4 if convention == "edge4" else 8)
        counts = np.array([_count_boxes(mask, int(s)) for s in sizes])
    if not counts.any():
        raise ValueError("labels: a single label; no boundary to measure")
    return sizes, counts


def boundary_dimension(labels, convention: str = "edge4", fit_range=None) -> BoxCountResult:
    """Box dimension of the boundary between the labels of an image, under one of three conventions.

    ``edge4``/``edge8``: box counting of ``boundary_mask(labels, 4 or 8)`` (a pixel is marked when its
    right/lower (and diagonal) neighbour differs). ``mixed_box``: a box counts when it holds two or
    more labels (no pixel mask). They differ only at a box's rim, so they agree once the fit starts
    some pixels above the pixel size. Box sizes: powers of two from 2.

    Args:
        labels: (H, W) integer labels. convention: one of ``CONVENTIONS``. fit_range: as in
            ``box_counting_dimension``.

    Returns:
        ``BoxCountResult``.
    """
    sizes, counts = _convention_counts(labels, convention)
    D, r2, rng = _fit(sizes, counts, fit_range, min(np.shape(labels)))
    return BoxCountResult(D, sizes, counts, r2, rng)


@dataclass
class DimensionSpread:
    """Box dimensions of one boundary over conventions, fit ranges and resolutions.

    Attributes:
        estimates: one dict per (resolution, convention, fit start): ``resolution``, ``convention``,
            ``fit`` (s_min, s_max), ``D``, ``r2``.
        D: the median of all estimates. low, high: their minimum and maximum.
    """

    estimates: list[dict]
    D: float
    low: float
    high: float

    def select(self, **match) -> list[float]:
        """The D of the estimates whose fields equal ``match`` (e.g. ``resolution=2048, fit_start=8``)."""
        return [e["D"] for e in self.estimates if all(e[k] == v for k, v in match.items())]


def dimension_spread(label_maps, conventions=CONVENTIONS, fit_starts=(2, 4, 8)) -> DimensionSpread:
    """Box dimension of the boundary of each (R, R) label image in ``label_maps`` (one per resolution) under
    every convention and every fit range [s_min, R/4], s_min in ``fit_starts``: the reported value and its
    spread over those analysis choices."""
    estimates = []
    for lab in label_maps:
        side = min(np.shape(lab))
        for conv in conventions:
            sizes, counts = _convention_counts(lab, conv)
            for s0 in fit_starts:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    D, r2, fit = _fit(sizes, counts, (int(s0), side // 4), side)
                estimates.append({"resolution": side, "convention": conv, "fit_start": int(s0), "fit": fit,
                                  "D": D, "r2": r2})
    ds = np.array([e["D"] for e in estimates])
    return DimensionSpread(estimates, float(np.median(ds)), float(ds.min()), float(ds.max()))


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


def koch_snowflake(level: int, resolution: int) -> np.ndarray:
    """A (resolution, resolution) int8 image, 1 inside a level-``level`` Koch snowflake: its boundary has box
    dimension log 4 / log 3 (for pixels well below the smallest segment). Filled by even-odd scanlines."""
    level = _checks.positive_int("level", level, 0)
    n = _checks.positive_int("resolution", resolution, 16)
    rot = np.array([[0.5, -np.sqrt(3) / 2], [np.sqrt(3) / 2, 0.5]])  # +60°: bumps point out of the clockwise triangle
    pts = np.array([[0.0, 0.0], [0.5, np.sqrt(3) / 2], [1.0, 0.0], [0.0, 0.0]])
    for _ in range(level):
        a, d = pts[:-1], (pts[1:] - pts[:-1]) / 3
        pts = np.concatenate([np.stack([a, a + d, a + d + d @ rot.T, a + 2 * d], 1).reshape(-1, 2), pts[-1:]])
    lo, span = pts.min(0), np.ptp(pts, 0).max()
    pts = (pts - lo) * (0.9 * n / span) + 0.05 * n + np.array([0.0123, 0.0371])  # off the pixel lattice
    (x0, y0), (x1, y1) = pts[:-1].T, pts[1:].T
    first = np.ceil(np.minimum(y0, y1) - 0.5).astype(int)  # rows whose centre i + 1/2 the edge crosses
    count = np.maximum(np.ceil(np.maximum(y0, y1) - 0.5).astype(int) - first, 0)
    edge = np.repeat(np.arange(x0.size), count)
    rows = first[edge] + np.arange(edge.size) - np.repeat(np.cumsum(count) - count, count)
    xc = x0[edge] + (rows + 0.5 - y0[edge]) * (x1[edge] - x0[edge]) / (y1[edge] - y0[edge])
    toggles = np.zeros((n, n + 1), np.int32)
    np.add.at(toggles, (rows, np.clip(np.ceil(xc - 0.5).astype(int), 0, n)), 1)
    return (np.cumsum(toggles, 1)[:, :n] % 2).astype(np.int8)
