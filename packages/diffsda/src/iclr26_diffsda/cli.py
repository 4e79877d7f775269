"""The ``iclr26-diffsda`` command line: data, fit, encode, swap, evaluate, bench (a thin layer over the API)."""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections.abc import Sequence

import numpy as np
import torch
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import Parser, add_bench_command, call_handler, common_options, progress
from iclr26_shared.device import resolve_device
from iclr26_shared.seeding import seed_everything

from .bench import DIFFSDA_BENCHMARK
from .data import GENERATORS, SeqSet, make
from .evaluate import probe_leakage, reconstruction_mse, swap_accuracy, train_judge
from .model import DiffSDA
from .train import train_model


def _target(path: str, force: bool) -> pathlib.Path:
    p = pathlib.Path(path)
    if p.exists() and not force:
        raise SystemExit(f"{p} exists; pass --force to overwrite it")
    return p


def _load_data(args) -> SeqSet:
    if getattr(args, "data", None):
        with np.load(args.data) as arrays:
            return SeqSet.from_arrays(dict(arrays))
    return make(args.kind, args.n, seed=args.seed)


def _save_npz(path: pathlib.Path, arrays: dict) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def _load_model(path: str, device) -> DiffSDA:
    ckpt = torch.load(path, map_location=device, weights_only=True)
    model = DiffSDA(tuple(ckpt["elem_shape"]), **ckpt["config"]).to(device)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


def cmd_data(args) -> int:
    ds = make(args.kind, args.n, seed=args.seed)
    out = _target(args.file, args.force)
    _save_npz(out, ds.to_arrays())
    print(f"{args.kind}: x {ds.x.shape} in [{ds.x.min():.2f}, {ds.x.max():.2f}] -> {out}")
    for group, factors in (("static", ds.static), ("dynamic", ds.dynamic)):
        for name, lab in factors.items():
            print(f"  {group} {name}: counts {np.bincount(lab).tolist()}")
    return 0


