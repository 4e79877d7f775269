"""The denoising and 6x super-resolution benchmarks: JSON contract, paired claims, and a judged model
that is chosen without the clean image."""
import json

import numpy as np
import pytest
from iclr26_cosmo_inr import denoise_observed, downsample, load_image, psnr, super_resolve_observed
from iclr26_cosmo_inr.bench_restore import DENOISE_BENCHMARK, SR_BENCHMARK, _claims, observe, reference_psnr
from iclr26_shared.bench import derive_seeds, run_and_save

TINY = {"hidden_features": 8, "hidden_layers": 1, "iters": 12, "prior": "none", "seed": 3}


@pytest.mark.parametrize("bench,reference", [(DENOISE_BENCHMARK, "noisy input"), (SR_BENCHMARK, "bicubic x6")])
def test_smoke_run_writes_the_result_contract_with_the_oracle_beside_the_judged_number(tmp_path, bench, reference):
    result, path, skipped = run_and_save(bench, "smoke", "cpu", 0, tmp_path)
    assert not skipped and result.status == "ok", result.error
    data = json.loads(path.read_text())
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in data
    assert data["benchmark"] == bench.name and data["scale"] == "smoke"
    rows = {r["method"]: r for r in data["rows"]}
    assert set(rows) == {reference, "COSMO-RC", "SIREN"}
    seeds = derive_seeds(0, 2)
    for method in ("COSMO-RC", "SIREN"):
        assert rows[method]["runs"] == 2 and {f"psnr_seed{s}" for s in seeds} <= set(rows[method])
        assert {f"psnr_oracle_seed{s}" for s in seeds} <= set(rows[method])
        assert rows[method]["psnr_oracle"] >= rows[method]["psnr"] - 1e-9  # the oracle picks the best iterate
    central = data["claims"][0]
    assert central["name"].startswith("COSMO-RC beats SIREN") and "without the clean image" in central["name"]
    diffs = [rows["COSMO-RC"][f"psnr_seed{s}"] - rows["SIREN"][f"psnr_seed{s}"] for s in seeds]
    assert central["measured"] == pytest.approx(np.mean(diffs))  # judged on the final model, not the oracle
    assert data["metrics"]["oracle_cosmo_minus_siren_db"] == pytest.approx(
        np.mean([rows["COSMO-RC"][f"psnr_oracle_seed{s}"] - rows["SIREN"][f"psnr_oracle_seed{s}"] for s in seeds]))


@pytest.mark.parametrize("model", ["cosmo_rc", "siren"])
def test_denoising_selection_is_unchanged_when_the_clean_image_is_replaced(model):
    clean = load_image("astronaut", size=8)
    noisy = observe("denoise", clean, 5)
    other = np.random.default_rng(0).random(clean.shape).astype(np.float32)  # a different "clean" image
    a, b = (denoise_observed(noisy, truth, model, **TINY) for truth in (clean, other))
    np.testing.assert_array_equal(a.reconstruction, b.reconstruction)  # same training, same choice
    assert a.psnr == pytest.approx(psnr(a.reconstruction, clean), abs=1e-4)
    assert b.psnr == pytest.approx(psnr(b.reconstruction, other), abs=1e-4)
    oracle = denoise_observed(noisy, other, model, selection="oracle", **TINY)
    assert oracle.psnr == pytest.approx(b.extra["oracle_best_psnr"]) and oracle.psnr >= b.psnr - 1e-9


@pytest.mark.parametrize("model", ["cosmo_rc", "siren"])
def test_super_resolution_selection_is_unchanged_when_the_hr_image_is_replaced(model):
    hr = load_image("coffee", size=12)
    lr_image = observe("sr", hr, 0)
    assert lr_image.shape == (2, 2, 3)
    other = np.random.default_rng(1).random(hr.shape).astype(np.float32)
    a, b = (super_resolve_observed(lr_image, truth, 6, model, eval_every=2, **TINY) for truth in (hr, other))
    np.testing.assert_array_equal(a.reconstruction, b.reconstruction)
    assert b.psnr == pytest.approx(psnr(b.reconstruction, other), abs=1e-4)


def test_observations_reference_and_bad_inputs():
    clean = load_image("chelsea", size=12)
    noisy = observe("denoise", clean, 7)
    np.testing.assert_array_equal(noisy, observe("denoise", clean, 7))  # the unit's seed fixes the noise
    assert noisy.shape == clean.shape and noisy.min() == 0.0 and noisy.max() == 1.0
    assert reference_psnr("denoise", noisy, clean) == pytest.approx(psnr(noisy, clean))
    np.testing.assert_allclose(downsample(clean, 6)[0, 0], clean[:6, :6].mean(axis=(0, 1)), atol=1e-6)
    flat = np.full((12, 12), 0.25, np.float32)
    assert reference_psnr("sr", downsample(flat, 6), flat) > 100  # bicubic keeps a constant image
    with pytest.raises(ValueError, match="task"):
        observe("inpaint", clean, 0)
    with pytest.raises(ValueError, match="noisy, clean"):
        denoise_observed(noisy[:6], clean, "siren", iters=1, hidden_features=4)
    with pytest.raises(ValueError, match="hr: expected shape"):
        super_resolve_observed(downsample(clean, 6), clean[:6], 6, "siren", iters=1, hidden_features=4)


def _judged(task, scale, cosmo, siren, reference):
    pairs = [(s, f"im{j}") for j, s in enumerate(derive_seeds(0, len(cosmo)))]
    runs = [{"key": k, "seed": s, "image": name, "final": v, "nonfinite": False}
            for k, vals in (("cosmo_rc", cosmo), ("siren", siren)) for (s, name), v in zip(pairs, vals)]
    return _claims(task, scale, runs, pairs, reference)


@pytest.mark.parametrize("task", ["denoise", "sr"])
def test_claims_follow_the_paired_final_psnr_and_use_the_paper_margin_at_full(task):
    cosmo, siren, ref = [25.0, 26.0, 24.5], [24.0, 25.4, 24.0], [20.0, 21.0, 19.0]
    central, above_reference, finite = _judged(task, "quick", cosmo, siren, ref)
    assert central.holds and central.measured == pytest.approx(0.7) and above_reference.holds and finite.holds
    assert not _judged(task, "quick", siren, cosmo, ref)[0].holds  # method and baseline swapped
    assert not _judged(task, "quick", cosmo, siren, [30.0, 30.0, 30.0])[1].holds
    margin = {"denoise": 0.46, "sr": 0.64}[task]
    full = _judged(task, "full", [24.0 + margin + d for d in (0.10, 0.12, 0.14)], [24.0] * 3, ref)[0]
    assert full.holds and f"> {margin:g}" in full.criterion
    assert not _judged(task, "full", [24.3] * 3, [24.0] * 3, ref)[0].holds  # positive but below the paper's margin
