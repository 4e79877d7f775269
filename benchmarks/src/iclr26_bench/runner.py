"""Runs registered benchmarks through ``iclr26_shared.parallel`` (joblib), each writing its own JSON result.

Locally joblib's process pool runs them (``backend="local"``); the same call goes to a cluster through an
existing engine: Dask (``dask.distributed`` via joblib's ``dask`` backend) or Ray (its joblib backend).
"""
from __future__ import annotations

import functools
import os
import pathlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from iclr26_shared.bench import Benchmark, Result, discover, run_and_save, select
from iclr26_shared.device import cpu_count
from iclr26_shared.parallel import BACKENDS, parallel_map

__all__ = ["BACKENDS", "Outcome", "run_benchmarks", "run_one"]


@dataclass
class Outcome:
    """One selected benchmark after the run: its result, or ``result is None`` when it was not started."""

    name: str
    result: Result | None
    path: pathlib.Path | None
    skipped: bool


def _failing(error: Exception) -> Callable:
    def func(scale, device, seed, out_dir):
        raise RuntimeError(f"the benchmark could not be loaded: {error!r}") from error

    return func


def _die_with(parent: int) -> None:
    """Exits this worker process as soon as ``parent`` (the runner) is gone; started once per worker."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    if os.getpid() != parent and not any(t.name == "iclr26-die-with-parent" for t in threading.enumerate()):
        threading.Thread(target=watch, name="iclr26-die-with-parent", daemon=True).start()


def run_one(name: str, scale: str, device: str, seed: int, out_dir: str, force: bool, threads: int | None,
            deadline: float | None = None, parent: int | None = None) -> dict:
    """Loads benchmark ``name`` from its entry point and runs it (in a worker process).

    Args:
        deadline: a ``time.time()`` after which the benchmark is not started (``{"not_run": True}``).
        parent: the runner's pid; a local worker exits when that process dies.

    Returns:
        ``{"result": Result.to_dict(), "path": str, "skipped": bool}``. A benchmark that
        cannot be imported is recorded as failed, like one that raises.
    """
    if parent is not None:
        _die_with(parent)
    if deadline is not None and time.time() > deadline:
        return {"name": name, "not_run": True}
    ep = discover()[name]
    try:
        bench = ep.load()
        if not isinstance(bench, Benchmark):
            raise TypeError(f"entry point {ep.value!r} is a {type(bench).__name__}, expected a Benchmark")
    except Exception as err:  # noqa: BLE001 - recorded in the result, the others go on
        package = ep.dist.name if ep.dist is not None else ep.value.split(".")[0]
        bench = Benchmark(name=name, paper="(not loaded)", package=package, func=_failing(err))
    result, path, skipped = run_and_save(bench, scale, device, seed, out_dir, force, threads)
    return {"name": name, "result": result.to_dict(), "path": str(path), "skipped": skipped}


def run_benchmarks(names: list[str] | None = None, scale: str = "quick", device: str = "auto", seed: int = 0,
                   out_dir: str | pathlib.Path = "results", jobs: int = 1, force: bool = False,
                   threads: int | None = None, max_seconds: float | None = None, backend: str = "local",
                   address: str | None = None) -> Iterator[Outcome]:
    """Runs the selected benchmarks and yields an ``Outcome`` as each one finishes.

    Args:
        names: benchmark names or package slugs (a slug selects all its benchmarks); ``None``: all.
        jobs: parallel worker processes (``1`` runs in this process with the local backend).
        threads: CPU threads per benchmark (default: the cores divided among ``jobs``).
        max_seconds: no benchmark starts after this many seconds; those are yielded with ``result=None``.
        backend: ``"local"`` (joblib's processes), ``"dask"`` or ``"ray"``; ``address``: the cluster to join
            (default: a local cluster of ``jobs`` workers).

    Raises:
        ValueError: a name matches no registered benchmark, or the backend is unknown or not installed.
    """
    chosen = select(names, discover())
    pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
    if threads is None:
        threads = max(1, cpu_count() // jobs)
    deadline = None if max_seconds is None else time.time() + max_seconds
    parent = os.getpid() if backend == "local" else None
    if backend == "local" and jobs > 1:  # pools a worker loads later (scipy's OpenBLAS) start at this size too
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, str(threads))
    task = functools.partial(_run_named, args=(scale, device, seed, str(out_dir), force, threads, deadline, parent))
    for item in parallel_map(task, chosen, backend=backend, jobs=jobs, address=address, extra="iclr26-bench"):
        yield _outcome(item)


def _run_named(name: str, args: tuple) -> dict:
    return run_one(name, *args)


def _outcome(item: dict) -> Outcome:
    if item.get("not_run"):
        return Outcome(item["name"], None, None, False)
    return Outcome(item["name"], Result.from_dict(item["result"]), pathlib.Path(item["path"]), item["skipped"])
