"""Spiking backbones (``[T, B, C, H, W]`` -> per-step logits ``[T, B, K]``) and ``EncodedSNN``.

Convolutions, batch norm and pooling act on the flattened ``[T·B, ...]`` tensor (batch norm
statistics are shared over time steps); LIF neurons act on ``[T, B, ...]``.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .encoding import Encoder, check_image, make_encoder
from .neurons import LIF


class _SeqToANN(nn.Module):
    """Applies a stateless module to ``[T, B, ...]`` by merging T into the batch."""

    def __init__(self, *modules: nn.Module):
        super().__init__()
        self.inner = nn.Sequential(*modules)

    def forward(self, x_seq: Tensor) -> Tensor:
        T, B = x_seq.shape[:2]
        y = self.inner(x_seq.flatten(0, 1))
        return y.reshape(T, B, *y.shape[1:])


class SpikingConvNet(nn.Module):
    """conv3×3 C→w₁, BN, LIF, conv3×3 w₁→w₂, BN, LIF, 2×2 average pool, linear → K (the CPU network).

    Args:
        in_channels, num_classes, image_size: input C, K and H = W (even).
        width: (w₁, w₂).
        T: nominal number of steps (the network itself runs any T).
        neuron_kw: keyword arguments of every ``LIF``.

    Attributes:
        first_layer: the first convolution (used by GTC with ``wrt="first_layer"``).
    """

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 8,
                 width: Sequence[int] = (16, 32), T: int = 4, neuron_kw: dict | None = None):
        super().__init__()
        if image_size % 2:
            raise ValueError(f"image_size: expected an even size, got {image_size}")
        w1, w2 = width
        kw = dict(neuron_kw or {})
        self.T = T
        self.first_layer = nn.Conv2d(in_channels, w1, 3, padding=1, bias=False)
        self.block1 = _SeqToANN(self.first_layer, nn.BatchNorm2d(w1))
        self.lif1 = LIF(**kw)
        self.block2 = _SeqToANN(nn.Conv2d(w1, w2, 3, padding=1, bias=False), nn.BatchNorm2d(w2))
        self.lif2 = LIF(**kw)
        self.head = _SeqToANN(nn.AvgPool2d(2), nn.Flatten(), nn.Linear(w2 * (image_size // 2) ** 2, num_classes))

    def forward(self, x_seq: Tensor) -> Tensor:
        """``[T, B, C, H, W]`` -> ``[T, B, K]``."""
        return self.head(self.lif2(self.block2(self.lif1(self.block1(x_seq)))))


VGG11_CFG = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")


class SpikingVGG11(nn.Module):
    """Spiking VGG-11 (conv3×3-BN-LIF blocks, 2×2 average pooling, linear head) for 32×32 images (GPU scale)."""

    def __init__(self, in_channels: int = 3, num_classes: int = 10, T: int = 4, neuron_kw: dict | None = None):
        super().__init__()
        kw = dict(neuron_kw or {})
        self.T = T
        layers: list[nn.Module] = []
        c = in_channels
        for v in VGG11_CFG:
            if v == "M":
                layers.append(_SeqToANN(nn.AvgPool2d(2)))
                continue
            conv = nn.Conv2d(c, v, 3, padding=1, bias=False)
            if c == in_channels and not hasattr(self, "first_layer"):
                self.first_layer = conv
            layers += [_SeqToANN(conv, nn.BatchNorm2d(v)), LIF(**kw)]
            c = v
        self.features = nn.Sequential(*layers)
        self.head = _SeqToANN(nn.Flatten(), nn.Linear(512, num_classes))

    def forward(self, x_seq: Tensor) -> Tensor:
        """``[T, B, C, 32, 32]`` -> ``[T, B, K]``."""
        return self.head(self.features(x_seq))


class EncodedSNN(nn.Module):
    """Image in [0, 1] -> encoder -> (normalisation) -> backbone -> logits averaged over time.

    Normalisation (per channel, ``(X[t] − mean)/std``) is applied to the encoded sequence, inside the
    model, so attacks work in pixel space.

    Args:
        encoder: an ``iclr26_stod.encoding.Encoder`` (direct, rate, STOD, ...).
        backbone: ``[T, B, C, H, W] -> [T, B, K]``; for GTC ``wrt="first_layer"`` it needs a
            ``first_layer`` attribute (``nn.Conv2d`` or ``nn.Linear``).
        normalize: ``(mean, std)`` sequences of length C, or ``None``.
    """

    def __init__(self, encoder: Encoder, backbone: nn.Module,
                 normalize: tuple[Sequence[float], Sequence[float]] | None = None):
        super().__init__()
        if not isinstance(encoder, Encoder):
            raise TypeError(f"encoder: expected an iclr26_stod Encoder, got {type(encoder).__name__}")
        self.encoder, self.backbone = encoder, backbone
        if normalize is None:
            self.register_buffer("norm_mean", None)
            self.register_buffer("norm_std", None)
        else:
            mean, std = (torch.as_tensor(v, dtype=torch.float32).reshape(-1, 1, 1) for v in normalize)
            if (std <= 0).any():
                raise ValueError(f"normalize: expected positive standard deviations, got {std.flatten().tolist()}")
            self.register_buffer("norm_mean", mean)
            self.register_buffer("norm_std", std)

    @property
    def T(self) -> int:
        return self.encoder.T

    def encode(self, x: Tensor) -> Tensor:
        """``x [B, C, H, W]`` in [0, 1] -> the encoder's sequence ``[T, B, C, H, W]``."""
        return self.encoder(x)

    def step_logits(self, x_seq: Tensor) -> Tensor:
        """Encoded sequence ``[T, B, C, H, W]`` -> per-time-step logits ``[T, B, K]``."""
        if self.norm_mean is not None:
            x_seq = (x_seq - self.norm_mean) / self.norm_std
        return self.backbone(x_seq)

    def forward_sequence(self, x_seq: Tensor) -> Tensor:
        """Encoded sequence ``[T, B, C, H, W]`` -> logits ``[B, K]`` (mean over T)."""
        return self.step_logits(x_seq).mean(0)

    def forward(self, x: Tensor) -> Tensor:
        """``x [B, C, H, W]`` in [0, 1] -> logits ``[B, K]``."""
        check_image(x)
        return self.forward_sequence(self.encode(x))


