"""The Gaussian model: N anisotropic 3-D Gaussians with opacity and colour (SH degree 0).

Parameters (all ``torch.nn.Parameter``): means ``(N,3)``, log-scales ``(N,3)``, quaternions
``(N,4)`` (w, x, y, z; normalised inside the renderer), opacity logits ``(N,)`` and colour
logits ``(N,3)`` (rendered colour ``sigmoid``); optional per-Gaussian features ``(N,K)``.
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
import torch
from torch import nn

_FIELDS = ("means", "log_scales", "quats", "opacity_logits", "color_logits")


def _check(name: str, value: torch.Tensor, shape: tuple) -> torch.Tensor:
    if value.ndim != len(shape) or any(s is not None and v != s for v, s in zip(value.shape, shape, strict=False)):
        raise ValueError(f"{name}: expected shape {tuple('N' if s is None else s for s in shape)}, "
                         f"got {tuple(value.shape)}")
    if not torch.isfinite(value).all():
        raise ValueError(f"{name}: expected finite values")
    return value


def _as_float(a) -> torch.Tensor:
    """A floating tensor: torch floating tensors keep their dtype and device, anything else becomes float32."""
    if isinstance(a, torch.Tensor) and a.is_floating_point():
        return a.detach()
    return torch.as_tensor(np.asarray(a, dtype=np.float32))


class GaussianModel(nn.Module):
    """A 3-D Gaussian splatting model.

    Args:
        n: number of Gaussians.
        init: ``"ball"``: means uniform in a ball of ``radius`` (the CPU default of the spec).
        radius: the ball radius (the object bound).
        sh_degree: only 0 (view-independent colour) is implemented.
        feature_dim: K of the optional per-Gaussian feature vectors (0 = none).
        seed: seeds the initial means.
        init_scale, init_opacity: isotropic scale (0.04) and opacity (0.1) of the initial Gaussians.
    """

    def __init__(self, n: int = 1000, init: str = "ball", radius: float = 1.0, sh_degree: int = 0,
                 feature_dim: int = 0, seed: int = 0, init_scale: float = 0.04, init_opacity: float = 0.1):
        super().__init__()
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n: expected a positive integer, got {n!r}")
        if init != "ball":
            raise ValueError(f"init: expected 'ball', got {init!r}")
        if sh_degree != 0:
            raise ValueError(f"sh_degree: only 0 (view-independent colour) is implemented, got {sh_degree}")
        if radius <= 0 or init_scale <= 0 or not 0 < init_opacity < 1:
            raise ValueError(f"radius, init_scale > 0 and 0 < init_opacity < 1 expected, got {radius}, "
                             f"{init_scale}, {init_opacity}")
        g = torch.Generator().manual_seed(int(seed))
        direction = torch.randn(n, 3, generator=g)
        direction = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-12)
        rad = radius * torch.rand(n, 1, generator=g) ** (1 / 3)
        self.means = nn.Parameter(direction * rad)
        self.log_scales = nn.Parameter(torch.full((n, 3), float(np.log(init_scale))))
        quats = torch.zeros(n, 4)
        quats[:, 0] = 1
        self.quats = nn.Parameter(quats)
        self.opacity_logits = nn.Parameter(torch.full((n,), float(np.log(init_opacity / (1 - init_opacity)))))
        self.color_logits = nn.Parameter(torch.zeros(n, 3))
        self.features = nn.Parameter(torch.zeros(n, feature_dim)) if feature_dim else None

    @classmethod
    def from_arrays(cls, means, log_scales, quats, opacity_logits, color_logits, features=None) -> GaussianModel:
        """Builds a model from arrays (numpy or torch) of shapes (N,3), (N,3), (N,4), (N,), (N,3), [(N,K)].

        Raises:
            ValueError: wrong shapes, non-finite values, or a quaternion of zero norm.
        """
        arrays = [_as_float(a) for a in (means, log_scales, quats, opacity_logits, color_logits)]
        n = arrays[0].shape[0] if arrays[0].ndim == 2 else -1
        for name, a, shape in zip(_FIELDS, arrays, ((None, 3), (n, 3), (n, 4), (n,), (n, 3)), strict=True):
            _check(name, a, shape)
        if (arrays[2].norm(dim=1) < 1e-12).any():
            raise ValueError("quats: every quaternion must have a non-zero norm")
        model = cls.__new__(cls)
        nn.Module.__init__(model)
        for name, a in zip(_FIELDS, arrays, strict=True):
            setattr(model, name, nn.Parameter(a.clone()))
        model.features = None
        if features is not None:
            f = _as_float(features)
            model.features = nn.Parameter(_check("features", f, (n, None)).clone())
        return model

    def __len__(self) -> int:
        return self.means.shape[0]

    @property
    def opacity(self) -> torch.Tensor:
        """``sigmoid(opacity_logits)``, shape (N,)."""
        return torch.sigmoid(self.opacity_logits)

    @property
    def colors(self) -> torch.Tensor:
        """``sigmoid(color_logits)`` in [0,1], shape (N,3)."""
        return torch.sigmoid(self.color_logits)

    def validate(self) -> None:
        """Raises ``ValueError`` for non-finite parameters or a zero-norm quaternion."""
        for name in _FIELDS:
            if not torch.isfinite(getattr(self, name)).all():
                raise ValueError(f"{name}: expected finite values")
        if (self.quats.detach().norm(dim=1) < 1e-12).any():
            raise ValueError("quats: every quaternion must have a non-zero norm")

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Writes the parameters to an ``.npz`` file atomically; returns the path."""
        from iclr26_shared.bench import atomic_path

        arrays = {name: getattr(self, name).detach().cpu().numpy() for name in _FIELDS}
        if self.features is not None:
            arrays["features"] = self.features.detach().cpu().numpy()
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        return pathlib.Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> GaussianModel:
        """Reads a model written by ``save``; raises ``ValueError`` naming a missing array."""
        p = pathlib.Path(path)
        if not p.is_file():
            raise ValueError(f"model: file {p} does not exist")
        with np.load(p) as data:
            missing = [k for k in _FIELDS if k not in data]
            if missing:
                raise ValueError(f"model: {p} lacks the arrays {missing}")
            return cls.from_arrays(*(data[k] for k in _FIELDS), features=data["features"] if "features" in data
                                   else None)
