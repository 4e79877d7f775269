"""A plain regression training loop shared by the experiments: one net, a fixed step order.

Every net of an experiment is trained on the same sequence of minibatch indices (the
"identical mini-batch order" of the paper) with the same optimiser and cosine-annealed
learning rate, so that the only difference between runs is the net (or the data weights).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

OPTIMIZERS = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
    "rprop": torch.optim.Rprop,
    "adamax": torch.optim.Adamax,
}


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """One of ``OPTIMIZERS`` with learning rate ``lr`` and otherwise PyTorch's defaults."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer: expected one of {sorted(OPTIMIZERS)}, got {name!r}")
    if not float(lr) > 0:
        raise ValueError(f"lr: expected a positive learning rate, got {lr!r}")
    return OPTIMIZERS[name](params, lr=float(lr))


def minibatch_order(n: int, batch_size: int, epochs: int, generator: torch.Generator) -> list[torch.Tensor]:
    """Index tensors of one shuffled pass per epoch, cut into batches of ``batch_size`` (last one kept)."""
    steps = []
    for _ in range(epochs):
        perm = torch.randperm(n, generator=generator)
        steps.extend(perm.split(batch_size))
    return steps


@torch.no_grad()
def mse(net: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Mean squared error of ``net(X)[:, 0]`` against ``y`` (shape ``(n,)``)."""
    return float(((net(X)[:, 0] - y) ** 2).mean())


def fit_regression(net: nn.Module, X: torch.Tensor, y: torch.Tensor, X_test: torch.Tensor, y_test: torch.Tensor,
                   steps: Sequence[torch.Tensor | None], optimizer: str, lr: float, log_at: set[int],
                   sample_weight: torch.Tensor | None = None) -> list[tuple[int, float]]:
    """Trains ``net`` in place on the squared loss; returns ``[(step, test MSE), ...]``.

    Args:
        net: a module mapping ``(n, in)`` to ``(n, 1)``, on the device of the tensors.
        X, y: training inputs ``(n, in)`` and targets ``(n,)``.
        X_test, y_test: test inputs and (clean) targets.
        steps: per step, the minibatch indices, or ``None`` for the full batch.
        optimizer, lr: see ``make_optimizer``; the learning rate follows a cosine annealing over ``len(steps)``.
        log_at: the step numbers (0 = before training) at which the test MSE is recorded.
        sample_weight: optional per-example weights ``(n,)``: the loss is ``sum w l / sum w`` over the batch.
    """
    opt = make_optimizer(optimizer, net.parameters(), lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, len(steps)))
    curve = [(0, mse(net, X_test, y_test))] if 0 in log_at else []
    for t, idx in enumerate(steps, start=1):
        xb, yb = (X, y) if idx is None else (X[idx], y[idx])
        err = (net(xb)[:, 0] - yb) ** 2
        if sample_weight is None:
            loss = err.mean()
        else:
            wb = sample_weight if idx is None else sample_weight[idx]
            loss = (wb * err).sum() / wb.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if t in log_at:
            curve.append((t, mse(net, X_test, y_test)))
    return curve
