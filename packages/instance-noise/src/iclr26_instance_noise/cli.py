"""``iclr26-instance-noise``: generate noisy labels, estimate rho, fit a corrected learner, run the benchmarks.

    iclr26-instance-noise generate --data breast_cancer --kind region --rho-max 0.45 --seed 0 --out run
    iclr26-instance-noise estimate --in run/noisy.npz --method posterior --out run
    iclr26-instance-noise fit --in run/noisy.npz --learner gbm --mode forward --rho run/rho.npy --out run
    iclr26-instance-noise bench --scale quick

Files are written with fixed names inside the ``--out`` folder: ``noisy.npz``, ``rho.npy``, ``fit.json``.
"""
from __future__ import annotations

import argparse
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
    fraction_arg,
    one_line,
    output_paths,
    positive_int,
    run,
    usage_error,
)
from iclr26_shared.datasets import stratified_split_indices

from . import data
from .bench import BENCHMARKS
from .checks import as_binary_labels, check_rho
from .estimate import majority_vote, rho_annotators, rho_constant, rho_knn, rho_posterior
from .metrics import clean_accuracy, clean_log_loss, rho_mae
from .models import CorrectedGradientBoosting, CorrectedLogisticRegression, CorrectedMLP
from .noise import KINDS, instance_only_flip

EMBEDDED = {"breast_cancer": data.breast_cancer, "wine": data.wine_binary, "digits": data.digits_odd_even,
            "tones": data.tones}



def _load_input(spec: str, data_root: pathlib.Path | None):
    """(X, y) of an embedded dataset name, a user .npz/.csv, or a folder of two .wav class subfolders."""
    if spec in EMBEDDED:
        return EMBEDDED[spec]()
    path = pathlib.Path(spec)
    if not path.exists() and data_root is not None:
        path = pathlib.Path(data_root) / spec
    expected = f"one of {', '.join(sorted(EMBEDDED))}, a readable .npz/.csv file (X, y) or a .wav folder"
    if not path.exists():
        raise usage_error("--data", expected, repr(spec))
    try:
        if path.is_dir():
            X, y, _ = data.load_wav_folders(path)
            return X, y
        table = data.load_table(path)
        return table["X"], table["y"]
    except Exception as err:
        raise usage_error("--data", expected, f"{spec!r} ({one_line(err)})") from err


def _table(args) -> dict:
    """The arrays of ``--in`` (a .npz/.csv with X and y_noisy, y or y_multi); errors name ``--in``."""
    try:
        table = data.load_table(args.input)
        if "X" not in table or not {"y_noisy", "y", "y_multi"} & set(table):
            raise ValueError(f"arrays {sorted(table)}")
    except Exception as err:
        raise usage_error("--in", "a .npz/.csv with X and y_noisy (or y, or y_multi)",
                          f"{args.input.name} ({one_line(err)})") from err
    return table


def cmd_generate(args) -> int:
    (out,) = output_paths(args, "noisy.npz")
    X, y = _load_input(args.data, args.data_root)
    y = as_binary_labels(y, "y")
    y_noisy, rho = instance_only_flip(X, y, kind=args.kind, rho_max=args.rho_max, rate=args.rate,
                                      random_state=args.seed)
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, X=np.asarray(X, dtype=np.float64), y_clean=y, y_noisy=y_noisy, rho=rho)
    print(f"{args.data}: {len(y)} instances, kind={args.kind}; mean rho {rho.mean():.3f}, "
          f"realised noise rate {np.mean(y_noisy != y):.3f} -> {out}")
    return 0


def _noisy_labels(table: dict) -> np.ndarray:
    if "y_noisy" in table:
        return table["y_noisy"]
    if "y_multi" in table:
        return majority_vote(table["y_multi"])
    return table["y"]


def cmd_estimate(args) -> int:
    (out,) = output_paths(args, "rho.npy")
    table = _table(args)
    X, y_noisy = table["X"], _noisy_labels(table)
    if args.method == "posterior":
        rho = rho_posterior(X, y_noisy, cv=args.cv, random_state=args.seed)
    elif args.method == "knn":
        rho = rho_knn(X, y_noisy, k=args.k)
    elif args.method == "constant":
        rho = rho_constant(X, y_noisy, random_state=args.seed)
    else:
        if "y_multi" not in table:
            raise usage_error("--in", "a 'y_multi' array of annotator votes (--method annotators)",
                              f"{args.input.name} without one")
        rho = rho_annotators(table["y_multi"])
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        np.save(fh, rho)
    summary = f"{args.method}: mean rho_hat {rho.mean():.3f}"
    if "rho" in table:
        mae = rho_mae(np.minimum(rho, 0.45), table["rho"])
        summary += f", MAE against the true rho {mae:.4f} (rho_hat clipped to 0.45)"
    print(f"{summary} -> {out}")
    return 0


RHO_NAMES = ("posterior", "knn", "constant", "oracle")


def _rho_arg(text: str) -> str | pathlib.Path:
    """argparse type of ``--rho``: an estimator name, ``oracle``, or an existing ``.npy`` file."""
    return text if text in RHO_NAMES else existing_file(text)


