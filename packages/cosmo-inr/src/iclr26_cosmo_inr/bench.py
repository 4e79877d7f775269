"""The registered benchmark ``cosmo-inr``: RGB image fitting, COSMO-RC against a verified SIREN.

The paper's regime is Kodak, 256×256 RGB, width 256, 3 hidden layers, thousands of iterations: a SIREN
there has about as many parameters as the image has values (198 915 for 196 608). The CPU scales keep
that ratio on smaller RGB images (width = side, so a SIREN holds 1.05-1.1 parameters per value) and
train for hundreds to a thousand iterations:

- ``smoke``: 16×16 gradient image, width 16, 20 iterations, 2 seeds; spectral claims only.
- ``quick``: 32×32 RGB, width 32, 700 iterations; COSMO-RC and SIREN on 3 seeds.
- ``full``: 48×48 RGB, width 48, 1000 iterations; COSMO-RC and SIREN on 5 seeds, plus ReLU+PE, FINER,
  Gauss, WIRE, COSMO no-norm, RC no-mod, COSMO parameter-matched and COSMO with the ResNet-stem prior
  on the first seed's image.
- ``paper``: Kodak (``$ICLR26_DATA/kodak/*.png``, resized to 256×256) or the 20 offline scikit-image
  images, width 256, 4500 iterations, every image on one seed, all baselines with INCODE and the
  ResNet-stem prior (GPU).

Seeds are ``derive_seeds(seed, seeds)``; at ``quick`` and ``full`` the j-th seed fits the j-th image of
the scale's list (``CONFIGS[scale]["images"]``), so the paired COSMO-RC − SIREN difference (same seed,
same image) is taken over several natural RGB images as the paper's Kodak mean is. The SIREN is checked
against siren-pytorch's ``SirenNet`` (``SIREN_REFERENCE``; opt-in test ``test_cosmo_inr_siren_reference``).
Runs are spread over as many processes as the caller's torch thread budget allows (one process, in place,
under ``--threads 1``).

At ``full`` and ``paper`` on CPU the metrics add ``perf.step_cost`` at 65 536 coordinates, W = 256: the
COSMO-RC / SIREN step-time ratio and peak memory (spec target <= 6x, <= 2 GiB), measured, not judged.
"""
from __future__ import annotations

import math
import os
import pathlib

import numpy as np
import scipy.special
import torch
from iclr26_shared.bench import Benchmark, Claim, Result, derive_seeds
from iclr26_shared.parallel import fan_out

from .data import OFFLINE_IMAGES, gradient_image, load_folder, load_image
from .perf import step_cost
from .spectral import chebyshev_coefficients, harmonic_profile, named_activation
from .tasks import fit_image

PAPER = "COSMO-INR: Complex Sinusoidal Modulation for Implicit Neural Representations"
LABELS = {"relu_pe": "ReLU+PE", "siren": "SIREN", "finer": "FINER", "gauss": "Gauss", "wire": "WIRE",
          "incode": "INCODE", "cosmo_rc": "COSMO-RC", "cosmo_rc_nonorm": "COSMO no-norm", "rc_nomod": "RC no-mod",
          "cosmo_rc_matched": "COSMO matched", "cosmo_rc_resnet": "COSMO resnet_stem prior"}
FULL_MODELS = ("relu_pe", "finer", "gauss", "wire", "cosmo_rc_nonorm", "rc_nomod", "cosmo_rc_matched",
               "cosmo_rc_resnet")
