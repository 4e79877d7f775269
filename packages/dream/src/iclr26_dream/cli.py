"""``iclr26-dream``: fit, sweep, inspect-gates, bench/reproduce (a thin layer over the API)."""
from __future__ import annotations

import argparse
import csv
import pathlib
import time
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import Parser, add_bench_command, call_handler, common_options, progress

from .bench import BENCHMARKS, METHODS, VARIANTS, run_method, scores
from .data import load_views
from .model import DREAM

RUN_FILES = ("labels.csv", "embedding.npy", "gates.csv", "history.json", "metrics.json")


def _out_dir(path: str, files: Sequence[str], force: bool) -> pathlib.Path:
    out = pathlib.Path(path)
    existing = [f for f in files if (out / f).exists()]
    if existing and not force:
        raise ValueError(f"--out: {out} already holds {', '.join(existing)}; pass --force to overwrite")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _write_csv(path: pathlib.Path, header: list[str], rows) -> None:
    with atomic_path(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"--{what}: expected comma-separated integers, got {text!r}") from None


def cmd_fit(args: argparse.Namespace) -> int:
    out = _out_dir(args.out, RUN_FILES, args.force)
    Xs, y = load_views(args.data, random_state=args.seed)
    n_clusters = args.n_clusters or int(np.unique(y).size)
    model = DREAM(n_clusters, pretrain_epochs=args.pretrain_epochs, epochs=args.epochs, lr=args.lr,
                  k_neighbors=args.k_neighbors, fusion=args.fusion, use_semantic=not args.no_semantic,
                  use_structure=not args.no_structure, use_alignment=not args.no_alignment,
                  device=args.device, random_state=args.seed, verbose=not args.quiet and args.verbose)
    start = time.perf_counter()
    model.fit(Xs, y)
    seconds = time.perf_counter() - start
    m = {**scores(y, model.labels_), "seconds": seconds, "n": len(y), "n_views": len(Xs), "n_clusters": n_clusters}
    _write_csv(out / "labels.csv", ["index", "label", "cluster"],
               zip(range(len(y)), y.tolist(), model.labels_.tolist()))
    with atomic_path(out / "embedding.npy") as tmp:
        np.save(tmp, model.embedding_)
    V = model.n_views_
    gate_header = [f"gate_view{v}" for v in range(V)] + [f"weight_view{v}" for v in range(V)]
    _write_csv(out / "gates.csv", gate_header, np.hstack([model.gate_values_, model.view_weights_]).tolist())
    write_json_atomic(out / "history.json", model.history_)
    write_json_atomic(out / "metrics.json", m)
    print(f"{'ACC':>7} {'NMI':>7} {'ARI':>7} {'PUR':>7} {'seconds':>8}")
    print(f"{m['acc']:7.4f} {m['nmi']:7.4f} {m['ari']:7.4f} {m['pur']:7.4f} {seconds:8.1f}")
    print(f"-> {out}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    out = _out_dir(args.out, ("results.csv",), args.force)
    datas = [d for d in args.data.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"--methods: expected names among {list(METHODS)}, got {unknown}")
    seeds = _ints(args.seeds, "seeds")
    schedule = {"pretrain_epochs": args.pretrain_epochs, "epochs": args.epochs}
    grid = [(d, m, s) for d in datas for m in methods for s in seeds]
    rows = []
    for d, m, s in progress(grid, total=len(grid), desc="sweep", quiet=args.quiet):
        Xs, y = load_views(d, random_state=s)
        row = run_method(m, Xs, y, s, device=args.device, threads=None,
                         dream_kwargs=schedule if m in VARIANTS else None)
        rows.append({"data": d, "method": m, "seed": s, **{k: row[k] for k in ("acc", "nmi", "ari", "pur", "seconds")}})
    keys = ["data", "method", "seed", "acc", "nmi", "ari", "pur", "seconds"]
    _write_csv(out / "results.csv", keys, ([r[k] for k in keys] for r in rows))
    print(f"{'data':<10} {'method':<16} {'ACC':>15} {'NMI':>15}")
    for d in datas:
        for m in methods:
            acc = [r["acc"] for r in rows if r["data"] == d and r["method"] == m]
            nmi = [r["nmi"] for r in rows if r["data"] == d and r["method"] == m]
            print(f"{d:<10} {m:<16} {np.mean(acc):7.4f}±{np.std(acc):.4f} {np.mean(nmi):7.4f}±{np.std(nmi):.4f}")
    print(f"-> {out / 'results.csv'}")
    return 0


def cmd_inspect_gates(args: argparse.Namespace) -> int:
    path = pathlib.Path(args.run) / "gates.csv"
    if not path.is_file():
        raise FileNotFoundError(f"--run: {path} not found; point at a folder written by 'iclr26-dream fit'")
    with path.open(encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        values = np.asarray([[float(x) for x in row] for row in reader])
    V = len(header) // 2
    print(f"{'view':>5} {'semantic share':>15} {'view weight':>12}")
    for v in range(V):
        print(f"{v:>5} {values[:, v].mean():15.4f} {values[:, V + v].mean():12.4f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-dream", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()
    f = sub.add_parser("fit", parents=[common], help="fit DREAM on one dataset and write its outputs")
    f.add_argument("--data", default="synthetic", help="hw, uci3, synthetic, or a .mat/.npz file (default: synthetic)")
    f.add_argument("--n-clusters", type=int, default=None, help="default: the number of label values")
    f.add_argument("--pretrain-epochs", type=int, default=100)
    f.add_argument("--epochs", type=int, default=150)
    f.add_argument("--lr", type=float, default=1e-3)
    f.add_argument("--k-neighbors", type=int, default=10)
    f.add_argument("--fusion", choices=("gate", "average"), default="gate")
    f.add_argument("--no-semantic", action="store_true", help="ablation: drop the VAE branch")
    f.add_argument("--no-structure", action="store_true", help="ablation: drop the GCN branch")
    f.add_argument("--no-alignment", action="store_true", help="ablation: drop L_Align")
    f.add_argument("--verbose", action="store_true", help="print the losses of every epoch")
    f.add_argument("--force", action="store_true", help="overwrite outputs already in --out")
    f.set_defaults(handler=cmd_fit)
    s = sub.add_parser("sweep", parents=[common], help="methods x datasets x seeds, results.csv + mean ± std table")
    s.add_argument("--data", default="synthetic", help="comma-separated: hw, uci3, synthetic, files")
    s.add_argument("--seeds", default="0", help="comma-separated integers (default: 0)")
    s.add_argument("--methods", default="dream,concat_km,concat_spec",
                   help=f"comma-separated among {','.join(METHODS)}")
    s.add_argument("--pretrain-epochs", type=int, default=100)
    s.add_argument("--epochs", type=int, default=150)
    s.add_argument("--force", action="store_true", help="overwrite results.csv in --out")
    s.set_defaults(handler=cmd_sweep)
    g = sub.add_parser("inspect-gates", help="mean semantic share of the gate and mean view weight per view")
    g.add_argument("--run", required=True, help="a folder written by 'iclr26-dream fit'")
    g.set_defaults(handler=cmd_inspect_gates)
    add_bench_command(sub, BENCHMARKS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-dream``; returns the exit code."""
    args = build_parser().parse_args(argv)
    return call_handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
