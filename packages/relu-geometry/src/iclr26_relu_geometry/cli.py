"""``iclr26-relu-geometry``: generate, fit, evaluate, diagnose, depth, the three sweeps, perf and
``bench``/``reproduce``.

Every command writes fixed file names into the ``--out`` folder: ``generate`` -> ``X.npy``, ``fit`` ->
``run.json``, ``diagnose`` -> ``diagnose.json`` and ``diagnose.png``, ``depth`` -> ``depth.npy``, the sweeps ->
``<sweep>.csv``, ``summary.json`` and their plots, ``perf`` -> ``perf.json``. ``fit --X FILE --y FILE`` and
``depth --X FILE`` read a user's own arrays (``.npy`` or comma-separated ``.csv``).
"""
from __future__ import annotations

import argparse
import csv
import json
import pathlib
import sys
from collections.abc import Sequence
from dataclasses import asdict, fields

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

from .activations import activation_report
from .bench import BENCHMARK
from .data import ball_mixture, beta_radial, gaussian_shell, lines
from .depth import halfspace_depth
from .experiments import (
    RunConfig,
    make_data,
    run_alpha_sweep,
    run_experiment,
    run_intrinsic_sweep,
    run_real_vs_gaussian,
)
from .memorisation import kernel_self_influence
from .model import TwoLayerReLU
from .plotting import plot_diagnose, plot_gap_vs_alpha, plot_gap_vs_d, plot_gap_vs_n
from .regularity import shatter_curve
from .sharpness import sharpness


def _floats(text: str) -> tuple[float, ...]:
    return tuple(0.0 if t == "sphere" else float(t) for t in text.split(","))


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.split(","))


def _config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", default="beta", choices=("beta", "mixture", "lines", "gaussian_shell", "digits"))
    p.add_argument("--alpha", type=lambda t: 0.0 if t == "sphere" else float(t), default=0.0,
                   help="Beta(1, α) radius; 0 or 'sphere' puts the data on the unit sphere")
    p.add_argument("--d", type=int, default=5)
    p.add_argument("--m", type=int, default=1, help="intrinsic dimension of each ball (family mixture)")
    p.add_argument("--J", type=int, default=20, help="number of balls (mixture, lines)")
    p.add_argument("--n", type=int, default=512)


def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--eta", type=float, default=0.2)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--noise", type=float, default=0.5)
    p.add_argument("--n-test", type=int, default=2000)


def load_array(path: pathlib.Path, option: str, ndim: int) -> np.ndarray:
    """The finite float64 array of ``ndim`` (1: ``(n,)``, 2: ``(n, d)``) dimensions in a ``.npy`` or
    comma-separated ``.csv`` file; a one-column array read for ``ndim = 1`` becomes a vector.

    Raises:
        ValueError: one line naming ``option``: another suffix, an unreadable file, a wrong shape or NaN/inf.
    """
    shape = "(n,)" if ndim == 1 else "(n, d)"
    if path.suffix not in (".npy", ".csv"):
        raise usage_error(option, "a .npy or .csv file", repr(str(path)))
    try:
        if path.suffix == ".npy":
            arr = np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)
        else:
            arr = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=ndim)
    except (OSError, ValueError, TypeError) as err:
        raise usage_error(option, f"a numeric array {shape} in {path.suffix}",
                          f"{str(path)!r} ({' '.join(str(err).split())[:80]})") from None
    if ndim == 1 and arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != ndim:
        raise usage_error(option, f"an array of shape {shape}", f"shape {arr.shape} in {str(path)!r}")
    if not np.all(np.isfinite(arr)):
        raise usage_error(option, "finite values", f"{np.count_nonzero(~np.isfinite(arr))} NaN/inf entries")
    return arr


def _user_data(args, device) -> tuple:
    """``(X, y, X_test, y_test, None)`` float32 tensors from ``--X/--y`` (and ``--X-test/--y-test``), checked."""
    if args.y is None:
        raise usage_error("--y", "a targets file (n,) beside --X", "none")
    X, y = load_array(args.X, "--X", 2), load_array(args.y, "--y", 1)
    if X.shape[0] < 2:
        raise usage_error("--X", "at least 2 rows", f"shape {X.shape}")
    if y.shape[0] != X.shape[0]:
        raise usage_error("--y", f"{X.shape[0]} targets, one per row of --X", y.shape[0])
    if (args.X_test is None) != (args.y_test is None):
        raise usage_error("--X-test, --y-test", "both or neither", "only one")
    X_test = y_test = None
    if args.X_test is not None:
        X_test, y_test = load_array(args.X_test, "--X-test", 2), load_array(args.y_test, "--y-test", 1)
        if X_test.shape[1] != X.shape[1]:
            raise usage_error("--X-test", f"{X.shape[1]} columns as --X", f"shape {X_test.shape}")
        if y_test.shape[0] != X_test.shape[0]:
            raise usage_error("--y-test", f"{X_test.shape[0]} targets, one per row of --X-test", y_test.shape[0])
    tensors = [None if a is None else torch.as_tensor(a, dtype=torch.float32, device=device)
               for a in (X, y, X_test, y_test)]
    return (*tensors, None)


