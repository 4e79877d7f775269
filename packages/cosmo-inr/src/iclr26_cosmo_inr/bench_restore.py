"""The registered benchmarks ``cosmo-inr.denoise`` and ``cosmo-inr.sr``: restoration with the model chosen
without the clean image.

Both pair COSMO-RC and SIREN (and, at full and paper, the other baselines) on the same observation: the
photon-noisy image (WIRE's model, τ = 40 photons, readout 2, drawn from the unit's seed, min–max
normalised) or the ×6 area-downsampled image. The judged number is the PSNR of the model after the last
step (``selection="final"``: nothing in the training or the choice reads the clean image, which only scores
the result); the PSNR of the best iterate scored on the clean image (the official denoising script's early
stopping) is reported beside it under the label ``oracle``, never judged. One training run gives both.

Seed j of ``derive_seeds(seed, n)`` draws the noise of (or downsamples) image j, as in ``bench.units``; the
claims are paired over these (seed, image) units with a 90% t-interval (``Claim.paired``). The paper's
margins (+0.46 dB denoising, +0.64 dB at 6× SR, over the next best method, INCODE) are the margins at full
(against SIREN) and at paper (against INCODE); quick asks for a positive difference.

Scales (official scripts: width 128, 4 hidden layers, 500 iterations, Kodak/DIV2K images): see
``DENOISE`` and ``SR`` below; the CPU scales are far smaller images and narrower networks (README).
"""
from __future__ import annotations

import pathlib

import numpy as np
from iclr26_shared.bench import Benchmark, Claim, Result, derive_seeds, t_interval
from iclr26_shared.parallel import fan_out

from .bench import LABELS, PAPER, RGB_IMAGES, _images, units
from .data import min_max, photon_noise
from .tasks import denoise_observed, downsample, psnr, super_resolve_observed

TAU, READOUT, FACTOR = 40.0, 2.0, 6
BASELINES = ("finer", "gauss", "wire", "relu_pe")
DENOISE = {
    "smoke": {"images": ("gradient",), "size": 12, "width": 8, "layers": 2, "iters": 6, "seeds": 2, "extra": ()},
    # quick: 32x32 RGB, about 18 s of CPU per COSMO-RC fit at --threads 1
    "quick": {"images": RGB_IMAGES[:3], "size": 32, "width": 32, "layers": 4, "iters": 400, "seeds": 3,
              "extra": ()},
    "full": {"images": RGB_IMAGES, "size": 64, "width": 64, "layers": 4, "iters": 500, "seeds": 5,
             "extra": BASELINES},
    "paper": {"images": "kodak", "size": 256, "width": 128, "layers": 4, "iters": 500, "seeds": 1,
              "prior": "resnet_stem", "extra": (*BASELINES, "incode")},
}
SR = {
    "smoke": {"images": ("gradient",), "size": 12, "width": 8, "layers": 2, "iters": 6, "seeds": 2, "extra": (),
              "eval_every": 3},
    # quick: 96x96 RGB from a 16x16 observation, about 14 s of CPU per COSMO-RC fit at --threads 1
    "quick": {"images": RGB_IMAGES[:3], "size": 96, "width": 32, "layers": 4, "iters": 400, "seeds": 3,
              "extra": (), "eval_every": 25},
    "full": {"images": RGB_IMAGES, "size": 192, "width": 128, "layers": 4, "iters": 500, "seeds": 5,
             "extra": BASELINES, "eval_every": 25},
    "paper": {"images": "kodak", "size": 252, "width": 128, "layers": 4, "iters": 500, "seeds": 1,
              "prior": "resnet_stem", "extra": (*BASELINES, "incode"), "eval_every": 5},
}
PAPER_MARGIN = {"denoise": 0.46, "sr": 0.64}


