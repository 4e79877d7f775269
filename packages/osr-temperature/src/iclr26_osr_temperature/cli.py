"""``iclr26-osr-temperature``: print/plot a schedule, train on an OSR split, evaluate scores, run the benchmark."""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Sequence

import numpy as np
import torch
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import Parser, add_bench_command, call_handler, common_options
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


def _refuse_overwrite(path: pathlib.Path, force: bool) -> None:
    if path.exists() and not force:
        raise SystemExit(f"{path} exists; pass --force to overwrite it")


def cmd_schedule(args) -> int:
    sched = _schedule_from(args, args.epochs)
    taus = sched.as_array(args.epochs)
    print("epoch,tau")
    for t, tau in enumerate(taus):
        print(f"{t},{tau:.10g}")
    if args.plot:
        path = pathlib.Path(args.plot)
        _refuse_overwrite(path, args.force)
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed; no plot written", file=sys.stderr)
            return 0
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(np.arange(taus.size), taus)
        ax.set(xlabel="epoch t", ylabel="tau", title=repr(sched))
        ax.title.set_fontsize(6)
        fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=100)
        plt.close(fig)
        print(f"plot -> {path}", file=sys.stderr)
    return 0


def cmd_train(args) -> int:
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
    common = {"epochs": args.epochs, "lr": args.lr, "seed": args.seed, "start": 0, "batch_size": args.batch_size}
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
    if args.out_json:
        path = pathlib.Path(args.out_json)
        _refuse_overwrite(path, args.force)
        write_json_atomic(path, {"data": args.data, "split": args.split, "loss": args.loss, "seed": args.seed,
                                 "schedule": repr(sched), "epochs": args.epochs, **report,
                                 "temperatures": history.temperatures, "losses": history.losses})
    return 0


def cmd_evaluate(args) -> int:
    known, unknown = np.load(args.known_scores), np.load(args.unknown_scores)
    out = {"auroc": metrics.auroc(known, unknown)}
    if (args.known_preds is None) != (args.known_labels is None):
        raise SystemExit("--known-preds and --known-labels go together")
    if args.known_preds is not None:
        preds, labels = np.load(args.known_preds), np.load(args.known_labels)
        out["oscr"] = metrics.oscr(known, unknown, preds, labels)
        out["accuracy"] = float(np.mean(preds == labels))
    print(json.dumps(out))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-osr-temperature", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    s = sub.add_parser("schedule", help="print a temperature schedule as epoch,tau CSV")
    s.add_argument("--name", default="negcos", choices=schedules.NAMES)
    s.add_argument("--tau", type=float, default=1.0, help="tau of 'constant' (default: 1.0)")
    s.add_argument("--tau-min", type=float, default=0.5)
    s.add_argument("--tau-max", type=float, default=2.0)
    s.add_argument("--epochs", type=int, default=60, help="N: the schedule's length; rows t = 0..N")
    s.add_argument("--period", type=float, default=None, help="T (gcos default 200; negcos default: one rise)")
    s.add_argument("--shift", type=float, default=1.0, help="gcos shift s in [0, 1]")
    s.add_argument("--seed", type=int, default=0, help="seed of 'random'")
    s.add_argument("--plot", default=None, help="also write a PNG plot here (needs matplotlib)")
    s.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    s.set_defaults(handler=cmd_schedule)

    t = sub.add_parser("train", parents=[common_options()], help="train on an OSR split; print accuracy/AUROC/OSCR")
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
    t.add_argument("--out-json", default=None, help="write the run (metrics, temperatures, losses) as JSON here")
    t.add_argument("--force", action="store_true", help="overwrite an existing --out-json file")
    t.set_defaults(handler=cmd_train)

    e = sub.add_parser("evaluate", help="AUROC (and OSCR) from saved .npy scores")
    e.add_argument("--known-scores", required=True)
    e.add_argument("--unknown-scores", required=True)
    e.add_argument("--known-preds", default=None)
    e.add_argument("--known-labels", default=None)
    e.set_defaults(handler=cmd_evaluate)

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return call_handler(args)


if __name__ == "__main__":
    sys.exit(main())
