"""Embedded data (generated only), dataset compression and the weighted minibatch sampler.

- ``uniform_cube``: objects ``w ~ U[-1, 1]^m``.
- ``cylindrical_harmonic``: the Fig. 4 target ``J_6(20 r) cos(6 theta)`` on ``U[-1, 1]^2``.
- ``teacher_regression``: the Fig. 3 data, a random two-layer ReLU teacher with U(-1, 1) weights.
- ``load_objects``: a user's own ``.npy`` / ``.npz`` / ``.csv`` array of objects (rows = objects).
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
import torch
from scipy.special import jv

from ._checks import check_points, check_positive_int, check_weights
from .compressor import MomentCompressor


def uniform_cube(d: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """``d`` points uniform in ``[-1, 1]^m``: float64 array ``(d, m)``."""
    return rng.uniform(-1.0, 1.0, size=(check_positive_int(d, "d"), check_positive_int(m, "m")))


def cylindrical_harmonic(X: np.ndarray) -> np.ndarray:
    """``J_6(20 r) cos(6 theta)`` at points ``X`` of shape ``(n, 2)``: array ``(n,)``."""
    X = check_points(X, name="X")
    if X.shape[1] != 2:
        raise ValueError(f"X: expected shape (n, 2), got {X.shape}")
    r = np.hypot(X[:, 0], X[:, 1])
    theta = np.arctan2(X[:, 1], X[:, 0])
    return jv(6, 20.0 * r) * np.cos(6.0 * theta)


def harmonic_regression(n: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y_noisy, y_clean)``: X ~ U[-1, 1]^2 of shape ``(n, 2)``, targets ``(n,)`` with N(0, noise^2) added."""
    X = uniform_cube(n, 2, rng)
    clean = cylindrical_harmonic(X)
    return X, clean + noise * rng.standard_normal(n), clean


class Teacher:
    """Random two-layer ReLU teacher ``y = V relu(W x + b) + b2`` with every parameter ~ U(-1, 1).

    Args:
        in_features, width: input dimension and number of hidden units.
        rng: numpy generator the parameters are drawn from.
    """

    def __init__(self, in_features: int, width: int, rng: np.random.Generator):
        shape = (check_positive_int(width, "width"), check_positive_int(in_features, "in_features"))
        self.W = rng.uniform(-1, 1, shape)
        self.b = rng.uniform(-1, 1, width)
        self.v = rng.uniform(-1, 1, width)
        self.b2 = float(rng.uniform(-1, 1))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """X: ``(n, in)`` -> ``(n,)``."""
        return np.maximum(X @ self.W.T + self.b, 0.0) @ self.v + self.b2


def teacher_regression(n: int, noise: float, teacher: Teacher,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y_noisy, y_clean)`` with X ~ U[-1, 1]^in of shape ``(n, in)`` and targets ``(n,)``."""
    X = uniform_cube(n, teacher.W.shape[1], rng)
    clean = teacher(X)
    return X, clean + noise * rng.standard_normal(n), clean


def load_objects(path: str | os.PathLike, key: str | None = None) -> np.ndarray:
    """Reads an array of objects (rows = objects) from ``.npy``, ``.npz`` (``key`` or its only array) or ``.csv``.

    Returns:
        float64 array ``(d, m)``.

    Raises:
        FileNotFoundError: no such file. ValueError: unknown suffix, several arrays and no ``key``,
        non-finite values or a wrong shape.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no file at {str(p)!r}")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        arr = np.load(p, allow_pickle=False)
    elif suffix == ".npz":
        with np.load(p, allow_pickle=False) as z:
            names = list(z.files)
            if key is None and len(names) != 1:
                raise ValueError(f"key: {str(p)!r} holds arrays {names}; name one")
            name = key if key is not None else names[0]
            if name not in names:
                raise ValueError(f"key: expected one of {names}, got {name!r}")
            arr = z[name]
    elif suffix == ".csv":
        arr = np.loadtxt(p, delimiter=",", ndmin=2)
    else:
        raise ValueError(f"path: expected a .npy, .npz or .csv file, got suffix {suffix!r}")
    return check_points(arr, name=str(p))


def compress_dataset(X, y, k: int = 5, target_size: int = 1000, random_state=None, sample_weight=None,
                     **compressor_options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compresses a dataset whose objects are the points ``(x_i, y_i)`` (Algorithm B).

    Args:
        X: inputs ``(d, p)``; y: targets ``(d,)`` or ``(d, q)``; k: order; target_size: ``d'``.
        random_state: k-means seed. sample_weight: optional initial weights ``(d,)``.

    Returns:
        ``(X_c, y_c, weights)`` of shapes ``(d', p)``, ``(d',)`` or ``(d', q)``, and ``(d',)``;
        the weights sum to ``d`` (or to ``sum(sample_weight)``). Train with the weighted loss
        ``sum_j c_j l(x_j, y_j) / sum c``, or with ``WeightedReplacementSampler`` minibatches.

    Raises:
        ValueError: mismatched lengths, NaN/inf, ``target_size`` below ``C(p + q + k, k)``.
    """
    X = check_points(X, name="X")
    y_arr = np.asarray(y, dtype=np.float64)
    y2 = y_arr[:, None] if y_arr.ndim == 1 else y_arr
    if y2.ndim != 2 or y2.shape[0] != X.shape[0]:
        raise ValueError(f"y: expected shape ({X.shape[0]},) or ({X.shape[0]}, q) to match X, got {y_arr.shape}")
    objects = check_points(np.hstack([X, y2]), name="(X, y)")
    weights = check_weights(sample_weight, X.shape[0], name="sample_weight")
    mc = MomentCompressor(k=k, target_size=target_size, random_state=random_state, **compressor_options)
    mc.fit(objects, sample_weight=weights)
    return X[mc.support_], y_arr[mc.support_], mc.weights_


class WeightedReplacementSampler(torch.utils.data.Sampler):
    """Indices drawn i.i.d. with probability proportional to ``weights`` (the paper's data loader).

    Args:
        weights: non-negative weights ``(n,)`` with a positive sum.
        num_samples: indices per epoch.
        generator: optional ``torch.Generator`` for reproducible draws.
    """

    def __init__(self, weights, num_samples: int, generator: torch.Generator | None = None):
        w = check_weights(np.asarray(weights, dtype=np.float64), len(weights), name="weights")
        if not w.sum() > 0:
            raise ValueError("weights: expected a positive sum")
        self.weights = torch.as_tensor(w, dtype=torch.float64)
        self.num_samples = check_positive_int(num_samples, "num_samples")
        self.generator = generator

    def __iter__(self):
        draws = torch.multinomial(self.weights, self.num_samples, replacement=True, generator=self.generator)
        yield from draws.tolist()

    def __len__(self) -> int:
        return self.num_samples