def _rho_argument(value: str | pathlib.Path | None, table: dict):
    if value is None or value in ("posterior", "knn", "constant"):
        return value or "posterior"
    if value == "oracle":
        if "rho" not in table:
            raise usage_error("--rho", "oracle only with an input holding a 'rho' array", "an --in without one")
        return table["rho"]
    try:
        rho = np.load(value, allow_pickle=False)
        if not isinstance(rho, np.ndarray) or rho.ndim != 1:
            raise ValueError(f"shape {getattr(rho, 'shape', None)}")
    except Exception as err:
        raise usage_error("--rho", "posterior, knn, constant, oracle or a .npy of one rho per instance",
                          f"{value.name} ({one_line(err)})") from err
    return rho


def cmd_fit(args) -> int:
    (out,) = output_paths(args, "fit.json")
    table = _table(args)
    X, y_noisy = np.asarray(table["X"], dtype=np.float64), as_binary_labels(_noisy_labels(table))
    clean = "y_clean" in table
    y_eval = as_binary_labels(table["y_clean"], "y_clean") if clean else y_noisy
    rho = None if args.mode == "none" else _rho_argument(args.rho, table)
    split = stratified_split_indices(y_eval, {"train": 1.0 - args.test_frac, "test": args.test_frac}, seed=args.seed)
    tr, te = split["train"], split["test"]
    if isinstance(rho, np.ndarray):
        try:  # the whole array, not only the training rows
            rho = check_rho(rho, len(y_noisy))[tr]
        except ValueError as err:
            raise usage_error("--rho", f"{len(y_noisy)} finite flip probabilities in [0, 0.5) (one per instance "
                              f"of --in)", one_line(err)) from err
    mode = args.mode
    if args.learner == "linear":
        model = CorrectedLogisticRegression(mode=mode, lam=args.lam, rho=rho, random_state=args.seed)
    elif args.learner == "gbm":
        model = CorrectedGradientBoosting(mode=mode, rho=rho, random_state=args.seed)
    else:
        model = CorrectedMLP(mode=mode, rho=rho, random_state=args.seed, device=args.device)
    model.fit(X[tr], y_noisy[tr])
    p = model.predict_proba(X[te])[:, 1]
    result = {"learner": args.learner, "mode": mode, "rho": str(args.rho or "posterior") if rho is not None else None,
              "evaluation": "clean labels" if clean else "noisy labels", "n_test": len(te),
              "accuracy": clean_accuracy(y_eval[te], (p > 0.5).astype(int)), "log_loss": clean_log_loss(y_eval[te], p)}
    tag = "clean-label evaluation" if clean else "noisy-label evaluation (no clean labels in the input)"
    print(f"{args.learner}/{mode}: accuracy {result['accuracy']:.4f}, log-loss {result['log_loss']:.4f} "
          f"on {len(te)} test instances [{tag}]")
    write_json_atomic(out, result)
    print(f"  -> {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-instance-noise", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    f = sub.add_parser("generate", aliases=["flip"], parents=[common],
                       help="draw instance-only label noise: noisy.npz with X, y_clean, y_noisy, rho")
    f.add_argument("--data", default="breast_cancer",
                   help=f"{', '.join(EMBEDDED)}, a .npz/.csv file (X, y) or a folder of two .wav class subfolders")
    f.add_argument("--kind", choices=KINDS, default="region")
    f.add_argument("--rho-max", type=float, default=0.45)
    f.add_argument("--rate", type=float, default=None, help="target mean flip rate (default: the kind's own)")
    f.set_defaults(handler=cmd_generate)

    e = sub.add_parser("estimate", parents=[common], help="estimate rho(x) (cross-fitted): rho.npy")
    e.add_argument("--in", dest="input", type=existing_file, required=True,
                   help=".npz with X and y_noisy (or y, or y_multi)")
    e.add_argument("--method", choices=("posterior", "knn", "constant", "annotators"), default="posterior")
    e.add_argument("--cv", type=positive_int, default=5)
    e.add_argument("--k", type=positive_int, default=15)
    e.set_defaults(handler=cmd_estimate)

    t = sub.add_parser("fit", parents=[common],
                       help="fit a corrected learner; clean-test accuracy and log-loss: fit.json")
    t.add_argument("--in", dest="input", type=existing_file, required=True)
    t.add_argument("--learner", choices=("linear", "gbm", "mlp"), default="linear")
    t.add_argument("--mode", choices=("backward", "forward", "none"), default="forward")
    t.add_argument("--rho", type=_rho_arg, default=None,
                   help="posterior (default), knn, constant, oracle, or a .npy file")
    t.add_argument("--test-frac", type=fraction_arg, default=0.3)
    t.add_argument("--lam", type=float, default=1e-2, help="L2 strength of the linear learner")
    t.set_defaults(handler=cmd_fit)

    add_bench_command(sub, BENCHMARKS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-instance-noise``; returns the exit code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
