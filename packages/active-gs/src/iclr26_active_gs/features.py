"""2-D "semantic" feature extractors ``Phi: image (H,W,3) -> (H,W,K)`` (inferred, spec section 3).

``HandcraftedFeatures`` (default, no weights): CIE-Lab (3), Lab blurred at sigma 2 px (3), gradient
magnitude of L at sigma 1 (1), local standard deviation of L in a 5x5 window (1).
``TorchvisionFeatures``: a ResNet-18 trunk whose weights the user supplies as a local
torchvision-format state dict (never downloaded), upsampled and PCA-reduced to K channels.
Either is standardised per channel over all training pixels of the round by ``standardize``.
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
import torch
import torch.nn.functional as F
from scipy import ndimage
from skimage.color import rgb2lab
from torch import nn


def _as_image(image) -> np.ndarray:
    a = np.asarray(torch.as_tensor(image).detach().cpu().double()) if isinstance(image, torch.Tensor) else \
        np.asarray(image, dtype=np.float64)
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"image: expected shape (H, W, 3), got {a.shape}")
    return a


class HandcraftedFeatures:
    """Eight handcrafted per-pixel features (no weights needed). ``K = 8``."""

    k = 8

    def __call__(self, image) -> np.ndarray:
        """(H,W,3) image in [0,1] -> (H,W,8) raw (unstandardised) features."""
        lab = rgb2lab(np.clip(_as_image(image), 0, 1))
        blur = np.stack([ndimage.gaussian_filter(lab[..., c], 2.0) for c in range(3)], -1)
        L = lab[..., 0]
        grad = ndimage.gaussian_gradient_magnitude(L, 1.0)
        mean = ndimage.uniform_filter(L, 5)
        std = np.sqrt(np.clip(ndimage.uniform_filter(L * L, 5) - mean * mean, 0, None))
        return np.concatenate([lab, blur, grad[..., None], std[..., None]], -1)


def standardize(features: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """Standardises each channel with its mean/std over all pixels of all views.

    Returns (standardised list of (H,W,K), ``var0`` = mean over channels of the pixel variance after
    standardisation: 1 for every non-constant channel, 0 for a constant one).
    """
    flat = np.concatenate([f.reshape(-1, f.shape[-1]) for f in features])
    mu, sd = flat.mean(0), flat.std(0)
    safe = np.where(sd > 1e-12, sd, 1.0)
    out = [(f - mu) / safe for f in features]
    var0 = float(np.mean(np.concatenate([o.reshape(-1, o.shape[-1]) for o in out]).var(0)))
    return out, var0


class _Block(nn.Module):
    """ResNet basic block with torchvision's parameter names."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class _ResNet18Trunk(nn.Module):
    """conv1 .. layer4 of ResNet-18 (torchvision names), evaluated up to a chosen layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
        for k, (cin, cout, stride) in enumerate(widths, 1):
            setattr(self, f"layer{k}", nn.Sequential(_Block(cin, cout, stride), _Block(cout, cout, 1)))

    def forward(self, x, layer: str):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        for k in range(1, 5):
            x = getattr(self, f"layer{k}")(x)
            if layer == f"layer{k}":
                return x
        return x


class TorchvisionFeatures:
    """ResNet-18 features from a local torchvision-format state dict, PCA-reduced to ``k`` channels.

    Args:
        weights_path: a ``.pth`` file holding ``torchvision.models.resnet18().state_dict()``; never downloaded.
        layer: ``"layer1"`` .. ``"layer4"``.
        k: output channels after PCA (fitted on the pixels of the images passed to ``fit``, or of each
            image alone when ``__call__`` is used before ``fit``).

    Raises:
        ValueError: missing weights file, unknown layer, a state dict that does not fit ResNet-18.
    """

    def __init__(self, weights_path: str | os.PathLike, layer: str = "layer2", k: int = 16):
        path = pathlib.Path(weights_path)
        if not path.is_file():
            raise ValueError(f"weights_path: {path} does not exist; save torchvision's resnet18 state_dict there "
                             "(nothing is downloaded)")
        if layer not in {f"layer{i}" for i in range(1, 5)}:
            raise ValueError(f"layer: expected one of layer1..layer4, got {layer!r}")
        if k < 1:
            raise ValueError(f"k: expected >= 1, got {k}")
        self.net = _ResNet18Trunk().eval()
        state = torch.load(path, map_location="cpu", weights_only=True)
        missing, _ = self.net.load_state_dict(state, strict=False)
        if missing:
            raise ValueError(f"weights_path: the state dict lacks ResNet-18 entries, e.g. {missing[:3]}")
        self.layer, self.k = layer, int(k)
        self.components_: np.ndarray | None = None
        self.mean_: np.ndarray | None = None

    def _deep(self, image) -> np.ndarray:
        img = torch.tensor(np.clip(_as_image(image), 0, 1), dtype=torch.float32)
        mean = torch.tensor([0.485, 0.456, 0.406])
        std = torch.tensor([0.229, 0.224, 0.225])
        x = ((img - mean) / std).permute(2, 0, 1)[None]
        with torch.no_grad():
            f = self.net(x, self.layer)
            f = F.interpolate(f, size=img.shape[:2], mode="bilinear", align_corners=False)
        return f[0].permute(1, 2, 0).numpy().astype(np.float64)

    def fit(self, images) -> TorchvisionFeatures:
        """Fits the PCA on the pixels of ``images``; returns self."""
        flat = np.concatenate([self._deep(im).reshape(-1, self._channels()) for im in images])
        self.mean_ = flat.mean(0)
        _, _, vt = np.linalg.svd(flat - self.mean_, full_matrices=False)
        self.components_ = vt[: self.k]
        return self

    def _channels(self) -> int:
        return {"layer1": 64, "layer2": 128, "layer3": 256, "layer4": 512}[self.layer]

    def __call__(self, image) -> np.ndarray:
        """(H,W,3) image -> (H,W,k) PCA-reduced deep features."""
        deep = self._deep(image)
        flat = deep.reshape(-1, deep.shape[-1])
        if self.components_ is None:
            mean = flat.mean(0)
            _, _, vt = np.linalg.svd(flat - mean, full_matrices=False)
            comps = vt[: self.k]
        else:
            mean, comps = self.mean_, self.components_
        return ((flat - mean) @ comps.T).reshape(deep.shape[0], deep.shape[1], -1)
