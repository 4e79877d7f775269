"""One way to fan work out: joblib, on local processes or on a cluster through an existing engine.

``parallel_map(fn, items, backend=..., jobs=..., address=...)`` yields ``fn(item)`` as each finishes, in
completion order. ``backend``: ``"local"`` (joblib's loky processes; ``jobs=1`` runs in this process),
``"dask"`` (a ``dask.distributed`` cluster through joblib's dask backend) or ``"ray"`` (Ray's joblib backend).
The engines are optional: a backend that is not installed is a ``ValueError`` saying what to install.

``fan_out(tasks, device=...)`` runs a benchmark's independent jobs (trainings per seed and model) in local worker
processes within the caller's ``--threads``, one thread each, and returns their results by key.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any

from .device import current_threads, set_threads, worker_budget

BACKENDS = ("local", "dask", "ray")


@contextlib.contextmanager
def engine(backend: str = "local", jobs: int = 1, address: str | None = None, extra: str = "iclr26-shared"):
    """joblib's configuration for ``backend``; joins the cluster at ``address`` (default: start a local one).

    ``extra`` names the distribution whose ``[dask]``/``[ray]`` extra installs the engine, for the error message.
    """
    from joblib import parallel_config

    if backend == "local":
        with parallel_config(backend="loky", n_jobs=jobs):
            yield
    elif backend == "dask":
        try:
            from dask.distributed import Client
        except ImportError:
            raise ValueError(f"backend: expected an installed engine (pip install '{extra}[dask]'), "
                             "got dask, which is not installed") from None
        with Client(address) if address else Client(processes=True, n_workers=jobs, threads_per_worker=1) as client:
            # a run seeds the process-wide RNGs (numpy, torch), so two runs sharing a worker process would race:
            # one thread per process (in-process workers, inproc://host/pid/n, share their process)
            per_process: dict[str, int] = {}
            for worker, n in client.nthreads().items():
                key = worker.rsplit("/", 1)[0] if worker.startswith("inproc://") else worker
                per_process[key] = per_process.get(key, 0) + n
            threaded = {k: n for k, n in per_process.items() if n > 1}
            if threaded:
                raise ValueError(f"address: expected dask workers with one thread per process (dask worker "
                                 f"--nthreads 1), got {threaded} threads")
            with parallel_config(backend="dask", n_jobs=-1, wait_for_workers_timeout=60):
                yield
    elif backend == "ray":
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError:
            raise ValueError(f"backend: expected an installed engine (pip install '{extra}[ray]'), "
                             "got ray, which is not installed") from None
        register_ray()
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False)
        try:
            with parallel_config(backend="ray", n_jobs=-1):
                yield
        finally:
            ray.shutdown()
    else:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")


def parallel_map(fn: Callable[[Any], Any], items: Iterable[Any], *, backend: str = "local", jobs: int = 1,
                 address: str | None = None, extra: str = "iclr26-shared") -> Iterator[Any]:
    """Yields ``fn(item)`` for every item, in completion order, on ``backend`` (see the module docstring)."""
    if backend == "local" and jobs == 1:
        yield from map(fn, items)
        return
    from joblib import Parallel, delayed

    with engine(backend, jobs, address, extra):
        yield from Parallel(return_as="generator_unordered")(delayed(fn)(item) for item in items)


def _task(item: tuple) -> tuple:
    """``(key, fn(*args))`` on ``threads`` CPU threads; ``item = (key, threads, fn, args)``."""
    key, threads, fn, args = item
    set_threads(threads)
    return key, fn(*args)


def fan_out(tasks: Mapping[Hashable, tuple[Callable, tuple]], *, device: Any = "cpu",
            wanted: int | None = None) -> dict:
    """Runs every task ``key -> (fn, args)`` and returns ``key -> fn(*args)`` in the tasks' order.

    On the CPU the tasks run in ``min(worker_budget(wanted), len(tasks))`` local worker processes (so within the
    caller's ``--threads``), each on an equal share of the caller's threads; on a GPU, or with one thread, one
    after another in this process. Submit the costliest first: workers take tasks in order. A task that seeds
    itself gives the same result wherever it runs.
    """
    cpu = str(device).split(":")[0] == "cpu"
    workers = max(1, min(worker_budget(wanted), len(tasks))) if cpu else 1
    threads = max(1, current_threads() // workers)
    done = dict(parallel_map(_task, [(key, threads, fn, args) for key, (fn, args) in tasks.items()], jobs=workers))
    return {key: done[key] for key in tasks}
