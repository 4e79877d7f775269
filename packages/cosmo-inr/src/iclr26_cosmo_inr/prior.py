"""The regularised prior embedder ("harmonizer") that sets each layer's activation parameters.

A feature extractor reads the observed signal, global average pooling gives a 64-d vector
g, and an MLP 64 → 64 → 32 → n_layers·n_params (SiLU, LayerNorm for denoising; weights
truncated-normal std 0.001, biases 0.312) gives raw parameters. The "regulariser" is the
sigmoid range projection p = lo + (hi − lo)·sigmoid(raw).

Backbones:
- ``"resnet_stem"``: the ResNet-34 stem (conv7×7/2 → BN → ReLU → maxpool → 3 BasicBlocks of 64
  channels), fine-tuned jointly. Randomly initialised from a fixed seed (no weights are
  downloaded); ``load_backbone(path)`` accepts a local torchvision ``resnet34`` state dict.
- ``"stats"``: fixed hand-made image statistics (channel mean/std, gradient-magnitude
  histogram, radial power-spectrum bands), padded to 64-d.
- ``"none"``: the raw parameters are free learnable parameters (no prior), raw = init + s·θ with θ
  learnable from 0. Under Adam a parameter moves by about lr per step whatever its gradient's size, so a
  bare raw value would move like one weight, whereas each output of the MLP above moves like the sum of
  its bias and 32 last-layer weights times their inputs silu(0.312) ≈ 0.18: s = 1 + 32·silu(0.312)
  ≈ 6.8 (``mlp_output_step()``) gives the free values the step of the official prior at initialisation.
"""
from __future__ import annotations

import os

import numpy as np
import torch
from torch import Tensor, nn

BACKBONES = ("resnet_stem", "stats", "none")
FEATURES = 64
MLP_BIAS = 0.312
STEM_SEED = 1234


def mlp_output_step() -> float:
    """Adam step of one output of the prior MLP at its initialisation, in units of lr: 1 + 32·silu(0.312).

    At initialisation the hidden activations all equal silu(0.312) (weights std 0.001 are negligible), so
    moving the output's bias and its 32 last-layer weights by lr each moves the output by this many lr.
    """
    return 1.0 + 32 * float(nn.functional.silu(torch.tensor(MLP_BIAS, dtype=torch.float64)))


class BasicBlock(nn.Module):
    """ResNet BasicBlock with 64 channels and torchvision's attribute names."""

    def __init__(self, channels: int = FEATURES):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + x)


