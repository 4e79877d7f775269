"""The ``iclr26-fsd`` command line: generate, train, predict, eval, bench (a thin layer over the API)."""
from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import Parser, add_bench_command, call_handler, progress

from .arm import Arm
from .baseline import DirectActionPolicy
from .bench import FSD_BENCHMARK
from .env import SPLITS, TableTop2D
from .evaluate import evaluate, load_policy
from .grammar import serialize, to_pixels
from .model import FSDTiny

MODELS = {"fsd": {}, "fsd-nocot": {"cot": False}, "fsd-nosc": {"self_consistency": False}, "direct": None}


def _target(path: str, force: bool) -> pathlib.Path:
    p = pathlib.Path(path)
    if p.exists() and not force:
        raise ValueError(f"{p} exists; pass --force to overwrite it")
    return p


def _common(p: argparse.ArgumentParser, out: str | None) -> None:
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto (default: cpu)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    if out is not None:
        p.add_argument("--out", default=out, help=f"output file (default: {out})")
        p.add_argument("--force", action="store_true", help="overwrite an existing output file")


def cmd_generate(args) -> int:
    out = _target(args.out, args.force)
    env = TableTop2D(args.split, args.n, args.seed, image_size=args.image_size)
    arrays = {"images": env.images, "instructions": np.array(env.instructions),
              "boxes": np.array([a.box for a in env.aids]), "points": np.array([a.points for a in env.aids]),
              "traces": np.array([a.trace for a in env.aids]), "expert_joints": env.expert_joints,
              "fsd_text": np.array([serialize(a) for a in env.aids])}
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    print(f"{args.split}: {len(env)} scenes, images {env.images.shape} -> {out}")
    print(f"  e.g. {env.instructions[0]!r}\n  {arrays['fsd_text'][0]}")
    return 0


def cmd_train(args) -> int:
    out = _target(args.out, args.force)
    env = TableTop2D("train", args.n_train, args.seed, image_size=args.image_size)
    kw = dict(d_model=args.d_model, n_layers=args.n_layers, n_heads=args.n_heads, d_mlp=args.d_mlp,
              image_size=args.image_size, seed=args.seed, device=args.device)
    flags = MODELS[args.model]
    model = DirectActionPolicy(**kw) if flags is None else FSDTiny(**flags, **kw)
    print(f"{args.model}: {model.n_parameters} parameters, {len(env)} training scenes, {args.steps} steps")
    hist = model.fit(env, steps=args.steps, batch_size=args.batch_size, lr=args.lr, log_every=100,
                     progress=lambda it: progress(it, total=args.steps, desc="train", quiet=args.quiet),
                     callback=lambda step, loss: print(f"step {step}: loss {loss:.4f}"))
    print(f"{hist['seconds'][-1]:.1f}s ({hist['seconds'][-1] / args.steps:.3f}s per step)")
    model.save(out)
    print(f"model -> {out}")
    return 0


def _read_image(path: str) -> np.ndarray:
    import matplotlib.image

    img = np.asarray(matplotlib.image.imread(path))
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, -1)
    img = img[..., :3]
    if img.dtype != np.uint8:
        img = np.clip(np.rint(img * 255), 0, 255).astype(np.uint8)
    return img


def cmd_predict(args) -> int:
    from .grammar import resize_pad

    model = load_policy(args.model, args.device)
    original = _read_image(args.image)
    h, w = original.shape[:2]
    img = resize_pad(original, model.config.image_size)[None]
    if isinstance(model, DirectActionPolicy):
        q = model.predict(img, [args.instruction])[0]
        print("joint waypoints (rad, training arm):", np.round(q, 4).tolist())
        return 0
    aids = model.predict(img, [args.instruction], sample_k=args.sample_k, seed=args.seed)[0]
    if aids is None:
        print("output does not parse (parse failure)")
        return 1
    print(serialize(aids))
    px = {"box": to_pixels(np.reshape(aids.box, (2, 2)), w, h).reshape(-1),
          "points": to_pixels(aids.points, w, h), "trace": to_pixels(aids.trace, w, h)}
    print(f"in pixels of the {w}x{h} image ([x, y], y down):")
    for k, v in px.items():
        print(f"  {k}: {np.round(v, 1).tolist()}")
    if args.draw:
        _draw(original, px, _target(args.draw, args.force))
    return 0