def cmd_fit(args) -> int:
    device = resolve_device(args.device)
    seed_everything(args.seed)
    ds = _load_data(args)
    out = _target(args.file, args.force)
    config = dict(s_dim=args.s_dim, d_dim=args.d_dim, hidden_dim=args.hidden_dim, mlp_hidden=args.mlp_hidden,
                  backbone=args.backbone, P_mean=args.p_mean, P_std=args.p_std)
    model = DiffSDA(ds.elem_shape, **config).to(device)
    steps = max(1, args.epochs * int(np.ceil(len(ds) / args.batch_size)))
    hist = train_model(model, ds.x, steps=steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
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


def cmd_encode(args) -> int:
    model = _load_model(args.ckpt, resolve_device(args.device))
    ds = _load_data(args)
    out = _target(args.file, args.force)
    s, d = model.encode(ds.x)
    _save_npz(out, {"static": s.cpu().numpy(), "dynamic": d.cpu().numpy()})
    print(f"static {tuple(s.shape)}, dynamic {tuple(d.shape)} -> {out}")
    return 0


def cmd_swap(args) -> int:
    model = _load_model(args.ckpt, resolve_device(args.device))
    ds = _load_data(args)
    out = _target(args.file, args.force)
    k = min(args.pairs, len(ds) // 2)
    if k < 1:
        raise SystemExit(f"--pairs: expected at least 1 and 2 sequences in the data, got {args.pairs} and {len(ds)}")
    a, b = np.repeat(np.arange(k), k), np.tile(np.arange(k, 2 * k), k)
    gen = torch.Generator(model.device).manual_seed(args.seed)
    grid = model.swap(ds.x[a], ds.x[b], steps=args.steps, generator=gen).cpu().numpy()
    grid = grid.reshape(k, k, *grid.shape[1:])
    _save_npz(out, {"swaps": grid, "static_donors": ds.x[:k], "dynamic_donors": ds.x[k:2 * k]})
    print(f"swap grid {grid.shape} (rows: static donors, cols: dynamic donors) -> {out}")
    if args.png:
        _swap_png(grid, _target(args.png, args.force))
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
    model = _load_model(args.ckpt, resolve_device(args.device))
    test = make(args.kind, args.n, seed=args.seed + 1)
    judge = train_judge(make(args.kind, args.n_judge, seed=args.seed + 2), seed=args.seed)
    out = _target(args.json, args.force)
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

    def data_options(p, need_file=True):
        p.add_argument("--data", default=None, help="an .npz written by `data` (default: generate --kind)")
        p.add_argument("--kind", choices=sorted(GENERATORS), default="tones")
        p.add_argument("--n", type=int, default=1000, help="sequences to generate when --data is absent")
        p.add_argument("--force", action="store_true", help="overwrite existing output files")

    p = sub.add_parser("data", parents=[common], help="generate procedural sequences")
    p.add_argument("--kind", choices=sorted(GENERATORS), default="tones")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--file", default="data.npz", help="output .npz (default: data.npz)")
    p.add_argument("--force", action="store_true")
    p.set_defaults(handler=cmd_data)

    p = sub.add_parser("fit", parents=[common], help="train DiffSDA")
    data_options(p)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--s-dim", type=int, default=16)
    p.add_argument("--d-dim", type=int, default=4)
    p.add_argument("--hidden-dim", type=int, default=128)
    p.add_argument("--mlp-hidden", type=int, default=64)
    p.add_argument("--backbone", choices=["mlp", "conv"], default="mlp")
    p.add_argument("--p-mean", type=float, default=-1.2)
    p.add_argument("--p-std", type=float, default=1.2)
    p.add_argument("--file", default="model.pt", help="output checkpoint (default: model.pt)")
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("encode", parents=[common], help="static and dynamic codes of sequences")
    data_options(p)
    p.add_argument("--ckpt", required=True)
    p.add_argument("--file", default="codes.npz")
    p.set_defaults(handler=cmd_encode)

    p = sub.add_parser("swap", parents=[common], help="swap grids: rows static donors, cols dynamic donors")
    data_options(p)
    p.add_argument("--ckpt", required=True)
    p.add_argument("--pairs", type=int, default=4, help="k: a k x k grid from 2k sequences")
    p.add_argument("--steps", type=int, default=18)
    p.add_argument("--file", default="swaps.npz")
    p.add_argument("--png", default=None)
    p.set_defaults(handler=cmd_swap)

    p = sub.add_parser("evaluate", parents=[common], help="swap accuracies, probes and reconstruction")
    p.add_argument("--ckpt", required=True)
    p.add_argument("--kind", choices=["tones", "sprites", "series"], default="tones")
    p.add_argument("--n", type=int, default=500, help="test sequences")
    p.add_argument("--n-judge", type=int, default=2000)
    p.add_argument("--pairs", type=int, default=500)
    p.add_argument("--steps", type=int, default=18)
    p.add_argument("--json", default="evaluation.json")
    p.add_argument("--force", action="store_true")
    p.set_defaults(handler=cmd_evaluate)

    add_bench_command(sub, [DIFFSDA_BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-diffsda``; returns the exit code."""
    args = build_parser().parse_args(argv)
    for name in ("file", "json", "png"):
        value = getattr(args, name, None)
        if value is not None and args.command != "bench" and not pathlib.Path(value).is_absolute():
            setattr(args, name, str(pathlib.Path(args.out) / value))
    code = call_handler(args)
    if args.command in ("bench", "reproduce"):
        _flag_central_claim(args)
    return code


def _flag_central_claim(args) -> None:
    """Prints CLAIM NOT REPRODUCED when the central (relative) claim of a written result does not hold."""
    for path in pathlib.Path(args.out).glob(f"diffsda__{args.scale}__seed{args.seed}__*.json"):
        result = json.loads(path.read_text(encoding="utf-8"))
        for claim in result.get("claims", []):
            if claim["name"].startswith("swap_sum_margin") and not claim["holds"]:
                print(f"CLAIM NOT REPRODUCED: {claim['name']} ({claim['measured']}; {claim['criterion']})")


if __name__ == "__main__":
    sys.exit(main())
