"""The method-vs-baseline checks are paired over the derived seeds, and a planted worse method fails them."""
import math

from iclr26_pubench.bench import bench_seeds, bench_specs, paired_claim
from iclr26_shared.bench import derive_seeds


def _records(f1: dict[str, list[float]], seeds) -> list[dict]:
    return [{"method": m, "labeling": "scar", "c": 0.1, "dataset": "digits", "status": "ok", "seed": s, "test_f1": v}
            for m, values in f1.items() for s, v in zip(seeds, values)]


def test_central_claim_is_paired_and_a_swapped_method_fails():
    seeds = derive_seeds(6, 3)
    records = _records({"nnpu": [0.88, 0.86, 0.90], "naive": [0.0, 0.05, 0.02]}, seeds)
    args = ("test_f1", ("nnpu", "scar", 0.1), ("naive", "scar", 0.1), 0.5, "F1(nnPU) - F1(naive)")
    central = paired_claim("2a", "p", records, *args)
    assert central.holds and central.per_seed["seeds"] == seeds and central.per_seed["wins"] == 3
    swapped = paired_claim("2a", "p", _records({"nnpu": [0.0, 0.05, 0.02], "naive": [0.88, 0.86, 0.90]}, seeds),
                           *args)
    assert not swapped.holds and swapped.measured < 0


def test_claim_uses_only_seeds_both_runs_finished():
    seeds = derive_seeds(6, 3)
    records = _records({"nnpu": [0.88, 0.86, 0.90], "naive": [0.0, 0.05]}, seeds)
    claim = paired_claim("2a", "p", records, "test_f1", ("nnpu", "scar", 0.1), ("naive", "scar", 0.1), 0.5, "d")
    assert claim.per_seed["seeds"] == seeds[:2]
    none = paired_claim("x", "p", records, "test_f1", ("upu", "scar", 0.1), ("naive", "scar", 0.1), 0.5, "d")
    assert not none.holds and math.isnan(none.measured)


def test_scales_run_the_central_pair_on_enough_seeds():
    assert bench_seeds("quick", 2) == derive_seeds(2, 3) and len(bench_seeds("full", 2)) == 5
    for scale, k in (("smoke", 2), ("quick", 3)):
        specs = bench_specs(scale, 4)
        for method in ("nnpu", "naive"):
            ran = {s.seed for s in specs if s.method == method and s.c == 0.1 and s.labeling == "scar"}
            assert ran == set(derive_seeds(4, k))
