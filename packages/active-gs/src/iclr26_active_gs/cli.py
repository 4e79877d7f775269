"""``iclr26-active-gs``: render, fit, select, refine-pose, and ``bench``/``benchmark``/``reproduce``."""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Sequence

import torch
from iclr26_shared.cli import Parser, add_bench_command, call_handler, common_options
from iclr26_shared.device import resolve_device

from .bench import BENCHMARKS
from .cameras import Camera
from .io import load_image_folder, read_image, read_poses, write_png
from .model import GaussianModel
from .pose import robust_pose_refine
from .render import render
from .scene import SCENES, SyntheticObjectScene
from .selectors import SELECTORS
from .train import Trainer, psnr


def _target(path: str, force: bool) -> pathlib.Path:
    p = pathlib.Path(path)
    if p.exists() and not force:
        raise ValueError(f"{p} already exists; pass --force to overwrite it")
    return p


def _device(args) -> torch.device:
    dev = resolve_device(args.device)
    if dev.type == "cpu":
        torch.set_num_threads(min(2, torch.get_num_threads()))
    return dev


def cmd_render(args) -> int:
    out = _target(args.out, args.force)
    dev = _device(args)
    scene = SyntheticObjectScene(args.scene, image_size=args.size, n_test=0 if args.split == "candidate" else 24)
    cams = scene.candidates if args.split == "candidate" else scene.test_cameras
    if not 0 <= args.view < len(cams):
        raise ValueError(f"--view: expected 0 <= view < {len(cams)} ({args.split} cameras), got {args.view}")
    model = GaussianModel.load(args.model) if args.model else scene.gt
    model = model.to(dev)
    start = time.perf_counter()
    with torch.no_grad():
        img = render(model, cams[args.view].to(dev), bg=scene.bg, backend=args.backend)["rgb"]
    seconds = time.perf_counter() - start
    write_png(out, img)
    print(f"rendered {img.shape[1]}x{img.shape[0]} ({len(model)} Gaussians) in {seconds * 1000:.1f} ms -> {out}")
    return 0


def cmd_fit(args) -> int:
    out = _target(args.out, args.force)
    dev = _device(args)
    images, cams = load_image_folder(args.images, args.poses)
    model = (GaussianModel.load(args.init) if args.init else GaussianModel(args.n, radius=args.radius,
                                                                           seed=args.seed)).to(dev)
    trainer = Trainer(model, lr_scale=args.lr_scale, seed=args.seed, render_kw={"backend": args.backend})
    done = 0
    while done < args.iters:
        step = min(100, args.iters - done)
        losses = trainer.fit(images, cams, step)
        done += step
        with torch.no_grad():
            p = sum(psnr(render(model, c.to(dev), backend=args.backend)["rgb"].clamp(0, 1), im)
                    for c, im in zip(cams, images, strict=True)) / len(cams)
        print(f"iter {done:6d}  loss {sum(losses) / len(losses):.4f}  train PSNR {p:.2f} dB")
    model.save(out)
    print(f"-> {out}")
    return 0


def _cameras_json(path: str) -> list[Camera]:
    return list(read_poses(path).values())


def cmd_select(args) -> int:
    dev = _device(args)
    model = GaussianModel.load(args.model).to(dev)
    images, cams = load_image_folder(args.images, args.poses)
    cands = _cameras_json(args.candidates)
    kind = SELECTORS[args.method]
    selector = kind() if args.method == "fvs" else kind(seed=args.seed)
    chosen = selector.select(model, images, [c.to(dev) for c in cams], [c.to(dev) for c in cands], args.n)
    scores = selector.scores_
    print(json.dumps({"method": args.method, "selected": chosen,
                      "scores": [float(scores[k]) for k in chosen] if scores is not None else None}))
    return 0