def observe(task: str, clean: np.ndarray, seed: int) -> np.ndarray:
    """The observation of ``clean`` ``(H, W[, C])``: ``"denoise"``: photon noise (τ 40, readout 2) drawn with
    ``default_rng(seed)``, min–max normalised, same shape; ``"sr"``: ×6 area downsampling ``(H//6, W//6[, C])``.

    Raises:
        ValueError: unknown ``task``.
    """
    if task == "denoise":
        return min_max(photon_noise(clean, TAU, READOUT, np.random.default_rng(seed)))
    if task == "sr":
        return downsample(clean, FACTOR)
    raise ValueError(f"task: expected 'denoise' or 'sr', got {task!r}")


def reference_psnr(task: str, observed: np.ndarray, clean: np.ndarray) -> float:
    """PSNR (dB) of the non-learned reference: the noisy input itself, or its bicubic ×6 upsampling."""
    if task == "denoise":
        return psnr(observed, clean)
    from skimage.transform import resize

    return psnr(np.clip(resize(observed, clean.shape, order=3, mode="edge", anti_aliasing=False), 0, 1), clean)


def _job(task: str, key: str, seed: int, observed: np.ndarray, clean: np.ndarray, cfg: dict, device: str) -> dict:
    """One fit of ``observed`` (final model judged, oracle best kept) scored on ``clean``."""
    kwargs = {"iters": cfg["iters"], "hidden_features": cfg["width"], "hidden_layers": cfg["layers"],
              "device": device, "seed": seed, "selection": "final"}
    if key in ("cosmo_rc", "incode"):
        kwargs["prior"] = cfg.get("prior", "none")
    if task == "denoise":
        res = denoise_observed(observed, clean, key, **kwargs)
    else:
        res = super_resolve_observed(observed, clean, FACTOR, key, eval_every=cfg["eval_every"], **kwargs)
    return {"key": key, "seed": seed, "final": res.psnr, "oracle": res.extra["oracle_best_psnr"], "ssim": res.ssim,
            "params": res.n_params, "seconds": res.seconds, "nonfinite": res.fit.nonfinite}


def _values(runs: list[dict], key: str, pairs: list[tuple[int, str]], field: str) -> list[float]:
    """``(n_units,)`` ``field`` of model ``key`` on each (seed, image) unit, in the order of ``pairs``."""
    out = []
    for seed, image in pairs:
        hit = [r[field] for r in runs if r["key"] == key and r["seed"] == seed and r["image"] == image]
        if len(hit) != 1:
            raise ValueError(f"runs: expected one {key!r} run on seed {seed}, image {image!r}, got {len(hit)}")
        out.append(float(hit[0]))
    return out


