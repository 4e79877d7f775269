"""``iclr26-fractal-gd``: critical step sizes, basin maps, box dimensions, sensitivity sweeps and matrix runs.

Commands: ``predict`` (eta* of an initialisation), ``map`` (basin image: ``basin.png``, ``basin.npz``),
``evaluate`` (box-counting dimension of a saved ``basin.npz``), ``sweep`` (GD limits along a segment:
``sensitivity.png``), ``fit`` (aligned-init matrix factorisation by GD: ``matrix_loss.png``), ``bench``.
Every file is written under the ``--out`` folder with the fixed name given here.
"""
from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Sequence

import numpy as np
from iclr26_shared.cli import Parser, add_bench_command, common_options, existing_file, output_paths, run, usage_error

from ._plotting import pyplot, save_figure
from .basins import BasinMap, basin_map
from .bench import BENCHMARK
from .fractal import boundary_mask, box_counting_dimension
from .matrix import aligned_init, critical_step_size_aligned, gd_matrix
from .sensitivity import segment_outcomes
from .theory import active_branch, critical_step_size, in_convergence_region


def _torch_device(spec: str) -> str | None:
    """The torch device string of ``--device`` when it means CUDA (``auto`` finds it), else None (numpy)."""
    if spec == "cpu" or (spec == "auto" and importlib.util.find_spec("torch") is None):
        return None
    from iclr26_shared.device import resolve_device

    dev = resolve_device(spec)
    return None if dev.type == "cpu" else str(dev)


def _cmd_critical(args) -> int:
    star = critical_step_size(args.u, args.v, args.y)
    print(f"eta* = {star:.10g}  (active branch: {active_branch(args.u, args.v, args.y)})")
    if args.eta is not None:
        inside = in_convergence_region(args.u, args.v, args.y, args.eta)
        verdict = "inside E_eta (GD converges)" if inside else "outside E_eta (GD fails)"
        print(f"eta = {args.eta:g}: init {verdict}")
    return 0


def _cmd_basin(args) -> int:
    png, npz = output_paths(args, "basin.png", "basin.npz")
    device = _torch_device(args.device)
    b = basin_map(args.eta, args.y, args.lam, extent=tuple(args.extent), resolution=args.res, steps=args.steps,
                  labels=args.labels, backend="numpy" if device is None else "torch", device=device or "cpu")
    b.save_png(png)
    b.save_npz(npz)
    fr = ", ".join(f"{k} {v:.4f}" for k, v in b.fractions().items())
    print(f"basin {args.res}^2 in {b.params['seconds']:.2f}s: {fr}\n  -> {png}\n  -> {npz}")
    return 0


def _cmd_dimension(args) -> int:
    try:
        b = BasinMap.load_npz(args.npz)
    except ValueError as err:
        raise usage_error("--npz", "a basin.npz written by `iclr26-fractal-gd map`", f"{args.npz.name}: {err}") from err
    r = box_counting_dimension(boundary_mask(b.labels), fit_range=tuple(args.fit) if args.fit else None)
    print(f"D = {r.D:.4f}, R^2 = {r.r2:.5f}, fit {r.fit_range[0]}-{r.fit_range[1]} px\n{r.table()}")
    return 0


def _cmd_sensitivity(args) -> int:
    x0, y0, x1, y1 = args.segment
    if (x0, y0) == (x1, y1):
        raise usage_error("--segment", "two distinct end points U0 V0 U1 V1", " ".join(f"{v:g}" for v in args.segment))
    (out,) = output_paths(args, "sensitivity.png")
    plt = pyplot()
    res = segment_outcomes((x0, y0), (x1, y1), args.n, args.y, args.eta, args.lam, steps=args.steps)
    conv = res["converged"]
    imb = res["final_imbalance"][conv]
    limits = (f"|u^2-v^2|: mean {imb.mean():.4g}, std {imb.std():.4g}; "
              f"u^2+v^2-2|y|: std {res['final_norm2'][conv].std():.4g}") if conv.any() else "no point converged"
    print(f"converged {conv.mean():.4f}; {limits}; branch flips {res['flips']}")
    fig, axes = plt.subplots(2, 1, figsize=(6, 5), sharex=True)
    t = np.linspace(0, 1, args.n)
    axes[0].plot(t, res["final_imbalance"], lw=0.7)
    axes[0].set_ylabel("|u^2 - v^2| at the limit")
    axes[1].plot(t, res["branch"], lw=0.7)
    axes[1].set_ylabel("branch")
    axes[1].set_xlabel("position along the segment")
    fig.tight_layout()
    save_figure(fig, out)
    print(f"  -> {out}")
    return 0


