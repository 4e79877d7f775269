"""The time-score network ``s_θ(x, t)``: a plain MLP on the concatenation ``[x, t]`` with a scalar output."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn


class TimeScoreNet(nn.Module):
    """MLP ``[x, t] ↦ s_θ(x, t)`` with SiLU activations.

    Args:
        dim: data dimension ``d``.
        hidden: widths of the hidden layers, e.g. ``(128, 128, 128)``.

    Shapes:
        ``forward(x: (B, d), t: (B, 1)) -> (B, 1)``.
    """

    def __init__(self, dim: int, hidden: Sequence[int] = (256, 256, 256, 256)):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim: expected an int >= 1, got {dim!r}")
        widths = [int(h) for h in hidden]
        if not widths or min(widths) < 1:
            raise ValueError(f"hidden: expected a non-empty sequence of positive ints, got {hidden!r}")
        layers: list[nn.Module] = []
        width_in = dim + 1
        for width in widths:
            layers += [nn.Linear(width_in, width), nn.SiLU()]
            width_in = width
        layers.append(nn.Linear(width_in, 1))
        self.net = nn.Sequential(*layers)
        self.dim = dim

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        return self.net(torch.cat([x, t], dim=1))
