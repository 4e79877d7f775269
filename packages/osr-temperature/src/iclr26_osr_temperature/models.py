"""The two networks of the reproductions: the CPU MLP and the VGG32 (``classifier32``) of the OSR literature."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["MLP", "Classifier32"]


class MLP(nn.Module):
    """``in_dim -> hidden[0] -> ... -> out_dim`` with ReLU; the CPU benchmark uses ``MLP(64, (128, 128), 6)``.

    ``features(x)`` is the last hidden layer ``(B, hidden[-1])``, ``forward(x)`` the output ``(B, out_dim)``.
    """

    def __init__(self, in_dim: int, hidden: Sequence[int], out_dim: int):
        super().__init__()
        dims = [int(in_dim), *map(int, hidden)]
        if any(d <= 0 for d in dims) or out_dim <= 0 or len(dims) < 2:
            raise ValueError(f"in_dim, hidden, out_dim: expected positive sizes and at least one hidden layer, "
                             f"got {in_dim}, {tuple(hidden)}, {out_dim}")
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(dims[-1], int(out_dim))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class Classifier32(nn.Module):
    """The 9-layer VGG-style network of the OSR benchmarks (Neal et al. 2018; Vaze et al. 2022).

    Input ``(B, 3, H, W)``; three stages of three 3x3 convolutions (64-64-128, 128-128-128, 128-128-128
    channels; the last of each stage has stride 2), batch norm, LeakyReLU(0.2), 2-D dropout before each
    stage, global average pooling to ``(B, 128)`` features and a linear classifier.
    """

    def __init__(self, n_classes: int, dropout: float = 0.2):
        super().__init__()
        channels = [(3, 64, 1), (64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 128, 1), (128, 128, 2),
                    (128, 128, 1), (128, 128, 1), (128, 128, 2)]
        layers: list[nn.Module] = []
        for i, (c_in, c_out, stride) in enumerate(channels):
            if i % 3 == 0:
                layers.append(nn.Dropout2d(dropout))
            layers += [nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c_out),
                       nn.LeakyReLU(0.2)]
        self.body = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(128, int(n_classes), bias=False)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))
