"""Small reference training loops (CE and SupCon with a scheduled temperature) and the OSR evaluator.

The data order and the augmentation noise of one run come from a single ``torch.Generator`` seeded
with ``seed``, so two runs that differ only in the schedule see the same batches and the same noise.
"""
from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .losses import SupConLoss, TemperatureScheduledLoss
from .metrics import osr_report
from .scoring import KNNScorer, max_logit

__all__ = ["FitHistory", "fit_ce", "fit_supcon", "predict", "evaluate_ce", "evaluate_knn", "jitter_augment",
           "crop_flip_augment"]

Augment = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


@dataclass
class FitHistory:
    """What a training loop recorded, one entry per epoch."""

    temperatures: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)


def jitter_augment(sigma: float) -> Augment:
    """Gaussian input jitter ``x + sigma * N(0, I)`` with the noise drawn from the run's generator."""

    def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return x + sigma * torch.randn(x.shape, generator=gen).to(x.device)

    return augment


def crop_flip_augment(pad: int = 4) -> Augment:
    """Random crops of images ``(B, C, H, W)`` padded by ``pad`` (reflect) and random horizontal flips,
    one draw per image from the run's generator."""

    def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        b, _, h, w = x.shape
        padded = F.pad(x, (pad, pad, pad, pad), mode="reflect")
        dy, dx = (torch.randint(0, 2 * pad + 1, (b,), generator=gen).tolist() for _ in range(2))
        flip = torch.rand(b, generator=gen).lt(0.5).tolist()
        crops = [padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(b)]
        return torch.stack([c.flip(-1) if f else c for c, f in zip(crops, flip)])

    return augment


def _as_tensors(X, y, device) -> tuple[torch.Tensor, torch.Tensor]:
    X = torch.as_tensor(np.asarray(X) if not isinstance(X, torch.Tensor) else X, dtype=torch.float32)
    y = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y, dtype=torch.long)
    if X.dim() < 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
        raise ValueError(f"X, y: expected X (n, ...) and y (n,) with n > 0, got {tuple(X.shape)} and {tuple(y.shape)}")
    return X.to(device), y.to(device)


def _check_common(epochs, lr, batch_size, seed) -> None:
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
            raise ValueError(f"{name}: expected an integer > 0, got {value!r}")
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not lr > 0:
        raise ValueError(f"lr: expected a number > 0, got {lr!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")


def _lr_scheduler(optimizer, epochs: int, restarts: int | None):
    """Cosine annealing with ``restarts`` warm restarts (``restarts + 1`` equal cycles), or a constant lr."""
    if restarts is None:
        return None
    cycle = max(1, math.ceil(epochs / (restarts + 1)))
    return torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=cycle)