def cmd_generate(args) -> int:
    if args.family == "digits":
        raise usage_error("--family", "a generated family (beta, mixture, lines, gaussian_shell)",
                          "'digits' (a real data set: use digits_dataset() in Python)")
    (path,) = output_paths(args, "X.npy")
    rng = np.random.default_rng(args.seed)
    if args.family == "beta":
        X = beta_radial(args.n, args.d, args.alpha, rng, as_numpy=True)
    elif args.family == "mixture":
        X = ball_mixture(args.n, args.d, args.m, args.J, rng=rng, as_numpy=True)
    elif args.family == "lines":
        X = lines(args.n, args.d, args.J, rng=rng, as_numpy=True)
    else:
        X = gaussian_shell(args.n, args.d, rng=rng, as_numpy=True)
    with atomic_path(path) as tmp:
        np.save(tmp, X)
    print(f"{args.family}: X {X.shape}, max ‖x‖ {np.linalg.norm(X, axis=1).max():.4f} -> {path}")
    return 0


def cmd_fit(args) -> int:
    (path,) = output_paths(args, "run.json")
    device = resolve_device(args.device)
    data, files = None, None
    if args.X is not None:
        data = _user_data(args, device)
        files = {k: str(getattr(args, k).resolve()) for k in ("X", "y")}
    elif any(v is not None for v in (args.y, args.X_test, args.y_test)):
        raise usage_error("--X", "a design file beside --y/--X-test/--y-test", "none")
    n, d = tuple(data[0].shape) if data else (args.n, args.d)
    config = RunConfig(family="user" if data else args.family, alpha=args.alpha, d=d, m=args.m, J=args.J, n=n,
                       n_test=args.n_test, width=args.width, eta=args.eta, steps=args.steps, noise=args.noise,
                       seed=args.seed, sharpness_every=args.sharpness_every, init_sharpness=args.init_sharpness,
                       plateau_window=args.plateau_window)
    row, model, hist = run_experiment(config, device, report=True, data=data)
    state = {k: v.detach().cpu().tolist() for k, v in model.state_dict().items()}
    write_json_atomic(path, {"config": asdict(config), "data_files": files, "row": row, "history": hist.to_dict(),
                             "state": state})
    test = f"  test MSE {row['test_mse']:.4f}  noisy gap {row['gap_noisy']:.4f}" if hist.test_mse else ""
    gap = "" if data else (f"  gap {row['gap']:.4f} (clean test MSE {row['test_mse_clean']:.4f} + σ²·(1 − train "
                           f"MSE/noise energy {row['noise_energy']:.4f}))")
    print(f"train MSE {row['train_mse']:.4f}{test}{gap}  sharpness {row['sharpness']:.4f}  2/η "
          f"{row['two_over_eta']:.4f}  dead {row['dead_fraction']:.1%}  steps {row['steps_run']}"
          f"{'  DIVERGED' if row['diverged'] else ''}\n-> {path}")
    return 0


def _load_run(path: pathlib.Path, device):
    """The config, model and training data of the ``run.json`` given to ``--run`` (user data read from its files)."""
    names = {f.name for f in fields(RunConfig)}
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        config = RunConfig(**{k: v for k, v in saved["config"].items() if k in names})
        if config.family == "user":
            X, y = (torch.as_tensor(load_array(pathlib.Path(saved["data_files"][k]), f"--run ({k} file)", nd),
                                    dtype=torch.float32, device=device) for k, nd in (("X", 2), ("y", 1)))
        else:
            X, y = make_data(config, device)[:2]
        model = TwoLayerReLU(X.shape[1], config.width)
        model.load_state_dict({k: torch.tensor(v) for k, v in saved["state"].items()})
    except (ValueError, KeyError, TypeError, AttributeError, RuntimeError) as err:
        if str(err).startswith("--run"):
            raise
        raise usage_error("--run", "a run.json written by 'iclr26-relu-geometry fit'",
                          f"{str(path)!r} ({type(err).__name__})") from None
    return config, model.to(device), X, y


