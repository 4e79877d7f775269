"""Command-line pieces every iclr26 CLI shares (argparse, the one CLI library of the repository).

- ``common_options()``: a parent parser with ``--device --seed --out --data-root --quiet``.
- ``add_bench_command(subparsers, benchmarks)``: the ``bench`` subcommand (same options as
  ``iclr26-bench run``) and ``reproduce``, its alias for ``--scale full``.
- ``progress(iterable, ...)``: a progress bar (tqdm when installed) that is off with
  ``--quiet`` and when stderr is not a terminal.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence

from .bench import SCALES, Benchmark, format_claims, run_and_save
from .datasets import DATA_ENV


def common_options() -> argparse.ArgumentParser:
    """A parent parser (``parents=[common_options()]``) holding the options every CLI shares."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda or cuda:N (default: auto)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--out", default="results", help="folder for machine-readable outputs (default: results)")
    p.add_argument("--data-root", default=None,
                   help="folder holding local datasets (default: $ICLR26_DATA); nothing is downloaded")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def progress(iterable: Iterable, *, total: int | None = None, desc: str | None = None, quiet: bool = False):
    """Wraps ``iterable`` in a tqdm bar on stderr, unless ``quiet``, stderr is not a TTY, or tqdm is absent."""
    if quiet or not sys.stderr.isatty():
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False)


def add_bench_command(subparsers, benchmarks: Sequence[Benchmark]) -> None:
    """Adds ``bench`` and ``reproduce`` (= ``bench --scale full``) running ``benchmarks``.

    Each writes its ``Result`` JSON under ``--out`` (skipping a finished configuration unless
    ``--force``), prints every claim as PASS/FAIL, and exits non-zero only when a benchmark
    failed to run, or with ``--strict`` when a claim does not hold.
    """
    for name, default_scale, text in (("bench", "quick", "run this package's benchmark(s)"),
                                      ("reproduce", "full", "alias of: bench --scale full")):
        p = subparsers.add_parser(name, parents=[common_options()], help=text, description=text)
        p.add_argument("--scale", choices=SCALES, default=default_scale, help=f"(default: {default_scale})")
        p.add_argument("--only", nargs="*", default=None, metavar="NAME",
                       help=f"run only these of: {', '.join(b.name for b in benchmarks)}")
        p.add_argument("--force", action="store_true", help="recompute results already present in --out")
        p.add_argument("--strict", action="store_true", help="exit 1 when a claim does not hold")
        p.set_defaults(handler=lambda args: run_bench_command(args, benchmarks))


def run_handler(args: argparse.Namespace, errors: tuple[type[BaseException], ...] = (ValueError,)) -> int:
    """Calls ``args.handler(args)``; an exception in ``errors`` becomes ``error: ...`` on stderr and exit code 2."""
    try:
        return int(args.handler(args) or 0)
    except errors as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def use_data_root(root: str | None) -> None:
    """Makes ``--data-root`` the default folder of ``datasets.load`` (through ``$ICLR26_DATA``) for this process."""
    if root is not None:
        os.environ[DATA_ENV] = str(root)


def run_bench_command(args: argparse.Namespace, benchmarks: Sequence[Benchmark]) -> int:
    """Handler of ``bench``/``reproduce``; returns the exit code."""
    use_data_root(args.data_root)
    chosen = [b for b in benchmarks if not args.only or b.name in args.only]
    if args.only and len(chosen) != len(set(args.only)):
        known = [b.name for b in benchmarks]
        raise SystemExit(f"--only: expected names among {known}, got {args.only}")
    code = 0
    for bench in chosen:
        result, path, skipped = run_and_save(bench, args.scale, args.device, args.seed, args.out, args.force)
        print(format_claims(result) + (" (already on disk; --force recomputes)" if skipped else ""))
        print(f"  -> {path}")
        if result.status != "ok" or (args.strict and not result.all_hold):
            code = 1
    return code


def datasets_main(argv: Sequence[str] | None = None) -> int:
    """``iclr26-shared``: list the datasets, describe one, or show the device ``auto`` resolves to."""
    from . import datasets

    parser = argparse.ArgumentParser(prog="iclr26-shared", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("datasets", help="list the dataset names load() accepts")
    d = sub.add_parser("describe", help="load one dataset and print its shapes")
    d.add_argument("name")
    d.add_argument("--data-root", default=None)
    dv = sub.add_parser("device", help="print the device a --device value resolves to")
    dv.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    if args.command == "datasets":
        print("\n".join(datasets.available()))
    elif args.command == "describe":
        ds = datasets.load(args.name, root=args.data_root)
        views = f", views {[v.shape[1] for v in ds.views]}" if ds.views else ""
        print(f"{ds.name}: X {ds.X.shape} {ds.X.dtype}, y {ds.y.shape}, {ds.n_classes} classes{views}")
    else:
        from .device import device_name

        print(device_name(args.device))
    return 0
