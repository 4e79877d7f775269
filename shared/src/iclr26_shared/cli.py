"""The one CLI contract of iclr26 (argparse, the one CLI library of the repository).

- ``Parser``: an ``ArgumentParser`` whose errors are one line ``error: <option>: <expected>, got <what>``
  on stderr with exit code 2 (subcommand parsers inherit it).
- ``common_options()``: a parent parser with ``--device --seed --threads --out --force --data-root --quiet``,
  every value checked while parsing, before anything runs or is written.
- ``run(parser, argv)``: what every console script's ``main`` returns: parses, then ``call_handler(args)``
  applies ``--threads`` and ``--data-root`` and calls the subcommand's handler; a library error becomes the
  same one-line exit 2, Ctrl-C exits 130 without a traceback.
- ``output_paths(args, *names)``: the files a subcommand writes, inside ``--out`` (always a folder),
  refused when they exist and ``--force`` is not given; ``existing_file``: an argparse type for inputs.
- ``add_bench_command(subparsers, benchmarks)``: ``bench`` (same options as ``iclr26-bench run``) and
  ``reproduce`` (``bench --scale full``).
- ``progress(iterable, ...)``: a tqdm bar, off with ``--quiet`` and when stderr is not a terminal.

Importing this module costs numpy only: torch is imported when a CUDA device is asked for.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from collections.abc import Iterable, Sequence

from .bench import SCALES, Benchmark, format_claims, run_and_save

LIBRARY_ERRORS = (ValueError, TypeError, OSError, RuntimeError)


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are a single ``error: ...`` line and exit code 2."""

    def error(self, message: str):
        message = message.removeprefix("argument ")
        self.exit(2, f"error: {message}\n")


def usage_error(option: str, expected: str, got: object) -> ValueError:
    """The error of the contract: ``<option>: expected <expected>, got <got>`` (raise it)."""
    return ValueError(f"{option}: expected {expected}, got {got}")


def seed_arg(text: str) -> int:
    """argparse type of ``--seed``: an integer in ``[0, 2**32)``."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"expected an integer in [0, 2**32), got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (``--threads``, ``--jobs``, counts)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def fraction_arg(text: str) -> float:
    """argparse type: a number strictly between 0 and 1 (split fractions, miscoverage levels)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def device_arg(text: str) -> str:
    """argparse type of ``--device``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``, and CUDA must exist when asked for."""
    spec = text.strip().lower()
    index = spec.partition(":")[2]
    if spec in ("auto", "cpu"):
        return spec
    if not (spec == "cuda" or (spec.startswith("cuda:") and index.isdigit())):
        raise argparse.ArgumentTypeError(f"expected one of auto, cpu, cuda, cuda:N, got {text!r}")
    try:
        import torch
    except ImportError:
        raise argparse.ArgumentTypeError(f"expected a device this installation has (torch is not installed), "
                                         f"got {text!r}") from None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0 or (index and int(index) >= count):
        raise argparse.ArgumentTypeError(f"expected a CUDA device that exists ({count} here; use cpu or auto), "
                                         f"got {text!r}")
    return spec


def existing_file(text: str) -> pathlib.Path:
    """argparse type of an input file: it must exist and be a file."""
    path = pathlib.Path(text).expanduser()
    if not path.is_file():
        raise argparse.ArgumentTypeError(
            f"expected an existing file, got {text!r} ({'a folder' if path.is_dir() else 'no such file'})")
    return path


def existing_dir(text: str) -> pathlib.Path:
    """argparse type of an input folder (``--data-root``): it must exist and be a folder."""
    path = pathlib.Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"expected an existing folder, got {text!r}")
    return path


def common_options() -> argparse.ArgumentParser:
    """A parent parser (``parents=[common_options()]``) holding the options every subcommand takes."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--device", type=device_arg, default="auto",
                   help="auto (CUDA when available), cpu, cuda or cuda:N (default: auto)")
    p.add_argument("--seed", type=seed_arg, default=0, help="random seed, >= 0 (default: 0)")
    p.add_argument("--threads", type=positive_int, default=None,
                   help="CPU threads for torch and BLAS (default: every core)")
    p.add_argument("--out", default="results", help="folder every output file is written into (default: results)")
    p.add_argument("--force", action="store_true", help="overwrite output files that already exist")
    p.add_argument("--data-root", type=existing_dir, default=None,
                   help="folder holding local datasets (default: $ICLR26_DATA); nothing is downloaded")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def output_paths(args: argparse.Namespace, *names: str) -> list[pathlib.Path]:
    """The files ``names`` inside the ``--out`` folder; call it before writing anything.

    Raises:
        ValueError: a name leaves the folder, ``--out`` is an existing file, or a file exists without ``--force``.
    """
    out = pathlib.Path(args.out)
    if out.exists() and not out.is_dir():
        raise usage_error("--out", "a folder", f"the existing file {str(out)!r}")
    paths = []
    for name in names:
        rel = pathlib.PurePath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise usage_error("output name", "a file name inside --out", repr(name))
        path = out / rel
        if path.exists() and not getattr(args, "force", False):
            raise usage_error("--out", f"no existing {path.name} in {str(out)!r} (pass --force to overwrite)",
                              f"the existing file {str(path)!r}")
        paths.append(path)
    return paths


def use_data_root(root: str | os.PathLike | None) -> None:
    """Makes ``--data-root`` the default folder of ``datasets.load`` (through ``$ICLR26_DATA``) for this process."""
    if root is not None:
        from .datasets import DATA_ENV

        os.environ[DATA_ENV] = str(root)


def one_line(err: BaseException) -> str:
    """An exception as one line of text (an ``OSError`` names its file), for ``error: ...`` messages."""
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.filename}: expected a readable file or folder, got {err.strerror or type(err).__name__}"
    return " ".join(str(err).split()) or type(err).__name__


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """What a console script's ``main`` returns: parses ``argv`` and calls ``call_handler``; the exit code."""
    try:
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return call_handler(args)


