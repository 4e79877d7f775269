"""Channels-last inference kernels of the 15-subset evaluation (``decode_subset``, ``prepare_subsets``).

On one CPU thread, oneDNN convolutions of channels-last tensors (``(B, C, *S)`` stored as ``(B, *S, C)``) are
1.3–4× faster than of contiguous ones at this package's widths, grouped convolutions are slower than the same
groups run one by one, and PyTorch's instance norm of a channels-last tensor is slower than a two-pass mean and
variance over its last axis. These helpers keep the evaluation path channels-last; each equals the modules it
replaces up to float rounding (``tests/test_smsn_models.py``). Training uses the modules themselves.
"""
from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

_CONVS = (nn.Conv2d, nn.Conv3d)
_NORMS = (nn.InstanceNorm2d, nn.InstanceNorm3d)


def channels_last(x: torch.Tensor) -> torch.Tensor:
    """``x (B, C, *S)`` (2-D or 3-D ``S``) in channels-last memory order (a copy unless it already is)."""
    return x.contiguous(memory_format=torch.channels_last if x.ndim == 4 else torch.channels_last_3d)


def conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, padding) -> torch.Tensor:
    """``F.conv2d`` or ``F.conv3d`` by the rank of ``x (B, C, *S)``; channels-last in, channels-last out."""
    return (F.conv2d if x.ndim == 4 else F.conv3d)(x, weight, bias, padding=padding)


def norm_act_(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float, slope: float) -> torch.Tensor:
    """Affine instance norm, then LeakyReLU(``slope``), of ``x (B, C, *S)``: in place when ``x`` is channels-last
    (then the result is ``x``), else on a channels-last copy. ``weight, bias (C,)``. Biased variance, ``eps``
    inside the square root, as ``nn.InstanceNorm*d``; the mean, then the centred second moment: for narrow maps
    (C <= 32) as the diagonal of a batched ``d^T d`` (no temporary as large as ``x``), else from ``d²``."""
    x = channels_last(x)
    b, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    d = x.movedim(1, -1).reshape(b, -1, c)  # (B, P, C): a view of the channels-last x
    d.sub_(d.mean(1, keepdim=True))
    if c <= 32:
        var = torch.bmm(d.transpose(1, 2), d).diagonal(dim1=1, dim2=2).div_(d.shape[1]).unsqueeze(1)
    else:
        var = d.square().mean(1, keepdim=True)
    F.leaky_relu_(d.mul_(torch.rsqrt(var.add_(eps)).mul_(weight)).add_(bias), slope)
    return d.reshape(b, *spatial, c).movedim(-1, 1)


def run_layers(layers, x: torch.Tensor, group: int = 0, groups: int = 1) -> torch.Tensor:
    """Eval-mode ``nn.Sequential(layers)(x)`` channels-last, for layers that are convolutions and (instance norm,
    LeakyReLU) pairs. With ``groups > 1`` the layers are ``groups`` independent blocks side by side (grouped
    convolutions, per-channel norms) and only block ``group`` runs, on its own input ``x (B, C_in/groups, *S)``:
    ``(B, C_out/groups, *S)`` out.

    Raises:
        TypeError: a layer of another kind, or an instance norm without a LeakyReLU after it.
    """
    layers = list(layers)
    i = 0
    while i < len(layers):
        layer = layers[i]
        if isinstance(layer, _CONVS):
            rows = slice(group * layer.out_channels // groups, (group + 1) * layer.out_channels // groups)
            x = conv(x, layer.weight[rows], None if layer.bias is None else layer.bias[rows], layer.padding)
        elif isinstance(layer, _NORMS) and i + 1 < len(layers) and isinstance(layers[i + 1], nn.LeakyReLU):
            rows = slice(group * layer.num_features // groups, (group + 1) * layer.num_features // groups)
            x = norm_act_(x, layer.weight[rows], layer.bias[rows], layer.eps, layers[i + 1].negative_slope)
            i += 1
        else:
            raise TypeError(f"layers: expected convolutions and (instance norm, LeakyReLU) pairs, got {layer}")
        i += 1
    return x


# Per axis, the two taps of a 3-tap kernel seen by output phase 0 (even) / 1 (odd) after 2× nearest up-sampling:
# phase 0 reads the coarse voxels (i-1, i) with weights (w0, w1 + w2); phase 1 reads (i, i+1) with (w0 + w1, w2).
_PHASE_TAPS = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]], [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])


def phase_kernels(weight: torch.Tensor) -> torch.Tensor:
    """The 2^ndim phase kernels of a 3-tap convolution applied after 2× nearest up-sampling: ``weight (O, C, 3, ...)``
    -> ``(2^ndim·O, C, 2, ...)``, phase-major (phases in ``itertools.product((0, 1), repeat=ndim))`` order)."""
    taps = _PHASE_TAPS.to(weight)
    kernels = []
    for phase in itertools.product((0, 1), repeat=weight.ndim - 2):
        k = weight
        for axis, a in enumerate(phase):  # contract the 3 taps of this axis to its 2 phase taps
            k = torch.movedim(torch.movedim(k, 2 + axis, -1) @ taps[a].T, -1, 2 + axis)
        kernels.append(k)
    return torch.cat(kernels)


def upsampled_conv(x: torch.Tensor, kernels: torch.Tensor, bias: torch.Tensor, add: torch.Tensor) -> torch.Tensor:
    """``conv(nearest_upsample_2x(x), weight, bias, padding=1) + add`` without up-sampling, from ``kernels =
    phase_kernels(weight)``: ``x (B, C, *s)``, ``bias (O,)``, ``add (B, O, *2s)`` (overwritten: the result) ->
    ``(B, O, *2s)``. Each output phase (even/odd index per axis) is a 2-tap convolution of the coarse ``x``:
    2^ndim·2^ndim instead of 3^ndim·2^ndim multiply-adds per coarse voxel (equal up to float rounding)."""
    ndim = x.ndim - 2
    out = conv(x, kernels, None, 1)  # (B, P·O, *(s + 1)); phase a starts at index a
    o, size = add.shape[1], x.shape[2:]
    y = add.add_(bias.reshape(-1, *([1] * ndim)))
    for p, phase in enumerate(itertools.product((0, 1), repeat=ndim)):
        y[(slice(None), slice(None), *(slice(a, None, 2) for a in phase))] += \
            out[(slice(None), slice(p * o, (p + 1) * o), *(slice(a, a + n) for a, n in zip(phase, size)))]
    return y