def _run_epochs(model, params, loss_fn: TemperatureScheduledLoss, batch_loss, X, y, epochs, lr, momentum,
                weight_decay, batch_size, seed, restarts, progress) -> FitHistory:
    gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    sched = _lr_scheduler(opt, epochs, restarts)
    history = FitHistory()
    n = X.shape[0]
    model.train()
    for _ in range(epochs) if progress is None else progress(range(epochs)):
        start, total = time.perf_counter(), 0.0
        history.temperatures.append(loss_fn.temperature)
        order = torch.randperm(n, generator=gen).to(X.device)
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            loss = batch_loss(X[idx], y[idx], gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * idx.numel()
        if sched is not None:
            sched.step()
        loss_fn.step()
        history.losses.append(total / n)
        history.epoch_seconds.append(time.perf_counter() - start)
    model.eval()
    return history


def fit_ce(model: nn.Module, X, y, schedule, epochs: int, lr: float = 0.05, momentum: float = 0.9,
           weight_decay: float = 5e-4, batch_size: int = 64, jitter: float = 0.1, seed: int = 0, start: int = 0,
           augment: Augment | None = None, restarts: int | None = None,
           progress: Callable | None = None) -> FitHistory:
    """Trains ``model`` in place with ``CE(model(x) / tau_t, y)``, ``tau_t = schedule(start + epoch)``.

    Args:
        model: maps ``(B, ...)`` inputs to ``(B, n_classes)`` logits; trained on the device of its parameters.
        X: ``(n, ...)`` inputs; y: ``(n,)`` labels in ``0..n_classes-1``.
        schedule: a temperature schedule (callable ``tau(t)``).
        epochs: number of epochs; with ``start=0`` the epochs are ``t = 0..epochs-1``.
        lr, momentum, weight_decay, batch_size: SGD settings.
        jitter: sigma of the Gaussian input jitter (ignored when ``augment`` is given).
        seed: seeds the generator of the data order and of the augmentation noise.
        augment: ``augment(x, generator) -> x`` applied to each batch (e.g. random crops for images).
        restarts: cosine learning-rate annealing with this many warm restarts; ``None`` keeps ``lr`` constant.
        progress: wraps the range of epochs (a progress-bar function such as ``iclr26_shared.cli.progress``).

    Returns:
        The :class:`FitHistory` (temperature, mean loss and seconds of every epoch).
    """
    _check_common(epochs, lr, batch_size, seed)
    device = next(model.parameters()).device
    X, y = _as_tensors(X, y, device)
    augment = augment if augment is not None else jitter_augment(jitter)
    loss_fn = TemperatureScheduledLoss(nn.CrossEntropyLoss(), schedule, start=start)

    def batch_loss(xb, yb, gen):
        return loss_fn(model(augment(xb, gen)), yb)

    return _run_epochs(model, model.parameters(), loss_fn, batch_loss, X, y, epochs, lr, momentum, weight_decay,
                       batch_size, seed, restarts, progress)


def fit_supcon(model: nn.Module, X, y, schedule, epochs: int, lr: float = 0.05, momentum: float = 0.9,
               weight_decay: float = 5e-4, batch_size: int = 64, jitter: float = 0.1, seed: int = 0, start: int = 0,
               base_temperature: float = 0.07, augment: Augment | None = None,
               restarts: int | None = None, progress: Callable | None = None) -> FitHistory:
    """Trains ``model`` (inputs -> ``(B, D)`` embeddings) in place with SupCon on two augmented views.

    The embeddings are L2-normalised before the loss; the SupCon temperature follows ``schedule``.
    Other arguments as :func:`fit_ce`.
    """
    _check_common(epochs, lr, batch_size, seed)
    device = next(model.parameters()).device
    X, y = _as_tensors(X, y, device)
    augment = augment if augment is not None else jitter_augment(jitter)
    loss_fn = TemperatureScheduledLoss(SupConLoss(base_temperature=base_temperature), schedule, start=start)

    def batch_loss(xb, yb, gen):
        views = torch.stack([F.normalize(model(augment(xb, gen)), dim=1) for _ in range(2)], dim=1)
        return loss_fn(views, yb)

    return _run_epochs(model, model.parameters(), loss_fn, batch_loss, X, y, epochs, lr, momentum, weight_decay,
                       batch_size, seed, restarts, progress)


@torch.no_grad()
def predict(model: nn.Module, X, batch_size: int = 1024) -> torch.Tensor:
    """``model(X)`` in evaluation mode, batched, on the model's device; returns a CPU tensor."""
    device = next(model.parameters()).device
    X = torch.as_tensor(np.asarray(X) if not isinstance(X, torch.Tensor) else X, dtype=torch.float32)
    model.eval()
    return torch.cat([model(X[i:i + batch_size].to(device)).cpu() for i in range(0, X.shape[0], batch_size)])


def evaluate_ce(model: nn.Module, task: dict, score: Callable = max_logit) -> dict[str, float]:
    """The OSR protocol for a classifier: ``{"accuracy", "auroc", "oscr"}`` on ``task``'s test set.

    ``score`` maps logits ``(n, C)`` to ``(n,)`` (default: maximum logit); predictions are the argmax.
    """
    logits_k = predict(model, task["Xte_known"]).double()
    logits_u = predict(model, task["Xte_unknown"]).double()
    return osr_report(score(logits_k).numpy(), score(logits_u).numpy(), logits_k.argmax(1).numpy(),
                      np.asarray(task["yte_known"]))


def evaluate_knn(model: nn.Module, task: dict, k: int = 100, method: str = "dist") -> dict[str, float]:
    """The OSR protocol for an embedding model: kNN scoring on L2-normalised embeddings fitted on the train set."""
    def embed(X):
        return F.normalize(predict(model, X).double(), dim=1).numpy()

    scorer = KNNScorer(k=min(k, len(task["ytr"])), method=method).fit(embed(task["Xtr"]), task["ytr"])
    s_k, p_k = scorer.score(embed(task["Xte_known"]))
    s_u, _ = scorer.score(embed(task["Xte_unknown"]))
    return osr_report(s_k, s_u, p_k, np.asarray(task["yte_known"]))
