"""Backbones: the CPU MLP, and the official PU-Bench networks with their parameter counts.

Each maps ``(n, *shape)`` to ``(n, 1)`` logits. ``official_backbone(shape)`` picks the benchmark's network by input
shape: the BN CNN (96/192 channels, 14,291,513 parameters) for 3x32x32 images (CIFAR-10), LeNet (10/20 channels,
FC 50; 21,381 parameters) for 1x28x28 images (MNIST, Fashion-MNIST), the deep BN CNN with global pooling
(1,190,113 parameters) for 1x128x128 images (Alzheimer MRI), and the 512-256-128-64 MLP (512 d + 173,057
parameters) for vectors (tabular data and SBERT embeddings).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from torch import nn


def mlp(d: int, hidden: tuple[int, ...] = (100, 100)) -> nn.Module:
    """The CPU backbone: flatten, then d-100-100-1 with ReLU."""
    layers: list[nn.Module] = [nn.Flatten()]
    for h in hidden:
        layers += [nn.Linear(d, h), nn.ReLU()]
        d = h
    layers.append(nn.Linear(d, 1))
    return nn.Sequential(*layers)


def official_mlp(d: int) -> nn.Module:
    """The benchmark's vector network: d-512-256-128 (dropout 0.3, 0.3, 0.2), 64, one logit."""
    return nn.Sequential(nn.Flatten(), nn.Linear(d, 512), nn.ReLU(), nn.Dropout(0.3), nn.Linear(512, 256),
                         nn.ReLU(), nn.Dropout(0.3), nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))


def lenet(shape: tuple[int, ...]) -> nn.Module:
    """The benchmark's LeNet for ``(C, H, W)`` images: conv5 10 -> pool -> conv5 20 -> pool (ReLU after each
    pooling), FC 50, one logit. 1x28x28 gives 20 x 4 x 4 = 320 features."""
    c, h, w = shape
    fh, fw = ((h - 4) // 2 - 4) // 2, ((w - 4) // 2 - 4) // 2
    if fh < 1 or fw < 1:
        raise ValueError(f"backbone: 'lenet' needs images of at least 16x16, got shape {shape}")
    return nn.Sequential(nn.Conv2d(c, 10, 5), nn.MaxPool2d(2), nn.ReLU(), nn.Conv2d(10, 20, 5), nn.MaxPool2d(2),
                         nn.ReLU(), nn.Flatten(), nn.Linear(20 * fh * fw, 50), nn.ReLU(), nn.Linear(50, 1))


def _conv_bn(c_in: int, c_out: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, 3, padding=1, stride=stride), nn.BatchNorm2d(c_out), nn.ReLU()]


def cifar_cnn(shape: tuple[int, ...]) -> nn.Module:
    """The benchmark's CIFAR-10 CNN: 3x3 conv + BN + ReLU blocks 96, 96, 96/2, (dropout 0.2) 192, 192, 192/2
    (dropout 0.5), then FC 1000, (dropout 0.5) 1000, one logit. 3x32x32 gives 192 x 8 x 8 features."""
    c, h, w = shape
    return nn.Sequential(*_conv_bn(c, 96), *_conv_bn(96, 96), *_conv_bn(96, 96, 2), nn.Dropout(0.2),
                         *_conv_bn(96, 192), *_conv_bn(192, 192), *_conv_bn(192, 192, 2), nn.Dropout(0.5),
                         nn.Flatten(), nn.Linear(192 * ((h + 3) // 4) * ((w + 3) // 4), 1000), nn.ReLU(),
                         nn.Dropout(0.5), nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 1))


def alzheimer_cnn(shape: tuple[int, ...]) -> nn.Module:
    """The benchmark's MRI CNN: four stages of two 3x3 conv + BN + ReLU (32, 64, 128, 256 channels), each
    followed by 2x2 max pooling and dropout (0.1, 0.1, 0.2, 0.3); global average pooling; FC 64 (dropout 0.3);
    one logit."""
    layers: list[nn.Module] = []
    c_in = shape[0]
    for c_out, p in ((32, 0.1), (64, 0.1), (128, 0.2), (256, 0.3)):
        layers += [*_conv_bn(c_in, c_out), *_conv_bn(c_out, c_out), nn.MaxPool2d(2), nn.Dropout(p)]
        c_in = c_out
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 64), nn.ReLU(),
                         nn.Dropout(0.3), nn.Linear(64, 1))


def official_backbone(shape: tuple[int, ...]) -> nn.Module:
    """The benchmark's network for rows of ``shape``: CIFAR CNN for 3-channel images, the MRI CNN for
    1-channel images of side >= 64, LeNet for other 1-channel images, the 512-256-128-64 MLP for vectors."""
    if len(shape) != 3:
        return official_mlp(int(np.prod(shape)))
    if shape[0] == 3:
        return cifar_cnn(shape)
    return alzheimer_cnn(shape) if min(shape[1:]) >= 64 else lenet(shape)


_BY_NAME: dict[str, Callable[[tuple[int, ...]], nn.Module]] = {
    "auto": lambda shape: mlp(int(np.prod(shape))),
    "mlp": lambda shape: mlp(int(np.prod(shape))),
    "linear": lambda shape: nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(shape)), 1)),
    "official": official_backbone,
    "paper_mlp": lambda shape: official_mlp(int(np.prod(shape))),
    "lenet": lenet,
    "cifar_cnn": cifar_cnn,
    "alzheimer_cnn": alzheimer_cnn,
}
BACKBONES = tuple(_BY_NAME)
_IMAGE_ONLY = ("lenet", "cifar_cnn", "alzheimer_cnn")


def build_backbone(backbone, shape: tuple[int, ...]) -> nn.Module:
    """A module mapping ``(n, *shape)`` to ``(n, 1)`` logits.

    ``backbone``: ``"auto"``/``"mlp"`` (the CPU d-100-100-1), ``"linear"``, ``"official"`` (the benchmark's
    network for this shape, see ``official_backbone``), ``"paper_mlp"``, ``"lenet"``, ``"cifar_cnn"``,
    ``"alzheimer_cnn"`` (images), or a callable ``factory(shape) -> nn.Module``.
    """
    if callable(backbone):
        return backbone(shape)
    if backbone not in _BY_NAME:
        raise ValueError(f"backbone: expected one of {list(BACKBONES)} or a callable, got {backbone!r}")
    if backbone in _IMAGE_ONLY and len(shape) != 3:
        raise ValueError(f"backbone: {backbone!r} needs images (n, C, H, W), got rows of shape {shape}")
    return _BY_NAME[backbone](tuple(shape))
