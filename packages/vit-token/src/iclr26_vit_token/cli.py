"""``iclr26-vit-token``: parameter table, pretraining (fit), linear probes (evaluate), LayerNorm analysis, bench.

Files land in the ``--out`` folder under fixed names: ``fit`` -> ``model.pt``, ``evaluate`` -> ``evaluation.json``.
``--data-root DIR`` gives ``evaluate`` and ``analyze`` a user segmentation dataset instead of ShapesSeg:
``DIR/train`` and ``DIR/test``, each with ``images/*.png`` and integer ``masks/*.png`` of the same names
(``load_seg_split``); ``fit`` pretrains on ShapesSeg only (its [CLS] loss needs ShapesSeg's global labels).
"""
from __future__ import annotations

import argparse
import functools
import json
import pathlib
from collections.abc import Sequence

import torch
from iclr26_shared.bench import write_json_atomic
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
from iclr26_shared.distributed import DistributedContext
from iclr26_shared.seeding import seed_everything

from .analysis import token_cosine_stats
from .bench import ABLATIONS, BENCHMARK
from .data import N_SEG_CLASSES, load_seg_split, shapes_seg_splits
from .model import BASE, SEPNORM, SpecViT, count_flops, vit_base_config, vit_cpu_config, vit_small_config
from .pretrain import OBJECTIVES, PIXEL_TARGETS, pretrain
from .probe import linear_probe_cls, linear_probe_seg

PRESETS = {"vit-b": vit_base_config, "vit-s": vit_small_config, "cpu": vit_cpu_config}
VARIANTS = {"base": BASE, "spec": {}, "sepnorm": SEPNORM, "norm_only": {"spec_qkv_blocks": "none"},
            "qkv_only": {"spec_norm_blocks": "none"}}


def cmd_params(args) -> int:
    arch = PRESETS[args.preset]()
    print(f"preset {args.preset}: {arch}")
    print(f"{'variant':<10} {'base':>12} {'extra':>10} {'ratio':>8}")
    for name, spec in VARIANTS.items():
        over = SpecViT(**arch, **spec).param_overhead()
        print(f"{name:<10} {over['base']:>12,} {over['extra']:>10,} {over['ratio']:>8.2%}")
    if args.preset == "cpu":
        base, spec = SpecViT(**arch, **BASE), SpecViT(**arch)
        print(f"FLOPs per image: base {count_flops(base):,}, spec {count_flops(spec):,}")
    return 0


def _load(path: pathlib.Path, device: torch.device) -> SpecViT:
    """The model (eval mode) in the ``--ckpt`` file written by ``fit``."""
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
        model = SpecViT(**ckpt["arch"], **ckpt["spec"])
        model.load_state_dict(ckpt["state_dict"])
    except Exception as err:  # a damaged file can fail anywhere in the (weights-only) unpickler
        raise usage_error("--ckpt", "a model.pt written by 'iclr26-vit-token fit'",
                          f"{str(path)!r} ({type(err).__name__})") from None
    return model.to(device).eval()


def cmd_fit(args) -> int:
    """Pretrains one model; under ``torchrun`` every rank trains its shard of each batch and rank 0 writes."""
    (out,) = output_paths(args, "model.pt")
    if args.data_root is not None:
        raise usage_error("--data-root", "no folder for 'fit' (it pretrains on ShapesSeg, whose global labels its "
                          "[CLS] loss needs; user data goes to 'evaluate' / 'analyze')", str(args.data_root))
    with DistributedContext(args.device) as dist:
        seed_everything(args.seed)
        data = shapes_seg_splits({"pretrain": args.n_images}, seed=args.seed)["pretrain"]
        base = SpecViT(**vit_cpu_config(), **BASE)
        model = SpecViT.from_base(base, **VARIANTS[args.variant]).to(dist.device)

        def log(step: int, parts: dict[str, float]) -> None:
            if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
                print(f"step {step + 1:>5}/{args.steps}  " + "  ".join(f"{k} {v:.4f}" for k, v in parts.items()))

        pretrain(model, data, steps=args.steps, objective=args.objective, batch_size=args.batch_size, lr=args.lr,
                 seed=args.seed, mask_ratio=args.mask_ratio, pixel_target=args.pixel_target,
                 callback=None if args.quiet or not dist.is_main else log, dist=dist,
                 progress=functools.partial(progress, desc="steps", quiet=args.quiet or not dist.is_main))
        ckpt = {"arch": model.arch, "spec": model.spec, "state_dict": model.state_dict(), "variant": args.variant,
                "objective": args.objective, "steps": args.steps, "seed": args.seed,
                "mask_ratio": args.mask_ratio, "pixel_target": args.pixel_target}
        if dist.save(ckpt, out) is not None:
            print(f"checkpoint -> {out}")
    return 0


