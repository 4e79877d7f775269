"""Runs registered benchmarks, in parallel through joblib, each writing its own JSON result."""
from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator

from iclr26_shared.bench import Benchmark, Result, discover, run_and_save, select
from joblib import Parallel, delayed


def _failing(error: Exception) -> Callable:
    def func(scale, device, seed, out_dir):
        raise RuntimeError(f"the benchmark could not be loaded: {error!r}") from error

    return func


def run_one(name: str, scale: str, device: str, seed: int, out_dir: str, force: bool) -> dict:
    """Loads benchmark ``name`` from its entry point and runs it (in a worker process).

    Returns:
        ``{"result": Result.to_dict(), "path": str, "skipped": bool}``. A benchmark that
        cannot be imported is recorded as failed, like one that raises.
    """
    ep = discover()[name]
    try:
        bench = ep.load()
        if not isinstance(bench, Benchmark):
            raise TypeError(f"entry point {ep.value!r} is a {type(bench).__name__}, expected a Benchmark")
    except Exception as err:  # noqa: BLE001 - recorded in the result, the others go on
        package = ep.dist.name if ep.dist is not None else ep.value.split(".")[0]
        bench = Benchmark(name=name, paper="(not loaded)", package=package, func=_failing(err))
    result, path, skipped = run_and_save(bench, scale, device, seed, out_dir, force)
    return {"result": result.to_dict(), "path": str(path), "skipped": skipped}


def run_benchmarks(names: list[str] | None = None, scale: str = "quick", device: str = "auto", seed: int = 0,
                   out_dir: str | pathlib.Path = "results", jobs: int = 1,
                   force: bool = False) -> Iterator[tuple[Result, pathlib.Path, bool]]:
    """Runs the selected benchmarks and yields ``(result, path, skipped)`` as each one finishes.

    Args:
        names: benchmark names or package slugs (a slug selects all its benchmarks); ``None``: all.
        jobs: parallel worker processes (joblib; ``1`` runs in this process).

    Raises:
        ValueError: a name matches no registered benchmark.
    """
    chosen = select(names, discover())
    pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
    tasks = (delayed(run_one)(n, scale, device, seed, str(out_dir), force) for n in chosen)
    for item in Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks):
        yield Result.from_dict(item["result"]), pathlib.Path(item["path"]), item["skipped"]