def _cmd_matrix(args) -> int:
    (png,) = output_paths(args, "matrix_loss.png")
    plt = pyplot()
    rng = np.random.default_rng(args.seed)
    Y = rng.standard_normal((args.n, args.n))
    alpha, beta = rng.uniform(-args.scale, args.scale, (2, args.rank))
    U0, V0 = aligned_init(Y, alpha, beta, rng=rng)
    star = critical_step_size_aligned(Y, alpha, beta)
    eta = args.eta if args.eta is not None else 0.97 * star
    res = gd_matrix(U0, V0, Y, eta, steps=args.steps, record=True)
    print(f"predicted eta*_matrix = {star:.8g}; eta = {eta:.8g} ({'below' if eta < star else 'above'}); "
          f"GD {'converged' if res.converged else ('diverged' if res.diverged else 'did not converge')}")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.semilogy(np.where(res.loss > 0, res.loss, np.nan))
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(f"{args.n}x{args.n}, rank {args.rank}, eta/eta* = {eta / star:.3f}")
    fig.tight_layout()
    save_figure(fig, png)
    print(f"  -> {png}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``iclr26-fractal-gd``."""
    parser = Parser(prog="iclr26-fractal-gd", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    p = sub.add_parser("predict", aliases=["critical"], parents=[common],
                       help="closed-form critical step size eta* of an initialisation (prints; writes nothing)")
    p.add_argument("--u", type=float, required=True)
    p.add_argument("--v", type=float, required=True)
    p.add_argument("--y", type=float, default=1.0)
    p.add_argument("--eta", type=float, default=None, help="also test membership in E_eta")
    p.set_defaults(handler=_cmd_critical)

    p = sub.add_parser("map", aliases=["basin"], parents=[common],
                       help="basin image over a grid of initialisations: basin.png and basin.npz "
                            "(--device cuda[:N] runs the torch backend)")
    p.add_argument("--eta", type=float, default=1.0)
    p.add_argument("--y", type=float, default=0.5)
    p.add_argument("--lam", type=float, default=0.2)
    p.add_argument("--res", type=int, default=1024)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--extent", type=float, nargs=4, default=[-4, 4, -4, 4], metavar=("UMIN", "UMAX", "VMIN", "VMAX"))
    p.add_argument("--labels", choices=["branch", "binary"], default="branch")
    p.set_defaults(handler=_cmd_basin)

    p = sub.add_parser("evaluate", aliases=["dimension"], parents=[common],
                       help="box-counting dimension of the boundary of a saved basin.npz (prints; writes nothing)")
    p.add_argument("--npz", type=existing_file, required=True, help="a basin.npz written by map")
    p.add_argument("--fit", type=int, nargs=2, default=None, metavar=("SMIN", "SMAX"))
    p.set_defaults(handler=_cmd_dimension)

    p = sub.add_parser("sweep", aliases=["sensitivity"], parents=[common],
                       help="limits of GD along a segment of initialisations: sensitivity.png")
    p.add_argument("--eta", type=float, required=True)
    p.add_argument("--y", type=float, default=1.0)
    p.add_argument("--lam", type=float, default=0.0)
    p.add_argument("--segment", type=float, nargs=4, required=True, metavar=("U0", "V0", "U1", "V1"))
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--steps", type=int, default=6000)
    p.set_defaults(handler=_cmd_sensitivity)

    p = sub.add_parser("fit", aliases=["matrix"], parents=[common],
                       help="GD on an aligned-init matrix factorisation at a step size relative to the predicted "
                            "eta*_matrix: matrix_loss.png")
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--eta", type=float, default=None, help="default: 0.97 eta*_matrix")
    p.add_argument("--scale", type=float, default=2.0, help="alpha, beta ~ U(-scale, scale)")
    p.add_argument("--steps", type=int, default=5000)
    p.set_defaults(handler=_cmd_matrix)

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code. Bad arguments exit with a one-line message."""
    return run(build_parser(), argv)