class ResNetStem(nn.Module):
    """conv1, bn1, relu, maxpool, layer1 of ResNet-34: ``(B, 3, H, W) -> (B, 64, H/4, W/4)``."""

    def __init__(self):
        super().__init__()
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(STEM_SEED)
        self.conv1 = nn.Conv2d(3, FEATURES, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(FEATURES)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = nn.Sequential(*[BasicBlock() for _ in range(3)])
        torch.random.set_rng_state(gen_state)

    def forward(self, x: Tensor) -> Tensor:
        return self.layer1(self.maxpool(self.relu(self.bn1(self.conv1(x)))))


def image_statistics(image: Tensor) -> Tensor:
    """Deterministic 64-d descriptor of an image ``(C, H, W)`` in [0, 1].

    Per-channel mean and std (up to 3 channels), a 16-bin gradient-magnitude histogram and
    16 log radial power-spectrum bands, zero-padded to 64.
    """
    img = image.double()
    stats = torch.cat([img.mean(dim=(1, 2)), img.std(dim=(1, 2)) if img[0].numel() > 1 else img.new_zeros(len(img))])
    gray = img.mean(dim=0)
    gy, gx = torch.gradient(gray) if min(gray.shape) > 1 else (gray * 0, gray * 0)
    grad = torch.sqrt(gx.square() + gy.square()).flatten()
    hist = torch.histc(grad, bins=16, min=0.0, max=1.0) / grad.numel()
    power = torch.fft.fftshift(torch.fft.fft2(gray - gray.mean())).abs().square()
    h, w = gray.shape
    yy, xx = torch.meshgrid(torch.arange(h, device=img.device) - h // 2, torch.arange(w, device=img.device) - w // 2,
                            indexing="ij")
    radius = torch.sqrt(yy.double().square() + xx.double().square())
    band = torch.clamp((radius / (radius.max() + 1e-12) * 16).long(), max=15).flatten()
    bands = torch.zeros(16, dtype=img.dtype, device=img.device).index_add_(0, band, power.flatten())
    feats = torch.cat([stats, hist, torch.log1p(bands / gray.numel())])
    return torch.nn.functional.pad(feats, (0, FEATURES - feats.numel())).float()


def as_prior_image(signal) -> Tensor:
    """``(H, W)`` or ``(H, W, C)`` array/tensor in [0, 1] -> ``(1, 3, H, W)`` float tensor for the backbone."""
    x = torch.as_tensor(np.asarray(signal) if not isinstance(signal, Tensor) else signal).float()
    if x.ndim == 2:
        x = x[..., None]
    if x.ndim != 3 or x.numel() == 0:
        raise ValueError(f"prior_signal: expected a non-empty (H, W) or (H, W, C) image, got shape {tuple(x.shape)}")
    x = x.permute(2, 0, 1)[:3]
    if x.shape[0] != 3:
        x = x[:1].expand(3, -1, -1)
    return x[None].contiguous()


class PriorEmbedder(nn.Module):
    """Maps an observed signal to per-layer activation parameters, ``forward() -> (n_layers, n_params)``.

    Args:
        backbone: ``"resnet_stem"``, ``"stats"`` or ``"none"``.
        n_layers: number of activation layers (L + 1).
        n_params: parameters per layer (2 for COSMO: T, C).
        ranges: ``n_params`` (lo, hi) pairs for the sigmoid projection, or ``None`` for raw output.
        task: ``"image"`` or ``"denoising"`` (adds LayerNorm in the MLP, as the official code).
        signal: the observed image, ``(H, W)`` or ``(H, W, C)`` in [0, 1]; required unless ``backbone="none"``.
        init: initial raw value when ``backbone="none"`` (the MLP bias value by default).

    Raises:
        ValueError: unknown backbone/task, missing signal, bad ranges.
    """

    def __init__(self, backbone: str = "resnet_stem", n_layers: int = 4, n_params: int = 2,
                 ranges: tuple[tuple[float, float], ...] | None = ((0.0, 10.0), (0.0, 3.0)),
                 task: str = "image", signal=None, init: float = MLP_BIAS):
        super().__init__()
        if backbone not in BACKBONES:
            raise ValueError(f"backbone: expected one of {BACKBONES}, got {backbone!r}")
        if task not in ("image", "denoising"):
            raise ValueError(f"task: expected 'image' or 'denoising', got {task!r}")
        if int(n_layers) < 1 or int(n_params) < 1:
            raise ValueError(f"n_layers, n_params: expected positive integers, got {n_layers}, {n_params}")
        if ranges is not None and len(ranges) != n_params:
            raise ValueError(f"ranges: expected {n_params} (lo, hi) pairs, got {len(ranges)}")
        self.backbone_name, self.n_layers, self.n_params, self.task = backbone, int(n_layers), int(n_params), task
        lo_hi = torch.tensor(ranges, dtype=torch.float32) if ranges is not None else None
        self.register_buffer("ranges", lo_hi)
        if backbone == "none":
            self.register_buffer("raw_init", torch.full((self.n_layers, self.n_params), float(init)))
            self.raw_step = mlp_output_step()
            self.raw = nn.Parameter(torch.zeros(self.n_layers, self.n_params))
            return
        if signal is None:
            raise ValueError(f"prior_signal: backbone {backbone!r} reads the observed signal; pass it "
                             "(the image being fitted, the noisy or low-resolution observation), or use prior='none'")
        image = as_prior_image(signal)
        if backbone == "resnet_stem":
            self.backbone = ResNetStem()
            self.register_buffer("signal", image)
        else:
            self.register_buffer("features", image_statistics(image[0]))
        widths = [FEATURES, 64, 32, self.n_layers * self.n_params]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            layers.append(nn.Linear(a, b))
            if i < len(widths) - 2:
                if task == "denoising":
                    layers.append(nn.LayerNorm(b))
                layers.append(nn.SiLU())
        self.mlp = nn.Sequential(*layers)
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.001)
                nn.init.constant_(m.bias, MLP_BIAS)

    def load_backbone(self, path: str | os.PathLike) -> PriorEmbedder:
        """Loads ``conv1.*``, ``bn1.*``, ``layer1.*`` from a local torchvision ``resnet34`` state dict file.

        Raises:
            ValueError: this embedder has no ResNet stem, or the file lacks those keys.
        """
        if self.backbone_name != "resnet_stem":
            raise ValueError(f"load_backbone: needs backbone='resnet_stem', this one is {self.backbone_name!r}")
        state = torch.load(path, map_location="cpu", weights_only=True)
        own = self.backbone.state_dict()
        missing = [k for k in own if k not in state]
        if missing:
            raise ValueError(f"path: {path} is not a resnet34 state dict (missing {missing[:3]}...)")
        self.backbone.load_state_dict({k: state[k] for k in own})
        return self

    def raw_parameters(self) -> Tensor:
        """The unprojected output, ``(n_layers, n_params)``."""
        if self.backbone_name == "none":
            return self.raw_init + self.raw_step * self.raw
        if self.backbone_name == "resnet_stem":
            g = self.backbone(self.signal).mean(dim=(2, 3))[0]
        else:
            g = self.features
        return self.mlp(g).view(self.n_layers, self.n_params)

    def forward(self) -> Tensor:
        """Per-layer parameters ``(n_layers, n_params)``, inside ``ranges`` when given."""
        raw = self.raw_parameters()
        if self.ranges is None:
            return raw
        lo, hi = self.ranges[:, 0], self.ranges[:, 1]
        return lo + (hi - lo) * torch.sigmoid(raw)