def cmd_evaluate(args) -> int:
    device = resolve_device(args.device)
    config, model, X, y = _load_run(args.run, device)
    lam = sharpness(model, X, y, iters=args.iters, method=args.method, loss_scale=config.loss_scale)
    print(f"sharpness {lam:.6g}  2/η {2 / config.eta:.6g}  ratio {lam * config.eta / 2:.4f}")
    return 0


def cmd_diagnose(args) -> int:
    png, js = output_paths(args, "diagnose.png", "diagnose.json")
    device = resolve_device(args.device)
    config, model, X, _ = _load_run(args.run, device)
    report = activation_report(model, X)
    curve = shatter_curve(X, rng=args.seed)
    influence = kernel_self_influence(model, X, config.eta, config.steps, config.loss_scale)
    summary = {k: v for k, v in report.items() if k != "counts"}
    print(json.dumps(summary, indent=1))
    print("shatter curve (cap mass p: median g̃): " +
          ", ".join(f"{p:g}: {g:.3g}" for p, g in zip(curve["p"], curve["median_g"])))
    print(f"tangent-kernel self-influence of the labels: mean {influence.mean():.4f}, "
          f"median {np.median(influence):.4f}")
    write_json_atomic(js, {"activation_report": report, "shatter_curve": curve,
                           "self_influence": influence.tolist()})
    plot_diagnose({config.family: report}, {config.family: curve}, png)
    print(f"-> {png}, {js}")
    return 0


def cmd_depth(args) -> int:
    (path,) = output_paths(args, "depth.npy")
    X = load_array(args.X, "--X", 2)
    points = X if args.points is None else load_array(args.points, "--points", 2)
    if points.shape[1] != X.shape[1]:
        raise usage_error("--points", f"{X.shape[1]} columns as --X", f"shape {points.shape}")
    depth, method = halfspace_depth(points, X, n_dirs=args.n_dirs, rng=args.seed, return_method=True)
    with atomic_path(path) as tmp:
        np.save(tmp, depth)
    print(f"half-space depth of {points.shape[0]} points in {X.shape[0]} data points, d = {X.shape[1]} ({method}): "
          f"min {depth.min():.4f}  median {np.median(depth):.4f}  max {depth.max():.4f}\n-> {path}")
    return 0


def _write_sweep(out: pathlib.Path, name: str, result: dict, figures: list[pathlib.Path]) -> None:
    rows = result["rows"]
    with atomic_path(out / f"{name}.csv") as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    slopes = {str(k): v for k, v in result.get("slopes", {}).items()}
    write_json_atomic(out / "summary.json", {"sweep": name, "slopes": slopes, "figures": [str(f) for f in figures]})
    for key, fit in slopes.items():
        print(f"{key}: slope {fit['slope']:.3f} (R² {fit['r2']:.3f})")
    print(f"-> {out / f'{name}.csv'}, {out / 'summary.json'}")


def _sweep_out(args, name: str, *figures: str) -> pathlib.Path:
    """The ``--out`` folder, refused when the sweep's CSV, ``summary.json`` or a figure exists without ``--force``."""
    ns = getattr(args, "ns", ())
    output_paths(args, f"{name}.csv", "summary.json", *figures, *(["gap_vs_n.png"] if len(set(ns)) >= 3 else []))
    return pathlib.Path(args.out)


def _train_kwargs(args) -> dict:
    """The GD options every sweep shares, the device resolved and the progress bar attached."""
    return dict(width=args.width, eta=args.eta, steps=args.steps, seeds=args.seeds, noise=args.noise,
                device=resolve_device(args.device), progress=lambda it, **kw: progress(it, quiet=args.quiet, **kw))


def cmd_sweep_alpha(args) -> int:
    out = _sweep_out(args, "sweep_alpha", "gap_vs_alpha.png")
    res = run_alpha_sweep(d=args.d, alphas=args.alphas, ns=args.ns, n_test=args.n_test, **_train_kwargs(args))
    figs = [plot_gap_vs_alpha(res["rows"], max(args.ns), out / "gap_vs_alpha.png")]
    _finish_sweep(args, out, "sweep_alpha", "alpha", res, figs)
    return 0


def cmd_sweep_intrinsic(args) -> int:
    out = _sweep_out(args, "sweep_intrinsic", "gap_vs_d.png")
    res = run_intrinsic_sweep(m=args.m, J=args.J, ds=args.ds, ns=args.ns, n_test=args.n_test, **_train_kwargs(args))
    figs = [plot_gap_vs_d(res["rows"], max(args.ns), out / "gap_vs_d.png")]
    _finish_sweep(args, out, "sweep_intrinsic", "geometry", res, figs)
    return 0


def _finish_sweep(args, out: pathlib.Path, name: str, key: str, res: dict, figs: list) -> None:
    if len(set(args.ns)) >= 3:
        figs.append(plot_gap_vs_n(res["rows"], key, res["slopes"], out / "gap_vs_n.png"))
    _write_sweep(out, name, res, figs)


