"""The claims are paired over seeds, fail for a planted worse geometry or noisy slopes and drop diverged seeds."""
import numpy as np
import pytest
from iclr26_relu_geometry.bench import (
    _gap_claims,
    _memorisation_claims,
    _self_influence_claim,
    _slope_claims,
    _wide_claim,
    seed_slopes,
)
from iclr26_shared.bench import derive_seeds


def _rows(gaps: dict[float, list[float]], train: dict[float, list[float]], seeds, diverged=()):
    return [{"family": "beta", "n": 512, "alpha": a, "seed": s, "gap": gaps[a][i], "train_over_noise": train[a][i],
             "diverged": (a, s) in diverged}
            for a in gaps for i, s in enumerate(seeds)]


SEEDS = derive_seeds(3, 3)
GAPS = {0.0: [0.20, 0.17, 0.16], 0.3: [0.15, 0.13, 0.11], 1.5: [0.08, 0.06, 0.07], 5.0: [0.03, 0.01, 0.04]}
TRAIN = {a: [0.65 if a == 0 else 0.9] * 3 for a in GAPS}  # train MSE / drawn noise energy


def test_gap_contrast_is_paired_and_fails_when_planted_worse():
    central, ordering = _gap_claims(_rows(GAPS, TRAIN, SEEDS), 512)
    assert central.name == "geometry_gap_contrast" and central.holds and ordering.holds
    assert central.per_seed["seeds"] == SEEDS and central.per_seed["n"] == 3
    assert central.per_seed["values"] == [g - 3 * d for g, d in zip(GAPS[0.0], GAPS[5.0])]
    swapped = {**GAPS, 0.0: GAPS[5.0], 5.0: GAPS[0.0]}
    central, ordering = _gap_claims(_rows(swapped, TRAIN, SEEDS), 512)
    assert not central.holds and not ordering.holds and central.per_seed["wins"] == 0


def test_memorisation_is_paired_with_margin_and_drops_diverged_seeds():
    contrast, sphere, deep = _memorisation_claims(_rows(GAPS, TRAIN, SEEDS), 512)
    assert contrast.holds and sphere.holds and deep.holds and contrast.per_seed["n"] == 3
    close = {**TRAIN, 5.0: [0.75] * 3}  # α = 5 fits the noise too: difference 0.1 < margin 0.15
    assert not _memorisation_claims(_rows(GAPS, close, SEEDS), 512)[0].holds
    rows = _rows(GAPS, TRAIN, SEEDS, diverged={(5.0, SEEDS[1])})
    assert _gap_claims(rows, 512)[0].per_seed["seeds"] == [SEEDS[0], SEEDS[2]]
    none = _gap_claims(_rows(GAPS, TRAIN, SEEDS), 1024)[0]
    assert not none.holds and none.per_seed is None


def test_self_influence_claim_needs_three_times_the_deep_value_on_every_seed():
    rows = _rows(GAPS, TRAIN, SEEDS)
    for r in rows:
        r["self_influence"] = 0.66 if r["alpha"] == 0 else 0.13
    claim = _self_influence_claim(rows, 512)
    assert claim.holds and claim.per_seed["wins"] == 3
    assert claim.per_seed["values"] == pytest.approx([0.66 - 3 * 0.13] * 3)
    for r in rows:
        r["self_influence"] = 0.66 if r["alpha"] == 0 else 0.25  # only 2.6×
    assert not _self_influence_claim(rows, 512).holds


def _slope_rows(slopes: dict[float, list[float]], jitter: float):
    rng = np.random.default_rng(0)
    return [{"family": "beta", "alpha": a, "seed": s, "n": n, "diverged": False,
             "gap": 2.0 * n ** slopes[a][i] * np.exp(jitter * rng.standard_normal())}
            for a in slopes for i, s in enumerate(SEEDS) for n in (128, 256, 512, 1024)]


def test_slope_claims_are_per_seed_fits_paired_over_seeds():
    planted = {0.0: [-0.05, -0.06, -0.04], 5.0: [-0.38, -0.40, -0.37]}
    rows = _slope_rows(planted, 0.0)
    assert seed_slopes(rows, 5.0) == pytest.approx(dict(zip(SEEDS, planted[5.0])))
    contrast, precision = _slope_claims(rows)
    assert contrast.holds and precision.holds and contrast.per_seed["wins"] == 3
    same = _slope_claims(_slope_rows({0.0: planted[0.0], 5.0: planted[0.0]}, 0.0))
    assert not same[0].holds
    noisy = _slope_claims(_slope_rows(planted, 0.5))  # gaps off by ~50% per point: the slopes are not measured
    assert not noisy[1].holds


def test_wide_claim_needs_every_seed_at_the_edge_with_live_neurons():
    def row(seed, lam, dead):
        return {"seed": seed, "sharpness": lam, "eta": 0.2, "dead_fraction": dead, "init_scale": 0.3,
                "diverged": False, "width": 1024, "n": 512}

    good = [row(s, 9.9, 0.02) for s in SEEDS]
    assert _wide_claim(good).holds and str(SEEDS[2]) in _wide_claim(good).measured
    assert not _wide_claim([*good[:2], row(SEEDS[2], 9.9, 0.2)]).holds  # one seed with 20% dead neurons
    assert not _wide_claim([*good[:2], row(SEEDS[2], 5.5, 0.02)]).holds  # one seed far below 2/η
