"""Data-parallel training under ``torchrun`` (torch.distributed + DistributedDataParallel), in one small helper.

A training loop written for one process runs unchanged on one CPU/GPU; started by ``torchrun --nproc-per-node N``
it becomes data-parallel::

    with DistributedContext(device) as dist:
        model = dist.wrap(model)                        # DDP when world_size > 1
        loader = DataLoader(ds, batch_size=global_batch // dist.world_size,
                            sampler=dist.sampler(ds, shuffle=True, seed=seed))
        ...
        dist.save(state, path)                          # rank 0 only, atomically

The process group comes from the environment ``torchrun`` sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``/``MASTER_PORT``): NCCL on CUDA (one GPU per local rank), gloo on the CPU. Each rank sees
``global_batch / world_size`` samples per step; DDP averages gradients, so a step equals the single-process step
on the global batch.
"""
from __future__ import annotations

import os
import pathlib
from typing import Any


def world_from_env() -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from torchrun's environment; ``(0, 1, 0)`` outside torchrun."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


class DistributedContext:
    """The process group of this run (a no-op for a single process); see the module docstring.

    Args:
        device: ``"auto"``, ``"cpu"``, ``"cuda"``; with CUDA each local rank takes GPU ``LOCAL_RANK``.

    Attributes:
        rank, world_size, local_rank: this process's place in the group.
        device: the ``torch.device`` this rank computes on.
    """

    def __init__(self, device: Any = "auto"):
        import torch

        from .device import resolve_device

        self.rank, self.world_size, self.local_rank = world_from_env()
        dev = resolve_device(device)
        if dev.type == "cuda" and self.world_size > 1:
            dev = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(dev)
        self.device = dev
        self._owns_group = False

    @property
    def is_main(self) -> bool:
        """True on rank 0, the only rank that writes files or prints summaries."""
        return self.rank == 0

    def __enter__(self) -> DistributedContext:
        import torch.distributed as td

        if self.world_size > 1 and not td.is_initialized():
            td.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
            self._owns_group = True
        return self

    def __exit__(self, *exc) -> None:
        import torch.distributed as td

        if self._owns_group and td.is_initialized():
            td.destroy_process_group()

    def wrap(self, model):
        """``model`` on this rank's device, inside ``DistributedDataParallel`` when the world has several ranks."""
        model = model.to(self.device)
        if self.world_size == 1:
            return model
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids)

    def sampler(self, dataset, *, shuffle: bool = True, seed: int = 0):
        """A ``DistributedSampler`` giving this rank its shard (``None`` for one process: use the loader's own)."""
        if self.world_size == 1:
            return None
        from torch.utils.data.distributed import DistributedSampler

        return DistributedSampler(dataset, num_replicas=self.world_size, rank=self.rank, shuffle=shuffle, seed=seed)

    def mean(self, value: float) -> float:
        """The mean of a float over all ranks (the value itself for one process)."""
        if self.world_size == 1:
            return float(value)
        import torch
        import torch.distributed as td

        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        td.all_reduce(t)
        return float(t.item()) / self.world_size

    def save(self, obj: Any, path: str | os.PathLike) -> pathlib.Path | None:
        """``torch.save(obj)`` to ``path`` atomically on rank 0 only; every rank waits. Returns the path on rank 0."""
        import torch

        from .bench import atomic_path

        target = None
        if self.is_main:
            with atomic_path(path) as tmp:
                torch.save(obj, tmp)
            target = pathlib.Path(path)
        self.barrier()
        return target

    def barrier(self) -> None:
        """Waits for every rank (a no-op for one process)."""
        import torch.distributed as td

        if self.world_size > 1 and td.is_initialized():
            td.barrier()


def unwrap(model):
    """The module inside ``DistributedDataParallel`` (``model`` itself otherwise), e.g. for ``state_dict()``."""
    return getattr(model, "module", model)