def cmd_evaluate(args) -> int:
    (path,) = output_paths(args, "evaluation.json")
    device = resolve_device(args.device)
    seed_everything(args.seed)
    model = _load(args.ckpt, device)
    if args.data_root is None:
        splits = shapes_seg_splits({"probe_train": args.n_train, "probe_test": args.n_test}, seed=args.seed)
        data = {"train": splits["probe_train"], "test": splits["probe_test"]}
        acc = linear_probe_cls(model, data["train"], data["test"], seed=args.seed)
        print(f"CLS linear probe accuracy {acc:.4f}")
    else:  # user segmentation pairs: no global labels, so no [CLS] probe
        data, acc = load_seg_split(args.data_root), None
    seg = linear_probe_seg(model, data["train"], data["test"], epochs=args.epochs, seed=args.seed,
                           n_classes=args.n_classes, ignore_index=args.ignore_index)
    print(f"patch linear probe mIoU {seg['miou']:.4f}, pixel accuracy {seg['pixel_acc']:.4f}")
    write_json_atomic(path, {"ckpt": str(args.ckpt), "data_root": args.data_root and str(args.data_root),
                             "cls_acc": acc, **seg})
    print(f"  -> {path}")
    return 0


def cmd_analyze(args) -> int:
    device = resolve_device(args.device)
    model = _load(args.ckpt, device)
    if args.data_root is None:
        images = shapes_seg_splits({"probe_test": args.n_images}, seed=args.seed)["probe_test"].images
    else:
        images = load_seg_split(args.data_root)["test"].images[:args.n_images]
    stats = token_cosine_stats(model, images, args.block)
    print(f"block {args.block} pre-attention LayerNorm (mean cosine over {len(images)} images):")
    print(f"  [CLS]-patch   pre {stats['cls_patch_pre']:+.4f}  post {stats['cls_patch_post']:+.4f}")
    print(f"  patch-patch   pre {stats['patch_patch_pre']:+.4f}  post {stats['patch_patch_post']:+.4f}")
    print(json.dumps(stats))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-vit-token", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("params", parents=[common_options()], help="parameter overhead of each specialisation variant")
    p.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    p.set_defaults(handler=cmd_params)

    p = sub.add_parser("fit", aliases=["pretrain"], parents=[common_options()],
                       help="pretrain a CPU-preset model on ShapesSeg; writes model.pt")
    p.add_argument("--variant", choices=sorted(VARIANTS), default="spec")
    p.add_argument("--objective", choices=OBJECTIVES, default="cls+masked_patch")
    p.add_argument("--pixel-target", choices=PIXEL_TARGETS, default="raw")
    p.add_argument("--mask-ratio", type=float, default=0.75)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--n-images", type=int, default=8000)
    p.add_argument("--log-every", type=int, default=100)
    p.set_defaults(handler=cmd_fit)

    p = sub.add_parser("evaluate", aliases=["probe"], parents=[common_options()],
                       help="linear probes ([CLS] accuracy, patch mIoU) of a checkpoint; writes evaluation.json")
    p.add_argument("--ckpt", type=existing_file, required=True, help="model.pt written by fit")
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--n-test", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--n-classes", type=int, default=N_SEG_CLASSES,
                   help="segmentation classes of the masks (ShapesSeg: 5; with --data-root the user's)")
    p.add_argument("--ignore-index", type=int, default=None, help="mask label left out of loss and scores (e.g. 255)")
    p.set_defaults(handler=cmd_evaluate)

    p = sub.add_parser("analyze", parents=[common_options()],
                       help="cosine similarities around a block's pre-attention LN (printed; writes nothing)")
    p.add_argument("--ckpt", type=existing_file, required=True, help="model.pt written by fit")
    p.add_argument("--block", type=int, default=2)
    p.add_argument("--n-images", type=int, default=1000)
    p.set_defaults(handler=cmd_analyze)

    add_bench_command(sub, [BENCHMARK, ABLATIONS])
    sub.choices["benchmark"] = sub.choices["bench"]  # the old name, as an (unlisted) alias
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
