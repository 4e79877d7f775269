"""The ``iclr26-fsd`` command line: generate, fit, predict, evaluate, bench (a thin layer over the API).

Files are written with fixed names inside the ``--out`` folder: ``generate`` -> ``data.npz``, ``fit`` ->
``model.pt``, ``predict --draw`` -> ``aids.png``, ``evaluate`` -> ``evaluation.json``.
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
    existing_dir,
    existing_file,
    one_line,
    output_paths,
    positive_int,
    progress,
    run,
    usage_error,
)
from iclr26_shared.device import resolve_device

from .arm import Arm
from .baseline import DirectActionPolicy
from .bench import FSD_BENCHMARK
from .data import UserData, load_jsonl, read_image
from .env import CURRICULA, SPLITS, TableTop2D
from .evaluate import evaluate, load_policy
from .grammar import serialize, to_pixels
from .model import FSDTiny

MODELS = {"fsd": {}, "fsd-nocot": {"cot": False}, "fsd-nosc": {"self_consistency": False}, "direct": None}



def _device(args) -> str:
    return str(resolve_device(args.device))


def _policy(args, path: pathlib.Path | None = None, option: str = "--model"):
    """The policy in ``path`` (default ``--model``; loaded with ``weights_only=True``); errors name ``option``."""
    path = args.model if path is None else path
    try:
        return load_policy(path, _device(args))
    except Exception as err:  # torch.load raises many kinds for a file that is not a model
        raise usage_error(option, "a model.pt written by `iclr26-fsd fit`", f"{path.name} ({one_line(err)})"
                          ) from err


def cmd_generate(args) -> int:
    (out,) = output_paths(args, "data.npz")
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


def _model_name(model) -> str:
    """The ``--model`` choice a loaded policy is."""
    if model.kind == "direct":
        return "direct"
    return "fsd-nocot" if not model.cot else "fsd-nosc" if not model.self_consistency else "fsd"


def _records(args, size: int) -> UserData:
    """The records of ``--data`` (images under ``--image-root``, default the file's folder); errors name ``--data``."""
    try:
        return load_jsonl(args.data, args.image_root, size=size)
    except (OSError, ValueError) as err:
        raise usage_error("--data", "a JSON-lines file of records (image, instruction, box, points, trace)",
                          one_line(err)) from err


def cmd_fit(args) -> int:
    (out,) = output_paths(args, "model.pt")
    if args.data is not None and args.model == "direct":
        raise usage_error("--model", "fsd, fsd-nocot or fsd-nosc with --data (records hold visual aids, not the "
                          "joint waypoints the direct policy learns)", "direct")
    if args.init is not None:
        model = _policy(args, args.init, "--init")
        if _model_name(model) != args.model:
            raise usage_error("--init", f"a {args.model} model (--model) to continue training",
                              f"{args.init.name}, a {_model_name(model)} model")
    else:
        kw = dict(d_model=args.d_model, n_layers=args.n_layers, n_heads=args.n_heads, d_mlp=args.d_mlp,
                  image_size=args.image_size, seed=args.seed, device=_device(args))
        flags = MODELS[args.model]
        model = DirectActionPolicy(**kw) if flags is None else FSDTiny(**flags, **kw)
    size = model.config.image_size
    if args.data is not None:
        data = _records(args, size)
        try:
            model.check_records(data)
        except ValueError as err:
            raise usage_error("--data", "records this model can learn", one_line(err)) from err
        source, extra = f"{len(data)} records from {args.data.name}", {}
    else:
        data = TableTop2D("train", args.n_train, args.seed, image_size=size)
        source, extra = f"{len(data)} training scenes", ({} if args.model == "direct" else
                                                         {"curriculum": args.curriculum})
    print(f"{args.model}: {model.n_parameters} parameters, {source}, {args.steps} steps"
          + (f" (from {args.init.name})" if args.init else ""))
    if isinstance(data, UserData):
        print(f"loss on the records before: {model.loss(data):.4f}")
    hist = model.fit(data, steps=args.steps, batch_size=args.batch_size, lr=args.lr, log_every=100,
                     progress=lambda it: progress(it, total=args.steps, desc="train", quiet=args.quiet),
                     callback=lambda step, loss: print(f"step {step}: loss {loss:.4f}"), **extra)
    print(f"{hist['seconds'][-1]:.1f}s ({hist['seconds'][-1] / args.steps:.3f}s per step)")
    if isinstance(data, UserData):
        print(f"loss on the records after: {model.loss(data):.4f}")
    model.save(out)
    print(f"model -> {out}")
    return 0


def _read_image(path: pathlib.Path) -> np.ndarray:
    """An (H, W, 3) uint8 image from ``--image``; errors name ``--image``."""
    try:
        return read_image(path)
    except (OSError, ValueError) as err:
        raise usage_error("--image", "a PNG image", f"{path.name} ({one_line(err)})") from err


def cmd_predict(args) -> int:
    from .grammar import resize_pad

    draw = output_paths(args, "aids.png") if args.draw else []
    model = _policy(args)
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
    if draw:
        _draw(original, px, draw[0])
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


def cmd_evaluate(args) -> int:
    (out,) = output_paths(args, "evaluation.json")
    model = _policy(args)
    env = TableTop2D(args.split, args.n, args.seed, image_size=model.config.image_size)
    report = evaluate(model, env, Arm.named(args.arm))
    print(f"{args.split} ({len(env)} scenes, {args.arm} arm): success {report['success_rate']:.3f}, "
          f"parse failures {report['parse_fail_rate']:.3f}")
    for k in ("point_accuracy", "trace_rmse", "trace_dfd", "start_error", "box_iou"):
        if k in report:
            print(f"  {k}: {report[k]:.3f}")
    print(f"  outcomes: {report['reasons']}")
    print(f"report -> {write_json_atomic(out, report)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-fsd", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    p = sub.add_parser("generate", parents=[common],
                       help="write a split of scenes (images, instructions, GT aids, expert joints): data.npz")
    p.add_argument("--split", choices=SPLITS, default="train")
    p.add_argument("--n", type=positive_int, default=6000)
    p.add_argument("--image-size", type=positive_int, default=64)
    p.set_defaults(handler=cmd_generate)

    p = sub.add_parser("fit", aliases=["train"], parents=[common],
                       help="train FSDTiny (or an ablation) or the direct-action baseline: model.pt")
    p.add_argument("--model", choices=sorted(MODELS), default="fsd")
    p.add_argument("--steps", type=positive_int, default=1200)
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--n-train", type=positive_int, default=6000, help="training scenes generated from --seed")
    p.add_argument("--data", type=existing_file, default=None, metavar="FILE.jsonl",
                   help="train on your own records instead of generated scenes (JSON lines: image, instruction, "
                        "box, points, trace[, refs, relations]; see iclr26_fsd.load_jsonl)")
    p.add_argument("--image-root", type=existing_dir, default=None,
                   help="folder the records' image paths are relative to (default: the folder of --data)")
    p.add_argument("--init", type=existing_file, default=None,
                   help="a model.pt to continue from (fine-tuning; its sizes replace --d-model etc.)")
    p.add_argument("--curriculum", choices=sorted(CURRICULA), default="staged",
                   help="schedule on generated scenes: staged (single-object grounding first) or mixture")
    p.add_argument("--d-model", type=positive_int, default=96)
    p.add_argument("--n-layers", type=positive_int, default=3)
    p.add_argument("--n-heads", type=positive_int, default=4)
    p.add_argument("--d-mlp", type=positive_int, default=384)
    p.add_argument("--image-size", type=positive_int, default=64)
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("predict", parents=[common],
                       help="visual aids (text and pixels) for one image and instruction (--draw: aids.png)")
    p.add_argument("--model", type=existing_file, required=True, help="a model.pt written by fit")
    p.add_argument("--image", type=existing_file, required=True,
                   help="PNG image (any size: padded to a square, then resized)")
    p.add_argument("--instruction", required=True)
    p.add_argument("--sample-k", type=positive_int, default=1, help="self-consistency sampling (1 = greedy)")
    p.add_argument("--draw", action="store_true", help="also draw the aids over the image into aids.png")
    p.set_defaults(handler=cmd_predict)

    p = sub.add_parser("evaluate", aliases=["eval"], parents=[common],
                       help="closed-loop success and visual-aid quality on a split: evaluation.json")
    p.add_argument("--model", type=existing_file, required=True, help="a model.pt written by fit")
    p.add_argument("--split", choices=SPLITS, default="test_compositional")
    p.add_argument("--arm", choices=("default", "alt"), default="default")
    p.add_argument("--n", type=positive_int, default=300)
    p.set_defaults(handler=cmd_evaluate)

    add_bench_command(sub, [FSD_BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-fsd``; returns the exit code (``benchmark`` is the spec's older name of ``bench``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["benchmark"]:
        argv[0] = "bench"
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
