"""Array backends: the same few operations on numpy arrays and on torch tensors.

Every public function of the package takes numpy arrays or torch tensors. A torch
input is computed with torch on the tensor's own device (in float64) and returns torch;
anything else is computed with numpy. torch is never imported here: a tensor can only
exist if the caller imported torch already, so ``sys.modules`` tells us.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np


def is_tensor(x: Any) -> bool:
    """True when ``x`` is a torch tensor (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


class NumpyOps:
    """The numpy backend."""

    name = "numpy"

    def float64(self, x: Any) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)

    def from_numpy(self, a: np.ndarray) -> np.ndarray:
        return a

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def all_finite(self, a: np.ndarray) -> bool:
        return bool(np.isfinite(a).all())

    def logsumexp(self, z: np.ndarray) -> np.ndarray:
        """Row-wise ``log sum exp``, stable for any magnitude: (n, K) -> (n,)."""
        m = z.max(axis=1)
        e = z - m[:, None]
        np.exp(e, out=e)  # in place: one (n, K) temporary instead of two
        return m + np.log(e.sum(axis=1))

    def softmax(self, z: np.ndarray) -> np.ndarray:
        e = z - z.max(axis=1, keepdims=True)
        np.exp(e, out=e)
        e /= e.sum(axis=1, keepdims=True)
        return e

    def softplus(self, g: np.ndarray, beta: float) -> np.ndarray:
        """``log(1 + exp(beta g)) / beta``, returning ``g`` itself where ``beta g > 20``."""
        bg = beta * g
        return np.where(bg > 20.0, g, np.logaddexp(0.0, np.minimum(bg, 20.0)) / beta)

    def sort_desc(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stable descending sort along rows (ties keep class order): (sorted values, order)."""
        neg = -p
        order = np.argsort(neg, axis=1)  # introsort: about 2x faster, and the stable order wherever a row has no tie
        values = np.take_along_axis(p, order, axis=1)
        tied = (values[:, 1:] == values[:, :-1]).any(axis=1)
        if tied.any():
            order[tied] = np.argsort(neg[tied], axis=1, kind="stable")
            values[tied] = np.take_along_axis(p[tied], order[tied], axis=1)
        return values, order

    def sort_values_desc(self, p: np.ndarray) -> np.ndarray:
        """Each row's values in descending order (no argsort: much cheaper)."""
        return np.sort(p, axis=1)[:, ::-1]

    def scatter(self, values: np.ndarray, order: np.ndarray) -> np.ndarray:
        """Inverse of ``take(a, order)``: ``out[i, order[i, j]] = values[i, j]``."""
        out = np.empty_like(values)
        out[np.arange(values.shape[0])[:, None], order] = values
        return out

    def take(self, a: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.take_along_axis(a, idx, axis=1)

    def take_labels(self, a: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return a[np.arange(a.shape[0]), labels]

    def cumsum(self, a: np.ndarray) -> np.ndarray:
        return np.cumsum(a, axis=1)

    def clamp_min(self, a: np.ndarray, low: float) -> np.ndarray:
        return np.maximum(a, low)

    def log(self, a: np.ndarray) -> np.ndarray:
        return np.log(a)

    def where(self, cond, a, b):
        return np.where(cond, a, b)


class TorchOps(NumpyOps):
    """The torch backend, on the device of the tensor it was built from."""

    name = "torch"

    def __init__(self, like: Any):
        import torch

        self.torch = torch
        self.device = like.device

    def float64(self, x: Any):
        t = self.torch
        return x.to(dtype=t.float64) if isinstance(x, t.Tensor) else t.as_tensor(x, dtype=t.float64, device=self.device)

    def from_numpy(self, a: np.ndarray):
        return self.torch.as_tensor(a, device=self.device)

    def to_numpy(self, x: Any) -> np.ndarray:
        return x.detach().cpu().numpy() if is_tensor(x) else np.asarray(x)

    def all_finite(self, a) -> bool:
        return bool(self.torch.isfinite(a).all().item())

    def logsumexp(self, z):
        return self.torch.logsumexp(z, dim=1)

    def softmax(self, z):
        return self.torch.softmax(z, dim=1)

    def softplus(self, g, beta: float):
        return self.torch.nn.functional.softplus(g, beta=beta, threshold=20.0)

    def sort_desc(self, p):
        values, order = self.torch.sort(p, dim=1, descending=True, stable=True)
        return values, order

    def sort_values_desc(self, p):
        return self.torch.sort(p, dim=1, descending=True).values

    def scatter(self, values, order):
        return self.torch.empty_like(values).scatter_(1, order, values)

    def take(self, a, idx):
        return self.torch.gather(a, 1, idx)

    def take_labels(self, a, labels):
        return a[self.torch.arange(a.shape[0], device=a.device), labels]

    def cumsum(self, a):
        return self.torch.cumsum(a, dim=1)

    def clamp_min(self, a, low: float):
        return self.torch.clamp(a, min=low)

    def log(self, a):
        return self.torch.log(a)

    def where(self, cond, a, b):
        t = self.torch
        return t.where(cond, a, b if isinstance(b, t.Tensor) else t.as_tensor(b, dtype=a.dtype, device=a.device))


def ops_for(x: Any) -> NumpyOps:
    """The backend of ``x``: ``TorchOps`` on its device for a tensor, ``NumpyOps`` otherwise."""
    return TorchOps(x) if is_tensor(x) else NumpyOps()
