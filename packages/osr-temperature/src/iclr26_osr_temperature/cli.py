"""``iclr26-osr-temperature``: render a schedule, fit on an OSR split, evaluate scores, run the benchmark.

Files land in the ``--out`` folder: ``render --plot`` -> ``schedule.png``, ``fit`` -> ``run.json``.
"""
from __future__ import annotations

import argparse
import functools
import json
import pathlib
import sys
from collections.abc import Sequence

import numpy as np
import torch
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import (
    Parser,
    add_bench_command,
    common_options,
    existing_file,
    output_paths,
    progress,
    run,
    usage_error,
)
from iclr26_shared.device import resolve_device

from . import data, metrics, schedules
from .bench import BENCHMARK
from .models import MLP
from .train import evaluate_ce, evaluate_knn, fit_ce, fit_supcon

TAUS = {"ce": (0.5, 2.0, 1.0), "supcon": (0.1, 0.4, 0.1)}  # (tau_min, tau_max, constant baseline)


def _schedule_from(args, n_epochs: int, tau_constant: float | None = None) -> schedules.Schedule:
    name = args.schedule if hasattr(args, "schedule") else args.name
    if name == "constant":
        return schedules.Constant(tau_constant if tau_constant is not None else args.tau)
    kwargs = {"tau_min": args.tau_min, "tau_max": args.tau_max}
    if name == "random":
        return schedules.RandomUniform(seed=args.seed, **kwargs)
    kwargs["n_epochs"] = n_epochs
    if name in ("gcos", "gcosm"):
        kwargs.update(period=args.period if args.period is not None else 200, shift=args.shift)
    elif name in ("negcos", "linear", "lineardec") and args.period is not None:
        kwargs["period"] = args.period
    return schedules.get(name, **kwargs)


