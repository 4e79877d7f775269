"""DREAM's central claim is paired over the derived seeds, and a planted worse method fails it."""
import numpy as np
import pytest
from iclr26_dream.bench import mfeat_claims, per_seed
from iclr26_shared.bench import derive_seeds


def _rows(acc: dict[str, list[float]], seeds, data="uci3", gate=(0.44, 0.5, 0.5), means_acc=0.8) -> list[dict]:
    rows = [{"data": data, "method": m, "seed": s, "acc": a}
            for m, values in acc.items() for s, a in zip(seeds, values)]
    for r in rows:
        if r["method"] == "dream":
            r.update(gate=list(gate), means_km_acc=means_acc)
    return rows


def test_quick_claims_are_paired_and_fail_when_swapped():
    seeds = derive_seeds(5, 4)  # dream.mfeat runs 4 seeds at quick
    dream, ckm, prop = [0.94, 0.95, 0.93, 0.945], [0.91, 0.92, 0.91, 0.913], [0.92, 0.93, 0.915, 0.92]
    claims = {c.name: c for c in mfeat_claims(_rows({"dream": dream, "concat_km": ckm, "prop_km": prop}, seeds),
                                              "quick", 5)}
    central = claims["uci3_dream_vs_concat_kmeans"]
    assert central.holds and central.per_seed["seeds"] == seeds and central.per_seed["n"] == 4
    assert np.allclose(central.per_seed["method"], dream) and claims["uci3_dream_acc"].holds
    assert claims["uci3_dream_vs_propagated_kmeans"].holds
    assert claims["uci3_semantic_branch_learns"].holds and claims["uci3_gate_moves"].holds
    # a planted worse DREAM, a dead VAE (chance-level means) and a gate stuck at 0.5 fail
    worse = _rows({"dream": [0.90, 0.91, 0.90, 0.905], "concat_km": ckm, "prop_km": prop}, seeds,
                  gate=(0.5, 0.49, 0.51), means_acc=0.15)
    swapped = {c.name: c for c in mfeat_claims(worse, "quick", 5)}
    assert not any(swapped[k].holds for k in ("uci3_dream_vs_concat_kmeans", "uci3_dream_acc",
                                               "uci3_dream_vs_propagated_kmeans", "uci3_semantic_branch_learns",
                                               "uci3_gate_moves"))


def test_smoke_has_the_central_claim_over_two_seeds():
    seeds = derive_seeds(0, 2)
    (claim,) = mfeat_claims(_rows({"dream": [0.5, 0.6], "concat_km": [0.4, 0.4]}, seeds, "uci3_small"), "smoke", 0)
    assert claim.name == "uci3_dream_vs_concat_kmeans" and claim.per_seed["n"] == 2


def test_per_seed_refuses_a_missing_seed():
    with pytest.raises(ValueError, match="seeds"):
        per_seed(_rows({"dream": [0.9]}, [0]), "uci3", "dream", [0, 1])
