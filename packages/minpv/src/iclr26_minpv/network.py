"""The time-score network ``s_θ(x, t)`` with a scalar output.

Two architectures: ``"concat_squash"`` (OpenDRE's time-score net: every layer is a linear map of the
features, gated and shifted by the time, ``h ↦ (W h + b) ⊙ σ(g t + c) + e t``, LeakyReLU between layers)
and ``"concat"`` (a plain SiLU MLP on ``[x, t]``, the spec's acceptable stand-in). The gate lets every
layer rescale its features with ``t``, which a time score whose size changes quickly along the path needs.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

ARCHITECTURES = ("concat_squash", "concat")


class ConcatSquashLinear(nn.Module):
    """``(h, t) ↦ (W h + b) ⊙ sigmoid(g t + c) + e t``; shapes ``(B, n_in), (B, 1) -> (B, n_out)``."""

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.gate = nn.Linear(1, n_out)
        self.shift = nn.Linear(1, n_out, bias=False)

    def forward(self, h: Tensor, t: Tensor) -> Tensor:
        return self.linear(h) * torch.sigmoid(self.gate(t)) + self.shift(t)


class TimeScoreNet(nn.Module):
    """``(x, t) ↦ s_θ(x, t)``.

    Args:
        dim: data dimension ``d``.
        hidden: widths of the hidden layers, e.g. ``(128, 128, 128)``.
        architecture: ``"concat_squash"`` (default, as in OpenDRE) or ``"concat"`` (SiLU MLP on ``[x, t]``).

    Shapes:
        ``forward(x: (B, d), t: (B, 1)) -> (B, 1)``.
    """

    def __init__(self, dim: int, hidden: Sequence[int] = (256, 256, 256, 256), architecture: str = "concat_squash"):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim: expected an int >= 1, got {dim!r}")
        widths = [int(h) for h in hidden]
        if not widths or min(widths) < 1:
            raise ValueError(f"hidden: expected a non-empty sequence of positive ints, got {hidden!r}")
        if architecture not in ARCHITECTURES:
            raise ValueError(f"architecture: expected one of {ARCHITECTURES}, got {architecture!r}")
        self.dim = dim
        self.architecture = architecture
        if architecture == "concat":
            layers: list[nn.Module] = []
            for n_in, n_out in zip([dim + 1] + widths[:-1], widths):
                layers += [nn.Linear(n_in, n_out), nn.SiLU()]
            layers.append(nn.Linear(widths[-1], 1))
            self.net = nn.Sequential(*layers)
        else:
            sizes = zip([dim] + widths, widths + [1])
            self.layers = nn.ModuleList(ConcatSquashLinear(n_in, n_out) for n_in, n_out in sizes)
            self.activation = nn.LeakyReLU()

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        if self.architecture == "concat":
            return self.net(torch.cat([x, t], dim=1))
        h = x
        for k, layer in enumerate(self.layers):
            h = layer(h, t)
            if k < len(self.layers) - 1:
                h = self.activation(h)
        return h