def _load_array(option: str, path: pathlib.Path) -> np.ndarray:
    """The 1-D numeric array in the ``.npy`` file given to ``option``."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise usage_error(option, "a .npy file holding a 1-D numeric array", f"{str(path)!r} ({err})") from None
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 or not np.issubdtype(arr.dtype, np.number):
        got = getattr(arr, "shape", type(arr).__name__)
        raise usage_error(option, "a 1-D numeric array", f"{got} in {str(path)!r}")
    return arr


def cmd_render(args) -> int:
    paths = output_paths(args, "schedule.png") if args.plot else []
    sched = _schedule_from(args, args.epochs)
    taus = sched.as_array(args.epochs)
    print("epoch,tau")
    for t, tau in enumerate(taus):
        print(f"{t},{tau:.10g}")
    if paths:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise usage_error("--plot", "matplotlib installed", "no matplotlib") from None
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(np.arange(taus.size), taus)
        ax.set(xlabel="epoch t", ylabel="tau", title=repr(sched))
        ax.title.set_fontsize(6)
        fig.tight_layout()
        with atomic_path(paths[0]) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
        plt.close(fig)
        print(f"plot -> {paths[0]}", file=sys.stderr)
    return 0


def cmd_fit(args) -> int:
    (target,) = output_paths(args, "run.json")
    if args.data == "digits":
        task = data.digits_osr(args.split)
    elif args.data == "blobs":
        task = data.make_blobs_osr(args.split)
    else:
        task = data.cifar_osr(args.split, variant=args.data, root=args.data_root)
    device = resolve_device(args.device)
    tau_min, tau_max, tau_const = TAUS[args.loss]
    args.tau_min = tau_min if args.tau_min is None else args.tau_min
    args.tau_max = tau_max if args.tau_max is None else args.tau_max
    sched = _schedule_from(args, max(args.epochs - 1, 1), tau_const if args.tau is None else args.tau)
    torch.manual_seed(args.seed)
    X = task["Xtr"].reshape(len(task["Xtr"]), -1)
    task = {**task, **{k: task[k].reshape(len(task[k]), -1) for k in ("Xtr", "Xte_known", "Xte_unknown")}}
    n_known = len(task["known_classes"])
    common = {"epochs": args.epochs, "lr": args.lr, "seed": args.seed, "start": 0, "batch_size": args.batch_size,
              "progress": functools.partial(progress, desc="epochs", quiet=args.quiet)}
    if args.loss == "ce":
        model = MLP(X.shape[1], (128, 128), n_known).to(device)
        history = fit_ce(model, X, task["ytr"], sched, **common)
        report = evaluate_ce(model, task)
    else:
        model = MLP(X.shape[1], (128, 128), 64).to(device)
        history = fit_supcon(model, X, task["ytr"], sched, **common)
        report = evaluate_knn(model, task, k=args.k)
    print(f"{args.data} split {args.split} {args.loss} {sched!r}: accuracy {report['accuracy']:.4f}, "
          f"AUROC {report['auroc']:.4f}, OSCR {report['oscr']:.4f}")
    write_json_atomic(target, {"data": args.data, "split": args.split, "loss": args.loss, "seed": args.seed,
                               "schedule": repr(sched), "epochs": args.epochs, **report,
                               "temperatures": history.temperatures, "losses": history.losses})
    print(f"  -> {target}")
    return 0


def cmd_evaluate(args) -> int:
    if (args.known_preds is None) != (args.known_labels is None):
        raise usage_error("--known-preds/--known-labels", "both or neither",
                          "--known-preds only" if args.known_labels is None else "--known-labels only")
    known = _load_array("--known-scores", args.known_scores)
    unknown = _load_array("--unknown-scores", args.unknown_scores)
    out = {"auroc": metrics.auroc(known, unknown)}
    if args.known_preds is not None:
        preds, labels = _load_array("--known-preds", args.known_preds), _load_array("--known-labels", args.known_labels)
        out["oscr"] = metrics.oscr(known, unknown, preds, labels)
        out["accuracy"] = float(np.mean(preds == labels))
    print(json.dumps(out))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-osr-temperature", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    s = sub.add_parser("render", aliases=["schedule"], parents=[common_options()],
                       help="print a temperature schedule as epoch,tau CSV; --plot also writes schedule.png")
    s.add_argument("--name", default="negcos", choices=schedules.NAMES)
    s.add_argument("--tau", type=float, default=1.0, help="tau of 'constant' (default: 1.0)")
    s.add_argument("--tau-min", type=float, default=0.5)
    s.add_argument("--tau-max", type=float, default=2.0)
    s.add_argument("--epochs", type=int, default=60, help="N: the schedule's length; rows t = 0..N")
    s.add_argument("--period", type=float, default=None, help="T (gcos default 200; negcos default: one rise)")
    s.add_argument("--shift", type=float, default=1.0, help="gcos shift s in [0, 1]")
    s.add_argument("--plot", action="store_true", help="also write schedule.png into --out (needs matplotlib)")
    s.set_defaults(handler=cmd_render)

    t = sub.add_parser("fit", aliases=["train"], parents=[common_options()],
                       help="train on an OSR split; print accuracy/AUROC/OSCR; writes run.json")
    t.add_argument("--data", default="digits", choices=["digits", "blobs", "cifar10", "cifar+10", "cifar+50"])
    t.add_argument("--split", type=int, default=0, help="OSR split index 0..4")
    t.add_argument("--loss", default="ce", choices=["ce", "supcon"])
    t.add_argument("--schedule", default="negcos", choices=schedules.NAMES)
    t.add_argument("--tau", type=float, default=None, help="constant tau (default: 1.0 for ce, 0.1 for supcon)")
    t.add_argument("--tau-min", type=float, default=None, help="(default: 0.5 for ce, 0.1 for supcon)")
    t.add_argument("--tau-max", type=float, default=None, help="(default: 2.0 for ce, 0.4 for supcon)")
    t.add_argument("--period", type=float, default=None)
    t.add_argument("--shift", type=float, default=1.0)
    t.add_argument("--epochs", type=int, default=60)
    t.add_argument("--lr", type=float, default=0.05)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--k", type=int, default=100, help="kNN neighbours for supcon scoring")
    t.set_defaults(handler=cmd_fit)

    e = sub.add_parser("evaluate", parents=[common_options()],
                       help="AUROC (and OSCR) from saved .npy scores, printed as JSON")
    e.add_argument("--known-scores", type=existing_file, required=True, help="(n,) scores of known test samples")
    e.add_argument("--unknown-scores", type=existing_file, required=True, help="(m,) scores of unknown test samples")
    e.add_argument("--known-preds", type=existing_file, default=None, help="(n,) predicted labels of the known")
    e.add_argument("--known-labels", type=existing_file, default=None, help="(n,) true labels of the known")
    e.set_defaults(handler=cmd_evaluate)

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