RGB_IMAGES = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")
CONFIGS = {
    "smoke": {"images": ("gradient",), "size": 16, "width": 16, "layers": 3, "iters": 20, "seeds": 2,
              "extra": ("rc_nomod",)},
    # quick: 105-114 s of CPU at --threads 1 (a COSMO-RC step at 32x32, W 32 costs ~5x a SIREN step)
    "quick": {"images": RGB_IMAGES[:3], "size": 32, "width": 32, "layers": 3, "iters": 700, "seeds": 3,
              "extra": ()},
    "full": {"images": RGB_IMAGES, "size": 48, "width": 48, "layers": 3, "iters": 1000, "seeds": 5,
             "extra": FULL_MODELS},
    "paper": {"images": "kodak", "size": 256, "width": 256, "layers": 3, "iters": 4500, "seeds": 1,
              "prior": "resnet_stem", "extra": ("relu_pe", "finer", "gauss", "wire", "incode")},
}
# Mean best PSNR (dB) of siren-pytorch's SirenNet (w0 = w0_initial = 30, its own initialisation) trained
# with this package's loop on each scale's images, calibration seeds 1, 2, ... (never the base seeds
# 0, 17, 23), siren-pytorch 0.1.7 installed outside the workspace; see README "The SIREN reference".
SIREN_REFERENCE = {"quick": 43.1, "full": 47.2}
SIREN_TOLERANCE_DB = 2.0


def spectral_checks() -> dict[str, float]:
    """Criterion 1: support ratios of sin, tanh, Gauss, RC and COSMO-RC (T 1.3, C 0.8, amplitude 3),
    and the largest error of the Chebyshev coefficients of e^{jζu} against J_0(ζ), 2jⁿJ_n(ζ)."""
    out = {f"support_ratio_{name}": harmonic_profile(named_activation(name), 3.0, 32).support_ratio
           for name in ("sin", "tanh", "gauss", "rc", "cosmo_rc")}
    errors = []
    for zeta in (0.5, 2 * math.pi * 1.3, 10.0):
        coeffs = chebyshev_coefficients(lambda u, z=zeta: torch.exp(1j * z * u), 1.0, 64)
        n = np.arange(coeffs.size)
        exact = np.where(n == 0, 1.0, 2.0) * (1j**n) * scipy.special.jv(n, zeta)
        errors.append(np.abs(coeffs - exact).max())
    out["bessel_max_error"] = float(max(errors))
    return out


def _images(cfg: dict) -> dict[str, np.ndarray]:
    """The scale's images by name, ``(H, W)`` or ``(H, W, 3)`` in [0, 1].

    ``cfg["images"]``: a tuple of names, or a folder name (``"kodak"``): ``$ICLR26_DATA/<folder>/*.png``
    resized to ``cfg["size"]`` when that folder exists, else the 20 offline images.
    """
    if not isinstance(cfg["images"], str):
        return {name: gradient_image(cfg["size"]) if name == "gradient" else load_image(name, size=cfg["size"])
                for name in cfg["images"]}
    folder = cfg["images"]
    root = pathlib.Path(os.environ.get("ICLR26_DATA", "data")) / folder
    if root.is_dir():
        return {f"{folder}{i + 1:02d}": im for i, im in enumerate(load_folder(root, "*.png", size=cfg["size"]))}
    return {name: load_image(name, size=cfg["size"]) for name in OFFLINE_IMAGES}


def units(cfg: dict, seeds: list[int], names: list[str]) -> list[tuple[int, str]]:
    """The paired (seed, image) units: seed j on image j (cycling) at quick/full, every image of a folder
    (paper) on the first seed."""
    if isinstance(cfg["images"], str):
        return [(seeds[0], name) for name in names]
    return [(s, names[j % len(names)]) for j, s in enumerate(seeds)]


def _job(key: str, seed: int, image: np.ndarray, cfg: dict, device: str) -> dict:
    """One training run."""
    model, kwargs = key, {"prior": cfg.get("prior", "none")}
    if key == "cosmo_rc_matched":
        model, kwargs = "cosmo_rc", {"prior": "none", "match_params_to": "siren"}
    elif key == "cosmo_rc_resnet":
        model, kwargs = "cosmo_rc", {"prior": "resnet_stem"}
    elif key == "incode":
        kwargs = {"prior": "resnet_stem"}
    res = fit_image(image, model, iters=cfg["iters"], hidden_features=cfg["width"], hidden_layers=cfg["layers"],
                    device=device, seed=seed, **kwargs)
    return {"key": key, "seed": seed, "best_psnr": res.psnr, "ssim": res.ssim, "params": res.n_params,
            "seconds": res.seconds, "iters_to_90": res.fit.iterations_to(0.9), "nonfinite": res.fit.nonfinite}