ARCHS = ("convnet", "vgg11")


def build_model(encoding: str = "direct", T: int = 4, arch: str = "convnet", in_channels: int = 1,
                num_classes: int = 10, image_size: int = 8, patch_size: int = 4, lambda_gor: float = 0.05,
                keep_kernels: bool = False, init: str = "householder", kernel_backend: str = "riemannian",
                sigma: float = 0.1, normalize: tuple | None = None, neuron_kw: dict | None = None) -> EncodedSNN:
    """An ``EncodedSNN`` from plain settings (what the CLI saves next to the weights to rebuild a model).

    Raises:
        ValueError: unknown ``arch`` or ``encoding``; the encoders' own checks.
    """
    encoder = make_encoder(encoding, T, in_channels, patch_size, lambda_gor, keep_kernels, init, kernel_backend, sigma)
    if arch == "convnet":
        backbone = SpikingConvNet(in_channels, num_classes, image_size, T=T, neuron_kw=neuron_kw)
    elif arch == "vgg11":
        backbone = SpikingVGG11(in_channels, num_classes, T=T, neuron_kw=neuron_kw)
    else:
        raise ValueError(f"arch: expected one of {ARCHS}, got {arch!r}")
    return EncodedSNN(encoder, backbone, normalize)


def load_model(path, device: str | torch.device = "cpu") -> tuple[EncodedSNN, dict]:
    """Rebuilds a model written by ``iclr26-stod train``: a ``torch.save`` of ``{"config", "state_dict"}``.

    Returns:
        ``(model in eval mode, config)``; ``config`` holds ``build_model``'s keyword arguments
        (under ``"model"``) plus the training settings.

    Raises:
        ValueError: the file is not such a checkpoint.
    """
    ckpt = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(ckpt, dict) or "config" not in ckpt or "state_dict" not in ckpt:
        raise ValueError(f"path: {str(path)!r} is not an iclr26-stod checkpoint (expected keys config, state_dict)")
    cfg = ckpt["config"]
    model = build_model(**cfg["model"]).to(device)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval(), cfg
