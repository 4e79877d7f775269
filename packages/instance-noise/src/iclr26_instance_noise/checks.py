"""Input checks shared by every module: binary labels, per-instance flip rates ``rho`` and features.

This package is binary only, as in the paper: the instance-only noise model has one
flip probability ``rho(x)`` per instance, which has no multiclass counterpart here.
"""
from __future__ import annotations

import warnings

import numpy as np

RHO_MAX = 0.45


def as_binary_labels(y, name: str = "y_noisy") -> np.ndarray:
    """Labels ``(n,)`` as int64 in {0, 1}.

    Booleans map to {0, 1}; {-1, +1} maps to {0, 1} with a warning saying so.

    Raises:
        ValueError: not 1-D, empty, more than two distinct values (multiclass), or two values
            other than {0, 1} / {-1, +1}.
    """
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of binary labels, got shape {arr.shape}")
    if arr.dtype == bool:
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name}: expected numeric labels in {{0, 1}}, got dtype {arr.dtype}")
    values = set(np.unique(arr).tolist())
    if len(values) > 2:
        raise ValueError(f"{name}: expected binary labels in {{0, 1}}, got {len(values)} classes "
                         f"{sorted(values)[:10]}; this package is binary only, as in the paper")
    if values <= {0, 1}:
        return arr.astype(np.int64)
    if values <= {-1, 1}:
        warnings.warn(f"{name}: labels in {{-1, +1}} were mapped to {{0, 1}} (-1 -> 0, +1 -> 1)", stacklevel=3)
        return (arr > 0).astype(np.int64)
    raise ValueError(f"{name}: expected binary labels in {{0, 1}} (or {{-1, +1}}, booleans), got {sorted(values)}")


def check_rho_max(rho_max) -> float | None:
    """``rho_max`` as a float in [0, 0.5), or None.

    Raises:
        ValueError: ``rho_max`` is NaN, negative, or >= 0.5 (the correction divides by ``1 - 2 rho``).
    """
    if rho_max is None:
        return None
    value = float(rho_max)
    if not 0.0 <= value < 0.5:
        raise ValueError(f"rho_max: expected a number in [0, 0.5) (the correction divides by 1 - 2 rho), "
                         f"got {rho_max!r}")
    return value


def check_rho(rho, n: int, rho_max: float | None = RHO_MAX, name: str = "rho") -> np.ndarray:
    """Per-instance flip probabilities ``(n,)`` as float64, clipped to ``[0, rho_max]``.

    Values above ``rho_max`` are clipped with a warning that counts them, so that
    ``1 / (1 - 2 rho)`` never explodes. With ``rho_max=None`` nothing is clipped and
    any value >= 0.5 is an error.

    Raises:
        ValueError: wrong length, NaN or infinite values, negative values, ``rho >= 0.5`` with
            ``rho_max=None``, or an invalid ``rho_max``.
    """
    rho_max = check_rho_max(rho_max)
    arr = np.asarray(rho, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"{name}: expected one flip probability per instance, shape ({n},), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got {int(np.sum(~np.isfinite(arr)))} NaN/infinite")
    if np.any(arr < 0):
        raise ValueError(f"{name}: expected values >= 0, got minimum {arr.min():.4g}")
    if rho_max is None:
        if np.any(arr >= 0.5):
            raise ValueError(f"{name}: expected values < 0.5 when rho_max is None (the correction divides by "
                             f"1 - 2 rho), got maximum {arr.max():.4g}; pass rho_max to clip")
        return arr
    clipped = int(np.sum(arr > rho_max))
    if clipped:
        warnings.warn(f"{name}: {clipped} of {n} values above rho_max={rho_max} were clipped to it", stacklevel=3)
    return np.minimum(arr, rho_max)


def check_features(X, name: str = "X") -> np.ndarray:
    """Features ``(n, d)`` as float64; a 1-D array is one feature.

    Raises:
        ValueError: not 1-D/2-D, empty, or non-finite.
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty 2-D array (n_samples, n_features), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got {int(np.sum(~np.isfinite(arr)))} NaN/infinite")
    return arr


def check_same_length(n: int, m: int, names: str) -> None:
    """Raises ``ValueError`` when two arrays that pair row by row differ in length."""
    if n != m:
        raise ValueError(f"{names}: expected the same number of rows, got {n} and {m}")


def check_folds(cv, why: str = "") -> int:
    """``cv`` if it is an integer number of folds >= 2; ``why`` is added to the error message."""
    if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
        raise ValueError(f"cv: expected an integer number of folds >= 2{why}, got {cv!r}")
    return int(cv)


def check_mode(mode: str, allow_none: bool = False) -> str:
    """``mode`` if it is ``"backward"`` or ``"forward"`` (or ``"none"`` when allowed)."""
    choices = ("backward", "forward", "none") if allow_none else ("backward", "forward")
    if mode not in choices:
        raise ValueError(f"mode: expected one of {choices}, got {mode!r}")
    return mode
