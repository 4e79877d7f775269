"""``iclr26-perm-compress``: compress, error-scaling, lth, dataset, scaling-law, bench (and reproduce).

Every command writes fixed file names into the ``--out`` folder: ``compress`` -> ``support.npy``,
``weights.npy``; ``error-scaling``, ``lth``, ``dataset`` -> ``<command>.csv`` and ``<command>.png``;
``scaling-law`` -> ``scaling_law.csv`` and ``scaling_law.json``.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path
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

from .bench import BENCHMARKS
from .compressor import MomentCompressor
from .data import load_objects
from .moments import tchakaloff_bound
from .plots import plot_curves, plot_error_scaling, write_csv


def _load(option: str, path: pathlib.Path) -> np.ndarray:
    """``load_objects(path)``, its errors naming ``option``."""
    try:
        return load_objects(path)
    except (ValueError, TypeError, OSError, EOFError) as err:
        raise usage_error(option, "a finite .npy, .npz or .csv array (rows = objects)",
                          f"{str(path)!r} ({' '.join(str(err).split())})") from None


def _device(args) -> str:
    from iclr26_shared.device import resolve_device

    return str(resolve_device(args.device))


def _save_npy(path: pathlib.Path, array: np.ndarray) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array)


def cmd_compress(args) -> int:
    outs = output_paths(args, "support.npy", "weights.npy")
    W = _load("--in", args.input)
    weights = None if args.weights is None else _load("--weights", args.weights).ravel()
    start = time.perf_counter()
    mc = MomentCompressor(k=args.k, target_size=args.target, random_state=args.seed).fit(W, sample_weight=weights)
    seconds = time.perf_counter() - start
    _save_npy(outs[0], mc.support_)
    _save_npy(outs[1], mc.weights_)
    print(f"compressed {W.shape[0]} objects in R^{W.shape[1]} to {mc.support_.size} "
          f"(Tchakaloff bound N = {tchakaloff_bound(W.shape[1], args.k)}, k = {args.k}); "
          f"relative moment error {mc.moment_error_:.2e}; {seconds:.2f} s")
    print(f"  -> {outs[0]}\n  -> {outs[1]}")
    return 0


def cmd_error_scaling(args) -> int:
    from .experiments import error_scaling

    out, png = output_paths(args, "error_scaling.csv", "error_scaling.png")
    res = error_scaling(args.m, args.k, args.d, ratio=args.ratio, trials=args.trials, seed=args.seed,
                        progress=lambda it, **kw: progress(it, quiet=args.quiet, **kw))
    write_csv(out, res["records"])
    plot_error_scaling(res, png)
    for key, slope in res["slopes"].items():
        print(f"{key}: fitted slope {slope:.3f} (reference -((k+1)/m + 0.5) = {res['reference'][key]:.3f})")
    print(f"  -> {out}\n  -> {png}")
    return 0


def _curve_rows(curves: dict) -> list[dict]:
    return [{"method": name, "step": step, "test_mse": value}
            for name, curve in curves.items() for step, value in curve]


def _write_curves(out: pathlib.Path, png: pathlib.Path, curves: dict, title: str) -> None:
    """Writes the curves as CSV at ``out`` and as a PNG at ``png``."""
    write_csv(out, _curve_rows(curves))
    plot_curves(curves, png, title)
    print(f"  -> {out}\n  -> {png}")


def cmd_lth(args) -> int:
    from .experiments import lth_experiment

    outs = output_paths(args, "lth.csv", "lth.png")
    res = lth_experiment(width=args.width, target_width=args.target, k=args.k, n_train=args.n_train,
                         epochs=args.epochs, optimizer=args.optimizer, lr=args.lr, log_every=args.log_every,
                         seed=args.seed, device=_device(args))
    for name in res["curves"]:
        print(f"{name:16s} width {res['widths'][name]:6d}  deviation {res['deviation'][name]:.4f}  "
              f"init RMSE to full {res['initial_rmse_to_full'][name]:.4f}  "
              f"final test MSE {res['curves'][name][-1][1]:.5f}")
    _write_curves(*outs, res["curves"], f"dynamical LTH ({args.optimizer})")
    return 0


def cmd_dataset(args) -> int:
    from .experiments import dataset_experiment

    outs = output_paths(args, "dataset.csv", "dataset.png")
    res = dataset_experiment(d=args.d, target_size=args.target, k=args.k, steps=args.steps, lr=args.lr,
                             seed=args.seed, device=_device(args))
    for name, value in res["final"].items():
        print(f"{name:12s} {res['sizes'][name]:6d} points  final test MSE {value:.5f}")
    _write_curves(*outs, res["curves"], f"dataset compression (d = {args.d} -> {args.target})")
    return 0


def cmd_scaling_law(args) -> int:
    from .experiments import scaling_law_experiment

    out, fitted = output_paths(args, "scaling_law.csv", "scaling_law.json")
    res = scaling_law_experiment(ds=args.d, k=args.k, steps=args.steps, seed=args.seed, device=_device(args))
    write_csv(out, res["records"])
    with atomic_path(fitted) as tmp:
        tmp.write_text(json.dumps({k: v for k, v in res.items() if k != "records"}, indent=2) + "\n", encoding="utf-8")
    print(f"alpha(full) = {res['alpha_full']:.3f}, alpha(compressed, d' = 16 sqrt d) = {res['alpha_compressed']:.3f}, "
          f"ratio {res['ratio']:.2f} (paper: about 2)")
    print(f"  -> {out}\n  -> {fitted}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``iclr26-perm-compress``."""
    parser = Parser(prog="iclr26-perm-compress",
                    description="Moment-matching compression of permutation-invariant functions.")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, text: str, handler) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common_options()], help=text, description=text)
        p.set_defaults(handler=handler)
        return p

    p = command("compress", "compress an array of objects (rows) by moment matching; "
                "writes support.npy (kept row indices) and weights.npy", cmd_compress)
    p.add_argument("--in", dest="input", type=existing_file, required=True,
                   help=".npy, .npz or .csv array of shape (d, m)")
    p.add_argument("--weights", type=existing_file, default=None,
                   help="optional initial weights (d,) as .npy/.npz/.csv")
    p.add_argument("--k", type=int, default=5, help="order of the matched moments (default 5)")
    p.add_argument("--target", type=int, default=None, help="support size d' (default: the Tchakaloff bound)")

    p = command("error-scaling", "compression error of the sigmoid benchmark vs d (Fig. 2); "
                "writes error_scaling.csv and error_scaling.png", cmd_error_scaling)
    p.add_argument("--m", type=int, nargs="+", default=[2])
    p.add_argument("--k", type=int, nargs="+", default=[2, 4])
    p.add_argument("--d", type=int, nargs="+", default=[2000, 4000, 8000, 16000])
    p.add_argument("--ratio", type=float, default=0.1)
    p.add_argument("--trials", type=int, default=5)

    p = command("lth", "dynamical lottery ticket: full vs compressed vs random sub-network (Fig. 4); "
                "writes lth.csv (test-MSE curves) and lth.png", cmd_lth)
    p.add_argument("--width", type=int, default=4000)
    p.add_argument("--target", type=int, default=400)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--n-train", type=int, default=20000)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--optimizer", default="adam", choices=["sgd", "adam", "adamw", "rmsprop", "rprop", "adamax"])
    p.add_argument("--lr", type=float, default=1e-3)

    p = command("dataset", "dataset compression: full vs compressed vs random subset (Fig. 3); "
                "writes dataset.csv (test-MSE curves) and dataset.png", cmd_dataset)
    p.add_argument("--d", type=int, default=5000)
    p.add_argument("--target", type=int, default=500)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--lr", type=float, default=1e-2)

    p = command("scaling-law", "scaling exponent with d' = 16 sqrt(d) dataset compression (Fig. 5); "
                "writes scaling_law.csv (the sweep) and scaling_law.json (fitted exponents)", cmd_scaling_law)
    p.add_argument("--d", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000])
    p.add_argument("--k", type=int, default=6)
    p.add_argument("--steps", type=int, default=400)

    add_bench_command(sub, BENCHMARKS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
