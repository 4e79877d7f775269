"""``iclr26-dream``: fit, sweep, evaluate (alias inspect-gates), bench/reproduce (a thin layer over the API).

Files are written with fixed names inside the ``--out`` folder: ``fit`` -> ``labels.csv``, ``embedding.npy``,
``gates.csv``, ``history.json``, ``metrics.json``; ``sweep`` -> ``results.csv``; ``bench`` -> the result JSON.
"""
from __future__ import annotations

import argparse
import csv
import functools
import pathlib
import time
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

from .bench import BENCHMARKS, METHODS, VARIANTS, run_method, scores
from .data import load_graph_views
from .losses import GRAPH_WEIGHTINGS
from .model import DREAM

RUN_FILES = ("labels.csv", "embedding.npy", "gates.csv", "history.json", "metrics.json")


def _write_csv(path: pathlib.Path, header: list[str], rows) -> None:
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def _ints(text: str) -> list[int]:
    """argparse type: comma-separated integers."""
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _load(data: str, seed: int):
    """``(Xs, y, graphs)`` of ``load_graph_views(data)``; a missing or malformed file becomes an error naming
    ``--data``."""
    try:
        return load_graph_views(data, random_state=seed)
    except Exception as err:
        raise usage_error("--data", "hw, uci3, synthetic, communities or a readable .mat/.npz file",
                          f"{data!r} ({' '.join(str(err).split()) or type(err).__name__})") from err


