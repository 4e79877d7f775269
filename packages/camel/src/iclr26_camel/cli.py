"""``iclr26-camel``: fit, sweep (alias benchmark), select (alias tune), timing, bench and reproduce.

Every command writes fixed file names inside the ``--out`` folder: ``fit`` -> ``labels.csv``, ``embedding.npy``,
``history.json``, ``metrics.json``; ``sweep`` -> ``results.csv``; ``select`` -> ``tune.csv``; ``timing`` ->
``timing.csv``; ``bench`` -> the result JSON.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import (
    Parser,
    add_bench_command,
    common_options,
    output_paths,
    positive_int,
    progress,
    run,
    usage_error,
)

from .bench import CAMEL_BENCHMARK
from .data import load_views
from .experiment import METHODS, check_methods, run_one, summarize, sweep
from .masks import apply_mask, make_incomplete_mask
from .metrics import evaluate
from .model import CAMEL
from .timing import degree_time_ratio, loglog_slope, time_iterations

GRIDS = {
    "paper": {"lambda1": [1e-8, 1e-5, 1e-3], "lambda2": [1e-4, 1e-3, 1e-2], "beta": [10.0, 100.0, 1000.0, 10000.0],
              "delta": [1e-3, 1e-1, 1.0], "n_anchors": ["c", "2c", "3c"]},
    "small": {"lambda2": [0.1, 1.0, 10.0], "beta": [10.0, 100.0, 1000.0], "n_anchors": ["2c", "3c"]},
}


def _value(text: str) -> Any:
    if text in ("None", "none"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_hyper(items: Sequence[str] | None) -> dict[str, Any]:
    """``["lambda2=1", "degree=normalized"]`` -> ``{"lambda2": 1, "degree": "normalized"}``.

    Raises:
        ValueError: an item without ``=`` or a name CAMEL does not take (names ``--hyper``).
    """
    out: dict[str, Any] = {}
    known = set(CAMEL(2).get_params())
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or key not in known:
            raise usage_error("--hyper", f"NAME=VALUE with NAME among {sorted(known)}", repr(item))
        out[key] = _value(value)
    return out


def _floats(text: str) -> list[float]:
    """argparse type: comma-separated numbers."""
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _ints(text: str) -> list[int]:
    """argparse type: comma-separated integers."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def write_csv(path: pathlib.Path, rows: list[dict[str, Any]]) -> None:
    """Writes ``rows`` (union of keys as columns) to ``path`` atomically."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _load(args) -> tuple[list[np.ndarray], np.ndarray | None, np.ndarray | None]:
    try:
        return load_views(args.data, random_state=args.seed)
    except Exception as err:
        raise usage_error("--data", "mfeat, mfeat_uci3, synthetic, or a readable .mat/.npz file or folder of "
                          "view_*.csv", f"{args.data!r} ({' '.join(str(err).split()) or type(err).__name__})"
                          ) from err


def _masked(Xs, mask, rate: float, seed: int, protocol: str):
    if mask is not None or any(np.isnan(X).any() for X in Xs):
        return Xs, mask
    mask = make_incomplete_mask(Xs[0].shape[0], len(Xs), rate, rng=seed, protocol=protocol)
    return apply_mask(Xs, mask), mask


def cmd_fit(args) -> int:
    targets = output_paths(args, "labels.csv", "embedding.npy", "history.json", "metrics.json")
    Xs, y, mask = _load(args)
    hyper = parse_hyper(args.hyper)
    n_clusters = args.n_clusters or (int(np.unique(y).size) if y is not None else None)
    if n_clusters is None:
        raise usage_error("--n-clusters", "a number of clusters (the data has no labels)", "none")
    Xs, mask = _masked(Xs, mask, args.missing_rate, args.seed, args.protocol)
    model = CAMEL(n_clusters, random_state=args.seed, **hyper).fit(Xs, mask)
    with atomic_path(targets[0]) as tmp:
        np.savetxt(tmp, model.labels_, fmt="%d")
    with atomic_path(targets[1]) as tmp:
        np.save(tmp, model.embedding_)
    write_json_atomic(targets[2], model.history_)
    line = ""
    if y is not None:
        scores = evaluate(y, model.labels_)
        write_json_atomic(targets[3], {**scores, "seconds": model.fit_seconds_, "n_iter": model.n_iter_,
                                       "converged": bool(model.converged_), "missing_rate": args.missing_rate,
                                       "hyper": hyper})
        line = f"ACC={scores['acc']:.4f} NMI={scores['nmi']:.4f} ARI={scores['ari']:.4f} PUR={scores['purity']:.4f} "
    print(f"{line}time={model.fit_seconds_:.2f}s iters={model.n_iter_}")
    return 0


def _print_table(summary: list[dict[str, Any]], keys: Sequence[str]) -> None:
    for s in summary:
        head = "  ".join(f"{k}={s[k]}" for k in keys)
        print(f"{head:40s} ACC {s['acc']:.4f} ± {s['acc_std']:.4f}  NMI {s['nmi']:.4f} ± {s['nmi_std']:.4f}  "
              f"PUR {s['purity']:.4f}  {s['seconds']:.2f}s  (n={s['runs']})")


def _needs_labels(args, y, what: str) -> None:
    if y is None:
        raise usage_error("--data", f"a dataset with labels ({what})", f"{args.data!r}, which has none")


def cmd_sweep(args) -> int:
    (out,) = output_paths(args, "results.csv")
    try:
        methods = check_methods([m.strip() for m in args.methods.split(",") if m.strip()])
    except ValueError as err:
        raise usage_error("--methods", f"a comma list among {sorted(METHODS)}", repr(args.methods)) from err
    hyper = parse_hyper(args.hyper)
    Xs, y, _ = _load(args)
    _needs_labels(args, y, "sweep scores the clusterings")
    rows = sweep(Xs, y, methods, args.missing_rates, args.seeds,
                 hyper=hyper, n_jobs=args.jobs,
                 progress=lambda it, **kw: progress(it, quiet=args.quiet, **kw))
    write_csv(out, rows)
    _print_table(summarize(rows), ("method", "rate"))
    print(f"-> {out}")
    return 0


def _grid_points(grid: dict[str, list[Any]], c: int) -> list[dict[str, Any]]:
    names = list(grid)
    points = []
    for values in itertools.product(*(grid[n] for n in names)):
        point = dict(zip(names, values))
        if isinstance(point.get("n_anchors"), str):
            point["n_anchors"] = int(point["n_anchors"].rstrip("c") or 1) * c
        points.append(point)
    return points


def cmd_select(args) -> int:
    (out,) = output_paths(args, "tune.csv")
    Xs, y, mask = _load(args)
    _needs_labels(args, y, "select picks by ACC")
    Xs, mask = _masked(Xs, mask, args.missing_rate, args.seed, "paired")
    c = int(np.unique(y).size)
    rows = []
    points = _grid_points(GRIDS[args.grid], c)
    for point in progress(points, total=len(points), desc="grid", quiet=args.quiet):
        rows.append({**point, **run_one("camel", Xs, y, mask, args.seed, hyper=point)})
    write_csv(out, rows)
    best = max(rows, key=lambda r: r["acc"])
    chosen = {k: best[k] for k in GRIDS[args.grid]}
    print("ORACLE selection (uses the labels, as the paper's grid search does; not a fair model selection):")
    print(f"best {chosen}: ACC={best['acc']:.4f} NMI={best['nmi']:.4f} PUR={best['purity']:.4f}")
    print(f"-> {out}")
    return 0


def cmd_timing(args) -> int:
    (out,) = output_paths(args, "timing.csv")
    rows = time_iterations(args.n, n_views=args.views, dim=args.dim, n_clusters=args.clusters,
                           n_anchors=args.anchors, n_iter=args.iters, seed=args.seed)
    write_csv(out, rows)
    for r in rows:
        print(f"n={r['n']:7d}  {r['degree']:10s}  {r['seconds_per_iter']:.4f} s/iter wall  "
              f"{r['cpu_seconds_per_iter']:.4f} s/iter CPU  (degree {r['seconds_degree']:.2e} s)")
    const = [r for r in rows if r["degree"] == "constant"]
    if len(const) >= 2 and any(r["degree"] == "normalized" for r in rows):
        slope = loglog_slope([r["n"] for r in const], [r["cpu_seconds_per_iter"] for r in const])
        print(f"log-log slope of CPU time (constant): {slope:.3f}; "
              f"CPU time ratio constant/true degree: {degree_time_ratio(rows):.3f}")
    print(f"-> {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``iclr26-camel``."""
    parser = Parser(prog="iclr26-camel", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()
    data_help = "mfeat, mfeat_uci3, synthetic, or a .mat/.npz file or a folder of view_*.csv"

    p = sub.add_parser("fit", parents=[common], help="fit CAMEL on one dataset and missing rate: labels.csv, "
                                                     "embedding.npy, history.json, metrics.json")
    p.add_argument("--data", default="mfeat", help=data_help)
    p.add_argument("--missing-rate", type=float, default=0.5, help="applied when the data has no missing rows")
    p.add_argument("--protocol", choices=("paired", "per_view"), default="paired")
    p.add_argument("--n-clusters", type=positive_int, default=None, help="default: number of distinct labels")
    p.add_argument("--hyper", nargs="*", metavar="NAME=VALUE", help="CAMEL hyper-parameters, e.g. lambda2=1")
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("sweep", aliases=["benchmark"], parents=[common],
                       help="methods x missing rates x seeds: results.csv")
    p.add_argument("--data", default="mfeat", help=data_help)
    p.add_argument("--missing-rates", type=_floats, default="0.1,0.3,0.5")
    p.add_argument("--seeds", type=_ints, default="0,1,2")
    p.add_argument("--methods", default="camel,bsv,concat", help=f"comma-separated among {sorted(METHODS)}")
    p.add_argument("--hyper", nargs="*", metavar="NAME=VALUE")
    p.add_argument("--jobs", type=positive_int, default=1, help="parallel fits (joblib)")
    p.set_defaults(handler=cmd_sweep)

    p = sub.add_parser("select", aliases=["tune"], parents=[common],
                       help="grid search by ACC (label-using oracle, as in the paper): tune.csv")
    p.add_argument("--data", default="mfeat", help=data_help)
    p.add_argument("--grid", choices=sorted(GRIDS), default="small")
    p.add_argument("--missing-rate", type=float, default=0.3)
    p.set_defaults(handler=cmd_select)

    p = sub.add_parser("timing", parents=[common],
                       help="seconds per iteration vs n, constant vs true degree: timing.csv")
    p.add_argument("--n", type=_ints, default="2500,5000,10000,20000")
    p.add_argument("--views", type=int, default=3)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--anchors", type=int, default=30)
    p.add_argument("--iters", type=int, default=5)
    p.set_defaults(handler=cmd_timing)

    add_bench_command(sub, [CAMEL_BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-camel``; returns the exit code."""
    return run(build_parser(), argv)