def call_handler(args: argparse.Namespace) -> int:
    """Applies ``--threads`` and ``--data-root``, then calls ``args.handler(args)``; returns the exit code.

    Errors in the library (``LIBRARY_ERRORS``) print ``error: ...`` on one line and return 2; Ctrl-C returns 130.
    """
    try:
        if hasattr(args, "threads"):
            from .device import set_threads

            args.threads = set_threads(args.threads)
        use_data_root(getattr(args, "data_root", None))
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except LIBRARY_ERRORS as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        return 2


def progress(iterable: Iterable, *, total: int | None = None, desc: str | None = None, quiet: bool = False):
    """Wraps ``iterable`` in a tqdm bar on stderr, unless ``quiet`` or stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=False)


def add_bench_command(subparsers, benchmarks: Sequence[Benchmark]) -> None:
    """Adds ``bench`` and ``reproduce`` (= ``bench --scale full``) running ``benchmarks``.

    Each writes its ``Result`` JSON under ``--out`` (reusing a valid finished result unless
    ``--force``), prints every claim as PASS/FAIL, and exits non-zero only when a benchmark
    failed to run, or with ``--strict`` when a claim does not hold.
    """
    known = [b.name for b in benchmarks]

    def only_arg(text: str) -> str:
        if text not in known:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(known)}, got {text!r}")
        return text

    for name, default_scale, text in (("bench", "quick", "run this package's benchmark(s)"),
                                      ("reproduce", "full", "alias of: bench --scale full")):
        p = subparsers.add_parser(name, parents=[common_options()], help=text, description=text)
        p.add_argument("--scale", choices=SCALES, default=default_scale, help=f"(default: {default_scale})")
        p.add_argument("--only", nargs="+", type=only_arg, default=None, metavar="NAME",
                       help=f"run only these of: {', '.join(known)}")
        p.add_argument("--strict", action="store_true", help="exit 1 when a claim does not hold")
        p.set_defaults(handler=lambda args: run_bench_command(args, benchmarks))


def run_bench_command(args: argparse.Namespace, benchmarks: Sequence[Benchmark]) -> int:
    """Handler of ``bench``/``reproduce``; returns the exit code."""
    out = pathlib.Path(args.out)
    if out.exists() and not out.is_dir():
        raise usage_error("--out", "a folder", f"the existing file {str(out)!r}")
    chosen = [b for b in benchmarks if not args.only or b.name in args.only]
    code = 0
    for bench in chosen:
        result, path, skipped = run_and_save(bench, args.scale, args.device, args.seed, out, args.force,
                                             args.threads)
        print(format_claims(result) + (" (already on disk; --force recomputes)" if skipped else ""))
        print(f"  -> {path}")
        if result.status != "ok" or (args.strict and not result.all_hold):
            code = 1
    return code


def datasets_main(argv: Sequence[str] | None = None) -> int:
    """``iclr26-shared``: list the datasets, describe one, or show the device ``auto`` resolves to."""
    parser = Parser(prog="iclr26-shared", description="iclr26-shared: datasets and devices")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("datasets", help="list the dataset names load() accepts").set_defaults(handler=_list_datasets)
    d = sub.add_parser("describe", help="load one dataset and print its shapes")
    d.add_argument("name")
    d.add_argument("--data-root", type=existing_dir, default=None)
    d.set_defaults(handler=_describe)
    dv = sub.add_parser("device", help="print the device a --device value resolves to")
    dv.add_argument("--device", type=device_arg, default="auto")
    dv.set_defaults(handler=_device)
    return run(parser, argv)


def _device(args: argparse.Namespace) -> None:
    from .device import device_name

    print(device_name(args.device))


def _list_datasets(args: argparse.Namespace) -> None:
    from . import datasets

    print("\n".join(datasets.available()))


def _describe(args: argparse.Namespace) -> None:
    from . import datasets

    ds = datasets.load(args.name, root=args.data_root)
    views = f", views {[v.shape[1] for v in ds.views]}" if ds.views else ""
    print(f"{ds.name}: X {ds.X.shape} {ds.X.dtype}, y {ds.y.shape}, {ds.n_classes} classes{views}")
