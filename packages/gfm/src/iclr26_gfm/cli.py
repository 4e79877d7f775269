"""``iclr26-gfm``: fit a gauge flow matching model, sample from it, evaluate a constrained data file, run the benchmark.

Files are written with fixed names inside the ``--out`` folder: ``fit`` -> ``model.pt``, ``sample`` ->
``samples.npy``; ``evaluate`` (alias ``check``) prints and writes nothing.
"""
from __future__ import annotations

import argparse
import functools
import json
import pathlib
import time
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path, result_path
from iclr26_shared.cli import (
    Parser,
    add_bench_command,
    common_options,
    existing_file,
    one_line,
    output_paths,
    positive_int,
    progress,
    run,
    run_bench_command,
    usage_error,
)
from iclr26_shared.device import resolve_device
from iclr26_shared.seeding import seed_everything

from .bench import BENCHMARK
from .data import TARGETS, load_npz, make_target
from .gauge import SET_BOUNDARY_MODES
from .metrics import max_violation, violation_rate
from .model import SOLVERS, GaugeFlowMatching


def _data(args):
    """``(X, set)`` from ``--data``; a missing array, bad shape or infeasible row becomes an error naming it."""
    try:
        return load_npz(args.data)
    except Exception as err:
        raise usage_error("--data", "an .npz with X and A,b (polytope) or Q,c (ellipsoid), every row inside the set",
                          f"{args.data.name} ({one_line(err)})") from err


def _device(args) -> str:
    dev = resolve_device(args.device)
    return dev.type if dev.index is None else str(dev)


def _cmd_fit(args) -> int:
    (out,) = output_paths(args, "model.pt")
    seed_everything(args.seed)
    if args.data:
        X, C = _data(args)
    else:
        X, C = make_target(args.target, args.n, args.dim, seed=args.seed)
    model = GaugeFlowMatching(C, hidden=tuple(args.hidden), boundary=args.boundary, n_steps_train=args.steps,
                              batch_size=args.batch_size, lr=args.lr, seed=args.seed, device=_device(args))
    model.fit(X, progress=functools.partial(progress, desc="steps", quiet=args.quiet))
    model.save(out)
    print(f"trained on {X.shape[0]} x {X.shape[1]} points in {model.train_seconds_:.1f}s; "
          f"final loss {np.mean(model.losses_[-50:]):.4f}\n  -> {out}")
    return 0


def _cmd_sample(args) -> int:
    (out,) = output_paths(args, "samples.npy")
    try:
        model = GaugeFlowMatching.load(args.model, device=_device(args))
    except Exception as err:
        raise usage_error("--model", "a model.pt written by `iclr26-gfm fit`", f"{args.model.name} ({one_line(err)})"
                          ) from err
    start = time.perf_counter()
    S = model.sample(args.n, steps=args.steps, solver=args.solver, boundary=args.boundary)
    seconds = time.perf_counter() - start
    C, chart = model.constraint, model.gauge_map.C
    latent = S if model.cap is None else model.cap.log(S)             # a cap's gauge lives in its log chart
    gauge = chart.gauge(latent - chart.center)
    with atomic_path(out) as tmp:
        np.save(tmp, S.cpu().numpy())
    print(f"{args.n} samples in {seconds:.2f}s: violation rate {violation_rate(C, S):.4g}, "
          f"max violation {max_violation(C, S):.3g}, max gauge {float(gauge.max()):.12f}\n  -> {out}")
    return 0


def _cmd_evaluate(args) -> int:
    X, C = _data(args)
    radius = getattr(C, "inradius", None)
    extra = f", inscribed radius {radius:.6g}" if radius is not None else ""
    print(f"{X.shape[0]} x {X.shape[1]} points; centre {np.round(C.center.numpy(), 6).tolist()}{extra}; "
          f"violation rate {violation_rate(C, X):.4g}, max violation {max_violation(C, X):.3g}")
    return 0


def print_rows(path: pathlib.Path) -> None:
    """One line per method and target of a ``gfm`` result file: violation, atoms, SW-2, MMD, times."""
    if not path.exists():
        return
    rows = json.loads(path.read_text(encoding="utf-8")).get("rows", [])
    print(f"  {'method':<24}{'target':<19}{'seed':>4}{'viol':>9}{'atoms':>8}{'SW2':>9}{'MMD':>9}{'sample s':>10}"
          f"{'train s':>9}")
    for r in rows:
        cells = [r.get(k) for k in ("violation_rate", "boundary_atoms", "sw2", "mmd", "sample_seconds",
                                    "train_seconds")]
        text = "".join(f"{v:>9.4f}" if isinstance(v, float) else f"{'-':>9}" for v in cells)
        print(f"  {r['method']:<24}{r['target']:<19}{r['seed']:>4}{text}")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``iclr26-gfm``."""
    parser = Parser(prog="iclr26-gfm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fit", parents=[common_options()],
                       help="train GFM on an embedded target or an NPZ file: model.pt")
    p.add_argument("--target", choices=TARGETS, default="simplex-dirichlet")
    p.add_argument("--dim", type=positive_int, default=None)
    p.add_argument("--n", type=positive_int, default=20000, help="training samples of the embedded target")
    p.add_argument("--data", type=existing_file, default=None, help="NPZ with X and A,b (polytope) or Q,c (ellipsoid)")
    p.add_argument("--steps", type=positive_int, default=5000, help="Adam steps")
    p.add_argument("--batch-size", type=positive_int, default=512)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", type=positive_int, nargs="+", default=[256, 256, 256])
    p.add_argument("--boundary", choices=SET_BOUNDARY_MODES, default="reflect")
    p.set_defaults(handler=_cmd_fit)

    p = sub.add_parser("sample", parents=[common_options()],
                       help="sample a saved model, report feasibility: samples.npy")
    p.add_argument("--model", type=existing_file, required=True, help="a model.pt written by fit")
    p.add_argument("-n", type=positive_int, default=10000)
    p.add_argument("--steps", type=positive_int, default=100)
    p.add_argument("--solver", choices=SOLVERS, default="euler")
    p.add_argument("--boundary", choices=SET_BOUNDARY_MODES, default=None, help="override the model's operator")
    p.set_defaults(handler=_cmd_sample)

    p = sub.add_parser("evaluate", aliases=["check"], parents=[common_options()],
                       help="centre, inscribed radius and violation of an NPZ data file (prints; writes nothing)")
    p.add_argument("--data", type=existing_file, required=True)
    p.set_defaults(handler=_cmd_evaluate)

    add_bench_command(sub, [BENCHMARK])
    for name in ("bench", "reproduce"):
        sub.choices[name].set_defaults(handler=_cmd_bench)
    return parser


def _cmd_bench(args) -> int:
    """``bench``/``reproduce``, then the per-method rows of the result."""
    code = run_bench_command(args, [BENCHMARK])
    print_rows(result_path(args.out, BENCHMARK.name, args.scale, args.seed, _device(args)))
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-gfm``; returns the exit code."""
    return run(build_parser(), argv)
