"""Training loop shared by DiffSDA and the SeqVAE baseline: AdamW, linear warm-up then cosine decay."""
from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from .model import check_mask, check_sequences


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """Learning-rate factor: linear from 1/warmup to 1 over ``warmup`` steps, then cosine from 1 to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def train_model(model: nn.Module, x, *, steps: int, batch_size: int = 32, lr: float = 1e-3, warmup: int = 100,
                weight_decay: float = 1e-5, clip_grad: float | None = None, mask=None, seed: int = 0,
                callback: Callable[[int, nn.Module], None] | None = None, progress: Callable | None = None
                ) -> dict[str, list[float]]:
    """Minimises ``model.loss(batch, mask)`` for ``steps`` AdamW steps on random batches of sequences.

    Args:
        model: a ``DiffSDA`` or ``SeqVAE`` (anything with ``loss(x, mask=None)`` and ``device``).
        x: (N, V, *elem) training sequences; mask: optional 0/1 mask of x's shape.
        clip_grad: the gradient's global norm is clipped to this value before each step (the official
            DiffSDA training clips at 1.0), or None for no clipping.
        callback: called as ``callback(step, model)`` after steps 1..steps (e.g. checkpoint evaluations).
        progress: wraps the range of steps (a progress-bar function), or None.

    Returns:
        ``{"loss": [...], "seconds": [elapsed after each step]}``.

    Raises:
        ValueError: steps < 1, batch_size < 1, lr <= 0, clip_grad <= 0, or bad x / mask.
    """
    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
    if not lr > 0:
        raise ValueError(f"lr: expected a value > 0, got {lr!r}")
    if clip_grad is not None and not clip_grad > 0:
        raise ValueError(f"clip_grad: expected a value > 0 or None, got {clip_grad!r}")
    x = check_sequences(x, model.elem_shape)
    mask = check_mask(mask, x)
    if hasattr(model, "set_data_scale"):
        model.set_data_scale(x, mask)
    x = x.to(model.device)
    mask = None if mask is None else mask.to(model.device)
    gen = torch.Generator().manual_seed(int(seed))
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: warmup_cosine(i, steps, max(1, warmup)))
    history: dict[str, list[float]] = {"loss": [], "seconds": []}
    start = time.perf_counter()
    model.train()
    loop = range(1, steps + 1)
    for step in progress(loop) if progress is not None else loop:
        idx = torch.randint(0, x.shape[0], (min(batch_size, x.shape[0]),), generator=gen).to(x.device)
        loss = model.loss(x[idx], None if mask is None else mask[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip_grad is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip_grad)
        opt.step()
        sched.step()
        history["loss"].append(float(loss.detach()))
        history["seconds"].append(time.perf_counter() - start)
        if callback is not None:
            callback(step, model)
    model.eval()
    return history