def cmd_fit(args: argparse.Namespace) -> int:
    paths = dict(zip(RUN_FILES, output_paths(args, *RUN_FILES)))
    Xs, y, graphs = _load(args.data, args.seed)
    n_clusters = args.n_clusters or int(np.unique(y).size)
    model = DREAM(n_clusters, pretrain_epochs=args.pretrain_epochs, epochs=args.epochs, lr=args.lr,
                  k_neighbors=args.k_neighbors, fusion=args.fusion, use_semantic=not args.no_semantic,
                  use_structure=not args.no_structure, use_alignment=not args.no_alignment,
                  graph_weighting=args.graph_weighting, device=args.device, random_state=args.seed,
                  verbose=not args.quiet and args.verbose)
    start = time.perf_counter()
    model.fit(Xs, y, graphs=graphs, progress=functools.partial(progress, quiet=args.quiet))
    seconds = time.perf_counter() - start
    m = {**scores(y, model.labels_), "seconds": seconds, "n": len(y), "n_views": len(Xs), "n_clusters": n_clusters}
    _write_csv(paths["labels.csv"], ["index", "label", "cluster"],
               zip(range(len(y)), y.tolist(), model.labels_.tolist()))
    with atomic_path(paths["embedding.npy"]) as tmp:
        np.save(tmp, model.embedding_)
    V = model.n_views_
    gate_header = [f"gate_view{v}" for v in range(V)] + [f"weight_view{v}" for v in range(V)]
    _write_csv(paths["gates.csv"], gate_header, np.hstack([model.gate_values_, model.view_weights_]).tolist())
    write_json_atomic(paths["history.json"], model.history_)
    write_json_atomic(paths["metrics.json"], m)
    print(f"{'ACC':>7} {'NMI':>7} {'ARI':>7} {'PUR':>7} {'seconds':>8}")
    print(f"{m['acc']:7.4f} {m['nmi']:7.4f} {m['ari']:7.4f} {m['pur']:7.4f} {seconds:8.1f}")
    print(f"-> {args.out}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    (out,) = output_paths(args, "results.csv")
    datas = [d for d in args.data.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"--methods: expected names among {list(METHODS)}, got {unknown}")
    seeds = args.seeds
    schedule = {"pretrain_epochs": args.pretrain_epochs, "epochs": args.epochs,
                "graph_weighting": args.graph_weighting}
    grid = [(d, m, s) for d in datas for m in methods for s in seeds]
    rows = []
    for d, m, s in progress(grid, total=len(grid), desc="sweep", quiet=args.quiet):
        Xs, y, graphs = _load(d, s)
        row = run_method(m, Xs, y, s, device=args.device, threads=None,
                         dream_kwargs=schedule if m in VARIANTS else None, graphs=graphs)
        rows.append({"data": d, "method": m, "seed": s, **{k: row[k] for k in ("acc", "nmi", "ari", "pur", "seconds")}})
    keys = ["data", "method", "seed", "acc", "nmi", "ari", "pur", "seconds"]
    _write_csv(out, keys, ([r[k] for k in keys] for r in rows))
    print(f"{'data':<10} {'method':<16} {'ACC':>15} {'NMI':>15}")
    for d in datas:
        for m in methods:
            acc = [r["acc"] for r in rows if r["data"] == d and r["method"] == m]
            nmi = [r["nmi"] for r in rows if r["data"] == d and r["method"] == m]
            print(f"{d:<10} {m:<16} {np.mean(acc):7.4f}±{np.std(acc):.4f} {np.mean(nmi):7.4f}±{np.std(nmi):.4f}")
    print(f"-> {out}")
    return 0


def _read_gates(path: pathlib.Path) -> np.ndarray:
    """The (n, 2V) gate values and view weights of a ``gates.csv`` written by ``fit``."""
    try:
        with path.open(encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            values = np.asarray([[float(x) for x in row] for row in reader])
        if not header or len(header) % 2 or values.ndim != 2 or values.shape[1] != len(header) or not len(values):
            raise ValueError(f"{len(header)} columns, values of shape {values.shape}")
    except Exception as err:
        raise usage_error("--gates", "a gates.csv written by `iclr26-dream fit`",
                          f"{path.name} ({' '.join(str(err).split()) or type(err).__name__})") from err
    return values


def cmd_evaluate(args: argparse.Namespace) -> int:
    values = _read_gates(args.gates)
    V = values.shape[1] // 2
    print(f"{'view':>5} {'semantic share':>15} {'view weight':>12}")
    for v in range(V):
        print(f"{v:>5} {values[:, v].mean():15.4f} {values[:, V + v].mean():12.4f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-dream", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()
    f = sub.add_parser("fit", parents=[common], help="fit DREAM on one dataset: labels.csv, embedding.npy, "
                                                     "gates.csv, history.json, metrics.json")
    f.add_argument("--data", default="synthetic",
                   help="hw, uci3, synthetic, communities (with its block-model graph), or a .mat/.npz file; an .npz "
                        "may hold an (N, N) adjacency Av for view v beside X0, X1, ..., y (default: synthetic)")
    f.add_argument("--n-clusters", type=positive_int, default=None, help="default: the number of label values")
    f.add_argument("--pretrain-epochs", type=int, default=100)
    f.add_argument("--epochs", type=int, default=150)
    f.add_argument("--lr", type=float, default=1e-3)
    f.add_argument("--k-neighbors", type=int, default=10)
    f.add_argument("--fusion", choices=("gate", "average"), default="gate")
    f.add_argument("--no-semantic", action="store_true", help="ablation: drop the VAE branch")
    f.add_argument("--no-structure", action="store_true", help="ablation: drop the GCN branch")
    f.add_argument("--no-alignment", action="store_true", help="ablation: drop L_Align")
    f.add_argument("--graph-weighting", choices=GRAPH_WEIGHTINGS, default="uniform",
                   help="graph reconstruction loss: uniform (the spec's) or balanced (edges and non-edges weighted "
                        "equally; use it for sparse supplied graphs such as communities)")
    f.add_argument("--verbose", action="store_true", help="print the losses of every epoch")
    f.set_defaults(handler=cmd_fit)
    s = sub.add_parser("sweep", parents=[common], help="methods x datasets x seeds, results.csv + mean ± std table")
    s.add_argument("--data", default="synthetic", help="comma-separated: hw, uci3, synthetic, communities, files")
    s.add_argument("--seeds", type=_ints, default="0", help="comma-separated integers (default: 0)")
    s.add_argument("--methods", default="dream,concat_km,concat_spec",
                   help=f"comma-separated among {','.join(METHODS)}")
    s.add_argument("--pretrain-epochs", type=int, default=100)
    s.add_argument("--epochs", type=int, default=150)
    s.add_argument("--graph-weighting", choices=GRAPH_WEIGHTINGS, default="uniform")
    s.set_defaults(handler=cmd_sweep)
    g = sub.add_parser("evaluate", aliases=["inspect-gates"], parents=[common],
                       help="mean semantic share of the gate and mean view weight per view (prints; writes nothing)")
    g.add_argument("--gates", type=existing_file, required=True, help="a gates.csv written by 'iclr26-dream fit'")
    g.set_defaults(handler=cmd_evaluate)
    add_bench_command(sub, BENCHMARKS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-dream``; returns the exit code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
