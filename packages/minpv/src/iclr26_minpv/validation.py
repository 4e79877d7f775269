"""Input checks at the public boundary: clear errors that name the argument."""
from __future__ import annotations

import numpy as np


def check_samples(name: str, X, min_samples: int = 2) -> np.ndarray:
    """``X`` as a finite float array of shape ``(n, d)`` with ``n >= min_samples``.

    A 1-D array is read as ``n`` samples of one feature.

    Raises:
        TypeError: ``X`` is not numeric.
        ValueError: wrong number of dimensions, too few samples, NaN or Inf.
    """
    try:
        arr = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a numeric array of shape (n, d), got {type(X).__name__}") from None
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected an array of shape (n, d), got shape {arr.shape}")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name}: expected at least {min_samples} samples, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name}: expected at least one feature, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or Inf ({int(np.sum(~np.isfinite(arr)))} entries)")
    return arr


def check_positive_int(name: str, value) -> int:
    """``value`` if it is an int >= 1; raises ``TypeError``/``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int >= 1, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name}: expected an int >= 1, got {value}")
    return int(value)
