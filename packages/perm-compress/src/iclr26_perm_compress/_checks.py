"""Input checks shared by the public functions: one clear error at the boundary."""
from __future__ import annotations

import numpy as np


def check_order(k) -> int:
    """``k`` as an int >= 1, else ``ValueError``."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k: expected an integer order >= 1, got {k!r}")
    return int(k)


def check_points(W, name: str = "W") -> np.ndarray:
    """``W`` as a finite float64 array of shape (d, m) with d >= 1 (1-D input becomes (d, 1))."""
    try:
        arr = np.asarray(W, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name}: expected a numeric array of shape (d, m), got {type(W).__name__}") from err
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name}: expected shape (d, m) with d, m >= 1, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: contains NaN or infinite values ({int((~np.isfinite(arr)).sum())} entries)")
    return arr


def check_weights(c, d: int, name: str = "c") -> np.ndarray:
    """``c`` as a finite, non-negative float64 vector of length d; ``None`` means all ones."""
    if c is None:
        return np.ones(d)
    arr = np.asarray(c, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(d, float(arr))
    if arr.shape != (d,):
        raise ValueError(f"{name}: expected shape ({d},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: contains NaN or infinite values")
    if (arr < 0).any():
        raise ValueError(f"{name}: weights must be >= 0, got minimum {arr.min():.3g}")
    return arr


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= minimum, else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    return int(value)
