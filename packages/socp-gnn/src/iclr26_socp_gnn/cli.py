"""``iclr26-socp-gnn``: generate labelled SOCP data, fit and evaluate the GNN or the MLP, run the benchmarks.

Every command writes fixed file names into the ``--out`` folder: ``generate`` -> ``dataset.json``, ``fit`` ->
``model.pt``, ``evaluate`` -> ``evaluation.json``, ``opf`` -> ``opf.json``.
"""
from __future__ import annotations

import argparse
import functools
import pathlib
from collections.abc import Sequence

import torch
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
from iclr26_shared.device import resolve_device

from .bench import BENCHMARKS, GRID, inference_timing
from .data import load_dataset, make_dataset, save_dataset
from .models import SOCPGNN, FlatMLP, build_model, count_parameters
from .train import evaluate, fit, predict


def _dataset(path: pathlib.Path):
    """The dataset in the ``--data`` file (written by ``generate``)."""
    try:
        return load_dataset(path)
    except ValueError as err:
        raise usage_error("--data", "a dataset.json written by 'iclr26-socp-gnn generate'",
                          f"{str(path)!r} ({err})") from None


def _generate(args) -> int:
    (out,) = output_paths(args, "dataset.json")
    ds = make_dataset(args.task, args.n_instances, args.n, args.m, args.k, p=args.p, seed=args.seed,
                      n_jobs=args.jobs)
    save_dataset(out, ds)
    meta = ds.meta
    print(f"{len(ds)} {args.task} instances -> {out}")
    print(f"feasible fraction {meta['feasible_fraction']:.3f} (g_shift {meta['g_shift']:.4g}), "
          f"discarded {meta['discarded']} of {meta['candidates']} candidates, "
          f"mean solve {meta['mean_solve_ms']:.2f} ms")
    return 0


def _split(items, frac: float, seed: int):
    idx = torch.randperm(len(items), generator=torch.Generator().manual_seed(seed)).tolist()
    n_val = max(1, int(frac * len(items)))
    return [items[i] for i in idx[n_val:]], [items[i] for i in idx[:n_val]]


def _fit(args) -> int:
    (out,) = output_paths(args, "model.pt")
    ds = _dataset(args.data)
    task = ds.meta.get("task", "solution")
    device = resolve_device(args.device)
    torch.manual_seed(args.seed)
    train, val = _split(list(ds), 0.1, args.seed)
    hidden = args.hidden if args.model != "mlp" else tuple([args.mlp_width] * 3)
    model = build_model(args.model, task, hidden=hidden, layers=args.layers, example=train[0][0])
    print(f"{args.model} for {task}: {count_parameters(model)} parameters")

    def log(epoch, metric):
        print(f"epoch {epoch:4d}  validation {metric:.4f}")

    hist = fit(model, train, val, epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, seed=args.seed,
               device=device, log_every=25, callback=None if args.quiet else log,
               progress=functools.partial(progress, desc="epochs", quiet=args.quiet))
    with atomic_path(out) as tmp:
        torch.save({"kind": args.model, "config": model.config, "state": model.state_dict()}, tmp)
    print(f"trained {hist.seconds:.1f}s (best epoch {hist.best_epoch}) -> {out}")
    return 0


