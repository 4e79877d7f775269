"""The central claims are paired over seeds, fail for a planted worse geometry and drop diverged seeds."""
from iclr26_relu_geometry.bench import SIGMA, _gap_claims, _memorisation_claims
from iclr26_shared.bench import derive_seeds


def _rows(gaps: dict[float, list[float]], train: dict[float, list[float]], seeds, diverged=()):
    return [{"family": "beta", "n": 512, "alpha": a, "seed": s, "gap": gaps[a][i], "train_mse": train[a][i],
             "diverged": (a, s) in diverged}
            for a in gaps for i, s in enumerate(seeds)]


SEEDS = derive_seeds(3, 3)
GAPS = {0.0: [0.20, 0.17, 0.16], 0.3: [0.15, 0.13, 0.11], 1.5: [0.08, 0.06, 0.07], 5.0: [0.03, 0.01, 0.04]}
TRAIN = {a: [SIGMA**2 * (0.65 if a == 0 else 0.9)] * 3 for a in GAPS}


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
    close = {**TRAIN, 5.0: [SIGMA**2 * 0.75] * 3}  # α = 5 fits the noise too: difference 0.1 < margin 0.15
    assert not _memorisation_claims(_rows(GAPS, close, SEEDS), 512)[0].holds
    rows = _rows(GAPS, TRAIN, SEEDS, diverged={(5.0, SEEDS[1])})
    assert _gap_claims(rows, 512)[0].per_seed["seeds"] == [SEEDS[0], SEEDS[2]]
    none = _gap_claims(_rows(GAPS, TRAIN, SEEDS), 1024)[0]
    assert not none.holds and none.per_seed is None
