"""DREAM's central claim is paired over the derived seeds, and a planted worse method fails it."""
import numpy as np
import pytest
from iclr26_dream.bench import mfeat_claims, per_seed
from iclr26_shared.bench import derive_seeds


def _rows(acc: dict[str, list[float]], seeds, data="uci3") -> list[dict]:
    return [{"data": data, "method": m, "seed": s, "acc": a}
            for m, values in acc.items() for s, a in zip(seeds, values)]


def test_quick_central_claim_is_paired_and_fails_when_swapped():
    seeds = derive_seeds(5, 3)
    dream, ckm = [0.93, 0.94, 0.92], [0.91, 0.90, 0.91]
    claims = {c.name: c for c in mfeat_claims(_rows({"dream": dream, "concat_km": ckm}, seeds), "quick", 5)}
    central = claims["uci3_dream_vs_concat_kmeans"]
    assert central.holds and central.per_seed["seeds"] == seeds and central.per_seed["n"] == 3
    assert np.allclose(central.per_seed["method"], dream) and claims["uci3_dream_acc"].holds
    swapped = {c.name: c for c in mfeat_claims(_rows({"dream": [0.80, 0.82, 0.79], "concat_km": ckm}, seeds),
                                               "quick", 5)}
    assert not swapped["uci3_dream_vs_concat_kmeans"].holds and not swapped["uci3_dream_acc"].holds


def test_smoke_has_the_central_claim_over_two_seeds():
    seeds = derive_seeds(0, 2)
    (claim,) = mfeat_claims(_rows({"dream": [0.5, 0.6], "concat_km": [0.4, 0.4]}, seeds, "uci3_small"), "smoke", 0)
    assert claim.name == "uci3_dream_vs_concat_kmeans" and claim.per_seed["n"] == 2


def test_per_seed_refuses_a_missing_seed():
    with pytest.raises(ValueError, match="seeds"):
        per_seed(_rows({"dream": [0.9]}, [0]), "uci3", "dream", [0, 1])
