"""``iclr26-smsn``: generate, fit, evaluate, predict, bench (a thin layer over the public API).

Every command writes fixed file names into the ``--out`` folder: ``generate`` -> ``phantom.npz`` (and
``case<i>.png`` with ``--png``), ``fit`` -> ``model.pt`` and ``history.json`` (data-parallel under ``torchrun``;
rank 0 writes), ``evaluate`` -> ``evaluation.json``, ``predict`` -> ``seg.nii.gz``.
"""
from __future__ import annotations

import argparse
import functools
import gzip
import json
import pathlib
import sys
from collections.abc import Sequence

import numpy as np
import torch
from iclr26_shared.bench import atomic_path, result_path, write_json_atomic
from iclr26_shared.cli import (
    Parser,
    add_bench_command,
    common_options,
    existing_dir,
    existing_file,
    output_paths,
    progress,
    run,
    usage_error,
)
from iclr26_shared.device import resolve_device
from iclr26_shared.distributed import DistributedContext

from .bench import BENCHMARK
from .data import DISPLAY_NAMES, TISSUES, PhantomDataset, make_phantom
from .metrics import REGIONS, evaluate_subsets
from .models import build_model
from .train import fit

N_PNG = 4  # cases drawn by ``generate --png``


def _generate(args) -> int:
    out, *pngs = output_paths(args, "phantom.npz", *(f"case{i}.png" for i in range(min(args.n, N_PNG) * args.png)))
    p = make_phantom(args.n, args.size, seed=args.seed, return_clean=True)
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, images=p.images, labels=p.labels, clean=p.clean)
    print(f"{'tissue':<14}" + "".join(f"{m:>8}" for m in DISPLAY_NAMES))
    for t, name in enumerate(TISSUES):
        sel = p.tissue == t
        if sel.any():
            means = [p.images[:, c][sel].mean() for c in range(4)]
            print(f"{name:<14}" + "".join(f"{v:8.2f}" for v in means))
    print(f"wrote {out} (images {p.images.shape}, labels {p.labels.shape}); means are of z-scored images")
    if pngs:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        for i, png in enumerate(pngs):
            fig, axes = plt.subplots(1, 5, figsize=(10, 2.2))
            for ax, img, title in zip(axes, [*p.images[i], p.labels[i]], [*DISPLAY_NAMES, "labels"]):
                ax.imshow(img, cmap="gray" if title != "labels" else "viridis")
                ax.set_title(title)
                ax.axis("off")
            with atomic_path(png) as tmp:
                fig.savefig(tmp, dpi=80, format="png")
            plt.close(fig)
    return 0


def _train_data(args):
    if args.data == "brats":
        from .data import load_brats_folder

        if args.data_root is None:
            raise usage_error("--data-root", "the BraTS folder (one sub-folder per case) with --data brats", "none")
        cases = list(load_brats_folder(args.data_root))
        imgs = np.concatenate([c.images for c in cases])
        labs = np.concatenate([c.labels for c in cases])
        return PhantomDataset(imgs, labs)
    return PhantomDataset.from_phantom(make_phantom(args.n_train, args.size, seed=args.seed))


def _fit(args) -> int:
    """Trains one model; under ``torchrun`` every rank trains its shard of each batch and rank 0 writes."""
    out, history_path = output_paths(args, "model.pt", "history.json")
    with DistributedContext(args.device) as dist:
        train_set = _train_data(args)
        widths = tuple(args.widths)
        torch.manual_seed(args.seed)
        model = build_model(args.model, widths=widths)

        def show(epoch, terms):
            if dist.is_main and not args.quiet:
                print(f"epoch {epoch}: " + " ".join(f"{k}={v:.4f}" for k, v in terms.items()), flush=True)

        hist = fit(model, train_set, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                   device=dist.device, steps=args.steps, callback=show, dist=dist,
                   progress=functools.partial(progress, desc="steps", quiet=args.quiet or not dist.is_main))
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        ckpt = {"model": args.model, "widths": widths, "size": int(train_set.images.shape[-1]),
                "state_dict": state, "steps": hist.steps}
        dist.save(ckpt, out)
        if not dist.is_main:
            return 0
    write_json_atomic(history_path, {"steps": hist.steps, "epochs": hist.epochs})
    print(f"wrote {out} ({hist.steps} steps), {history_path}")
    return 0


def _load(path: pathlib.Path, device):
    """The model (eval mode) and checkpoint dict of the ``--ckpt`` file written by ``fit``."""
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
        model = build_model(ckpt["model"], widths=tuple(ckpt["widths"])).to(device)
        model.load_state_dict(ckpt["state_dict"])
    except Exception as err:  # a damaged file can fail anywhere in the (weights-only) unpickler
        raise usage_error("--ckpt", "a checkpoint written by 'iclr26-smsn fit'",
                          f"{str(path)!r} ({type(err).__name__})") from None
    return model.eval(), ckpt


def _evaluate(args) -> int:
    (path,) = output_paths(args, "evaluation.json")
    device = resolve_device(args.device)
    model, ckpt = _load(args.ckpt, device)
    size = args.size or ckpt["size"]
    test = PhantomDataset.from_phantom(make_phantom(args.n_test, size, seed=10_000 + args.seed))
    ev = evaluate_subsets(model, test, tta_orders=args.tta)
    print(f"{'subset':<22}" + "".join(f"{r:>7}" for r in REGIONS))
    for name, row in zip(ev["subsets"], ev["dice"]):
        print(f"{name:<22}" + "".join(f"{v:7.3f}" for v in row))
    print(f"{'mean':<22}" + "".join(f"{ev['mean'][r]:7.3f}" for r in REGIONS))
    print(f"overall {ev['overall']:.4f}  hard (<=2 modalities) {ev['hard']:.4f}")
    write_json_atomic(path, {k: v for k, v in ev.items() if k != "per_sample"})
    print(f"-> {path}")
    return 0


