"""The GPU protocol (``paper`` scale): a ResNet-18 on CIFAR-10 animals vs vehicles (image) and a small
CNN on log-mel spectrograms of Speech Commands "no" vs "yes" (audio).

Data come from the local folder (``ICLR26_DATA``, or ``--data-root``; nothing downloads);
``check_paper_data`` names every missing folder before any training. Noise: ``"region"`` and
``"margin"`` at mean rates 0.2 and 0.4 on the standardised inputs. ``rho^`` comes from a 2-fold
cross-fitted, early-stopped copy of the same network trained on the noisy labels. Arms: noisy CE,
the constant-rate backward correction (mean ``rho^``), forward and backward with ``rho^``, and
forward with the oracle ``rho`` as a reference. All evaluated on clean test labels.
"""
from __future__ import annotations

import numpy as np
import torch
from iclr26_shared.datasets import load, stratified_split_indices
from torch import nn

from .data import speech_commands, speech_commands_folder
from .estimate import rho_from_posterior
from .metrics import clean_accuracy, clean_log_loss, rho_mae
from .noise import instance_only_flip
from .training import train_corrected

VEHICLES = (0, 1, 8, 9)  # airplane, automobile, ship, truck; label 1
SETTINGS = tuple((kind, rate) for kind in ("region", "margin") for rate in (0.2, 0.4))
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