def _draw(img: np.ndarray, px: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 4 * img.shape[0] / img.shape[1]))
    ax.imshow(img)
    x1, y1, x2, y2 = px["box"]
    ax.plot([x1, x2, x2, x1, x1], [y1, y1, y2, y2, y1], color="white", lw=1.5)
    ax.scatter(*np.asarray(px["points"]).T, color="cyan", s=12)
    ax.plot(*np.asarray(px["trace"]).T, color="black", marker=".", lw=1.5)
    ax.axis("off")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    print(f"drawing -> {path}")


def cmd_eval(args) -> int:
    model = load_policy(args.model, args.device)
    env = TableTop2D(args.split, args.n, args.seed, image_size=model.config.image_size)
    report = evaluate(model, env, Arm.named(args.arm))
    print(f"{args.split} ({len(env)} scenes, {args.arm} arm): success {report['success_rate']:.3f}, "
          f"parse failures {report['parse_fail_rate']:.3f}")
    for k in ("point_accuracy", "trace_rmse", "trace_dfd", "start_error", "box_iou"):
        if k in report:
            print(f"  {k}: {report[k]:.3f}")
    print(f"  outcomes: {report['reasons']}")
    if args.json:
        print(f"report -> {write_json_atomic(_target(args.json, args.force), report)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-fsd", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("generate", help="write a split of scenes: images, instructions, GT aids, expert joints")
    p.add_argument("--split", choices=SPLITS, default="train")
    p.add_argument("--n", type=int, default=6000)
    p.add_argument("--image-size", type=int, default=64)
    _common(p, "data.npz")
    p.set_defaults(handler=cmd_generate)

    p = sub.add_parser("train", help="train FSDTiny (or an ablation) or the direct-action baseline")
    p.add_argument("--model", choices=sorted(MODELS), default="fsd")
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--n-train", type=int, default=6000, help="training scenes generated from --seed")
    p.add_argument("--d-model", type=int, default=96)
    p.add_argument("--n-layers", type=int, default=3)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--d-mlp", type=int, default=384)
    p.add_argument("--image-size", type=int, default=64)
    _common(p, "model.pt")
    p.set_defaults(handler=cmd_train)

    p = sub.add_parser("predict", help="visual aids (text and pixels) for one image and instruction")
    p.add_argument("--model", required=True, help="a file written by train")
    p.add_argument("--image", required=True, help="PNG image (any size: padded to a square, then resized)")
    p.add_argument("--instruction", required=True)
    p.add_argument("--sample-k", type=int, default=1, help="self-consistency sampling (1 = greedy)")
    p.add_argument("--draw", default=None, help="write the aids over the image to this PNG")
    p.add_argument("--force", action="store_true", help="overwrite an existing --draw file")
    _common(p, None)
    p.set_defaults(handler=cmd_predict)

    p = sub.add_parser("eval", help="closed-loop success and visual-aid quality on a split")
    p.add_argument("--model", required=True)
    p.add_argument("--split", choices=SPLITS, default="test_compositional")
    p.add_argument("--arm", choices=("default", "alt"), default="default")
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--json", default=None, help="also write the report to this JSON file")
    p.add_argument("--force", action="store_true", help="overwrite an existing --json file")
    _common(p, None)
    p.set_defaults(handler=cmd_eval)

    add_bench_command(sub, [FSD_BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["benchmark"]:  # the spec's older name of ``bench``
        argv[0] = "bench"
    args = build_parser().parse_args(argv)
    return call_handler(args)


if __name__ == "__main__":
    sys.exit(main())
