"""The ``iclr26-diffsda`` command line: generate, fit, predict, sample, evaluate, bench (a thin layer over the API).

Each command writes fixed names inside the ``--out`` folder: ``generate`` -> ``data.npz``, ``fit`` -> ``model.pt``,
``predict`` -> ``codes.npz``, ``sample`` -> ``swaps.npz`` (and ``swaps.png``), ``evaluate`` -> ``evaluation.json``.
"""
from __future__ import annotations

import argparse
import json
import pathlib
from collections.abc import Sequence

import numpy as np
import torch
from iclr26_shared.bench import atomic_path, write_json_atomic
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

from .bench import DIFFSDA_BENCHMARK
from .data import GENERATORS, SeqSet, load_csv_series, load_npy_sequences, make
from .evaluate import probe_leakage, reconstruction_mse, swap_accuracy, train_judge
from .model import DiffSDA
from .train import train_model

DATA_FORMATS = "an .npz written by `generate`, an .npy array (N, V, F) or a .csv series (one time step per row)"


def _positive_float(text: str) -> float:
    """argparse type of ``--clip-grad``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _load_data(args) -> tuple[SeqSet, np.ndarray | None]:
    """``--data`` (.npz from ``generate``, .npy (N, V, F) with optional ``--mask``, .csv cut into ``--window``s),
    or ``--n`` fresh sequences of ``--kind``. Returns the sequences and the 0/1 observation mask (N, V, F) or None."""
    mask_path = getattr(args, "mask", None)
    data = getattr(args, "data", None)
    if mask_path is not None and (data is None or data.suffix.lower() != ".npy"):
        raise usage_error("--mask", "to come with an .npy --data", f"--data {data.name if data else 'absent'}")
    if data is None:
        return make(args.kind, args.n, seed=args.seed), None
    suffix = data.suffix.lower()
    if suffix not in (".npz", ".npy", ".csv"):
        raise usage_error("--data", DATA_FORMATS, data.name)
    try:
        if suffix == ".npy":
            x, mask = load_npy_sequences(data, mask_path=mask_path)
            return SeqSet(x), mask
        if suffix == ".csv":
            return SeqSet(load_csv_series(data, window=args.window, stride=args.stride or args.window)), None
        with np.load(data, allow_pickle=False) as arrays:
            return SeqSet.from_arrays(dict(arrays)), None
    except Exception as err:
        raise usage_error("--data", DATA_FORMATS, f"{data.name} ({one_line(err)})") from err


def _save_npz(path: pathlib.Path, arrays: dict) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def _load_model(path: pathlib.Path, device) -> DiffSDA:
    """The DiffSDA saved by ``fit`` (loaded with ``weights_only=True``); errors name ``--ckpt``."""
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
        model = DiffSDA(tuple(ckpt["elem_shape"]), **ckpt["config"]).to(device)
        model.load_state_dict(ckpt["state_dict"])
    except Exception as err:
        raise usage_error("--ckpt", "a model.pt written by `iclr26-diffsda fit`",
                          f"{path.name} ({one_line(err)})") from err
    return model.eval()


def cmd_generate(args) -> int:
    (out,) = output_paths(args, "data.npz")
    ds = make(args.kind, args.n, seed=args.seed)
    _save_npz(out, ds.to_arrays())
    print(f"{args.kind}: x {ds.x.shape} in [{ds.x.min():.2f}, {ds.x.max():.2f}] -> {out}")
    for group, factors in (("static", ds.static), ("dynamic", ds.dynamic)):
        for name, lab in factors.items():
            print(f"  {group} {name}: counts {np.bincount(lab).tolist()}")
    return 0


def cmd_fit(args) -> int:
    (out,) = output_paths(args, "model.pt")
    device = resolve_device(args.device)
    seed_everything(args.seed)
    ds, mask = _load_data(args)
    config = dict(s_dim=args.s_dim, d_dim=args.d_dim, hidden_dim=args.hidden_dim, mlp_hidden=args.mlp_hidden,
                  backbone=args.backbone, P_mean=args.p_mean, P_std=args.p_std,
                  noise_repeats=args.noise_repeats)
    model = DiffSDA(ds.elem_shape, **config).to(device)
    steps = max(1, args.epochs * int(np.ceil(len(ds) / args.batch_size)))
    hist = train_model(model, ds.x, steps=steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed, mask=mask,
                       clip_grad=args.clip_grad,
                       progress=lambda it: progress(it, total=steps, desc="fit", quiet=args.quiet))
    per_epoch = max(1, steps // args.epochs)
    for e in range(args.epochs):
        chunk = hist["loss"][e * per_epoch:(e + 1) * per_epoch]
        if chunk:
            elapsed = hist["seconds"][min(steps, (e + 1) * per_epoch) - 1]
            print(f"epoch {e + 1}: loss {np.mean(chunk):.4f}, {elapsed:.1f}s")
    with atomic_path(out) as tmp:
        torch.save({"elem_shape": list(ds.elem_shape), "config": config, "state_dict": model.state_dict()}, tmp)
    print(f"model -> {out}")
    return 0


def cmd_predict(args) -> int:
    (out,) = output_paths(args, "codes.npz")
    model = _load_model(args.ckpt, resolve_device(args.device))
    ds, mask = _load_data(args)
    s, d = model.encode(ds.x, mask=mask)
    _save_npz(out, {"static": s.cpu().numpy(), "dynamic": d.cpu().numpy()})
    print(f"static {tuple(s.shape)}, dynamic {tuple(d.shape)} -> {out}")
    return 0


def cmd_sample(args) -> int:
    out, *png = output_paths(args, "swaps.npz", *(["swaps.png"] if args.png else []))
    model = _load_model(args.ckpt, resolve_device(args.device))
    ds, _ = _load_data(args)
    k = min(args.pairs, len(ds) // 2)
    if k < 1:
        raise usage_error("--data", "at least 2 sequences for a swap grid", f"{len(ds)}")
    a, b = np.repeat(np.arange(k), k), np.tile(np.arange(k, 2 * k), k)
    gen = torch.Generator(model.device).manual_seed(args.seed)
    grid = model.swap(ds.x[a], ds.x[b], steps=args.steps, shared_noise=args.shared_noise, generator=gen).cpu().numpy()
    grid = grid.reshape(k, k, *grid.shape[1:])
    _save_npz(out, {"swaps": grid, "static_donors": ds.x[:k], "dynamic_donors": ds.x[k:2 * k]})
    print(f"swap grid {grid.shape} (rows: static donors, cols: dynamic donors) -> {out}")
    if args.png:
        _swap_png(grid, png[0])
    return 0


def _swap_png(grid: np.ndarray, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = grid.shape[0]
    fig, axes = plt.subplots(k, k, figsize=(2 * k, 2 * k), squeeze=False)
    for i in range(k):
        for j in range(k):
            seq = grid[i, j]
            frames = np.clip((seq + 1) / 2, 0, 1)
            img = seq.T if seq.ndim == 2 else np.concatenate(list(frames.transpose(0, 2, 3, 1)), 1)
            axes[i, j].imshow(img, origin="lower" if seq.ndim == 2 else "upper", aspect="auto")
            axes[i, j].axis("off")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=80)
    plt.close(fig)
    print(f"png -> {path}")


def cmd_evaluate(args) -> int:
    (out,) = output_paths(args, "evaluation.json")
    model = _load_model(args.ckpt, resolve_device(args.device))
    test = make(args.kind, args.n, seed=args.seed + 1)
    judge = train_judge(make(args.kind, args.n_judge, seed=args.seed + 2), seed=args.seed)
    report = {"judge_heldout": judge.heldout_accuracy}
    report.update(swap_accuracy(model, judge, test, n_pairs=args.pairs, steps=args.steps, seed=args.seed))
    s, d = model.encode(test.x)
    report["probes"] = probe_leakage(s, d, {**test.static, **test.dynamic}, seed=args.seed)
    report["recon_mse_inversion"] = reconstruction_mse(model, test.x[:100], steps=args.steps, seed=args.seed)
    report["recon_mse_fresh"] = reconstruction_mse(model, test.x[:100], steps=args.steps, use_inversion=False,
                                                   seed=args.seed)
    write_json_atomic(out, report)
    print(json.dumps(report, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-diffsda", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    def data_options(p):
        p.add_argument("--data", type=existing_file, default=None,
                       help=f"{DATA_FORMATS} (default: generate --kind)")
        p.add_argument("--mask", type=existing_file, default=None,
                       help="with an .npy --data: a 0/1 observation mask .npy of the same shape")
        p.add_argument("--window", type=positive_int, default=24, help="with a .csv --data: window length V")
        p.add_argument("--stride", type=positive_int, default=None, help="with a .csv --data: stride (default window)")
        p.add_argument("--kind", choices=sorted(GENERATORS), default="tones")
        p.add_argument("--n", type=positive_int, default=1000, help="sequences to generate when --data is absent")

    p = sub.add_parser("generate", aliases=["data"], parents=[common],
                       help="generate procedural sequences: data.npz")
    p.add_argument("--kind", choices=sorted(GENERATORS), default="tones")
    p.add_argument("--n", type=positive_int, default=1000)
    p.set_defaults(handler=cmd_generate)

    p = sub.add_parser("fit", parents=[common], help="train DiffSDA: model.pt")
    data_options(p)
    p.add_argument("--epochs", type=positive_int, default=10)
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--s-dim", type=positive_int, default=16)
    p.add_argument("--d-dim", type=positive_int, default=4)
    p.add_argument("--hidden-dim", type=positive_int, default=128)
    p.add_argument("--mlp-hidden", type=positive_int, default=64)
    p.add_argument("--backbone", choices=["mlp", "conv"], default="mlp")
    p.add_argument("--p-mean", type=float, default=-0.4, help="ln sigma ~ N(p_mean, p_std^2) (official audio/series)")
    p.add_argument("--p-std", type=float, default=1.0)
    p.add_argument("--noise-repeats", type=positive_int, default=10,
                   help="fresh (sigma, noise) draws per element and encoder pass (the official code uses 10)")
    p.add_argument("--clip-grad", type=_positive_float, default=1.0,
                   help="clip the gradient's global norm to this value (the official training clips at 1.0)")
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("predict", aliases=["encode"], parents=[common],
                       help="static and dynamic codes of sequences: codes.npz")
    data_options(p)
    p.add_argument("--ckpt", type=existing_file, required=True, help="a model.pt written by fit")
    p.set_defaults(handler=cmd_predict)

    p = sub.add_parser("sample", aliases=["swap"], parents=[common],
                       help="swap grids, rows static donors, cols dynamic donors: swaps.npz (and swaps.png)")
    data_options(p)
    p.add_argument("--ckpt", type=existing_file, required=True, help="a model.pt written by fit")
    p.add_argument("--pairs", type=positive_int, default=4, help="k: a k x k grid from 2k sequences")
    p.add_argument("--steps", type=positive_int, default=18)
    p.add_argument("--png", action="store_true", help="also draw the grid into swaps.png")
    p.add_argument("--shared-noise", action="store_true", help="one x_T per sequence for all its elements")
    p.set_defaults(handler=cmd_sample)

    p = sub.add_parser("evaluate", aliases=["eval"], parents=[common],
                       help="swap accuracies, probes and reconstruction: evaluation.json")
    p.add_argument("--ckpt", type=existing_file, required=True, help="a model.pt written by fit")
    p.add_argument("--kind", choices=["tones", "sprites", "series"], default="tones")
    p.add_argument("--n", type=positive_int, default=500, help="test sequences")
    p.add_argument("--n-judge", type=positive_int, default=2000)
    p.add_argument("--pairs", type=positive_int, default=500)
    p.add_argument("--steps", type=positive_int, default=18)
    p.set_defaults(handler=cmd_evaluate)

    add_bench_command(sub, [DIFFSDA_BENCHMARK])
    for name in ("bench", "reproduce"):
        sub.choices[name].set_defaults(handler=_bench_and_flag)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-diffsda``; returns the exit code."""
    return run(build_parser(), argv)


def _bench_and_flag(args) -> int:
    """``bench``/``reproduce``, then CLAIM NOT REPRODUCED when the central (relative) claim does not hold."""
    code = run_bench_command(args, [DIFFSDA_BENCHMARK])
    for path in pathlib.Path(args.out).glob(f"diffsda__{args.scale}__seed{args.seed}__*.json"):
        result = json.loads(path.read_text(encoding="utf-8"))
        for claim in result.get("claims", []):
            if claim["name"].startswith("swap_sum_vs_seqvae") and not claim["holds"]:
                print(f"CLAIM NOT REPRODUCED: {claim['name']} ({claim['measured']}; {claim['criterion']})")
    return code
