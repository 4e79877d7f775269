"""The benchmark's claims: the quality claims are paired over derived seeds and fail for a worse method."""
import dataclasses
import math

import numpy as np
import pytest
import torch
from iclr26_gfm.bench import BENCHMARK, CONFIGS, _claims, _run_seeds, _test_nll
from iclr26_shared.bench import derive_seeds

METHODS = ("GFM(reflect)", "GFM(specular)", "PlainFM", "ProjectedFM", "RejectionFM", "ReflectedFM",
           "untrained T^-1(U(B))", "GFM(none, no rescale)")


def _rows(sw2: dict[str, list[float]], seeds: list[int]) -> list[dict]:
    """Rows of the shape ``_run_target`` writes, with SW2 per method and seed as given."""
    rows = []
    for i, s in enumerate(seeds):
        for m in METHODS:
            rows.append({"method": m, "target": "simplex-dirichlet", "seed": s,
                         "violation_rate": 0.3 * (m == "PlainFM"), "max_violation": 0.0,
                         "boundary_atoms": 0.3 * (m == "ProjectedFM"),
                         "sw2": sw2.get(m, [0.1] * len(seeds))[i], "timing_seconds": 1.0, "outside_iterates": 5,
                         "nll_common": -1.0, "nll_nonfinite": 0, "nll_points": 100, "near_boundary": 0.3,
                         "near_edge": 0.03})
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


def test_untrained_claim_needs_the_mean_level_and_a_paired_win():
    seeds = derive_seeds(6, 3)

    def holds(gfm, untrained=(0.1, 0.1, 0.1)):
        sw2 = {"GFM(reflect)": list(gfm), "untrained T^-1(U(B))": list(untrained)}
        return _claim(_claims(_rows(sw2, seeds), CONFIGS["quick"], seeds)[0], "quality_vs_untrained").holds

    # ratios 0.36, 0.44, 0.52 (geometric mean 0.44 <= 0.5, one seed above 0.5): the spec's level holds
    assert holds([0.036, 0.044, 0.052])
    assert not holds([0.046, 0.05, 0.06])          # mean ratio 0.52 > 0.5
    assert not holds([0.005, 0.09, 0.2])           # geometric mean 0.45 from one lucky seed: no paired win


def test_test_nll_counts_non_finite_and_compares_on_common_points():
    inf = math.inf
    out = _test_nll({"a": torch.tensor([-1.0, -2.0, -inf, -3.0], dtype=torch.float64),
                     "b": torch.tensor([0.0, -inf, -1.0, -1.0], dtype=torch.float64)})
    assert out["a"]["nll"] == 2.0 and out["a"]["nll_nonfinite"] == 1 and out["a"]["nll_points"] == 4
    assert out["a"]["nll_common"] == 2.0 and out["b"]["nll_common"] == 0.5 and out["b"]["nll_common_points"] == 2
    assert out["b"]["nll"] == 2.0 / 3


def test_smoke_pairs_the_quality_claims_over_two_derived_seeds(tmp_path):
    result = BENCHMARK.run("smoke", "cpu", 1, tmp_path)
    for name in ("quality_vs_plain", "quality_vs_reflected", "quality_vs_untrained"):
        claim = _claim(result.claims, name)
        assert claim.per_seed["seeds"] == derive_seeds(1, 2) and claim.per_seed["n"] == 2
        assert len(claim.per_seed["method"]) == len(claim.per_seed["baseline"]) == 2
    rows = {r["method"]: r for r in result.rows if r["target"] == "simplex-dirichlet"}
    for method in ("GFM(reflect)", "PlainFM", "RejectionFM"):
        assert rows[method]["nll_points"] > 0 and math.isfinite(rows[method]["nll_common"])
    assert "nll" not in rows["ReflectedFM"] and "nll" not in rows["ProjectedFM"]
    # ProjectedFM projects PlainFM's own draw: its boundary atoms are exactly PlainFM's infeasible samples (up to
    # points within 1e-6 of the boundary); an independent draw would differ by a binomial spread of ~0.03
    gap = rows["ProjectedFM"]["boundary_atoms"] - rows["PlainFM"]["violation_rate"]
    assert rows["PlainFM"]["violation_rate"] > 0 and 0 <= gap <= 0.004
    assert math.isfinite(result.metrics["test_nll_gfm"])


@pytest.mark.slow
def test_rows_do_not_depend_on_the_number_of_workers():
    """Trainings and evaluations in two worker processes give the rows of one process, bit for bit."""
    cfg = dataclasses.replace(CONFIGS["smoke"], train_steps=20, lshape_steps=10, n_sample=200, n_truth=200,
                              n_timing=50, n_mmd=50, n_nll=50)
    seeds = derive_seeds(2, 2)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _run_seeds(cfg, seeds, "cpu", 1)  # in this process, one thread
        torch.set_num_threads(2)
        two = _run_seeds(cfg, seeds, "cpu", 2)  # two single-thread workers
    finally:
        torch.set_num_threads(threads)
    clocks = ("timing_seconds", "sample_seconds", "train_seconds")
    assert [{k: v for k, v in r.items() if k not in clocks} for r in one] == \
        [{k: v for k, v in r.items() if k not in clocks} for r in two]
    assert {r["method"] for r in one} >= set(METHODS) and len(one) == len(two)


def test_timing_takes_turns_and_keeps_each_methods_least_time():
    """Methods alternate within each round, and a method's time is its least over the rounds (CPU time is only ever
    inflated by other jobs), read from the clock passed in."""
    from iclr26_gfm.bench import _timed_samples

    calls = []
    costs = {"a": [5, 2, 9], "b": [3, 4, 1]}

    def clock():
        return clock.now

    clock.now = 0

    def sampler(name):
        def run(n):
            calls.append((name, n))
            clock.now += costs[name][sum(c[0] == name for c in calls) - 1]
        return run

    times = _timed_samples({"a": sampler("a"), "b": sampler("b")}, 7, 3, clock)
    assert times == {"a": 2, "b": 1}
    assert [c[0] for c in calls] == ["a", "b"] * 3 and {c[1] for c in calls} == {7}
