"""``iclr26-cosmo-inr``: fit, evaluate, denoise, sr, inpaint, spectrum, occupancy, and ``bench``/``reproduce``.

Each command writes fixed names inside the ``--out`` folder: ``<command>.json`` (the numbers) and, for the image
tasks ``fit``/``denoise``/``sr``/``inpaint``, ``<command>.png`` (the reconstruction); ``evaluate`` writes
``evaluate.json``.
"""
from __future__ import annotations

import argparse
import pathlib
from collections.abc import Sequence

import numpy as np
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
    usage_error,
)
from iclr26_shared.device import resolve_device

from .bench import BENCHMARK
from .bench_restore import DENOISE_BENCHMARK, SR_BENCHMARK
from .data import DOWNLOAD_IMAGES, OFFLINE_IMAGES, SHAPES, load_image
from .models import COSMO_MODELS, KERNELS, MODELS
from .prior import BACKBONES
from .spectral import ACTIVATIONS, harmonic_profile, named_activation
from .tasks import DTYPES, SELECTIONS, TaskResult, denoise_image, fit_image, fit_occupancy, inpaint, super_resolve


def _image_arg(text: str) -> str | pathlib.Path:
    """argparse type of ``--image``: a scikit-image name, or an existing image file."""
    return text if text in OFFLINE_IMAGES or text in DOWNLOAD_IMAGES else existing_file(text)


def _shape_arg(text: str) -> str | pathlib.Path:
    """argparse type of ``--shape``: a shape name, or an existing ``.npy`` file."""
    return text if text in SHAPES else existing_file(text)


def _read_image(args) -> np.ndarray:
    """The ``--image`` as float32 in [0, 1], resized and converted as asked (errors name ``--image``)."""
    try:
        return load_image(args.image, size=args.size, gray=args.gray)
    except Exception as err:
        raise usage_error("--image", f"one of {', '.join(OFFLINE_IMAGES)} or a readable PNG/JPEG/TIFF/BMP file",
                          f"{str(args.image)!r} ({one_line(err)})") from err


def _read_shape(args) -> str | np.ndarray:
    """The ``--shape`` name, or the (D, H, W) 0/1 grid in its ``.npy`` file (errors name ``--shape``)."""
    if isinstance(args.shape, str):
        return args.shape
    try:
        grid = np.load(args.shape, allow_pickle=False)
        if not isinstance(grid, np.ndarray) or grid.ndim != 3 or grid.size == 0:
            raise ValueError(f"shape {getattr(grid, 'shape', None)}")
        return grid
    except Exception as err:
        raise usage_error("--shape", f"one of {', '.join(SHAPES)} or a .npy file of a (D, H, W) 0/1 grid",
                          f"{args.shape.name} ({one_line(err)})") from err


def _names(text: str) -> list[str]:
    """argparse type of ``--models``: comma-separated model names."""
    models = [m.strip() for m in text.split(",") if m.strip()]
    if not models or any(m not in MODELS for m in models):
        raise argparse.ArgumentTypeError(f"expected names among {', '.join(MODELS)}, got {text!r}")
    return models


def _model_args(p: argparse.ArgumentParser, many: bool = False) -> None:
    if many:
        p.add_argument("--models", type=_names, default="relu_pe,siren,wire,gauss,finer,cosmo_rc",
                       help=f"comma-separated, among {', '.join(MODELS)}")
    else:
        p.add_argument("--model", default="cosmo_rc", choices=MODELS)
    p.add_argument("--width", type=positive_int, default=256, help="hidden features W (default 256)")
    p.add_argument("--layers", type=_non_negative_int, default=3, help="hidden layers L (default 3)")
    p.add_argument("--prior", default="resnet_stem", choices=BACKBONES, help="COSMO/INCODE prior embedder")
    p.add_argument("--match-params", default=None, choices=MODELS, help="rescale width to this model's size")
    p.add_argument("--iters", type=positive_int, default=500)
    p.add_argument("--lr", type=float, default=None, help="default: COSMO 9e-4, WIRE 5e-3, others 1e-3")
    p.add_argument("--dtype", default="float32", choices=tuple(DTYPES),
                   help="float64: reproducible across machines (float32 COSMO training is chaotic)")
    p.add_argument("--kernel", default="fused", choices=KERNELS,
                   help="COSMO activation: fused autograd Function (default), compiled (torch.compile), reference")


