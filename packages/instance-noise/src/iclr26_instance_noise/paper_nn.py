"""The GPU protocol (``paper`` scale): a ResNet-18 on CIFAR-10 animals vs vehicles.

Data come from the local folder (``ICLR26_DATA``; nothing downloads). Noise: ``"region"`` and
``"margin"`` at mean rates 0.2 and 0.4 on the standardised pixels. ``rho^`` comes from a 2-fold
cross-fitted, early-stopped copy of the same network trained on the noisy labels. Arms: noisy CE,
the constant-rate backward correction (mean ``rho^``), forward and backward with ``rho^``, and
forward with the oracle ``rho`` as a reference. All evaluated on the clean CIFAR-10 test labels.
"""
from __future__ import annotations

import numpy as np
import torch
from iclr26_shared.datasets import load
from torch import nn

from .estimate import rho_from_posterior
from .metrics import clean_accuracy, clean_log_loss, rho_mae
from .noise import instance_only_flip
from .training import train_corrected

VEHICLES = (0, 1, 8, 9)  # airplane, automobile, ship, truck; label 1
RATES = (0.2, 0.4)
KINDS = ("region", "margin")
EPOCHS, LR, WEIGHT_DECAY, BATCH = 30, 1e-3, 5e-4, 256


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and an identity (or 1x1 projection) shortcut."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
            nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out))
        self.shortcut = nn.Identity() if stride == 1 and c_in == c_out else nn.Sequential(
            nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 for 32x32 inputs (3x3 stem, no max-pool), one output logit: ``(B, 3, 32, 32) -> (B, 1)``."""

    def __init__(self):
        super().__init__()
        layers, c_in = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True)], 64
        for c_out, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)]
            c_in = c_out
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(512, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def augment(x: torch.Tensor) -> torch.Tensor:
    """Random horizontal flip and random 32x32 crop of the 4-pixel zero-padded batch ``(B, 3, 32, 32)``."""
    flip = torch.rand(len(x), device=x.device) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    padded = nn.functional.pad(x, (4, 4, 4, 4))
    i, j = np.random.randint(0, 9, size=2)
    return padded[:, :, i:i + 32, j:j + 32]


def _binary_cifar(split: str) -> tuple[np.ndarray, np.ndarray]:
    ds = load("cifar10", split=split)
    X = ds.X.astype(np.float32).transpose(0, 3, 1, 2) / 255.0
    mean, sd = X.mean(axis=(0, 2, 3), keepdims=True), X.std(axis=(0, 2, 3), keepdims=True)
    return (X - mean) / sd, np.isin(ds.y, VEHICLES).astype(np.int64)


def _fit_predict(Z, y, rho, mode, rows, test_Z, dev, seed) -> np.ndarray:
    """Trains a fresh ResNet-18 on ``rows`` (10% of them held out for early stopping); P(y=1) on ``test_Z``."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(rows)
    n_val = len(rows) // 10
    net, _ = train_corrected(ResNet18().to(dev), Z, y, rho, mode, rows[n_val:], rows[:n_val], EPOCHS, LR,
                             WEIGHT_DECAY, BATCH, seed, augment)
    with torch.no_grad():
        logits = torch.cat([net(b).reshape(-1) for b in test_Z.split(1024)])
    return torch.sigmoid(logits).double().cpu().numpy()


def run_cifar_protocol(device: str, seed: int) -> tuple[list[dict], dict[str, float]]:
    """Runs every (noise kind, rate, arm); returns rows and metrics (no claims: there are no paper numbers)."""
    dev = torch.device(device)
    X, y_clean = _binary_cifar("train")
    X_test, y_test = _binary_cifar("test")
    Z, Z_test = torch.as_tensor(X, device=dev), torch.as_tensor(X_test, device=dev)
    rows, metrics = [], {}
    n = len(y_clean)
    for kind in KINDS:
        for rate in RATES:
            y_noisy, rho = instance_only_flip(X.reshape(n, -1), y_clean, kind=kind, rate=rate, random_state=seed)
            yt = torch.as_tensor(y_noisy, dtype=torch.float32, device=dev)
            zeros = torch.zeros(n, device=dev)
            halves = np.array_split(np.random.default_rng(seed).permutation(n), 2)
            p_oof = np.empty(n)
            for k, (fit_rows, held) in enumerate((halves, halves[::-1])):
                p_oof[held] = _fit_predict(Z, yt, zeros, "backward", fit_rows, Z[held], dev, seed + k)
            rho_hat = np.minimum(rho_from_posterior(p_oof), 0.45)
            arms = {"noisy": ("backward", np.zeros(n)), "constant": ("backward", np.full(n, rho_hat.mean())),
                    "forward-rho_hat": ("forward", rho_hat), "backward-rho_hat": ("backward", rho_hat),
                    "forward-oracle": ("forward", rho)}
            tag = f"cifar10_{kind}_{rate}"
            metrics[f"{tag}_rho_hat_mae"] = rho_mae(rho_hat, rho)
            for arm, (mode, r) in arms.items():
                rt = torch.as_tensor(r, dtype=torch.float32, device=dev)
                p = _fit_predict(Z, yt, rt, mode, np.arange(n), Z_test, dev, seed)
                row = {"method": f"resnet18/{arm}", "dataset": tag,
                       "accuracy": clean_accuracy(y_test, (p > 0.5).astype(int)), "log_loss": clean_log_loss(y_test, p)}
                rows.append(row)
                metrics[f"{tag}_{arm}_accuracy"] = row["accuracy"]
    return rows, metrics
