"""``iclr26-stod``: fit an encoded SNN, evaluate it under attacks, measure its GTC, run the benchmark.

Every command writes fixed file names into the ``--out`` folder: ``fit`` -> ``model.pt`` (weights) and
``history.json``, ``evaluate`` -> ``evaluation.json``, ``gtc`` -> ``gtc.json``.
"""
from __future__ import annotations

import argparse
import functools
import pathlib
import sys
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

from .attacks import accuracy, robust_accuracy, transfer_attack
from .data import CIFAR_MEAN, CIFAR_STD, DATASETS, TensorBatches, load_images, remap_intensity
from .encoding import ENCODINGS
from .gtc import gradient_temporal_collinearity
from .models import build_model, load_model
from .train import fit

ATTACKS = ("clean", "fgsm", "pgd", "apgd-ce", "apgd-dlr")
DEFAULT_ATTACKS = ["clean", "fgsm", "pgd"]


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _remap(text: str) -> list[float]:
    """``--remap OFFSET,SCALE``: two numbers with offset >= 0, scale > 0, offset + scale <= 1."""
    try:
        values = [float(v) for v in text.split(",")]
        remap_intensity(torch.zeros(()), values)
    except ValueError:
        raise argparse.ArgumentTypeError("expected OFFSET,SCALE with offset >= 0, scale > 0 and offset + scale <= 1 "
                                         f"(e.g. 0.25,0.5), got {text!r}") from None
    return values


def _attacks(text: str) -> list[str]:
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names or any(a not in ATTACKS for a in names):
        raise argparse.ArgumentTypeError(f"expected comma-separated names among {', '.join(ATTACKS)}, got {text!r}")
    return names


def _load_checkpoint(option: str, path: pathlib.Path, device):
    """``load_model(path, device)`` with its errors naming ``option``."""
    try:
        return load_model(path, device)
    except Exception as err:  # a damaged file can fail anywhere in the (weights-only) unpickler
        raise usage_error(option, "a model.pt written by 'iclr26-stod fit'",
                          f"{str(path)!r} ({type(err).__name__})") from None


def cmd_fit(args) -> int:
    """Trains one model; under ``torchrun`` every rank trains its shard of each batch and rank 0 writes."""
    out, history_path = output_paths(args, "model.pt", "history.json")
    with DistributedContext(args.device) as dist:
        device = dist.device
        seed_everything(args.seed)
        data = load_images(args.dataset, root=args.data_root, seed=args.seed, remap=args.remap)
        C, H, _ = data.shape
        model_kw = {"encoding": args.encoding, "T": args.T, "arch": args.arch, "in_channels": C,
                    "num_classes": data.n_classes, "image_size": H, "patch_size": args.patch,
                    "lambda_gor": args.lambda_gor, "keep_kernels": args.keep_kernels, "init": args.init,
                    "normalize": None}
        if args.dataset in CIFAR_MEAN:
            model_kw["normalize"] = (CIFAR_MEAN[args.dataset], CIFAR_STD[args.dataset])
        model = build_model(**model_kw)
        loader = TensorBatches(data.x_train, data.y_train, args.batch_size, shuffle=True, seed=args.seed,
                               device=device)
        val = TensorBatches(data.x_test, data.y_test, 512, device=device)
        history = fit(model, loader, epochs=args.epochs, lr=args.lr, kernel_lr=args.kernel_lr, adv_train=args.adv,
                      eps_train=args.eps_train if args.adv else None, val_loader=val, track_gtc=args.track_gtc,
                      device=str(device), seed=args.seed, dist=dist,
                      progress=functools.partial(progress, desc="epochs", quiet=args.quiet or not dist.is_main))
        config = {"model": model_kw, "dataset": args.dataset, "remap": args.remap, "seed": args.seed,
                  "epochs": args.epochs,
                  "lr": args.lr, "kernel_lr": args.kernel_lr, "adv": args.adv, "eps_train": args.eps_train}
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        dist.save({"config": config, "state_dict": state}, out)
        if not dist.is_main:
            return 0
    print("epoch  loss     CE       GOR      train_acc  test_acc" + ("  GTC" if args.track_gtc else ""))
    for e in range(args.epochs):
        gtc = f"  {history.gtc[e]:.4f}" if args.track_gtc else ""
        print(f"{e + 1:5d}  {history.loss[e]:.4f}  {history.ce[e]:.4f}  {history.gor[e]:.4f}  "
              f"{history.acc[e]:.4f}     {history.val_acc[e]:.4f}{gtc}")
    write_json_atomic(history_path, {"config": config, "history": history.to_dict()})
    print(f"-> {out} (weights), {history_path} (history)")
    return 0


