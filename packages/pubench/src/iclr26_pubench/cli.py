"""``iclr26-pubench``: datasets, methods, split, fit, sweep, report, bench (a thin layer over the API).

Files land in the ``--out`` folder under fixed names: ``split --save`` -> ``split.npz``, ``fit`` -> ``fit.json``,
``sweep`` -> ``results.jsonl`` (+ ``results.timing.jsonl``), ``report`` -> ``report.md`` and its figures.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import (
    Parser,
    add_bench_command,
    common_options,
    existing_file,
    output_paths,
    positive_int,
    progress,
    run,
    usage_error,
)

from .bench import PUBENCH
from .data import CASE_CONTROL_MODES, LABELINGS, SCHEMES, make_benchmark_splits
from .datasets import dataset_names, is_file_dataset, list_datasets
from .methods import REGISTRY
from .report import aggregate, write_report
from .sweep import BACKENDS, PRESETS, RunSpec, expand_grid, read_jsonl, run_one, run_sweep, timing_path


def _table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells)


def _dataset(args) -> str:
    """``--data FILE`` when given, else ``--dataset``."""
    return str(args.data) if args.data else args.dataset


def _datasets(args) -> int:
    rows = [[d.name, d.kind, d.n if d.n is not None else "-", d.d, f"{d.prior:.3f}" if d.prior else "-",
             d.stand_in_for or "-"] for d in list_datasets()]
    print(_table(rows, ["name", "kind", "n", "d", "prior", "stand-in for"]))
    return 0


def _methods(args) -> int:
    rows = []
    for k, m in REGISTRY.items():
        epochs = m.cpu.get("epochs", m.cls().get_params().get("epochs", "-"))
        rows.append([k, m.cls.__name__, m.family, m.tier,
                     "yes" if m.needs_prior else "no", epochs])
    print(_table(rows, ["key", "class", "family", "tier", "needs prior", "CPU epochs"]))
    return 0


def _split(args) -> int:
    saved = output_paths(args, "split.npz") if args.save else []
    train, val, test = make_benchmark_splits(_dataset(args), args.c, args.scheme, args.labeling, args.seed,
                                             data_dir=args.data_root, case_control_mode=args.case_control_mode)
    meta = train.meta
    rows = [["|L|", meta["n_labeled"]], ["|U|", meta["n_unlabeled"]], ["positives in U", meta["n_pos_unlabeled"]],
            ["negatives in U", meta["n_neg_unlabeled"]], ["pi_U", f"{meta['pi_unlabeled']:.6f}"],
            ["c_realized", f"{meta['c_realized']:.4f}"], ["validation rows", len(val.s)], ["test rows", len(test.y)]]
    if "mean_phat_labeled" in meta:
        rows += [["mean p-hat of L", f"{meta['mean_phat_labeled']:.4f}"],
                 ["mean p-hat of all positives", f"{meta['mean_phat_positives']:.4f}"]]
    print(_table(rows, ["statistic", "value"]))
    for path in saved:
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, X=train.X, s=train.s, y=train.y, source_index=train.source_index,
                     meta=json.dumps(train.meta))
        print(f"-> {path}")
    return 0


def _fit(args) -> int:
    (out,) = output_paths(args, "fit.json")
    params = () if args.epochs is None else (("epochs", args.epochs),)
    device = "cpu" if args.device == "auto" else args.device
    spec = RunSpec(_dataset(args), args.method, args.c, args.scheme, args.labeling, args.seed, params, device=device)
    rec = run_one(spec, args.data_root)
    if rec["status"] != "ok":
        raise RuntimeError(f"fit: {args.method} on {args.dataset} failed: {rec['error']}")
    if args.json:
        print(json.dumps(rec, indent=2, sort_keys=True))
    else:
        keys = ["test_accuracy", "test_precision", "test_recall", "test_f1", "test_auc", "val_proxy_acc",
                "val_proxy_auc"]
        rows = [[k, "-" if rec.get(k) is None else f"{rec[k]:.4f}"] for k in keys]
        rows.append(["fit_time (s)", f"{rec['timing']['fit_time']:.2f}"])
        print(f"{args.method} on {spec.dataset} ({spec.setting}, seed {args.seed})")
        print(_table(rows, ["metric", "value"]))
    write_json_atomic(out, rec)
    print(f"-> {out}")
    return 0


def _sweep(args) -> int:
    device = "cpu" if args.device == "auto" else args.device
    specs = expand_grid([str(args.data)] if args.data else args.datasets, args.methods, preset=args.preset,
                        seeds=args.seeds, budget=args.budget, device=device)
    if args.dry_run:
        print(f"{len(specs)} runs")
        for s in specs[:5]:
            print(f"  {s.key()[:12]}  {s.dataset} {s.method} {s.setting} seed {s.seed}")
        return 0
    jsonl = pathlib.Path(args.out) / "results.jsonl"
    # --resume / --retry-failed append to an existing results.jsonl; otherwise it is refused without --force
    if not (args.resume or args.retry_failed):
        output_paths(args, jsonl.name, timing_path(jsonl).name)
    bar = progress(range(len(specs)), total=len(specs), desc="runs", quiet=args.quiet)
    ticker = iter(bar)

    def show(rec):
        next(ticker, None)
        if args.quiet or sys.stderr.isatty():
            return
        f1 = rec.get("test_f1")
        print(f"{rec['status']:6s} {rec['dataset']} {rec['method']} {rec['setting']} seed {rec['seed']} "
              f"F1 {'-' if f1 is None else f'{f1:.3f}'}")

    records = run_sweep(specs, backend=args.backend, jobs=args.jobs, address=args.address, out=jsonl,
                        resume=args.resume or args.retry_failed, overwrite=args.force,
                        retry_failed=args.retry_failed, data_dir=args.data_root, on_result=show)
    failed = sum(r["status"] != "ok" for r in records)
    print(f"{len(records)} runs in {jsonl} ({failed} failed)")
    return 1 if failed else 0


def _read_records(path: pathlib.Path) -> list[dict]:
    """The sweep records in the JSONL file ``path`` (the ``results`` argument)."""
    expected = "a sweep results JSONL (one record with a 'key' per line)"
    try:
        records = read_jsonl(path)
    except (ValueError, OSError) as err:
        raise usage_error("results", expected, f"{str(path)!r} ({type(err).__name__})") from None
    if not records or not all(isinstance(r, dict) and "key" in r for r in records):
        raise usage_error("results", expected, f"{str(path)!r} ({len(records)} readable records)")
    return records


def _report(args) -> int:
    records = _read_records(args.results)
    names = [f for d in sorted(aggregate(records, args.metric))
             for f in (f"landscape_{d}_{args.metric}.png", f"{args.metric}_vs_c_{d}.png")]
    output_paths(args, "report.md", *names)
    times = {r["key"]: r for r in read_jsonl(timing_path(args.results))}
    for r in records:
        r["timing"] = times.get(r["key"], {})
    md, figures = write_report(records, args.out, args.metric, force=True)
    print(md.read_text(encoding="utf-8"))
    print(f"-> {md} ({len(figures)} figures)")
    return 0


def data_file(text: str) -> pathlib.Path:
    """argparse type of ``--data``: an existing ``.npz`` or ``.csv`` file."""
    path = existing_file(text)
    if not is_file_dataset(path):
        raise argparse.ArgumentTypeError(f"expected a .npz or .csv file, got {text!r}")
    return path


def data_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=data_file, default=None, metavar="FILE",
                   help="your own data instead of a named dataset: .npz with X, y (or X_train, y_train, X_test, "
                        "y_test) or .csv with the label in column 'y' or the last column; labels in {0, 1}")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-pubench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("datasets", parents=[common_options()],
                   help="list datasets (embedded and local)").set_defaults(handler=_datasets)
    sub.add_parser("methods", parents=[common_options()], help="list the PU methods").set_defaults(handler=_methods)

    def pu_options(p):
        p.add_argument("--dataset", default="digits", choices=dataset_names())
        data_option(p)
        p.add_argument("--c", type=float, default=0.1, help="label frequency in (0, 1] (default 0.1)")
        p.add_argument("--scheme", default="case-control", choices=SCHEMES)
        p.add_argument("--labeling", default="scar", choices=LABELINGS)

    p = sub.add_parser("split", parents=[common_options()], help="build a PU split and print its statistics")
    pu_options(p)
    p.add_argument("--case-control-mode", default="full_u", choices=CASE_CONTROL_MODES)
    p.add_argument("--save", action="store_true", help="also write the training split to split.npz in --out")
    p.set_defaults(handler=_split)
    p = sub.add_parser("fit", parents=[common_options()], help="train one method and evaluate it; writes fit.json")
    pu_options(p)
    p.add_argument("--method", default="nnpu", choices=list(REGISTRY))
    p.add_argument("--epochs", type=int, default=None, help="override the CPU budget's epochs")
    p.add_argument("--json", action="store_true", help="print the full record as JSON")
    p.set_defaults(handler=_fit)
    p = sub.add_parser("sweep", parents=[common_options()],
                       help="run a grid of runs into results.jsonl (+ results.timing.jsonl) in --out")
    p.add_argument("--preset", default="cpu_smoke", choices=list(PRESETS))
    p.add_argument("--datasets", nargs="+", default=["digits"])
    data_option(p)
    p.add_argument("--methods", nargs="+", default=["nnpu", "upu", "naive"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--budget", default="cpu", choices=["cpu", "paper", "smoke"])
    p.add_argument("--backend", default="local", choices=BACKENDS,
                   help="local joblib processes (--jobs 1: in this process), or a dask / ray cluster")
    p.add_argument("--jobs", type=positive_int, default=2, help="local workers, or the size of a local cluster")
    p.add_argument("--address", default=None, help="Dask scheduler / Ray cluster to join (default: start one)")
    p.add_argument("--resume", action="store_true", help="continue an existing results.jsonl (skip finished runs)")
    p.add_argument("--retry-failed", action="store_true",
                   help="continue results.jsonl and rerun the runs stored as failed (implies --resume)")
    p.add_argument("--dry-run", action="store_true", help="print the number of runs and the first keys")
    p.set_defaults(handler=_sweep)
    p = sub.add_parser("report", parents=[common_options()],
                       help="report.md (ranked tables) and landscape plots in --out from a results JSONL")
    p.add_argument("results", type=existing_file, help="results.jsonl written by sweep")
    p.add_argument("--metric", default="f1", choices=["f1", "accuracy", "auc", "precision", "recall"])
    p.set_defaults(handler=_report)
    add_bench_command(sub, [PUBENCH])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
