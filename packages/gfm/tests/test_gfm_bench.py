"""The benchmark's claims: the quality claims are paired over derived seeds and fail for a worse method."""
import numpy as np
from iclr26_gfm.bench import BENCHMARK, CONFIGS, _claims
from iclr26_shared.bench import derive_seeds

METHODS = ("GFM(reflect)", "PlainFM", "ProjectedFM", "ReflectedFM", "untrained T^-1(U(B))", "GFM(none, no rescale)")


def _rows(sw2: dict[str, list[float]], seeds: list[int]) -> list[dict]:
    """Rows of the shape ``_run_target`` writes, with SW2 per method and seed as given."""
    rows = []
    for i, s in enumerate(seeds):
        for m in METHODS:
            rows.append({"method": m, "target": "simplex-dirichlet", "seed": s,
                         "violation_rate": 0.3 * (m == "PlainFM"), "max_violation": 0.0,
                         "boundary_atoms": 0.3 * (m == "ProjectedFM"),
                         "sw2": sw2.get(m, [0.1] * len(seeds))[i], "timing_seconds": 1.0, "outside_iterates": 5})
        rows.append({"method": "GFM(reflect)", "target": "lshape-star", "seed": s, "violation_rate": 0.0,
                     "max_violation": 0.0})
    return rows


def _claim(claims, name):
    return next(c for c in claims if c.name == name)


def test_quality_claim_is_paired_and_fails_for_a_planted_worse_method():
    seeds = derive_seeds(4, 3)
    good = {"GFM(reflect)": [0.020, 0.022, 0.021], "PlainFM": [0.036, 0.035, 0.037]}
    claim = _claim(_claims(_rows(good, seeds), CONFIGS["quick"], seeds)[0], "quality_vs_plain")
    assert claim.holds and claim.per_seed["seeds"] == seeds and claim.per_seed["n"] == 3
    np.testing.assert_allclose(claim.per_seed["values"], np.log(good["PlainFM"]) - np.log(good["GFM(reflect)"]))
    swapped = {"GFM(reflect)": good["PlainFM"], "PlainFM": good["GFM(reflect)"]}  # GFM now 1.7x worse
    assert not _claim(_claims(_rows(swapped, seeds), CONFIGS["quick"], seeds)[0], "quality_vs_plain").holds
    # within the 1.25x margin on every seed: non-inferior
    close = {"GFM(reflect)": [0.040, 0.041, 0.039], "PlainFM": [0.036, 0.035, 0.037]}
    assert _claim(_claims(_rows(close, seeds), CONFIGS["quick"], seeds)[0], "quality_vs_plain").holds


def test_smoke_pairs_the_quality_claims_over_two_derived_seeds(tmp_path):
    result = BENCHMARK.run("smoke", "cpu", 1, tmp_path)
    for name in ("quality_vs_plain", "quality_vs_reflected", "quality_vs_untrained"):
        claim = _claim(result.claims, name)
        assert claim.per_seed["seeds"] == derive_seeds(1, 2) and claim.per_seed["n"] == 2
        assert len(claim.per_seed["method"]) == len(claim.per_seed["baseline"]) == 2
