"""Reproducible runs: one call seeds python, numpy and (when installed) torch.

Same seed, same device, same library versions: identical numbers.
"""
from __future__ import annotations

import os
import random
import sys

import numpy as np


def seed_everything(seed: int, deterministic: bool = False) -> np.random.Generator:
    """Seeds ``random``, numpy's global state and torch (CPU and every CUDA device).

    torch is seeded when it has been imported, which every torch-using package has
    done by the time it calls this; a numpy-only caller never pays torch's import.

    Args:
        seed: a non-negative integer below 2**32.
        deterministic: also switch torch to deterministic kernels (see ``set_deterministic``).

    Returns:
        ``numpy.random.default_rng(seed)``, the generator code should draw from.

    Raises:
        TypeError, ValueError: ``seed`` is not an integer in [0, 2**32).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed: expected an integer, got {type(seed).__name__}")
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed: expected 0 <= seed < 2**32, got {seed}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)  # also seeds every CUDA device
    if deterministic:
        set_deterministic(True)
    return np.random.default_rng(seed)


def set_deterministic(enabled: bool = True) -> None:
    """Asks torch for deterministic kernels (slower on CUDA); a no-op when torch is not imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(enabled, warn_only=True)
    torch.backends.cudnn.deterministic = enabled
    torch.backends.cudnn.benchmark = not enabled

