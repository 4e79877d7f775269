"""``iclr26-minpv``: fit a density ratio on user samples, evaluate MI on the Gaussian benchmark, compare path
variances, bench.

Every command writes into the ``--out`` folder: ``fit`` -> ``log_ratio.npy``, ``evaluate`` -> ``mi.json``,
``path-variance`` -> ``path_variance.json``.
"""
from __future__ import annotations

import argparse
import functools
import pathlib
import sys
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
    progress,
    run,
    usage_error,
)

from .bench import MINPV
from .data import gaussian_mi_joint, gaussian_mi_task
from .estimators import TimeScoreDRE
from .network import ARCHITECTURES
from .paths import PATHS, make_path
from .variance import fit_path_variance, path_variance_objective


def _fit_options(p: argparse.ArgumentParser, steps: int) -> None:
    p.add_argument("--path", choices=sorted(PATHS), default="minpv", help="interpolation path (default: minpv)")
    p.add_argument("--steps", type=int, default=steps, help=f"training steps (default: {steps})")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--hidden", type=int, nargs="+", default=[128, 128, 128],
                   help="hidden widths of the time-score net (default: 128 128 128)")
    p.add_argument("--architecture", choices=ARCHITECTURES, default="concat_squash",
                   help="time-score net: OpenDRE's concat_squash (default) or a concat MLP")


def _load_samples(option: str, path: pathlib.Path) -> np.ndarray:
    """An ``(n, d)`` float array from the ``.npy`` file given to ``option``."""
    try:
        X = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise usage_error(option, "a .npy file holding an (n, d) array", f"{str(path)!r} ({err})") from None
    if not isinstance(X, np.ndarray) or X.ndim != 2 or not np.issubdtype(X.dtype, np.number):
        raise usage_error(option, "a numeric (n, d) array", f"{getattr(X, 'shape', type(X).__name__)} in {str(path)!r}")
    return X.astype(np.float64, copy=False)


def _step_bar(args):
    """The training-step bar of ``TimeScoreDRE.fit`` (off with ``--quiet`` or off a terminal)."""
    return functools.partial(progress, desc="steps", quiet=args.quiet)


def cmd_evaluate(args) -> int:
    (target,) = output_paths(args, "mi.json")
    evaluation, _, true_mi = gaussian_mi_task(args.d, args.n_eval, seed=10_000 + args.seed)
    start = time.perf_counter()
    model = TimeScoreDRE(path=args.path, hidden=tuple(args.hidden), steps=args.steps, batch_size=args.batch_size,
                         architecture=args.architecture, standardize=False, seed=args.seed, device=args.device)
    model.fit(lambda n, rng: gaussian_mi_joint(n, args.d, rng), progress=_step_bar(args))
    estimate = model.kl_divergence(evaluation)
    seconds = time.perf_counter() - start
    summary = {"d": args.d, "path": args.path, "seed": args.seed, "estimated_mi": estimate, "true_mi": true_mi,
               "abs_error": abs(estimate - true_mi), "path_summary": model.path_.summary(),
               "path_variance_objective": model.history_["path_variance"][-1], "seconds": seconds}
    print(f"MI estimate {estimate:.4f} nats (true {true_mi:g}, |error| {abs(estimate - true_mi):.4f}); "
          f"path {args.path}: {', '.join(f'{k}={v:.3f}' for k, v in summary['path_summary'].items())}, "
          f"path variance {summary['path_variance_objective']:.4g}; {seconds:.1f}s")
    write_json_atomic(target, summary)
    print(f"  -> {target}")
    return 0


def cmd_fit(args) -> int:
    (target,) = output_paths(args, "log_ratio.npy")
    num = _load_samples("--num", args.num)
    den = _load_samples("--den", args.den) if args.den else None
    points = _load_samples("--eval", args.eval) if args.eval else num
    model = TimeScoreDRE(path=args.path, hidden=tuple(args.hidden), steps=args.steps, batch_size=args.batch_size,
                         architecture=args.architecture, seed=args.seed, device=args.device)
    model.fit(num, den, progress=_step_bar(args))
    log_r = model.log_ratio(points)
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, log_r)
    print(f"mode {model.mode_}; mean log-ratio {log_r.mean():.4f} over {len(log_r)} points -> {target}")
    return 0


def cmd_path_variance(args) -> int:
    (target,) = output_paths(args, "path_variance.json")
    result = {}
    for name in progress(args.paths, desc="paths", quiet=args.quiet):
        path = make_path(name).double()
        note = ""
        if name == "minpv":
            result["minpv_init"] = float(path_variance_objective(path, args.d, args.m2).detach())
            fit_path_variance(path, args.d, args.m2, steps=args.fit_steps)
            a, b, w = (v.detach().tolist() for v in path.shape_parameters())
            result["minpv_parameters"] = {"a": a, "b": b, "w": w}
            note = (f"  (init {result['minpv_init']:.4g}; a={np.round(a, 3).tolist()}, b={np.round(b, 3).tolist()}, "
                    f"w={np.round(w, 3).tolist()})")
        result[name] = float(path_variance_objective(path, args.d, args.m2).detach())
        print(f"{name:12s} {result[name]:.4g}{note}")
    write_json_atomic(target, result)
    print(f"  -> {target}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-minpv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit", aliases=["dre"], parents=[common_options()],
                         help="fit log p/q on .npy samples; writes log_ratio.npy (log-ratios at --eval)")
    fit.add_argument("--num", type=existing_file, required=True, help="numerator samples (n, d) .npy")
    fit.add_argument("--den", type=existing_file, default=None,
                     help="denominator samples (m, d) .npy (default: standard Gaussian)")
    fit.add_argument("--eval", type=existing_file, default=None,
                     help="points to evaluate (default: the numerator samples)")
    _fit_options(fit, 3000)
    fit.set_defaults(handler=cmd_fit)
    ev = sub.add_parser("evaluate", aliases=["mi"], parents=[common_options()],
                        help="MI on the high-dimensional Gaussian benchmark; writes mi.json")
    ev.add_argument("--d", type=int, default=20, help="even dimension (default: 20; true MI 5 nats)")
    ev.add_argument("--n-eval", type=int, default=2000, help="evaluation samples (default: 2000)")
    _fit_options(ev, 3000)
    ev.set_defaults(handler=cmd_evaluate)
    pv = sub.add_parser("path-variance", parents=[common_options()],
                        help="closed-form path-variance objective per path (no training); writes path_variance.json")
    pv.add_argument("--d", type=float, default=20.0, help="data dimension (default: 20)")
    pv.add_argument("--m2", type=float, default=20.0, help="second moment E|x1|^2 (default: 20)")
    pv.add_argument("--paths", nargs="+", choices=sorted(PATHS), default=["linear", "trig", "vp", "cosine", "minpv"])
    pv.add_argument("--fit-steps", type=int, default=400, help="path-only Adam steps for minpv (default: 400)")
    pv.set_defaults(handler=cmd_path_variance)
    add_bench_command(sub, [MINPV])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