class SpeechCNN(nn.Module):
    """Three 3x3 conv / batch-norm / ReLU / 2x2 max-pool stages of ``width``, ``2 width``, ``4 width``
    channels, global average pooling and one logit: ``(B, 1, n_mels, frames) -> (B, 1)``."""

    def __init__(self, width: int = 32):
        super().__init__()
        layers, c_in = [], 1
        for c_out in (width, 2 * width, 4 * width):
            layers += [nn.Conv2d(c_in, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
                       nn.MaxPool2d(2)]
            c_in = c_out
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(c_in, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def augment_crop_flip(x: torch.Tensor) -> torch.Tensor:
    """Random horizontal flip and random 32x32 crop of the 4-pixel zero-padded batch ``(B, 3, 32, 32)``."""
    flip = torch.rand(len(x), device=x.device) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    padded = nn.functional.pad(x, (4, 4, 4, 4))
    i, j = np.random.randint(0, 9, size=2)
    return padded[:, :, i:i + 32, j:j + 32]


def check_paper_data(root=None) -> None:
    """Raises one ``FileNotFoundError`` naming every local data set of the protocol that is missing."""
    missing = []
    for check in (lambda: load("cifar10", root=root, split="test"), lambda: speech_commands_folder(root)):
        try:
            check()
        except FileNotFoundError as err:
            missing.append(str(err))
    if missing:
        raise FileNotFoundError("paper scale needs local data (nothing downloads): " + " | ".join(missing))


def _standardise(X: np.ndarray, X_test: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays standardised per channel with the training mean and deviation over ``axes`` (a constant
    channel is only centred)."""
    mean, sd = X.mean(axis=axes, keepdims=True), X.std(axis=axes, keepdims=True)
    sd = np.where(sd > 0, sd, 1.0).astype(X.dtype)
    return (X - mean) / sd, (X_test - mean) / sd


def cifar_animals_vehicles(root=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CIFAR-10 train and test images ``(n, 3, 32, 32)`` float32, standardised; label 1 = vehicle."""
    train, test = load("cifar10", root=root, split="train"), load("cifar10", root=root, split="test")
    X, X_test = (ds.X.astype(np.float32).transpose(0, 3, 1, 2) / 255.0 for ds in (train, test))
    X, X_test = _standardise(X, X_test, (0, 2, 3))
    return X, np.isin(train.y, VEHICLES).astype(np.int64), X_test, np.isin(test.y, VEHICLES).astype(np.int64)


def speech_no_yes(root=None, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Speech Commands "no" (0) vs "yes" (1) log-mel spectrograms ``(n, 1, 40, frames)``, standardised.

    The test rows are those of ``testing_list.txt``; without it, a stratified 20 % split drawn with ``seed``.
    """
    X, y, is_test = speech_commands(root, ("no", "yes"))
    if not is_test.any():
        is_test = np.zeros(len(y), dtype=bool)
        is_test[stratified_split_indices(y, {"train": 0.8, "test": 0.2}, seed=seed)["test"]] = True
    X_train, X_test = _standardise(X[~is_test], X[is_test], (0, 1, 3))
    return X_train, y[~is_test], X_test, y[is_test]


def _fit_predict(make_net, augment, Z, y, rho, mode, rows, test_Z, epochs, seed) -> np.ndarray:
    """Trains a fresh ``make_net()`` on ``rows`` (10% of them held out for early stopping); P(y=1) on ``test_Z``."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(rows)
    n_val = max(1, len(rows) // 10)
    net, _ = train_corrected(make_net().to(Z.device), Z, y, rho, mode, rows[n_val:], rows[:n_val], epochs, LR,
                             WEIGHT_DECAY, BATCH, seed, augment)
    with torch.no_grad():
        logits = torch.cat([net(b).reshape(-1) for b in test_Z.split(1024)])
    return torch.sigmoid(logits).double().cpu().numpy()


def run_protocol(name: str, arrays, make_net, augment, device: str, seed: int, epochs: int = EPOCHS,
                 settings=SETTINGS) -> tuple[list[dict], dict[str, float]]:
    """Every (noise kind, mean rate) of ``settings`` and every arm on one data set.

    Args:
        name: tag of the rows and metrics. arrays: ``(X (n, ...), y_clean (n,), X_test, y_test)``.
        make_net: a fresh network with one output logit. augment: batch transform for training, or None.

    Returns:
        Rows and metrics; no claims (there are no paper numbers).
    """
    X, y_clean, X_test, y_test = arrays
    dev = torch.device(device)
    Z, Z_test = torch.as_tensor(X, device=dev), torch.as_tensor(X_test, device=dev)
    rows, metrics = [], {}
    n = len(y_clean)
    for kind, rate in settings:
        y_noisy, rho = instance_only_flip(X.reshape(n, -1), y_clean, kind=kind, rate=rate, random_state=seed)
        yt = torch.as_tensor(y_noisy, dtype=torch.float32, device=dev)
        zeros = torch.zeros(n, device=dev)
        halves = np.array_split(np.random.default_rng(seed).permutation(n), 2)
        p_oof = np.empty(n)
        for k, (fit_rows, held) in enumerate((halves, halves[::-1])):
            p_oof[held] = _fit_predict(make_net, augment, Z, yt, zeros, "backward", fit_rows, Z[held], epochs,
                                       seed + k)
        rho_hat = np.minimum(rho_from_posterior(p_oof), 0.45)
        arms = {"noisy": ("backward", np.zeros(n)), "constant": ("backward", np.full(n, rho_hat.mean())),
                "forward-rho_hat": ("forward", rho_hat), "backward-rho_hat": ("backward", rho_hat),
                "forward-oracle": ("forward", rho)}
        tag = f"{name}_{kind}_{rate}"
        metrics[f"{tag}_rho_hat_mae"] = rho_mae(rho_hat, rho)
        for arm, (mode, r) in arms.items():
            rt = torch.as_tensor(r, dtype=torch.float32, device=dev)
            p = _fit_predict(make_net, augment, Z, yt, rt, mode, np.arange(n), Z_test, epochs, seed)
            row = {"method": f"{name}/{arm}", "dataset": tag,
                   "accuracy": clean_accuracy(y_test, (p > 0.5).astype(int)), "log_loss": clean_log_loss(y_test, p)}
            rows.append(row)
            metrics[f"{tag}_{arm}_accuracy"] = row["accuracy"]
    return rows, metrics


def run_paper_protocol(device: str, seed: int) -> tuple[list[dict], dict[str, float]]:
    """The image (CIFAR-10, ResNet-18) and audio (Speech Commands, ``SpeechCNN``) protocols."""
    rows, metrics = [], {}
    for name, arrays, make_net, augment in (("cifar10", cifar_animals_vehicles(), ResNet18, augment_crop_flip),
                                            ("speech", speech_no_yes(seed=seed), SpeechCNN, None)):
        r, m = run_protocol(name, arrays, make_net, augment, device, seed)
        rows += r
        metrics.update(m)
    return rows, metrics
