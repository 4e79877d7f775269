"""Batch norm over the global batch of a data-parallel step (``torch.nn.SyncBatchNorm`` runs on GPUs only).

Under ``torchrun`` each rank holds a shard of the global batch; plain ``nn.BatchNorm2d`` would normalise
with the shard's statistics, so N ranks would not train like one process on the global batch. Inside
``global_batch_norm(model)`` every ``nn.BatchNorm2d`` of ``model`` normalises with the mean and (biased)
variance of the whole global batch, gathered with autograd-aware all-reduces (the gradient flows back to
every rank's samples, as in ``SyncBatchNorm``), on any device and process-group backend (gloo included).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.distributed as td
from torch import Tensor, nn


class _AllReduceSum(torch.autograd.Function):
    """The sum over ranks of a tensor; its gradient is the sum over ranks of the output gradients."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        total = x.clone()
        td.all_reduce(total)
        return total

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        total = grad.clone()
        td.all_reduce(total)
        return total


def all_reduce(x: Tensor) -> Tensor:
    """``x`` summed over the ranks of the default process group, differentiably."""
    return _AllReduceSum.apply(x)


class GlobalBatchNorm2d(nn.BatchNorm2d):
    """``nn.BatchNorm2d`` whose training-mode statistics are those of all ranks' inputs ``[B_r, C, H, W]``."""

    def forward(self, x: Tensor) -> Tensor:
        if not (self.training and td.is_available() and td.is_initialized() and td.get_world_size() > 1):
            return super().forward(x)
        dims = (0, 2, 3)
        count = all_reduce(x.new_tensor([x.numel() // x.shape[1]]))
        mean = all_reduce(x.sum(dims)) / count
        centred = x - mean[None, :, None, None]
        var = all_reduce(centred.square().sum(dims)) / count
        y = centred * torch.rsqrt(var + self.eps)[None, :, None, None]
        if self.affine:
            y = y * self.weight[None, :, None, None] + self.bias[None, :, None, None]
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                factor = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
                n = float(count)
                self.running_mean.lerp_(mean.detach(), factor)
                self.running_var.lerp_(var.detach() * n / max(n - 1.0, 1.0), factor)
        return y


@contextlib.contextmanager
def global_batch_norm(model: nn.Module) -> Iterator[nn.Module]:
    """Makes every plain ``nn.BatchNorm2d`` of ``model`` a ``GlobalBatchNorm2d`` for the block (same parameters
    and buffers, same objects; a no-op outside a multi-rank process group), and restores them after."""
    norms = [m for m in model.modules() if type(m) is nn.BatchNorm2d]
    for m in norms:
        m.__class__ = GlobalBatchNorm2d
    try:
        yield model
    finally:
        for m in norms:
            m.__class__ = nn.BatchNorm2d
