"""``iclr26-minpv``: estimate MI on the Gaussian benchmark, fit a density ratio, inspect path variances, bench."""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import Parser, add_bench_command, call_handler, common_options

from .bench import MINPV
from .data import gaussian_mi_joint, gaussian_mi_task
from .estimators import TimeScoreDRE
from .paths import PATHS, make_path
from .variance import fit_path_variance, path_variance_objective


def _fit_options(p: argparse.ArgumentParser, steps: int) -> None:
    p.add_argument("--path", choices=sorted(PATHS), default="minpv", help="interpolation path (default: minpv)")
    p.add_argument("--steps", type=int, default=steps, help=f"training steps (default: {steps})")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--hidden", type=int, nargs="+", default=[128, 128, 128], help="MLP widths (default: 128 128 128)")


def _refuse_overwrite(path: pathlib.Path, force: bool) -> None:
    if path.exists() and not force:
        raise SystemExit(f"{path} exists; pass --force to overwrite it")


def cmd_mi(args) -> int:
    evaluation, _, true_mi = gaussian_mi_task(args.d, args.n_eval, seed=10_000 + args.seed)
    start = time.perf_counter()
    model = TimeScoreDRE(path=args.path, hidden=tuple(args.hidden), steps=args.steps, batch_size=args.batch_size,
                         standardize=False, seed=args.seed, device=args.device)
    model.fit(lambda n, rng: gaussian_mi_joint(n, args.d, rng))
    estimate = model.kl_divergence(evaluation)
    seconds = time.perf_counter() - start
    summary = {"d": args.d, "path": args.path, "estimated_mi": estimate, "true_mi": true_mi,
               "abs_error": abs(estimate - true_mi), "path_summary": model.path_.summary(),
               "path_variance_objective": model.history_["path_variance"][-1], "seconds": seconds}
    print(f"MI estimate {estimate:.4f} nats (true {true_mi:g}, |error| {abs(estimate - true_mi):.4f}); "
          f"path {args.path}: {', '.join(f'{k}={v:.3f}' for k, v in summary['path_summary'].items())}, "
          f"path variance {summary['path_variance_objective']:.4g}; {seconds:.1f}s")
    target = pathlib.Path(args.out) / f"mi_d{args.d}_{args.path}_seed{args.seed}.json"
    _refuse_overwrite(target, args.force)
    write_json_atomic(target, summary)
    print(f"  -> {target}")
    return 0


def cmd_dre(args) -> int:
    num = np.load(args.num)
    den = np.load(args.den) if args.den else None
    points = np.load(args.eval) if args.eval else num
    model = TimeScoreDRE(path=args.path, hidden=tuple(args.hidden), steps=args.steps, batch_size=args.batch_size,
                         seed=args.seed, device=args.device).fit(num, den)
    log_r = model.log_ratio(points)
    target = pathlib.Path(args.out)
    if target.suffix != ".npy":
        target = target / "log_ratio.npy"
    _refuse_overwrite(target, args.force)
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, log_r)
    print(f"mode {model.mode_}; mean log-ratio {log_r.mean():.4f} over {len(log_r)} points -> {target}")
    return 0


def cmd_path_variance(args) -> int:
    result = {}
    for name in args.paths:
        path = make_path(name).double()
        if name == "minpv":
            result["minpv_init"] = float(path_variance_objective(path, args.d, args.m2).detach())
            fit_path_variance(path, args.d, args.m2, steps=args.fit_steps)
            a, b, w = (v.detach().tolist() for v in path.shape_parameters())
            result["minpv_parameters"] = {"a": a, "b": b, "w": w}
        result[name] = float(path_variance_objective(path, args.d, args.m2).detach())
        print(f"{name:12s} {result[name]:.4g}" + (f"  (init {result['minpv_init']:.4g}; a={np.round(a, 3).tolist()}, "
                                                   f"b={np.round(b, 3).tolist()}, w={np.round(w, 3).tolist()})"
                                                   if name == "minpv" else ""))
    if args.json:
        print(json.dumps(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-minpv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    mi = sub.add_parser("mi", parents=[common_options()], help="MI on the high-dimensional Gaussian benchmark")
    mi.add_argument("--d", type=int, default=20, help="even dimension (default: 20; true MI 5 nats)")
    mi.add_argument("--n-eval", type=int, default=2000, help="evaluation samples (default: 2000)")
    mi.add_argument("--force", action="store_true", help="overwrite an existing result file")
    _fit_options(mi, 3000)
    mi.set_defaults(handler=cmd_mi)
    dre = sub.add_parser("dre", parents=[common_options()], help="fit log p/q on .npy samples and write log-ratios")
    dre.add_argument("--num", required=True, help="numerator samples (n, d) .npy")
    dre.add_argument("--den", default=None, help="denominator samples (m, d) .npy (default: standard Gaussian)")
    dre.add_argument("--eval", default=None, help="points to evaluate (default: the numerator samples)")
    dre.add_argument("--force", action="store_true", help="overwrite an existing output file")
    _fit_options(dre, 3000)
    dre.set_defaults(handler=cmd_dre)
    pv = sub.add_parser("path-variance", help="closed-form path-variance objective per path (no training)")
    pv.add_argument("--d", type=float, default=20.0, help="data dimension (default: 20)")
    pv.add_argument("--m2", type=float, default=20.0, help="second moment E|x1|^2 (default: 20)")
    pv.add_argument("--paths", nargs="+", choices=sorted(PATHS), default=["linear", "trig", "vp", "cosine", "minpv"])
    pv.add_argument("--fit-steps", type=int, default=400, help="path-only Adam steps for minpv (default: 400)")
    pv.add_argument("--json", action="store_true", help="also print the values as JSON")
    pv.set_defaults(handler=cmd_path_variance)
    add_bench_command(sub, [MINPV])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    expanded: list[str] = []
    for a in argv:  # `--quick` is shorthand for `--scale quick`
        expanded += ["--scale", "quick"] if a == "--quick" else [a]
    args = build_parser().parse_args(expanded)
    return call_handler(args)


if __name__ == "__main__":
    sys.exit(main())