def _load(args):
    """(device, model, config, x_test, y_test) for ``evaluate``/``gtc``."""
    device = resolve_device(args.device)
    seed_everything(args.seed)
    model, cfg = _load_checkpoint("model", args.model, device)
    data = load_images(cfg["dataset"], root=args.data_root, seed=cfg.get("seed", 0), remap=cfg.get("remap"))
    x, y = data.x_test, data.y_test
    if args.n_test is not None:
        x, y = x[: args.n_test], y[: args.n_test]
    return device, model, cfg, x.to(device), y.to(device)


def cmd_evaluate(args) -> int:
    (path,) = output_paths(args, "evaluation.json")
    device, model, cfg, x, y = _load(args)
    loader = TensorBatches(x, y, 512, device=device)
    is_stod, is_rate = cfg["model"]["encoding"] == "stod", cfg["model"]["encoding"] == "rate"
    draws = args.draws if args.draws is not None else (5 if is_rate else 1)
    variants = [("kernels removed", False), ("kernels kept", True)] if is_stod else [(cfg["model"]["encoding"], None)]
    source = _load_checkpoint("--blackbox", args.blackbox, device)[0] if args.blackbox else None
    transfers = [f"transfer-{a}" for a in args.attacks if a != "clean"] if source is not None else []
    cells = [(label, keep, attack, eps) for label, keep in variants for attack in [*args.attacks, *transfers]
             for eps in ([0.0] if attack == "clean" else args.eps)]
    results = []
    for label, keep, attack, eps in progress(cells, desc="attacks", quiet=args.quiet):
        if keep is not None:
            model.encoder.keep_kernels = keep
        kw = {} if attack == "clean" else {"eps": eps}
        if attack.endswith("pgd"):
            kw["steps"] = args.pgd_steps
        elif "apgd" in attack:
            kw["steps"], kw["restarts"] = args.apgd_steps, args.apgd_restarts
        if attack.startswith("transfer-"):
            x_adv = transfer_attack(source, model, x, y, attack=attack.removeprefix("transfer-"), **kw)
            acc = accuracy(model, x_adv, y)
        else:
            acc = robust_accuracy(model, loader, attack, draws=draws, **kw)
        results.append({"model": label, "attack": attack, "eps": eps, "accuracy": acc})
    print(f"{'model':18s} {'attack':16s} {'eps':>7s} {'accuracy':>9s}")
    for r in results:
        print(f"{r['model']:18s} {r['attack']:16s} {r['eps']:7.4g} {r['accuracy']:9.4f}")
    write_json_atomic(path, {"model": str(args.model), "draws": draws, "results": results})
    print(f"-> {path}")
    return 0


