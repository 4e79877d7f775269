"""The method-vs-baseline claims are paired over seeds, and a planted worse method fails them."""
import numpy as np
from iclr26_camel.bench import _accuracy_claims, per_seed
from iclr26_shared.bench import derive_seeds

SEEDS = derive_seeds(4, 3)


def _runs(acc: dict[str, list[float]], rate: float = 0.3) -> list[dict]:
    return [{"method": m, "rate": rate, "seed": s, "acc": a, "nmi": a - 0.05}
            for m, values in acc.items() for s, a in zip(SEEDS, values)]


def test_central_claim_is_paired_against_the_stronger_baseline():
    acc = {"camel": [0.91, 0.90, 0.92], "camel_noconn": [0.66, 0.65, 0.70], "bsv": [0.70, 0.69, 0.71],
           "concat": [0.80, 0.79, 0.81]}
    claims = {c.name: c for c in _accuracy_claims(_runs(acc), (0.3,))}
    central = claims["camel_vs_baselines_r0.3"]
    assert central.holds and central.per_seed["seeds"] == SEEDS and central.per_seed["n"] == 3
    assert np.allclose(central.per_seed["baseline"], acc["concat"])  # the stronger baseline on average
    assert claims["connectivity_matters"].holds and claims["camel_acc_r0.3"].per_seed["n"] == 3


def test_swapped_method_and_baseline_fail():
    acc = {"camel": [0.80, 0.79, 0.81], "camel_noconn": [0.91, 0.90, 0.92], "bsv": [0.70, 0.69, 0.71],
           "concat": [0.91, 0.90, 0.92]}
    claims = {c.name: c for c in _accuracy_claims(_runs(acc), (0.3,))}
    assert not claims["camel_vs_baselines_r0.3"].holds and not claims["connectivity_matters"].holds


def test_a_mean_above_the_margin_with_a_wide_interval_does_not_hold():
    acc = {"camel": [0.99, 0.80, 0.95], "camel_noconn": [0.6, 0.6, 0.6], "bsv": [0.7, 0.7, 0.7],
           "concat": [0.8, 0.8, 0.8]}  # mean gain 0.113 > 0.08, but one seed gains nothing
    central = {c.name: c for c in _accuracy_claims(_runs(acc), (0.3,))}["camel_vs_baselines_r0.3"]
    assert central.measured > 0.08 and not central.holds


def test_per_seed_orders_by_seed():
    runs = _runs({"camel": [0.1, 0.2, 0.3]})[::-1]
    seeds, values = per_seed(runs, "acc", "camel", 0.3)
    assert seeds == SEEDS and values.tolist() == [0.1, 0.2, 0.3]