def load_model(path) -> torch.nn.Module:
    """Rebuilds a model saved by ``iclr26-socp-gnn fit``.

    Raises:
        FileNotFoundError: no file at ``path``. ValueError: the file is not such a checkpoint.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model: no file at {path}")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        cfg = dict(ckpt["config"])
        model = SOCPGNN(**cfg) if ckpt["kind"].startswith("gnn") else FlatMLP(**cfg)
        model.load_state_dict(ckpt["state"])
    except Exception as err:  # a damaged file can fail anywhere in the (weights-only) unpickler
        raise usage_error("--model", "a model.pt written by 'iclr26-socp-gnn fit'",
                          f"{str(path)!r} ({type(err).__name__})") from None
    return model


def _nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _evaluate(args) -> int:
    (out,) = output_paths(args, "evaluation.json")
    model = load_model(args.model)
    ds = _dataset(args.data)
    for option, asked in (("--project", args.project), ("--prox-step", args.prox_step is not None)):
        if asked and model.task != "solution":
            raise usage_error(option, "a solution model (projection restores predicted solutions)",
                              f"a {model.task} model in {str(args.model)!r}")
    device = resolve_device(args.device)
    metrics = evaluate(model, list(ds), device=device, project=args.project, prox_step=args.prox_step)
    metrics.update({f"timing_{k}": v for k, v in inference_timing(model, list(ds)[: args.n_timing], device).items()})
    for k, v in metrics.items():
        print(f"{k:28s} {v:.6g}")
    write_json_atomic(out, metrics)
    print(f"-> {out}")
    return 0


def _opf(args) -> int:
    from .grid import bus_balance_residual, opf_dataset

    (out,) = output_paths(args, "opf.json")
    device = resolve_device(args.device)
    ds = opf_dataset(args.case, args.n_instances, seed=args.seed, n_jobs=args.jobs)
    items = list(ds)
    n_test = max(1, len(items) // 5)
    train, test = items[:-n_test], items[-n_test:]
    print(f"{args.case}: {len(items)} solved SOC-OPF instances ({ds.meta['discarded']} discarded), "
          f"mean Clarabel solve {ds.meta['mean_solve_ms']:.2f} ms; train {len(train)}, test {len(test)}")
    table = {}
    for kind in progress(("gnn", "mlp"), desc="models", quiet=args.quiet):
        torch.manual_seed(args.seed)
        model = build_model(kind, "solution", hidden=args.hidden if kind == "gnn" else None, layers=args.layers,
                            example=train[0][0])
        fit(model, train, epochs=args.epochs, seed=args.seed, device=device, scaling="variable",
            progress=functools.partial(progress, desc=f"{kind} epochs", quiet=args.quiet))
        met = evaluate(model, test, device=device)
        preds = predict(model, test, device=device)
        met["bus_balance_residual"] = sum(bus_balance_residual(P, x) for (P, _), x in zip(test, preds)) / len(test)
        met["params"] = count_parameters(model)
        table[kind] = met
        print(f"{kind:4s} params {met['params']:8d}  rel MSE {met['rel_mse']:.4f}  objective gap "
              f"{met['objective_gap']:.4f}  bus residual {met['bus_balance_residual']:.4f}")
    write_json_atomic(out, {"case": args.case, **table})
    print(f"-> {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``iclr26-socp-gnn``."""
    parser = Parser(prog="iclr26-socp-gnn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    g = sub.add_parser("generate", parents=[common],
                       help="generate and label random SOCPs with Clarabel; writes dataset.json")
    g.add_argument("--task", choices=("feasibility", "objective", "solution"), default="feasibility")
    g.add_argument("--n-instances", type=positive_int, default=3000)
    g.add_argument("--n", type=positive_int, default=10)
    g.add_argument("--m", type=positive_int, default=5)
    g.add_argument("--k", type=positive_int, default=3)
    g.add_argument("--p", type=float, default=2.0)
    g.add_argument("--jobs", type=positive_int, default=1, help="worker processes for the solver")
    g.set_defaults(handler=_generate)

    t = sub.add_parser("fit", aliases=["train"], parents=[common],
                       help="train the GNN (or the MLP baseline) on a generated dataset; writes model.pt")
    t.add_argument("--data", type=existing_file, required=True, help="dataset.json written by generate")
    t.add_argument("--model", choices=("gnn", "gnn-coneblind", "mlp"), default="gnn")
    t.add_argument("--hidden", type=positive_int, default=64)
    t.add_argument("--layers", type=positive_int, default=4)
    t.add_argument("--mlp-width", type=positive_int, default=512)
    t.add_argument("--epochs", type=positive_int, default=300)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--batch-size", type=positive_int, default=64)
    t.set_defaults(handler=_fit)

    e = sub.add_parser("evaluate", aliases=["eval"], parents=[common],
                       help="evaluate a fitted model on a dataset; writes evaluation.json")
    e.add_argument("--model", type=existing_file, required=True, help="model.pt written by fit")
    e.add_argument("--data", type=existing_file, required=True, help="dataset.json written by generate")
    e.add_argument("--n-timing", type=positive_int, default=50, help="instances timed against Clarabel")
    e.add_argument("--project", action="store_true",
                   help="also restore every predicted solution to feasibility (one Clarabel projection each) and "
                        "report the projected metrics")
    e.add_argument("--prox-step", type=_nonnegative_float, default=None, metavar="STEP",
                   help="also restore every predicted solution by the proximal projection proj(x̂ − STEP·c) "
                        "(the objective enters; the benchmark uses 1) and report the prox_* metrics")
    e.set_defaults(handler=_evaluate)

    o = sub.add_parser("opf", parents=[common],
                       help="SOC-OPF on a PYPOWER case: solve, then train GNN vs MLP; writes opf.json")
    o.add_argument("--case", default="case14")
    o.add_argument("--n-instances", type=positive_int, default=500)
    o.add_argument("--epochs", type=positive_int, default=100)
    o.add_argument("--hidden", type=positive_int, default=64)
    o.add_argument("--layers", type=positive_int, default=4)
    o.add_argument("--jobs", type=positive_int, default=1)
    o.set_defaults(handler=_opf)

    add_bench_command(sub, [*BENCHMARKS, GRID])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