def _image_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", type=_image_arg, default="camera",
                   help="an offline scikit-image name or a PNG/JPEG path")
    p.add_argument("--size", type=positive_int, default=128, help="resize to size x size (default 128)")
    p.add_argument("--gray", action="store_true", help="convert to grayscale")


def _non_negative_int(text: str) -> int:
    """argparse type of ``--layers``: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _kwargs(args, model: str) -> dict:
    kwargs = {"hidden_features": args.width, "hidden_layers": args.layers, "prior": args.prior,
              "match_params_to": args.match_params, "iters": args.iters, "lr": args.lr, "seed": args.seed,
              "device": resolve_device(args.device), "dtype": args.dtype, "progress": _bar(args, model)}
    if model in COSMO_MODELS:
        kwargs["kernel"] = args.kernel
    return kwargs


def _bar(args, desc: str):
    return lambda it: progress(it, total=len(it), desc=desc, quiet=args.quiet)


def _summary(res: TaskResult, metric: str = "PSNR") -> dict:
    curve = res.fit.psnr_curve
    for step in range(49, len(curve), 50):
        if np.isfinite(curve[step]):
            print(f"  step {step + 1:5d}  {metric} {curve[step]:.2f} dB")
    chosen = f" ({res.extra['selection']} model)" if "selection" in res.extra else ""
    print(f"{res.model}: PSNR {res.psnr:.2f} dB{chosen}, best over the run {res.fit.best_psnr:.2f} dB, "
          f"SSIM {res.ssim:.4f}, {res.n_params} parameters, {res.seconds:.1f} s")
    return {"model": res.model, "psnr": res.psnr, "best_psnr": res.fit.best_psnr, "final_psnr": res.fit.final_psnr,
            "ssim": res.ssim, "params": res.n_params, "seconds": res.seconds, **res.extra}


def _save_json(path: pathlib.Path, payload) -> None:
    write_json_atomic(path, payload)
    print(f"  -> {path}")


def _save_png(path: pathlib.Path, image: np.ndarray) -> None:
    from skimage.io import imsave

    with atomic_path(path) as tmp:
        imsave(tmp, (np.clip(image, 0, 1) * 255).round().astype(np.uint8), check_contrast=False)
    print(f"  -> {path}")


def cmd_task(args) -> int:
    json_path, png_path = output_paths(args, f"{args.command}.json", f"{args.command}.png")
    image = _read_image(args)
    task = {"fit": fit_image, "denoise": denoise_image, "sr": super_resolve, "inpaint": inpaint}[args.command]
    extra = {}
    if args.command == "denoise":
        extra = {"tau": args.tau, "readout": args.readout, "selection": args.selection}
    elif args.command == "sr":
        extra = {"factor": args.factor, "selection": args.selection}
    elif args.command == "inpaint":
        extra = {"keep": args.keep}
    res = task(image, args.model, **extra, **_kwargs(args, args.model))
    _save_json(json_path, {"image": str(args.image), "size": args.size, **_summary(res)})
    _save_png(png_path, res.reconstruction)
    return 0


def cmd_evaluate(args) -> int:
    (json_path,) = output_paths(args, "evaluate.json")
    image = _read_image(args)
    table = []
    for name in progress(args.models, desc="models", quiet=args.quiet):
        kw = _kwargs(args, name)
        if name == args.match_params:
            kw["match_params_to"] = None
        res = fit_image(image, name, **kw)
        table.append({"model": name, "best_psnr": res.psnr, "ssim": res.ssim, "params": res.n_params,
                      "seconds": res.seconds})
    print(f"{'model':18s} {'PSNR':>8s} {'SSIM':>7s} {'params':>9s} {'seconds':>8s}")
    for row in table:
        print(f"{row['model']:18s} {row['best_psnr']:8.2f} {row['ssim']:7.4f} {row['params']:9d} "
              f"{row['seconds']:8.1f}")
    _save_json(json_path, {"image": str(args.image), "size": args.size, "iters": args.iters, "results": table})
    return 0


def cmd_spectrum(args) -> int:
    (json_path,) = output_paths(args, "spectrum.json")
    fn = named_activation(args.activation, omega0=args.omega0, scale=args.scale, T=args.T, C=args.C, beta=args.beta)
    prof = harmonic_profile(fn, args.amplitude, args.harmonics)
    print(f"{args.activation} on [-{args.amplitude}, {args.amplitude}]:  k  |c_k|")
    for k, c in enumerate(prof.coeffs):
        print(f"  {k:3d}  {abs(c):.3e}")
    print(f"E_even {prof.e_even:.4e}  E_odd {prof.e_odd:.4e}  support ratio {prof.support_ratio:.4e}")
    _save_json(json_path, {"activation": args.activation, "amplitude": args.amplitude,
                           "abs_coeffs": np.abs(prof.coeffs), "e_even": prof.e_even, "e_odd": prof.e_odd,
                           "support_ratio": prof.support_ratio})
    return 0


def cmd_occupancy(args) -> int:
    (json_path,) = output_paths(args, "occupancy.json")
    shape = _read_shape(args)
    kw = _kwargs(args, args.model)
    kw["prior"] = "none" if args.prior == "resnet_stem" else args.prior
    res = fit_occupancy(shape, args.model, grid=args.grid, **kw)
    print(f"{res.model}: IoU {res.iou:.4f}, {res.n_params} parameters, {res.seconds:.1f} s")
    _save_json(json_path, {"model": res.model, "shape": str(args.shape), "grid": args.grid, "iou": res.iou,
                           "params": res.n_params, "seconds": res.seconds})
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-cosmo-inr", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    helps = {"fit": "fit an image (representation)", "denoise": "denoise a photon-noisy image",
             "sr": "super-resolve an area-downsampled image", "inpaint": "inpaint from a random subset of pixels"}
    helps = {name: f"{text}: {name}.json, {name}.png" for name, text in helps.items()}
    for name, text in helps.items():
        p = sub.add_parser(name, parents=[common_options()], help=text, description=text)
        _image_args(p)
        _model_args(p)
        if name == "denoise":
            p.add_argument("--tau", type=float, default=40.0, help="photons per unit intensity (default 40)")
            p.add_argument("--readout", type=float, default=2.0, help="readout noise std (default 2)")
        if name == "sr":
            p.add_argument("--factor", type=positive_int, default=4, help="downsampling factor (default 4)")
        if name in ("denoise", "sr"):
            p.add_argument("--selection", choices=SELECTIONS, default="final",
                           help="final: the model after --iters steps (default, no ground truth used); oracle: "
                                "the best iterate scored on the clean image, as the official scripts do")
        if name == "inpaint":
            p.add_argument("--keep", type=float, default=0.2, help="fraction of observed pixels (default 0.2)")
        p.set_defaults(handler=cmd_task)
    p = sub.add_parser("evaluate", aliases=["compare"], parents=[common_options()],
                       help="fit one image with several models: evaluate.json")
    _image_args(p)
    _model_args(p, many=True)
    p.set_defaults(handler=cmd_evaluate)
    p = sub.add_parser("spectrum", parents=[common_options()],
                       help="Chebyshev harmonic profile of an activation: spectrum.json")
    p.add_argument("--activation", default="cosmo_rc", choices=ACTIVATIONS)
    p.add_argument("--amplitude", type=float, default=3.0)
    p.add_argument("--harmonics", type=positive_int, default=32)
    p.add_argument("--omega0", type=float, default=30.0, help="sin / FINER frequency")
    p.add_argument("--scale", type=float, default=3.0, help="Gauss scale")
    p.add_argument("--T", type=float, default=1.3)
    p.add_argument("--C", type=float, default=0.8)
    p.add_argument("--beta", type=float, default=0.5)
    p.set_defaults(handler=cmd_spectrum)
    p = sub.add_parser("occupancy", parents=[common_options()],
                       help="fit a 3-D occupancy grid, print IoU: occupancy.json")
    p.add_argument("--shape", type=_shape_arg, default="gyroid_sphere",
                   help=f"one of {', '.join(SHAPES)} or a .npy 0/1 grid")
    p.add_argument("--grid", type=positive_int, default=48)
    _model_args(p)
    p.set_defaults(handler=cmd_occupancy)
    add_bench_command(sub, [BENCHMARK, DENOISE_BENCHMARK, SR_BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``iclr26-cosmo-inr``; returns the exit code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
