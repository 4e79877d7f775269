"""Cost of one training step (forward + MSE + backward + Adam) of COSMO-RC against SIREN.

Spec "Performance": at 65 536 coordinates (256×256×3), W = 256, L = 3, a COSMO-RC step should cost at most
6× a SIREN step on CPU and fit in 2 GiB. Time is the median over interleaved steps of both models in one
fresh process (so machine load hits both alike); memory is the peak resident set (``getrusage`` maxrss) of
a fresh process per model, minus its resident set just before the model and data were built.

Run ``python -m iclr26_cosmo_inr.perf --coords 65536`` (prints JSON).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import time

import torch

from .data import get_coords
from .models import make_model


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def _setup(name: str, n_coords: int, width: int, layers: int, outputs: int, kernel: str, seed: int):
    """(one-step closure, model) for ``name`` on ``n_coords`` random-target coordinates."""
    torch.manual_seed(seed)
    side = int(round(n_coords**0.5))
    coords = get_coords(side, n_coords // side)
    values = torch.rand(len(coords), outputs)
    kwargs = {"prior": "none", "kernel": kernel} if name == "cosmo_rc" else {}
    model = make_model(name, 2, outputs, hidden_features=width, hidden_layers=layers, **kwargs)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)

    def step() -> float:
        start = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(coords), values)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        return time.perf_counter() - start

    return step


def _time_worker(n_coords, width, layers, outputs, kernel, steps, threads) -> dict:
    torch.set_num_threads(threads)
    runs = {name: _setup(name, n_coords, width, layers, outputs, kernel, 0) for name in ("siren", "cosmo_rc")}
    for step in runs.values():  # warm-up (allocator; compilation for kernel="compiled")
        step()
    times = {name: [] for name in runs}
    for _ in range(steps):
        for name, step in runs.items():
            times[name].append(step())
    return {name: statistics.median(t) for name, t in times.items()}


def _memory_worker(name, n_coords, width, layers, outputs, kernel, threads) -> int:
    torch.set_num_threads(threads)
    before = _rss_bytes()
    step = _setup(name, n_coords, width, layers, outputs, kernel, 0)
    step()
    step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before


def _fresh(fn, *args):
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def step_cost(n_coords: int = 65536, width: int = 256, layers: int = 3, outputs: int = 3, kernel: str = "fused",
              steps: int = 3, threads: int = 1) -> dict[str, float]:
    """Seconds per step of SIREN and COSMO-RC (median of ``steps`` interleaved steps), their ratio, and the
    peak extra memory of each (bytes), each measured in fresh processes.

    Raises:
        ValueError: a size below 1.
    """
    for label, value in (("n_coords", n_coords), ("width", width), ("steps", steps), ("threads", threads)):
        if int(value) != value or value < 1:
            raise ValueError(f"{label}: expected an integer >= 1, got {value!r}")
    seconds = _fresh(_time_worker, n_coords, width, layers, outputs, kernel, steps, threads)
    memory = {name: _fresh(_memory_worker, name, n_coords, width, layers, outputs, kernel, threads)
              for name in ("siren", "cosmo_rc")}
    return {"n_coords": n_coords, "width": width, "kernel": kernel, "siren_step_s": seconds["siren"],
            "cosmo_step_s": seconds["cosmo_rc"], "step_ratio": seconds["cosmo_rc"] / seconds["siren"],
            "siren_peak_extra_bytes": memory["siren"], "cosmo_peak_extra_bytes": memory["cosmo_rc"]}


def main(argv=None) -> None:
    """``python -m iclr26_cosmo_inr.perf``: prints ``step_cost`` as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coords", type=int, default=65536)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--kernel", default="fused", choices=("fused", "compiled", "reference"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    print(json.dumps(step_cost(args.coords, args.width, kernel=args.kernel, steps=args.steps,
                               threads=args.threads), indent=1))


if __name__ == "__main__":
    main()
