"""Input checks at the public boundary: each error names the argument, what was expected and what came."""
from __future__ import annotations

import numbers

import numpy as np
import torch


def positive_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``; ``TypeError`` for non-integers, ``ValueError`` below the minimum."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name}: expected an integer >= {minimum}, got {type(value).__name__}")
    if int(value) < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value}")
    return int(value)


def real(name: str, value, *, positive: bool = False, nonnegative: bool = False) -> float:
    """``value`` as a finite float, optionally > 0 or >= 0."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name}: expected a real number, got {type(value).__name__}")
    out = float(value)
    if not np.isfinite(out):
        raise ValueError(f"{name}: expected a finite number, got {out}")
    if positive and out <= 0:
        raise ValueError(f"{name}: expected a number > 0, got {out}")
    if nonnegative and out < 0:
        raise ValueError(f"{name}: expected a number >= 0, got {out}")
    return out


def as_rng(rng) -> np.random.Generator:
    """A numpy Generator from ``None``, an integer seed or a Generator."""
    if rng is None or isinstance(rng, (numbers.Integral, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(f"rng: expected None, an integer seed or numpy.random.Generator, got {type(rng).__name__}")


def matrix(name: str, X, d: int | None = None) -> np.ndarray:
    """``X`` (numpy or torch) as a finite float64 array of shape ``(n, d)``."""
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name}: expected a real array of shape (n, d), got {type(X).__name__}") from err
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected shape (n, d), got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name}: expected {d} columns, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got {np.count_nonzero(~np.isfinite(arr))} NaN/inf entries")
    return arr


def tensor_xy(X, y) -> tuple[torch.Tensor, torch.Tensor]:
    """Checks a design ``X`` ``(n, d)`` and targets ``y`` ``(n,)`` given as torch tensors; returns them."""
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"X, y: expected torch tensors, got {type(X).__name__} and {type(y).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X: expected shape (n, d), got {tuple(X.shape)}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y: expected shape ({X.shape[0]},) to match X, got {tuple(y.shape)}")
    if not (torch.isfinite(X).all() and torch.isfinite(y).all()):
        raise ValueError("X, y: expected finite values, got NaN/inf entries")
    return X, y
