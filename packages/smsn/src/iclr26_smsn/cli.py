"""``iclr26-smsn``: phantom, train, eval, predict, bench (a thin layer over the public API)."""
from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import sys
from collections.abc import Sequence

import numpy as np
import torch
from iclr26_shared.bench import atomic_path, result_path, write_json_atomic
from iclr26_shared.cli import Parser, add_bench_command, call_handler, common_options
from iclr26_shared.device import resolve_device

from .bench import BENCHMARK
from .data import DISPLAY_NAMES, TISSUES, PhantomDataset, make_phantom
from .metrics import REGIONS, evaluate_subsets
from .models import build_model
from .train import fit


def _refuse_overwrite(path: pathlib.Path, force: bool) -> None:
    if path.exists() and not force:
        raise SystemExit(f"{path} exists; pass --force to overwrite it")


def _phantom(args) -> int:
    out = pathlib.Path(args.out)
    _refuse_overwrite(out, args.force)
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
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        folder = pathlib.Path(args.png)
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(min(len(p), 4)):
            fig, axes = plt.subplots(1, 5, figsize=(10, 2.2))
            for ax, img, title in zip(axes, [*p.images[i], p.labels[i]], [*DISPLAY_NAMES, "labels"]):
                ax.imshow(img, cmap="gray" if title != "labels" else "viridis")
                ax.set_title(title)
                ax.axis("off")
            with atomic_path(folder / f"case{i}.png") as tmp:
                fig.savefig(tmp, dpi=80)
            plt.close(fig)
    return 0


def _train_data(args):
    if args.data == "brats":
        from .data import load_brats_folder

        if not args.root:
            raise SystemExit("--root: the BraTS folder is required with --data brats")
        cases = list(load_brats_folder(args.root))
        imgs = np.concatenate([c.images for c in cases])
        labs = np.concatenate([c.labels for c in cases])
        return PhantomDataset(imgs, labs)
    return PhantomDataset.from_phantom(make_phantom(args.n_train, args.size, seed=args.seed))


def _train(args) -> int:
    out = pathlib.Path(args.out)
    _refuse_overwrite(out, args.force)
    device = resolve_device(args.device)
    train_set = _train_data(args)
    widths = tuple(args.widths)
    model = build_model(args.model, widths=widths).to(device)

    def show(epoch, terms):
        print(f"epoch {epoch}: " + " ".join(f"{k}={v:.4f}" for k, v in terms.items()), flush=True)

    hist = fit(model, train_set, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
               device=device, steps=args.steps, callback=show)
    ckpt = {"model": args.model, "widths": widths, "size": int(train_set.images.shape[-1]),
            "state_dict": model.state_dict(), "steps": hist.steps}
    with atomic_path(out) as tmp:
        torch.save(ckpt, tmp)
    print(f"wrote {out} ({hist.steps} steps)")
    return 0


def _load(path: str, device):
    ckpt = torch.load(path, map_location=device, weights_only=False)
    model = build_model(ckpt["model"], widths=tuple(ckpt["widths"])).to(device)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval(), ckpt


def _eval(args) -> int:
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
    if args.json:
        path = pathlib.Path(args.json)
        _refuse_overwrite(path, args.force)
        write_json_atomic(path, {k: v for k, v in ev.items() if k != "per_sample"})
    return 0


def _predict(args) -> int:
    from .data import MODALITIES, _nibabel, read_case

    nib = _nibabel()
    out = pathlib.Path(args.out)
    _refuse_overwrite(out, args.force)
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
        pred = torch.cat([model(vol[i : i + 16], mask[i : i + 16]).logits.argmax(1) for i in range(0, len(vol), 16)])
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

    p = sub.add_parser("phantom", parents=[common_options()],
                       help="generate phantom cases and print the contrast table")
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--png", default=None, help="folder for a PNG per case (first 4)")
    p.add_argument("--force", action="store_true")
    p.set_defaults(handler=_phantom, out="phantom.npz")

    t = sub.add_parser("train", parents=[common_options()], help="train SMSN or a parallel baseline")
    t.add_argument("--model", choices=("smsn", "mean", "concat", "max", "attention"), default="smsn")
    t.add_argument("--data", choices=("phantom", "brats"), default="phantom")
    t.add_argument("--root", default=None, help="BraTS folder (with --data brats)")
    t.add_argument("--n-train", type=int, default=600)
    t.add_argument("--size", type=int, default=64)
    t.add_argument("--epochs", type=int, default=8)
    t.add_argument("--steps", type=int, default=None, help="total steps (overrides --epochs)")
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--widths", type=int, nargs="+", default=[8, 16, 32, 64])
    t.add_argument("--force", action="store_true")
    t.set_defaults(handler=_train, out="model.pt")

    e = sub.add_parser("eval", parents=[common_options()], help="15-subset Dice table of a checkpoint on test phantoms")
    e.add_argument("--ckpt", required=True)
    e.add_argument("--n-test", type=int, default=200)
    e.add_argument("--size", type=int, default=None, help="default: the training size")
    e.add_argument("--tta", type=int, default=1, help="average over K random modality orders")
    e.add_argument("--json", default=None)
    e.add_argument("--force", action="store_true")
    e.set_defaults(handler=_eval)

    r = sub.add_parser("predict", parents=[common_options()], help="segment one NIfTI case folder (needs nibabel)")
    r.add_argument("--ckpt", required=True)
    r.add_argument("--case", required=True)
    r.add_argument("--force", action="store_true")
    r.set_defaults(handler=_predict, out="seg.nii.gz")

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    code = call_handler(args)
    if args.command in ("bench", "reproduce"):
        _report_central_claim(args)
    return code


def _report_central_claim(args) -> None:
    """Prints "CLAIM NOT REPRODUCED" when the paper's central claim does not hold in the written result."""
    dev = resolve_device(args.device)
    path = result_path(args.out, BENCHMARK.name, args.scale, args.seed, dev.type if dev.index is None else str(dev))
    if not path.exists():
        return
    claims = json.loads(path.read_text(encoding="utf-8")).get("claims", [])
    central = [c for c in claims if c["name"].startswith("smsn_vs_parallel")]
    if central and not all(c["holds"] for c in central):
        failed = ", ".join(c["name"] for c in central if not c["holds"])
        print(f"CLAIM NOT REPRODUCED ({failed}): reported as a finding, see the README")


if __name__ == "__main__":
    sys.exit(main())
