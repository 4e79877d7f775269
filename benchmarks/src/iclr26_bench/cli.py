"""``iclr26-bench``: list, run and report every registered iclr26 benchmark."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from iclr26_shared.bench import SCALES, discover, format_claims
from iclr26_shared.cli import progress, use_data_root

from .report import write_report
from .runner import run_benchmarks


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iclr26-bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the registered benchmarks")
    run = sub.add_parser("run", help="run benchmarks (all by default); a slug selects all of its benchmarks")
    run.add_argument("names", nargs="*", help="benchmark names or package slugs (default: all)")
    run.add_argument("--scale", choices=SCALES, default="quick", help="(default: quick)")
    run.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    run.add_argument("--seed", type=int, default=0, help="(default: 0)")
    run.add_argument("--out", default="results", help="results folder (default: results)")
    run.add_argument("--jobs", type=int, default=1, help="benchmarks run in parallel (joblib; default: 1)")
    run.add_argument("--data-root", default=None,
                     help="folder holding local datasets, for paper-scale runs (default: $ICLR26_DATA)")
    run.add_argument("--force", action="store_true", help="recompute results already present in --out")
    run.add_argument("--report", action="store_true", help="write <out>/REPORT.md afterwards")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    rep = sub.add_parser("report", help="write REPORT.md from a results folder")
    rep.add_argument("folder", nargs="?", default="results")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; the exit code of ``run`` is 0 only when every benchmark ran and every claim held."""
    args = build_parser().parse_args(argv)
    if args.command == "list":
        for name, ep in sorted(discover().items()):
            print(f"{name:32s} {ep.dist.name if ep.dist else ''}")
        return 0
    if args.command == "report":
        print(write_report(args.folder))
        return 0
    if args.jobs < 1:
        raise SystemExit(f"--jobs: expected a positive integer, got {args.jobs}")
    use_data_root(args.data_root)  # inherited by joblib's worker processes
    try:
        stream = run_benchmarks(args.names, args.scale, args.device, args.seed, args.out, args.jobs, args.force)
        ok = True
        for result, _path, skipped in progress(stream, desc="benchmarks", quiet=args.quiet):
            print(format_claims(result) + (" (already on disk)" if skipped else ""), flush=True)
            ok &= result.all_hold
    except ValueError as err:
        print(f"iclr26-bench: {err}", file=sys.stderr)
        return 2
    if args.report:
        print(write_report(args.out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