def cmd_real_vs_gaussian(args) -> int:
    out = _sweep_out(args, "real_vs_gaussian")
    res = run_real_vs_gaussian(n=args.n, n_test=1797 - args.n, **_train_kwargs(args))
    for r in res["rows"]:
        print(f"{r['family']} seed {r['seed']}: train {r['train_mse']:.4f} test {r['test_mse']:.4f} "
              f"clean {r['test_mse_clean']:.4f} gap {r['gap']:.4f}")
    _write_sweep(out, "real_vs_gaussian", res, [])
    return 0


def cmd_perf(args) -> int:
    from .perf import measure_performance

    (path,) = output_paths(args, "perf.json")
    res = measure_performance(resolve_device(args.device), steps=args.steps)
    write_json_atomic(path, res)
    print("\n".join(f"{k}: {v:.4g}" for k, v in res.items()) + f"\n-> {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-relu-geometry", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    p = sub.add_parser("generate", aliases=["data"], parents=[common], help="sample a data family; writes X.npy")
    _config_args(p)
    p.set_defaults(handler=cmd_generate)

    p = sub.add_parser("fit", aliases=["train"], parents=[common],
                       help="one full-batch GD run on a family or on --X/--y; writes run.json")
    _config_args(p)
    _train_args(p)
    p.add_argument("--X", type=existing_file, default=None,
                   help="your own inputs (n, d), .npy or .csv (replaces the family options)")
    p.add_argument("--y", type=existing_file, default=None, help="your own targets (n,), .npy or .csv")
    p.add_argument("--X-test", type=existing_file, default=None, help="optional test inputs beside --X")
    p.add_argument("--y-test", type=existing_file, default=None, help="optional test targets beside --X")
    p.add_argument("--sharpness-every", type=int, default=500)
    p.add_argument("--init-sharpness", type=float, default=0.0,
                   help="scale the init down to λ_max <= this fraction of 2/η (0: torch default; 0.5 for wide nets)")
    p.add_argument("--plateau-window", type=int, default=0,
                   help="stop once the train MSE falls < 1%% over this many steps (0: run all --steps)")
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("evaluate", aliases=["sharpness"], parents=[common],
                       help="λ_max of a fitted run's Hessian against 2/η (prints; writes nothing)")
    p.add_argument("--run", type=existing_file, required=True, help="run.json written by fit")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--method", choices=("power", "lanczos"), default="power")
    p.set_defaults(handler=cmd_evaluate)

    p = sub.add_parser("diagnose", parents=[common],
                       help="activation report and shatter curve of a run; writes diagnose.json, diagnose.png")
    p.add_argument("--run", type=existing_file, required=True, help="run.json written by fit")
    p.set_defaults(handler=cmd_diagnose)

    p = sub.add_parser("depth", parents=[common],
                       help="half-space (Tukey) depth of points in your data; writes depth.npy")
    p.add_argument("--X", type=existing_file, required=True, help="data (n, d), .npy or .csv")
    p.add_argument("--points", type=existing_file, default=None, help="query points (q, d) (default: --X itself)")
    p.add_argument("--n-dirs", type=int, default=2000, help="random directions when d > 2 (exact for d <= 2)")
    p.set_defaults(handler=cmd_depth)

    for name, handler in (("sweep-alpha", cmd_sweep_alpha), ("sweep-intrinsic", cmd_sweep_intrinsic),
                          ("real-vs-gaussian", cmd_real_vs_gaussian)):
        p = sub.add_parser(name, parents=[common], help=f"{name}: CSV, log-log plots with slopes, summary.json")
        _train_args(p)
        p.add_argument("--seeds", type=_ints, default=(0,))
        p.set_defaults(handler=handler)
        if name == "sweep-alpha":
            p.add_argument("--d", type=int, default=5)
            p.add_argument("--alphas", type=_floats, default=(0.0, 0.3, 1.5, 5.0))
            p.add_argument("--ns", type=_ints, default=(128, 256, 512, 1024))
        elif name == "sweep-intrinsic":
            p.add_argument("--m", type=int, default=1)
            p.add_argument("--J", type=int, default=20)
            p.add_argument("--ds", type=_ints, default=(5, 20, 50))
            p.add_argument("--ns", type=_ints, default=(256, 512, 1024))
        else:
            p.add_argument("--n", type=int, default=1000)

    p = sub.add_parser("perf", parents=[common],
                       help="time train_gd, sharpness and depth (pyhessian as anchor); writes perf.json")
    p.add_argument("--steps", type=int, default=4000)
    p.set_defaults(handler=cmd_perf)

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
