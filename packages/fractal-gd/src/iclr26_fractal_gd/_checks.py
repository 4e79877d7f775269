"""Input checks shared by the public functions: each error names the argument, what was expected and what came."""
from __future__ import annotations

import numbers

import numpy as np


def real_array(name: str, x) -> np.ndarray:
    """``x`` as a float64 array; raises if it is not real-valued or holds NaN/inf."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real number or array, got {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name}: expected a real number or array, got {type(x).__name__}") from err
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got {np.count_nonzero(~np.isfinite(arr))} NaN/inf entries")
    return arr


def real_scalar(name: str, x) -> float:
    """``x`` as a finite python float; raises for arrays, booleans and non-numbers."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name}: expected a real number, got {type(x).__name__}")
    value = float(x)
    if not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    return value


def step_size(eta) -> np.ndarray | float:
    """η > 0 (a number or an array of numbers)."""
    arr = real_array("eta", eta)
    if np.any(arr <= 0):
        raise ValueError(f"eta: expected a step size > 0, got min {arr.min():.6g}")
    return float(arr) if arr.ndim == 0 else arr


def target(y, allow_zero: bool = False) -> float:
    """The scalar target y; zero is refused unless ``allow_zero``."""
    value = real_scalar("y", y)
    if value == 0 and not allow_zero:
        raise ValueError("y: expected a non-zero target (pass allow_zero_target=True for y = 0), got 0")
    return value


def regulariser(lam, y: float | None = None) -> float:
    """λ ≥ 0, and λ < |y| when λ > 0 and y is given (otherwise the origin is the only minimiser)."""
    value = real_scalar("lam", lam)
    if value < 0:
        raise ValueError(f"lam: expected lam >= 0, got {value}")
    if y is not None and value > 0 and value >= abs(y):
        raise ValueError(f"lam: expected 0 <= lam < |y| = {abs(y)} (two-well structure), got {value}")
    return value


def positive_int(name: str, x, minimum: int = 1) -> int:
    """An integer ≥ ``minimum``."""
    if isinstance(x, bool) or not isinstance(x, (numbers.Integral, np.integer)):
        raise TypeError(f"{name}: expected an integer, got {type(x).__name__}")
    if int(x) < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {x}")
    return int(x)
