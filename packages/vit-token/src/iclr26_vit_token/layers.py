"""Token-specialised layers: one parameter set for the prefix ([CLS], registers), one for patch tokens.

Every token passes through exactly one of the two copies, so a specialised layer costs the
same FLOPs as the shared layer it replaces; only the parameter count doubles.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _check_prefix(n_prefix: int) -> int:
    if isinstance(n_prefix, bool) or not isinstance(n_prefix, int) or n_prefix < 1:
        raise ValueError(f"n_prefix: expected an integer >= 1 when specialisation is enabled, got {n_prefix!r}")
    return n_prefix


def _check_tokens(x: torch.Tensor, n_prefix: int, features: int, name: str) -> None:
    if x.dim() != 3 or x.shape[-1] != features or x.shape[1] < n_prefix:
        raise ValueError(f"x: expected (B, N >= {n_prefix}, {features}) for {name}, got {tuple(x.shape)}")


class TokenSpecLayerNorm(nn.Module):
    """LayerNorm with separate affine parameters for the first ``n_prefix`` tokens and for the patches.

    ``LN_cls`` (module ``prefix``) normalises tokens ``[:n_prefix]`` and ``LN_patch`` (module ``patch``)
    the rest. Input and output ``(B, n_prefix + P, D)``.

    Raises:
        ValueError: ``n_prefix`` < 1.
    """

    def __init__(self, dim: int, n_prefix: int = 1, eps: float = 1e-6):
        super().__init__()
        self.n_prefix = _check_prefix(n_prefix)
        self.prefix = nn.LayerNorm(dim, eps=eps)
        self.patch = nn.LayerNorm(dim, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_tokens(x, self.n_prefix, self.prefix.normalized_shape[0], "TokenSpecLayerNorm")
        k = self.n_prefix
        out = torch.empty_like(x)
        out[:, :k] = self.prefix(x[:, :k])
        out[:, k:] = self.patch(x[:, k:])
        return out


class TokenSpecLinear(nn.Module):
    """Linear map with weights ``W_cls`` (module ``prefix``) for tokens ``[:n_prefix]`` and ``W_patch`` for the rest.

    Input ``(B, n_prefix + P, in_f)``, output ``(B, n_prefix + P, out_f)``; the results are written into
    one preallocated tensor in the original token order (no concatenation in the hot path).

    Raises:
        ValueError: ``n_prefix`` < 1.
    """

    def __init__(self, in_f: int, out_f: int, n_prefix: int = 1, bias: bool = True):
        super().__init__()
        self.n_prefix = _check_prefix(n_prefix)
        self.prefix = nn.Linear(in_f, out_f, bias=bias)
        self.patch = nn.Linear(in_f, out_f, bias=bias)

    @property
    def in_features(self) -> int:
        return self.prefix.in_features

    @property
    def out_features(self) -> int:
        return self.prefix.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_tokens(x, self.n_prefix, self.in_features, "TokenSpecLinear")
        k = self.n_prefix
        out = x.new_empty(*x.shape[:-1], self.out_features)
        out[:, :k] = F.linear(x[:, :k], self.prefix.weight, self.prefix.bias)
        out[:, k:] = F.linear(x[:, k:], self.patch.weight, self.patch.bias)
        return out


class LayerScale(nn.Module):
    """Per-channel scaling ``gamma * x`` (CaiT/DINOv2); ``gamma`` starts at ``init_values``."""

    def __init__(self, dim: int, init_values: float):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), float(init_values)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class TokenSpecLayerScale(nn.Module):
    """LayerScale with separate ``gamma`` for the first ``n_prefix`` tokens (``prefix``) and the patches (``patch``)."""

    def __init__(self, dim: int, init_values: float, n_prefix: int = 1):
        super().__init__()
        self.n_prefix = _check_prefix(n_prefix)
        self.prefix = LayerScale(dim, init_values)
        self.patch = LayerScale(dim, init_values)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.n_prefix
        out = torch.empty_like(x)
        out[:, :k] = self.prefix(x[:, :k])
        out[:, k:] = self.patch(x[:, k:])
        return out
