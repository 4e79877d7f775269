"""The registered benchmark ``cosmo-inr``: image fitting on camera with every baseline and ablation.

Scales (spec "Reproduction on CPU"):
- ``smoke``: 16×16 gradient image, width 16, 20 iterations, 2 seeds; spectral claims only.
- ``quick``: camera 40×40, width 64, 100 iterations; COSMO-RC and SIREN on 3 seeds (the paired
  central claim). The ablations and the other baselines run at ``full`` only.
- ``full``: camera 48×48, width 64, 300 iterations; SIREN and COSMO-RC on 5 seeds, ReLU+PE, FINER,
  Gauss, WIRE, COSMO no-norm, RC no-mod, COSMO parameter-matched and COSMO with the ResNet-stem prior
  (one seed each, the first).

Seeds are ``derive_seeds(seed, seeds)``. Runs are spread over as many processes as the caller's torch
thread budget allows (one process, in place, under ``--threads 1``).
- ``paper``: Kodak (``$ICLR26_DATA/kodak``) or the 20 offline scikit-image images at 256×256 RGB,
  width 256, 4500 iterations, all baselines with INCODE and the ResNet-stem prior (GPU).

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
from joblib import Parallel, delayed

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
CONFIGS = {
    "smoke": {"image": "gradient", "size": 16, "width": 16, "layers": 3, "iters": 20, "seeds": 2,
              "extra": ("rc_nomod",)},
    # quick: 100 iterations (150 cost 98 s of CPU, 23 s per COSMO-RC fit)
    "quick": {"image": "camera", "size": 40, "width": 64, "layers": 3, "iters": 100, "seeds": 3, "extra": ()},
    # full: 48x48 (64x64 ran past 15 minutes on one idle core)
    "full": {"image": "camera", "size": 48, "width": 64, "layers": 3, "iters": 300, "seeds": 5,
             "extra": FULL_MODELS},
    "paper": {"image": "kodak", "size": 256, "width": 256, "layers": 3, "iters": 4500, "seeds": 1,
              "prior": "resnet_stem", "extra": ("relu_pe", "finer", "gauss", "wire", "incode")},
}


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


def _images(cfg: dict) -> list[tuple[str, np.ndarray]]:
    if cfg["image"] == "gradient":
        return [("gradient", gradient_image(cfg["size"]))]
    if cfg["image"] == "camera":
        return [("camera", load_image("camera", size=cfg["size"], gray=True))]
    root = pathlib.Path(os.environ.get("ICLR26_DATA", "data")) / "kodak"
    if root.is_dir():
        return [(f"kodak{i + 1:02d}", im) for i, im in enumerate(load_folder(root, "*.png"))]
    return [(name, load_image(name, size=cfg["size"])) for name in OFFLINE_IMAGES]


def _job(key: str, seed: int, image: np.ndarray, cfg: dict, device: str, threads: int | None) -> dict:
    """One training run (``threads``: the worker process's share of the caller's pool; None: leave it)."""
    if threads is not None:
        torch.set_num_threads(threads)
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
    seeds = derive_seeds(seed, cfg["seeds"])
    specs = [("cosmo_rc", s) for s in seeds] + [("siren", s) for s in seeds]
    specs += [(k, seeds[0]) for k in cfg["extra"] if k != "siren"]
    cost = {"relu_pe": 1, "siren": 1, "finer": 1, "gauss": 1, "wire": 2, "incode": 2}
    specs.sort(key=lambda s: -cost.get(s[0], 10))
    budget = torch.get_num_threads()  # the caller's (--threads); each worker process gets an equal share
    n_jobs = min(budget, len(specs)) if device == "cpu" else 1
    share = budget // n_jobs if n_jobs > 1 else None
    runs = []
    for name, image in _images(cfg):
        done = Parallel(n_jobs=n_jobs)(delayed(_job)(k, s, image, cfg, device, share) for k, s in specs)
        runs.extend(dict(r, image=name) for r in done)
    rows = []
    for key in dict.fromkeys(k for k, _ in specs):
        mine = [r for r in runs if r["key"] == key]
        row = {"method": LABELS[key], "best_psnr": _mean(runs, key), "ssim": _mean(runs, key, "ssim"),
               "params": int(mine[0]["params"]), "seconds": _mean(runs, key, "seconds"), "runs": len(mine),
               "iters_to_90pct": _mean(runs, key, "iters_to_90")}
        if cfg["image"] != "kodak":
            row.update({f"psnr_seed{r['seed']}": r["best_psnr"] for r in mine})
        rows.append(row)
    psnrs = {key: _mean(runs, key) for key in dict.fromkeys(k for k, _ in specs)}
    metrics = dict(spectral, **{f"psnr_{k}": v for k, v in psnrs.items()})
    metrics["any_nonfinite"] = float(any(r["nonfinite"] for r in runs))
    if scale in ("full", "paper") and device == "cpu":  # spec "Performance": a metric, not a claim (load-dependent)
        cost = step_cost(65536, 256, steps=2, threads=torch.get_num_threads())
        metrics.update({f"perf_65536_{k}": float(v) for k, v in cost.items() if isinstance(v, (int, float))})
    if scale == "full":
        metrics["matched_minus_siren_db"] = psnrs["cosmo_rc_matched"] - psnrs["siren"]
        metrics["cosmo_minus_finer_db"] = psnrs["cosmo_rc"] - psnrs["finer"]
        metrics["resnet_prior_minus_none_db"] = psnrs["cosmo_rc_resnet"] - psnrs["cosmo_rc"]
        if psnrs["cosmo_rc_matched"] < psnrs["siren"]:
            rows.append({"method": "CLAIM NOT REPRODUCED AT EQUAL PARAMETERS",
                         "best_psnr": psnrs["cosmo_rc_matched"] - psnrs["siren"]})
    return Result(metrics=metrics, rows=rows, claims=_claims(scale, spectral, psnrs, runs, seeds))


def _per_seed(runs: list[dict], key: str, seeds: list[int]) -> list[float]:
    """``(n_seeds,)`` best PSNR of model ``key`` per seed (mean over images), in the order of ``seeds``."""
    return [float(np.mean([r["best_psnr"] for r in runs if r["key"] == key and r["seed"] == s])) for s in seeds]


def _claims(scale: str, spectral: dict, psnrs: dict, runs: list[dict], seeds: list[int]) -> list[Claim]:
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
    cosmo = psnrs["cosmo_rc"]
    if "rc_nomod" in psnrs:  # a mechanism check on the first seed
        first = _per_seed(runs, "cosmo_rc", seeds[:1])[0]
        claims.append(Claim.at_least("modulation is the mechanism (COSMO-RC vs RC without modulation)",
                                     "COSMO-RC best; calibration 38 vs 11.2 dB", first - psnrs["rc_nomod"], 10.0,
                                     "COSMO-RC - RC no-mod (dB), first seed"))
    if scale == "paper":
        claims.append(Claim.at_least("COSMO-RC beats INCODE on image fitting", "+5.67 dB over INCODE (Kodak)",
                                     cosmo - psnrs["incode"], 3.0, "COSMO-RC - INCODE mean (dB)"))
        return claims
    # the central claim, paired over the seeds
    claims.append(Claim.paired("COSMO-RC beats SIREN at the official width", "COSMO-RC above every baseline",
                               _per_seed(runs, "cosmo_rc", seeds), _per_seed(runs, "siren", seeds), seeds,
                               margin=0.0 if scale == "quick" else 1.0, what="PSNR(COSMO-RC) - PSNR(SIREN) (dB)"))
    if scale == "quick":
        return claims
    claims += [
        Claim.at_least("hidden phase normalisation matters", "official code normalises; calibration 38.2 vs 24.9",
                       cosmo - psnrs["cosmo_rc_nonorm"], 5.0, "COSMO-RC - COSMO no-norm (dB)"),
        Claim.at_least("COSMO-RC beats Gauss", "COSMO-RC above every baseline", cosmo - psnrs["gauss"], 2.0,
                       "COSMO-RC - Gauss (dB)"),
        Claim.at_least("COSMO-RC beats WIRE", "COSMO-RC above every baseline", cosmo - psnrs["wire"], 4.0,
                       "COSMO-RC - WIRE (dB)"),
        Claim.at_least("COSMO-RC beats ReLU+PE", "COSMO-RC above every baseline", cosmo - psnrs["relu_pe"], 10.0,
                       "COSMO-RC - ReLU+PE (dB)"),
        Claim.mean_at_least("sanity: SIREN fits", "SIREN calibration 35.7 dB", _per_seed(runs, "siren", seeds),
                            seeds, 34.0, "SIREN PSNR (dB)"),
        Claim.at_least("sanity: ReLU+PE fits", "ReLU+PE calibration 20.9 dB", psnrs["relu_pe"], 19.0,
                       "ReLU+PE (dB)"),
        Claim.at_least("sanity: FINER memorises a 64x64 image", "FINER calibration 72 dB", psnrs["finer"], 50.0,
                       "FINER (dB)"),
        Claim.at_most("no NaN/Inf in any run", "stable training", float(any(r["nonfinite"] for r in runs)), 0.0,
                      "runs with NaN/Inf"),
        Claim.at_most("COSMO-RC converges fast", "faster convergence than the baselines",
                      max(r["iters_to_90"] for r in runs if r["key"] == "cosmo_rc"), 150,
                      "iterations to 90% of best PSNR (worst seed)"),
    ]
    return claims


BENCHMARK = Benchmark(name="cosmo-inr", paper=PAPER, package="iclr26-cosmo-inr", func=_run)
