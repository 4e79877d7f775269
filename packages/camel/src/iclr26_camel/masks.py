"""The incomplete-view protocol: which samples are observed in which view.

A mask is a boolean array ``(n, m)``: ``mask[i, v]`` is True when sample ``i`` is observed in view
``v``. Every sample keeps at least one view.
"""
from __future__ import annotations

import numpy as np


def _check_rate(missing_rate, upper: float, protocol: str) -> float:
    if isinstance(missing_rate, bool) or not np.isscalar(missing_rate) or not np.isfinite(missing_rate):
        raise ValueError(f"missing_rate: expected a number, got {missing_rate!r}")
    if not 0.0 <= float(missing_rate) <= upper:
        raise ValueError(f"missing_rate: expected a number in [0, {upper:.4g}] for protocol {protocol!r}, "
                         f"got {missing_rate!r}")
    return float(missing_rate)


def make_incomplete_mask(n: int, n_views: int, missing_rate: float, rng=None, protocol: str = "paired") -> np.ndarray:
    """Draws an observation mask.

    Protocols:
        ``"paired"`` (default, the IMVC convention): ``round(missing_rate * n)`` samples, chosen
        uniformly, are incomplete; each loses a uniformly random non-empty proper subset of its views.
        ``missing_rate`` may be anything in [0, 1].
        ``"per_view"``: each view independently drops ``round(missing_rate * n)`` samples; a sample left
        with no view gets one random view back, so realised per-view rates can be lower (see
        ``1 - mask.mean(axis=0)``). ``missing_rate`` must be at most ``1 - 1/n_views``.

    Args:
        n: number of samples, ``>= 1``.
        n_views: number of views, ``>= 2``.
        missing_rate: the fraction described above.
        rng: ``numpy.random.Generator``, an integer seed or None.
        protocol: ``"paired"`` or ``"per_view"``.

    Returns:
        Boolean array ``(n, n_views)``; every row has at least one True.

    Raises:
        ValueError: ``n < 1``, ``n_views < 2``, ``missing_rate`` out of range, unknown ``protocol``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    if isinstance(n_views, bool) or not isinstance(n_views, (int, np.integer)) or n_views < 2:
        raise ValueError(f"n_views: expected an integer >= 2, got {n_views!r}")
    rng = np.random.default_rng(rng)
    mask = np.ones((n, n_views), dtype=bool)
    if protocol == "paired":
        rate = _check_rate(missing_rate, 1.0, protocol)
        incomplete = rng.choice(n, size=int(round(rate * n)), replace=False)
        for i in incomplete:
            # uniform over non-empty proper subsets: a random code in 1 .. 2^m - 2
            code = int(rng.integers(1, 2**n_views - 1))
            mask[i] = [(code >> v) & 1 == 0 for v in range(n_views)]
    elif protocol == "per_view":
        rate = _check_rate(missing_rate, 1.0 - 1.0 / n_views, protocol)
        k = int(round(rate * n))
        for v in range(n_views):
            mask[rng.choice(n, size=k, replace=False), v] = False
        empty = np.flatnonzero(~mask.any(axis=1))
        mask[empty, rng.integers(0, n_views, size=empty.size)] = True
    else:
        raise ValueError(f"protocol: expected 'paired' or 'per_view', got {protocol!r}")
    return mask


def apply_mask(Xs, mask) -> list[np.ndarray]:
    """Copies of the views with the unobserved rows set to NaN.

    Args:
        Xs: list of ``m`` arrays ``(n, d_v)``.
        mask: boolean ``(n, m)``.

    Returns:
        list of float64 arrays ``(n, d_v)``.

    Raises:
        ValueError: the mask does not match the views.
    """
    mask = np.asarray(mask)
    if mask.ndim != 2 or mask.shape[1] != len(Xs):
        raise ValueError(f"mask: expected shape (n, {len(Xs)}), got {mask.shape}")
    out = []
    for v, X in enumerate(Xs):
        X = np.array(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != mask.shape[0]:
            raise ValueError(f"Xs[{v}]: expected shape ({mask.shape[0]}, d), got {X.shape}")
        X[~mask[:, v].astype(bool)] = np.nan
        out.append(X)
    return out
