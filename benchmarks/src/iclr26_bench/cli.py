"""``iclr26-bench``: list, run and report every registered iclr26 benchmark."""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from iclr26_shared.bench import SCALES, discover, format_claims, select
from iclr26_shared.cli import Parser, device_arg, existing_dir, positive_int, progress, run, seed_arg

from .report import write_report
from .runner import BACKENDS, run_benchmarks


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the registered benchmarks").set_defaults(handler=cmd_list)
    r = sub.add_parser("run", help="run benchmarks (all by default); a slug selects all of its benchmarks")
    r.add_argument("names", nargs="*", help="benchmark names or package slugs (default: all)")
    r.add_argument("--scale", choices=SCALES, default="quick", help="(default: quick)")
    r.add_argument("--device", type=device_arg, default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    r.add_argument("--seed", type=seed_arg, default=0, help="base seed; multi-seed claims derive theirs (default: 0)")
    r.add_argument("--out", default="results", help="results folder (default: results)")
    r.add_argument("--jobs", type=positive_int, default=1, help="benchmarks run in parallel (default: 1)")
    # its own dest: ``call_handler`` applies a ``threads`` option to this process, and this one is per benchmark
    r.add_argument("--threads", type=positive_int, default=None, dest="bench_threads", metavar="THREADS",
                   help="CPU threads per benchmark (default: the cores divided among --jobs)")
    r.add_argument("--max-seconds", type=float, default=None, metavar="N",
                   help="start no benchmark after N seconds; the rest are reported as not run")
    r.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local processes (joblib), or a dask or ray cluster (default: local)")
    r.add_argument("--address", default=None,
                   help="the cluster to join with --backend dask|ray (default: start a local one)")
    r.add_argument("--data-root", type=existing_dir, default=None,
                   help="folder holding local datasets, for paper-scale runs (default: $ICLR26_DATA)")
    r.add_argument("--force", action="store_true", help="recompute valid results already present in --out")
    r.add_argument("--report", action="store_true", help="write <out>/REPORT.md afterwards")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(handler=cmd_run)
    rep = sub.add_parser("report", help="write REPORT.md from a results folder")
    rep.add_argument("folder", nargs="?", default="results")
    rep.set_defaults(handler=cmd_report)
    return parser


def cmd_list(args: argparse.Namespace) -> int:
    for name, ep in sorted(discover().items()):
        print(f"{name:32s} {ep.dist.name if ep.dist else ''}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    print(write_report(args.folder))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Runs the selection; exit 0 only when every benchmark ran and every claim held."""
    if args.max_seconds is not None and args.max_seconds < 0:
        raise ValueError(f"--max-seconds: expected a number >= 0, got {args.max_seconds}")
    chosen = select(args.names, discover())
    start = time.perf_counter()
    outcomes = run_benchmarks(chosen, args.scale, args.device, args.seed, args.out, args.jobs, args.force,
                              args.bench_threads, args.max_seconds, args.backend, args.address)
    ok, not_run, done = True, [], 0
    for o in progress(outcomes, total=len(chosen), desc="benchmarks", quiet=args.quiet):
        if o.result is None:
            not_run.append(o.name)
            continue
        done += 1
        elapsed = time.perf_counter() - start
        print(f"[{done}/{len(chosen)}, {elapsed:.0f} s elapsed] " + format_claims(o.result)
              + (" (already on disk)" if o.skipped else ""), flush=True)
        ok &= o.result.all_hold
    if not_run:
        print(f"not run (--max-seconds {args.max_seconds:g} reached): {', '.join(sorted(not_run))}", flush=True)
    if args.report:
        print(write_report(args.out))
    return 0 if ok and not not_run else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-bench``; returns the exit code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