def cmd_gtc(args) -> int:
    (path,) = output_paths(args, "gtc.json")
    _, model, cfg, x, y = _load(args)
    if args.kernels is not None and cfg["model"]["encoding"] == "stod":
        model.encoder.keep_kernels = args.kernels == "kept"
    matrix = gradient_temporal_collinearity(model, x, y, wrt=args.wrt, reduce="matrix")
    T = matrix.shape[0]
    off = matrix[~torch.eye(T, dtype=torch.bool)]
    iu = torch.triu_indices(T, T, offset=1)
    mean, mx = float(matrix[iu[0], iu[1]].mean()), float(off.max())
    print(f"GTC (wrt={args.wrt}, T={T}, {len(y)} images): mean {mean:.4f}, max {mx:.4f}")
    for row in matrix.tolist():
        print(" ".join(f"{v:7.4f}" for v in row))
    write_json_atomic(path, {"model": str(args.model), "wrt": args.wrt, "mean": mean, "max": mx,
                             "matrix": matrix.tolist()})
    print(f"-> {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .bench import BENCHMARK

    parser = Parser(prog="iclr26-stod", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("fit", aliases=["train"], parents=[common_options()],
                       help="train a direct/rate/STOD-encoded spiking network; writes model.pt and history.json")
    t.add_argument("--encoding", choices=ENCODINGS, default="stod")
    t.add_argument("--keep-kernels", action="store_true", help="STOD: keep the PFD kernels at evaluation")
    t.add_argument("--init", choices=("householder", "householder_random", "identity"), default="householder")
    t.add_argument("--adv", choices=("fgsm", "pgd"), default=None, help="adversarial training")
    t.add_argument("--eps-train", type=float, default=0.1)
    t.add_argument("--dataset", choices=DATASETS, default="digits")
    t.add_argument("--remap", type=_remap, default=None, metavar="OFFSET,SCALE",
                   help="map every pixel x to offset + scale*x (train and test; evaluate and gtc reuse it), "
                        "e.g. 0.25,0.5 (the spec's criterion 3)")
    t.add_argument("--arch", choices=("convnet", "vgg11"), default="convnet")
    t.add_argument("--T", type=int, default=4)
    t.add_argument("--patch", type=int, default=4)
    t.add_argument("--lambda-gor", type=float, default=0.05)
    t.add_argument("--epochs", type=int, default=15)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--kernel-lr", type=float, default=0.01)
    t.add_argument("--track-gtc", action="store_true", help="print the test-set GTC after every epoch")
    t.set_defaults(handler=cmd_fit)

    e = sub.add_parser("evaluate", aliases=["eval"], parents=[common_options()],
                       help="accuracy under clean/FGSM/PGD/APGD (and transfer) attacks; writes evaluation.json")
    e.add_argument("model", type=existing_file, help="model.pt written by fit")
    e.add_argument("--attacks", type=_attacks, default=DEFAULT_ATTACKS,
                   help=f"comma-separated among {', '.join(ATTACKS)} (default: clean,fgsm,pgd)")
    e.add_argument("--eps", type=_floats, default=[0.05, 0.1], help="comma-separated radii in pixel scale")
    e.add_argument("--pgd-steps", type=int, default=7)
    e.add_argument("--apgd-steps", type=int, default=100, help="iterations of APGD-CE/DLR per restart")
    e.add_argument("--apgd-restarts", type=int, default=1, help="APGD runs from fresh random starts")
    e.add_argument("--draws", type=int, default=None, help="repetitions to average (default: 5 for rate, else 1)")
    e.add_argument("--blackbox", type=existing_file, default=None, help="source model.pt for transfer attacks")
    e.add_argument("--n-test", type=int, default=None, help="evaluate the first N test images only")
    e.set_defaults(handler=cmd_evaluate)

    g = sub.add_parser("gtc", parents=[common_options()],
                       help="gradient temporal collinearity on the test set; writes gtc.json")
    g.add_argument("model", type=existing_file, help="model.pt written by fit")
    g.add_argument("--wrt", choices=("input", "first_layer"), default="input")
    g.add_argument("--kernels", choices=("removed", "kept"), default=None, help="STOD: input path (default: saved)")
    g.add_argument("--n-test", type=int, default=None)
    g.set_defaults(handler=cmd_gtc)

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