def _predict(args) -> int:
    from .data import MODALITIES, _nibabel, read_case

    (out,) = output_paths(args, "seg.nii.gz")
    try:
        nib = _nibabel()
    except ImportError:
        raise usage_error("predict", "nibabel installed (pip install 'iclr26-smsn[nifti]')", "no nibabel") from None
    device = resolve_device(args.device)
    model, _ = _load(args.ckpt, device)
    case = read_case(args.case)
    used = [m for m, a in zip(MODALITIES, case.available) if a]
    print(f"found and used modalities: {', '.join(used)}; missing: "
          f"{', '.join(m for m, a in zip(MODALITIES, case.available) if not a) or 'none'}")
    factor = 2 ** (len(model.widths) - 1)
    h, w = case.images.shape[1:3]
    pad = ((0, 0), (0, (-h) % factor), (0, (-w) % factor), (0, 0))
    vol = torch.from_numpy(np.pad(case.images, pad)).permute(3, 0, 1, 2).to(device)  # (D, 4, H', W')
    mask = torch.as_tensor(case.available, device=device).expand(len(vol), -1)
    with torch.no_grad():
        pred = torch.cat([model(vol[i : i + 16], mask[i : i + 16]).logits.argmax(1)
                          for i in progress(range(0, len(vol), 16), desc="slices", quiet=args.quiet)])
    seg = pred.permute(1, 2, 0).cpu().numpy()[:h, :w]
    seg = np.where(seg == 3, 4, seg).astype(np.uint8)
    with atomic_path(out) as tmp:
        tmp.write_bytes(gzip.compress(nib.Nifti1Image(seg, case.affine).to_bytes()))
    print(f"wrote {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``iclr26-smsn``."""
    parser = Parser(prog="iclr26-smsn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("generate", aliases=["phantom"], parents=[common_options()],
                       help="generate phantom cases, print the contrast table; writes phantom.npz")
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--png", action="store_true", help=f"also write case<i>.png for the first {N_PNG} cases")
    p.set_defaults(handler=_generate)

    t = sub.add_parser("fit", aliases=["train"], parents=[common_options()],
                       help="train SMSN or a parallel baseline (data-parallel under torchrun); writes model.pt, "
                       "history.json")
    t.add_argument("--model", choices=("smsn", "mean", "concat", "max", "attention"), default="smsn")
    t.add_argument("--data", choices=("phantom", "brats"), default="phantom",
                   help="brats: the case folders under --data-root")
    t.add_argument("--n-train", type=int, default=600)
    t.add_argument("--size", type=int, default=64)
    t.add_argument("--epochs", type=int, default=8)
    t.add_argument("--steps", type=int, default=None, help="total steps (overrides --epochs)")
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--widths", type=int, nargs="+", default=[8, 16, 32, 64])
    t.set_defaults(handler=_fit)

    e = sub.add_parser("evaluate", aliases=["eval"], parents=[common_options()],
                       help="15-subset Dice table of a checkpoint on test phantoms; writes evaluation.json")
    e.add_argument("--ckpt", type=existing_file, required=True, help="model.pt written by fit")
    e.add_argument("--n-test", type=int, default=200)
    e.add_argument("--size", type=int, default=None, help="default: the training size")
    e.add_argument("--tta", type=int, default=1, help="average over K random modality orders")
    e.set_defaults(handler=_evaluate)

    r = sub.add_parser("predict", parents=[common_options()],
                       help="segment one NIfTI case folder (needs nibabel); writes seg.nii.gz")
    r.add_argument("--ckpt", type=existing_file, required=True, help="model.pt written by fit")
    r.add_argument("--case", type=existing_dir, required=True, help="<case_id>/ holding <case_id>_<modality>.nii.gz")
    r.set_defaults(handler=_predict)

    add_bench_command(sub, [BENCHMARK])
    for name in ("bench", "reproduce"):
        bench = sub.choices[name].get_default("handler")
        sub.choices[name].set_defaults(handler=lambda args, bench=bench: _bench_and_report(bench, args))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    return run(build_parser(), argv)


def _bench_and_report(bench, args) -> int:
    code = bench(args)
    _report_central_claim(args)
    return code


def _report_central_claim(args) -> None:
    """Prints "CLAIM NOT REPRODUCED" when the paper's central claim does not hold in the written result."""
    dev = resolve_device(args.device)
    path = result_path(args.out, BENCHMARK.name, args.scale, args.seed, dev.type if dev.index is None else str(dev))
    if not path.exists():
        return
    claims = json.loads(path.read_text(encoding="utf-8")).get("claims", [])
    central = [c for c in claims if c["name"].startswith("smsn_vs_")]
    if central and not all(c["holds"] for c in central):
        failed = ", ".join(c["name"] for c in central if not c["holds"])
        print(f"CLAIM NOT REPRODUCED ({failed}): reported as a finding, see the README")


if __name__ == "__main__":
    sys.exit(main())
