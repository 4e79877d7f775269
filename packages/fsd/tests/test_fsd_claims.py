"""The central FSD-vs-direct claim is paired over the derived seeds, and a planted worse method fails it."""
from iclr26_fsd.bench import CONFIGS, FSD_BENCHMARK, central_claims
from iclr26_shared.bench import derive_seeds


def test_central_claim_holds_for_a_better_method_and_fails_when_swapped():
    seeds = derive_seeds(2, 3)
    pair = [(0.40, 0.10, 0.0), (0.35, 0.05, 0.0), (0.45, 0.15, 0.0)]
    good, grasp = central_claims(CONFIGS["quick"], pair, seeds)
    assert good.holds and good.per_seed["seeds"] == seeds and good.per_seed["wins"] == 3
    assert not grasp.holds  # the grasp-module claim reads the third number, here worse than direct
    assert not central_claims(CONFIGS["quick"], [(d, f, f) for f, d, _ in pair], seeds)[0].holds
    assert not central_claims(CONFIGS["quick"], [(0.0, 0.0, 0.0)] * 3, seeds)[0].holds  # a tie is not a win


def test_smoke_central_claim_is_paired_over_two_seeds(tmp_path):
    result = FSD_BENCHMARK.run(scale="smoke", device="cpu", seed=1, out_dir=tmp_path)
    central = next(c for c in result.claims if c.name == "seeing_to_doing_beats_direct_action")
    assert central.per_seed["n"] == 2 and central.per_seed["seeds"] == derive_seeds(1, 2)
    per_seed_rows = [r for r in result.rows if "seed" in r]
    assert [r["fsd_success"] for r in per_seed_rows] == central.per_seed["method"]
    grasp = next(c for c in result.claims if c.name == "seeing_to_doing_with_grasp_module")
    assert [r["fsd_grasp_module_success"] for r in per_seed_rows] == grasp.per_seed["method"]
    oracle = next(c for c in result.claims if c.name == "oracle_grasp_module_success")
    assert oracle.holds  # the grasp module executes ground-truth aids (box centre -> mean affordance point)
