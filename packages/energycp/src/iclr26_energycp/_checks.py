"""Input checks at the public boundary: clear errors that name the argument, expected and given."""
from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from ._backend import NumpyOps, ops_for


def check_matrix(x: Any, name: str = "logits") -> tuple[Any, NumpyOps]:
    """Returns ``(x as float64 on its backend, backend)`` for a finite (n, K) array with K >= 2.

    Raises:
        TypeError: ``x`` is not array-like with a numeric dtype.
        ValueError: not 2-D, K < 2, n = 0, or NaN/inf values.
    """
    ops = ops_for(x)
    try:
        arr = ops.float64(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name}: expected a numeric (n, K) array, got {type(x).__name__}") from err
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array of shape (n, K), got shape {tuple(arr.shape)}")
    if arr.shape[1] < 2:
        raise ValueError(f"{name}: expected K >= 2 classes (columns), got shape {tuple(arr.shape)}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: expected at least one row, got shape {tuple(arr.shape)}")
    if not ops.all_finite(arr):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return arr, ops


def warn_if_probabilities(arr: Any, ops: NumpyOps, name: str = "logits") -> None:
    """Warns when every row of ``arr`` looks like a probability vector: the energy needs raw logits."""
    a = ops.to_numpy(arr)
    if a.min() >= 0.0 and a.max() <= 1.0 and np.allclose(a.sum(axis=1), 1.0, atol=1e-6):
        warnings.warn(f"{name}: every row is in [0, 1] and sums to 1; these look like probabilities, "
                      "for which the free energy is meaningless. Pass pre-softmax logits, or use "
                      "input='probs' with energy=False.", UserWarning, stacklevel=3)


def check_labels(labels: Any, n: int, n_classes: int, ops: NumpyOps, name: str = "labels") -> Any:
    """Returns ``labels`` as int64 on the backend of ``ops``: shape (n,), values in [0, n_classes).

    Raises:
        ValueError: not integer-valued, wrong shape or out of range.
    """
    a = ops.to_numpy(labels)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{name}: expected shape ({n},), got {tuple(a.shape)}")
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "f" and np.isfinite(a).all() and np.array_equal(a, np.round(a)):
            a = a.astype(np.int64)
        else:
            raise ValueError(f"{name}: expected integer class labels, got dtype {a.dtype} with non-integer values")
    if n and (a.min() < 0 or a.max() >= n_classes):
        raise ValueError(f"{name}: expected values in [0, {n_classes}), got range [{a.min()}, {a.max()}]")
    return ops.from_numpy(a.astype(np.int64))


def check_alpha(alpha: Any) -> float:
    """``alpha`` as a float in (0, 1); ``ValueError`` otherwise."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha: expected a number in (0, 1), got {alpha!r}")
    return float(alpha)


def check_positive(value: Any, name: str) -> float:
    """``value`` as a finite float > 0; ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
    return float(value)


def check_nonnegative(value: Any, name: str) -> float:
    """``value`` as a finite float >= 0; ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
    return float(value)


def check_nonnegative_int(value: Any, name: str) -> int:
    """``value`` as an int >= 0; ``ValueError`` otherwise (floats such as 2.0 are refused too)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name}: expected a non-negative integer, got {value!r}")
    return int(value)


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``; ``ValueError`` otherwise."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {choices}, got {value!r}")
    return value


def as_generator(rng: Any) -> np.random.Generator:
    """A ``numpy.random.Generator`` from ``None``, an int seed or a Generator."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise TypeError(f"rng: expected None, an int seed or numpy.random.Generator, got {type(rng).__name__}")


class _NotFittedError(ValueError, AttributeError):
    """Raised by an unfitted estimator when scikit-learn is not installed (same bases as sklearn's)."""


def not_fitted_error(message: str) -> Exception:
    """``sklearn.exceptions.NotFittedError(message)`` when scikit-learn is installed, else an equivalent.

    Both derive from ``ValueError`` and ``AttributeError``; sklearn is imported only here, when an
    error is being raised, so the core keeps importing numpy only.
    """
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:
        return _NotFittedError(message)
    return NotFittedError(message)