def cmd_refine_pose(args) -> int:
    dev = _device(args)
    model = GaussianModel.load(args.model).to(dev)
    image = read_image(args.image)
    camera = _cameras_json(args.pose)[0]
    refined, info = robust_pose_refine(model, image, camera, steps=args.steps, loss=args.loss, extent=args.extent)
    print(json.dumps({"viewmat": refined.viewmat.tolist(), "loss": info["loss"], "xi": info["xi"]}))
    if args.json:
        from iclr26_shared.bench import write_json_atomic

        write_json_atomic(_target(args.json, args.force), refined.to_dict())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-active-gs", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    backend = {"default": "auto", "choices": ("auto", "torch", "gsplat"), "help": "rasteriser (default auto)"}

    p = sub.add_parser("render", parents=[common_options()], help="render the toy scene (or a model) to PNG")
    p.add_argument("--scene", default="toy-object", choices=SCENES)
    p.add_argument("--view", type=int, default=0, help="camera index")
    p.add_argument("--split", default="candidate", choices=("candidate", "test"))
    p.add_argument("--size", type=int, default=64, help="image edge in pixels (default 64)")
    p.add_argument("--model", default=None, help="a model .npz (default: the scene's ground truth)")
    p.add_argument("--backend", **backend)
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.set_defaults(handler=cmd_render, out="render.png")

    p = sub.add_parser("fit", parents=[common_options()], help="fit a Gaussian model to posed images")
    p.add_argument("--images", required=True, help="folder of PNG/JPEG images")
    p.add_argument("--poses", required=True, help="JSON {stem: {K, viewmat, width, height}} (OpenCV world-to-camera)")
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--n", type=int, default=1000, help="number of Gaussians (default 1000)")
    p.add_argument("--radius", type=float, default=1.0, help="initialisation ball radius (default 1.0)")
    p.add_argument("--init", default=None, help="continue from this model .npz")
    p.add_argument("--lr-scale", type=float, default=1.0)
    p.add_argument("--backend", **backend)
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.set_defaults(handler=cmd_fit, out="model.npz")

    p = sub.add_parser("select", parents=[common_options()], help="choose the next view(s) to capture")
    p.add_argument("--model", required=True)
    p.add_argument("--images", required=True)
    p.add_argument("--poses", required=True)
    p.add_argument("--candidates", required=True, help="JSON list of candidate cameras")
    p.add_argument("--method", default="semvar", choices=tuple(SELECTORS))
    p.add_argument("--n", type=int, default=1)
    p.set_defaults(handler=cmd_select)

    p = sub.add_parser("refine-pose", parents=[common_options()], help="robustly correct the pose of a new image")
    p.add_argument("--model", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--pose", required=True, help="JSON camera {K, viewmat, width, height}")
    p.add_argument("--steps", type=int, default=60, help="Adam steps per level (default 60)")
    p.add_argument("--loss", default="geman-mcclure", choices=("geman-mcclure", "l2"))
    p.add_argument("--extent", type=float, default=None, help="translation scale (default: camera distance)")
    p.add_argument("--json", default=None, help="also write the refined camera to this JSON file")
    p.add_argument("--force", action="store_true")
    p.set_defaults(handler=cmd_refine_pose)

    add_bench_command(sub, list(BENCHMARKS))
    sub.choices["benchmark"] = sub.choices["bench"]  # alias kept from the spec
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["bench"], ["benchmark"], ["reproduce"]) and len(argv) > 1 and not argv[1].startswith("-"):
        argv = [argv[0], "--only", *_expand(argv[1]), *argv[2:]]
    return call_handler(build_parser().parse_args(argv))


def _expand(name: str) -> list[str]:
    """``active-gs`` selects both benchmarks, ``active-gs.noisy-pose`` only that one."""
    hits = [b.name for b in BENCHMARKS if b.name == name or (name == "active-gs" and b.name.startswith(name))]
    if not hits:
        raise SystemExit(f"bench: unknown benchmark {name!r}; known: {[b.name for b in BENCHMARKS]}")
    return hits if name != "active-gs" else [b.name for b in BENCHMARKS]


if __name__ == "__main__":
    raise SystemExit(main())
