"""CPU/CUDA device resolution and moving data onto a device.

torch is imported inside the functions, so importing this module costs nothing
for numpy-only packages.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any


def _torch():
    try:
        import torch
    except ImportError as err:  # pragma: no cover - exercised only without torch
        raise ImportError("this function needs torch: pip install torch") from err
    return torch


def resolve_device(device: Any = "auto"):
    """Turns ``"auto" | "cpu" | "cuda" | "cuda:N"`` (or a ``torch.device``) into a ``torch.device``.

    ``"auto"`` picks ``cuda`` when CUDA is available and the CPU otherwise.

    Raises:
        ValueError: ``device`` is not one of the accepted spellings.
        RuntimeError: CUDA was asked for but is not available, or the index is out of range.
    """
    torch = _torch()
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise TypeError(f"device: expected a string such as 'auto', 'cpu' or 'cuda:0', got {type(device).__name__}")
    spec = device.strip().lower()
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if spec == "cpu":
        return torch.device("cpu")
    if spec == "cuda" or spec.startswith("cuda:"):
        index = spec.partition(":")[2]
        if spec != "cuda" and not index.isdigit():
            raise ValueError(f"device: expected 'cuda:N' with an integer N, got {device!r}")
        if not torch.cuda.is_available():
            raise RuntimeError(f"device: {device!r} was asked for but CUDA is not available here; use 'cpu' or 'auto'")
        if index and int(index) >= torch.cuda.device_count():
            count = torch.cuda.device_count()
            raise RuntimeError(f"device: {device!r} asked for, but only {count} CUDA device(s) exist")
        return torch.device(spec)
    raise ValueError(f"device: expected 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def device_name(device: Any = "auto") -> str:
    """One line describing the device for logs and results, e.g. ``"cuda:0 (NVIDIA H200)"`` or ``"cpu (2 threads)"``."""
    torch = _torch()
    dev = resolve_device(device)
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    return f"cpu ({torch.get_num_threads()} threads)"


def to_device(obj: Any, device: Any):
    """Moves a tensor, a module, or a (nested) dict/list/tuple of them onto ``device``.

    Anything that has no ``.to`` (numbers, strings, numpy arrays) is returned as is.
    """
    dev = resolve_device(device)
    if isinstance(obj, Mapping):
        return type(obj)((k, to_device(v, dev)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        moved = [to_device(v, dev) for v in obj]
        return type(obj)(*moved) if hasattr(obj, "_fields") else type(obj)(moved)
    to = getattr(obj, "to", None)
    return to(dev) if callable(to) else obj


def cpu_count() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def set_threads(n: int | None = None) -> int:
    """Sizes the CPU thread pools: torch's intra-op pool (when torch is imported) and BLAS/OpenMP.

    Args:
        n: threads to use; ``None`` uses every core (``cpu_count()``).

    Returns:
        The number of threads now in use.

    Raises:
        ValueError: ``n`` is not a positive integer.
    """
    if n is None:
        n = cpu_count()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"threads: expected a positive integer, got {n!r}")
    from threadpoolctl import threadpool_limits

    threadpool_limits(n)  # applies to the BLAS/OpenMP libraries loaded so far, until changed again
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def worker_budget(wanted: int | None = None) -> int:
    """How many worker processes a benchmark may start: ``wanted`` (``None`` or ``< 1``: as many as allowed)
    capped at the CPU threads its caller gave it (:func:`current_threads`, i.e. ``--threads``), at least 1."""
    budget = current_threads()
    return budget if wanted is None or wanted < 1 else max(1, min(int(wanted), budget))


def current_threads() -> int:
    """The CPU threads in use now: torch's intra-op pool when torch is imported, else the BLAS pools'."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return int(torch.get_num_threads())
    from threadpoolctl import threadpool_info

    return max((int(i["num_threads"]) for i in threadpool_info()), default=1)
