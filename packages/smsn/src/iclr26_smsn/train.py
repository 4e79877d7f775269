"""Training with uniform modality dropout over the 15 subsets."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from iclr26_shared.distributed import DistributedContext

from .data import labels_to_classes, subset_masks
from .losses import SMSNLoss


@dataclass
class History:
    """Per-epoch mean of each loss term (``epochs``: list of dicts) and the number of optimisation steps."""

    epochs: list[dict[str, float]] = field(default_factory=list)
    steps: int = 0


def fit(model, train_set, *, epochs: int = 1, batch_size: int = 16, lr: float = 1e-3, weight_decay: float = 1e-4,
        modality_dropout: str = "uniform15", seed: int = 0, device=None, steps: int | None = None,
        loss: SMSNLoss | None = None, callback=None, dist: DistributedContext | None = None,
        progress=None) -> History:
    """Trains ``model`` with AdamW and a cosine learning-rate decay over the whole run.

    Args:
        model: ``SMSN`` or ``ParallelFusionNet``.
        train_set: indexable of ``(image (4, ...), BraTS label (...))`` (e.g. ``PhantomDataset``).
        epochs: passes over ``train_set`` (ignored when ``steps`` is given).
        batch_size, lr, weight_decay: optimiser settings.
        modality_dropout: ``"uniform15"`` (each sample draws one of the 15 subsets) or ``"none"``.
        seed: seeds the batch order, the subset draws and torch's generator.
        device: where to train (default: the model's device).
        steps: total optimisation steps (overrides ``epochs``).
        loss: the objective (default ``SMSNLoss()``).
        callback: called as ``callback(epoch, terms)`` after each epoch.
        progress: wraps the range of steps (a progress-bar function such as ``iclr26_shared.cli.progress``).
        dist: under ``torchrun``, the run's ``DistributedContext``: the model trains inside
            ``DistributedDataParallel`` on ``dist.device`` (``device`` is not used), each rank computes its
            contiguous shard of every global batch of ``batch_size``; the subset masks, modality orders and
            reparameterisation noise are drawn for the global batch on every rank alike, so a step equals
            the one-process step and the history holds the global means. Nothing is written.

    Returns:
        ``History``; the model is trained in place.

    Raises:
        ValueError: bad arguments.
    """
    if modality_dropout not in ("uniform15", "none"):
        raise ValueError(f"modality_dropout: expected 'uniform15' or 'none', got {modality_dropout!r}")
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise ValueError(f"steps: expected a positive integer, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr: expected > 0, got {lr!r}")
    n = len(train_set)
    if n == 0:
        raise ValueError("train_set: is empty")
    world, rank = (dist.world_size, dist.rank) if dist is not None else (1, 0)
    if world == 1:
        device = next(model.parameters()).device if device is None else torch.device(device)
    else:
        device = dist.device
    model.to(device).train()
    core = model
    if world > 1:
        model = dist.wrap(model)
    loss = loss or SMSNLoss()
    per_epoch = math.ceil(n / batch_size)
    total = steps if steps is not None else epochs * per_epoch
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    draws_gen = torch.Generator().manual_seed(seed)  # modality orders and latent noise of each global batch
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    subsets = torch.as_tensor(subset_masks())
    history = History()
    step, epoch = 0, 0
    ticks = iter(range(total) if progress is None else progress(range(total)))
    while step < total:
        order = rng.permutation(n)
        sums: dict[str, float] = {}
        count = 0
        for start in range(0, n, batch_size):
            if step >= total:
                break
            idx = order[start : start + batch_size]
            b = len(idx)
            if modality_dropout == "uniform15":
                mask = subsets[torch.as_tensor(rng.integers(0, 15, b))]
            else:
                mask = torch.ones(b, subsets.shape[1], dtype=torch.bool)
            draws = core.training_draws(mask, train_set[0][0].shape[1:], draws_gen)
            lo, hi = rank * b // world, (rank + 1) * b // world  # this rank's contiguous shard
            items = [train_set[int(i)] for i in idx[lo:hi]]
            x = torch.stack([it[0] for it in items]).to(device)
            y = labels_to_classes(torch.stack([torch.as_tensor(it[1]) for it in items])).to(device)
            value, terms = loss(model(x, mask[lo:hi].to(device), **{k: v[lo:hi].to(device) for k, v in draws.items()}),
                                y)
            opt.zero_grad(set_to_none=True)
            # DDP averages the ranks' gradients; weighting by the shard's share gives the global batch's mean
            (value * (world * (hi - lo) / b) if world > 1 else value).backward()
            opt.step()
            sched.step()
            step += 1
            next(ticks)
            count += 1
            for k, v in terms.items():
                sums[k] = sums.get(k, 0.0) + v * (hi - lo) / b
        epoch += 1
        if world > 1:  # each rank holds its shards' share of every step's mean
            sums = {k: dist.mean(v) * world for k, v in sums.items()}
        means = {k: v / count for k, v in sums.items()}
        history.epochs.append(means)
        if callback is not None:
            callback(epoch, means)
    history.steps = step
    core.eval()
    return history