def _mean(runs: list[dict], key: str, field: str = "best_psnr") -> float:
    vals = [r[field] for r in runs if r["key"] == key]
    return float(np.mean(vals)) if vals else math.nan


def _run(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    cfg = CONFIGS[scale]
    spectral = spectral_checks()
    images = _images(cfg)
    pairs = units(cfg, derive_seeds(seed, cfg["seeds"]), list(images))
    specs = [("cosmo_rc", *u) for u in pairs] + [("siren", *u) for u in pairs]
    first = None if isinstance(cfg["images"], str) else pairs[0]
    specs += [(k, *u) for k in cfg["extra"] if k != "siren" for u in ([first] if first else pairs)]
    cost = {"relu_pe": 1, "siren": 1, "finer": 1, "gauss": 1, "wire": 2, "incode": 2}
    specs.sort(key=lambda s: -cost.get(s[0], 10))
    done = fan_out({i: (_job, (k, s, images[name], cfg, device)) for i, (k, s, name) in enumerate(specs)},
                   device=device).values()
    runs = [dict(r, image=name) for r, (_, _, name) in zip(done, specs, strict=True)]
    keys = list(dict.fromkeys(k for k, _, _ in specs))
    rows = []
    for key in keys:
        mine = [r for r in runs if r["key"] == key]
        row = {"method": LABELS[key], "best_psnr": _mean(runs, key), "ssim": _mean(runs, key, "ssim"),
               "params": int(mine[0]["params"]), "seconds": _mean(runs, key, "seconds"), "runs": len(mine),
               "iters_to_90pct": _mean(runs, key, "iters_to_90")}
        if first is not None:
            row.update({f"psnr_seed{r['seed']}": r["best_psnr"] for r in mine})
        rows.append(row)
    psnrs = {key: _mean(runs, key) for key in keys}
    metrics = dict(spectral, **{f"psnr_{k}": v for k, v in psnrs.items()})
    metrics["any_nonfinite"] = float(any(r["nonfinite"] for r in runs))
    if scale in ("full", "paper") and device == "cpu":  # spec "Performance": a metric, not a claim (load-dependent)
        perf = step_cost(65536, 256, steps=2, threads=torch.get_num_threads())
        metrics.update({f"perf_65536_{k}": float(v) for k, v in perf.items() if isinstance(v, (int, float))})
    if scale == "full":
        ref = {key: _unit_values(runs, key, [first])[0] for key in ("cosmo_rc", "siren")}
        metrics["matched_minus_siren_db"] = psnrs["cosmo_rc_matched"] - ref["siren"]
        metrics["cosmo_minus_finer_db"] = ref["cosmo_rc"] - psnrs["finer"]
        metrics["resnet_prior_minus_none_db"] = psnrs["cosmo_rc_resnet"] - ref["cosmo_rc"]
    return Result(metrics=metrics, rows=rows, claims=_claims(scale, spectral, runs, pairs))


def _unit_values(runs: list[dict], key: str, pairs: list[tuple[int, str]], field: str = "best_psnr") -> list[float]:
    """``(n_units,)`` ``field`` of model ``key`` on each (seed, image) unit, in the order of ``pairs``."""
    out = []
    for seed, image in pairs:
        hit = [r[field] for r in runs if r["key"] == key and r["seed"] == seed and r.get("image", image) == image]
        if len(hit) != 1:
            raise ValueError(f"runs: expected one {key!r} run on seed {seed}, image {image!r}, got {len(hit)}")
        out.append(float(hit[0]))
    return out


def _claims(scale: str, spectral: dict, runs: list[dict], pairs: list[tuple[int, str]]) -> list[Claim]:
    symmetric = max(spectral[f"support_ratio_{n}"] for n in ("sin", "tanh", "gauss", "rc"))
    claims = [
        Claim.at_most("symmetric activations leave half the harmonics empty", "odd/even activations attenuate "
                      "even/odd harmonics", symmetric, 1e-12, "max support ratio of sin, tanh, Gauss, RC"),
        Claim.at_least("COSMO-RC has complete spectral support", "complex modulation fills every harmonic",
                       spectral["support_ratio_cosmo_rc"], 1e-2, "support ratio of COSMO-RC (T 1.3, C 0.8, a 3)"),
        Claim.at_most("Jacobi-Anger: Chebyshev coefficients of exp(j zeta u) are Bessel values",
                      "e^{jζu} = J_0(ζ) + 2Σ jⁿ J_n(ζ) T_n(u)", spectral["bessel_max_error"], 1e-10,
                      "max |c_n - 2jⁿJ_n(ζ)|"),
    ]
    if scale == "smoke":  # too short a fit for any PSNR claim; the CLI test expects every smoke claim to hold
        return claims
    seeds = [s for s, _ in pairs]
    cosmo, siren = _unit_values(runs, "cosmo_rc", pairs), _unit_values(runs, "siren", pairs)
    # the central claim, paired over the (seed, image) units
    claims.append(Claim.paired("COSMO-RC beats SIREN at the official width",
                               "COSMO-RC above every baseline (Kodak 256x256 RGB)", cosmo, siren, seeds,
                               margin=1.0 if scale == "full" else 0.0, what="PSNR(COSMO-RC) - PSNR(SIREN) (dB)"))
    if scale == "paper":
        claims.append(Claim.paired("COSMO-RC beats INCODE on image fitting", "+5.67 dB over INCODE (Kodak)",
                                   cosmo, _unit_values(runs, "incode", pairs), seeds, margin=3.0,
                                   what="PSNR(COSMO-RC) - PSNR(INCODE) (dB)"))
        return claims
    reference = SIREN_REFERENCE[scale]
    claims.append(Claim.mean_at_least(
        "sanity: the SIREN baseline is a correct SIREN", f"siren-pytorch SirenNet reaches {reference:.1f} dB here",
        siren, seeds, reference - SIREN_TOLERANCE_DB, f"SIREN PSNR (dB), siren-pytorch - {SIREN_TOLERANCE_DB:g} dB"))
    if scale == "quick":
        return claims
    head = pairs[:1]
    first = _unit_values(runs, "cosmo_rc", head)[0]

    def gap(key: str) -> float:
        return first - _unit_values(runs, key, head)[0]

    claims += [
        Claim.at_least("modulation is the mechanism (COSMO-RC vs RC without modulation)",
                       "COSMO-RC best; calibration 38 vs 11.2 dB", gap("rc_nomod"), 10.0,
                       "COSMO-RC - RC no-mod (dB), first seed and image"),
        Claim.at_least("hidden phase normalisation matters", "official code normalises; calibration 38.2 vs 24.9",
                       gap("cosmo_rc_nonorm"), 5.0, "COSMO-RC - COSMO no-norm (dB), first seed and image"),
        Claim.at_least("COSMO-RC beats Gauss", "COSMO-RC above every baseline", gap("gauss"), 2.0,
                       "COSMO-RC - Gauss (dB), first seed and image"),
        Claim.at_least("COSMO-RC beats WIRE", "COSMO-RC above every baseline", gap("wire"), 4.0,
                       "COSMO-RC - WIRE (dB), first seed and image"),
        Claim.at_least("COSMO-RC beats ReLU+PE", "COSMO-RC above every baseline", gap("relu_pe"), 10.0,
                       "COSMO-RC - ReLU+PE (dB), first seed and image"),
        Claim.at_most("no NaN/Inf in any run", "stable training", float(any(r["nonfinite"] for r in runs)), 0.0,
                      "runs with NaN/Inf"),
        Claim.paired("COSMO-RC converges faster than SIREN", "faster convergence than the baselines",
                     _unit_values(runs, "cosmo_rc", pairs, "iters_to_90"),
                     _unit_values(runs, "siren", pairs, "iters_to_90"), seeds, higher_is_better=False,
                     what="iterations to 90% of the best PSNR, COSMO-RC - SIREN"),
    ]
    return claims


BENCHMARK = Benchmark(name="cosmo-inr", paper=PAPER, package="iclr26-cosmo-inr", func=_run)