def _run(task: str, scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    cfg = (DENOISE if task == "denoise" else SR)[scale]
    images = _images(cfg)
    pairs = units(cfg, derive_seeds(seed, cfg["seeds"]), list(images))
    observed = {u: observe(task, images[u[1]], u[0]) for u in pairs}
    keys = ("cosmo_rc", "siren", *cfg["extra"])
    specs = [(k, u) for k in keys for u in pairs]
    tasks = {i: (_job, (task, k, u[0], observed[u], images[u[1]], cfg, device)) for i, (k, u) in enumerate(specs)}
    done = fan_out(tasks, device=device).values()
    runs = [dict(r, image=u[1]) for r, (_, u) in zip(done, specs, strict=True)]
    reference = [reference_psnr(task, observed[u], images[u[1]]) for u in pairs]
    ref_label = "noisy input" if task == "denoise" else "bicubic x6"
    rows = [{"method": ref_label, "psnr": float(np.mean(reference)), "runs": len(pairs),
             **{f"psnr_seed{s}": v for (s, _), v in zip(pairs, reference, strict=True)}}]
    metrics = {f"psnr_{'noisy' if task == 'denoise' else 'bicubic'}": float(np.mean(reference))}
    for key in keys:
        final, oracle = _values(runs, key, pairs, "final"), _values(runs, key, pairs, "oracle")
        mine = [r for r in runs if r["key"] == key]
        rows.append({"method": LABELS[key], "psnr": float(np.mean(final)), "psnr_oracle": float(np.mean(oracle)),
                     "ssim": float(np.mean([r["ssim"] for r in mine])), "params": int(mine[0]["params"]),
                     "seconds": float(np.mean([r["seconds"] for r in mine])), "runs": len(mine),
                     **{f"psnr_seed{s}": v for (s, _), v in zip(pairs, final, strict=True)},
                     **{f"psnr_oracle_seed{s}": v for (s, _), v in zip(pairs, oracle, strict=True)}})
        metrics[f"psnr_{key}"], metrics[f"psnr_oracle_{key}"] = float(np.mean(final)), float(np.mean(oracle))
    for field, label in (("final", ""), ("oracle", "oracle_")):
        diff = np.subtract(_values(runs, "cosmo_rc", pairs, field), _values(runs, "siren", pairs, field))
        mean, low, high = t_interval(diff, 0.9)
        metrics.update({f"{label}cosmo_minus_siren_db": mean, f"{label}cosmo_minus_siren_low": low,
                        f"{label}cosmo_minus_siren_high": high})
    metrics["any_nonfinite"] = float(any(r["nonfinite"] for r in runs))
    return Result(metrics=metrics, rows=rows, claims=_claims(task, scale, runs, pairs, reference))


def _claims(task: str, scale: str, runs: list[dict], pairs: list[tuple[int, str]],
            reference: list[float]) -> list[Claim]:
    """The paired claims on the final (non-oracle) PSNR: COSMO-RC over SIREN (over INCODE at paper) and over
    the non-learned reference (noisy input / bicubic)."""
    seeds = [s for s, _ in pairs]
    cosmo = _values(runs, "cosmo_rc", pairs, "final")
    paper_margin = PAPER_MARGIN[task]
    what = "denoising" if task == "denoise" else "6x super-resolution"
    paper = ("+0.46 dB over the next best method (INCODE), DIV2K photon noise" if task == "denoise"
             else "best at 2x/4x/6x; +0.64 dB over the nearest method at 6x (DIV2K)")
    margin = paper_margin if scale == "full" else 0.0
    claims = [Claim.paired(f"COSMO-RC beats SIREN at {what} (model chosen without the clean image)", paper, cosmo,
                           _values(runs, "siren", pairs, "final"), seeds, margin=margin,
                           what="PSNR(COSMO-RC) - PSNR(SIREN) (dB), final model")]
    if scale == "paper":
        claims.append(Claim.paired(f"COSMO-RC beats INCODE at {what} (model chosen without the clean image)", paper,
                                   cosmo, _values(runs, "incode", pairs, "final"), seeds, margin=paper_margin,
                                   what="PSNR(COSMO-RC) - PSNR(INCODE) (dB), final model"))
    if task == "denoise":
        claims.append(Claim.paired("COSMO-RC's output is closer to the clean image than the noisy input",
                                   "the INR denoises (noisy input PSNR below every method's)", cosmo, reference,
                                   seeds, what="PSNR(COSMO-RC, final) - PSNR(noisy input) (dB)"))
    else:
        claims.append(Claim.paired("COSMO-RC at 6x is above bicubic interpolation",
                                   "not a paper figure: the interpolation every INR super-resolution is read "
                                   "against", cosmo, reference, seeds,
                                   what="PSNR(COSMO-RC, final) - PSNR(bicubic) (dB)"))
    claims.append(Claim.at_most("no NaN/Inf in any run", "stable training",
                                float(sum(r["nonfinite"] for r in runs)), 0.0, "runs with NaN/Inf"))
    return claims


def _denoise(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    return _run("denoise", scale, device, seed, out_dir)


def _sr(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    return _run("sr", scale, device, seed, out_dir)


DENOISE_BENCHMARK = Benchmark(name="cosmo-inr.denoise", paper=PAPER, package="iclr26-cosmo-inr", func=_denoise)
SR_BENCHMARK = Benchmark(name="cosmo-inr.sr", paper=PAPER, package="iclr26-cosmo-inr", func=_sr)
