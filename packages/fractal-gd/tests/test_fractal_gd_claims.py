"""The benchmark's central claim is paired over seeds and fails for a planted worse rule."""
from iclr26_fractal_gd.bench import CONFIGS, _threshold_claims
from iclr26_shared.bench import Claim, derive_seeds


def test_threshold_claim_is_paired_and_fails_when_swapped():
    seeds = derive_seeds(7, 2)
    metrics, rows = {}, []
    central, below, above = _threshold_claims(CONFIGS["smoke"], seeds, metrics, rows)
    per = central.per_seed
    assert central.name == "threshold_rule_vs_hessian" and per["n"] == 2 and per["seeds"] == seeds
    assert central.holds and min(per["method"]) >= 0.95 and max(per["baseline"]) <= 0.8
    assert below.per_seed["n"] == above.per_seed["n"] == 2 and below.holds and above.holds
    # the Hessian rule planted as the method must lose
    assert not Claim.paired(central.name, central.paper, per["baseline"], per["method"], seeds).holds
