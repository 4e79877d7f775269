"""The benchmarks' method-vs-baseline claims are paired over derived seeds and fail for a worse method."""
import pytest
from iclr26_perm_compress import bench
from iclr26_shared.bench import derive_seeds

PAIRED = {bench.ERROR_SCALING: ["beats_random_subset"],
          bench.LTH: ["initial_prediction_match", "random_subnetwork_deviates", "late_trajectory_tracks_full"],
          bench.ATTENTION: ["initial_prediction_match", "random_subnetwork_deviates", "late_trajectory_tracks_full"],
          bench.DATASET: ["compressed_matches_full", "random_subset_worse"],
          bench.DEEP: ["initial_prediction_match", "random_subnetwork_deviates", "compressed_final_close_to_full"]}


def _claim(result, name):
    return next(c for c in result.claims if c.name == name)


@pytest.mark.parametrize("benchmark", list(PAIRED), ids=lambda b: b.name)
def test_smoke_pairs_the_baseline_claims_over_two_derived_seeds(tmp_path, benchmark):
    result = benchmark.run("smoke", "cpu", 3, tmp_path)
    for name in PAIRED[benchmark]:
        per_seed = _claim(result, name).per_seed
        assert per_seed["seeds"] == derive_seeds(3, 2) and per_seed["n"] == 2
        assert len(per_seed["method"]) == len(per_seed["baseline"]) == 2


def _planted(final: dict):
    """A ``dataset_experiment`` stand-in whose final test MSEs are ``final`` (plus seed-dependent jitter)."""
    def experiment(seed, **_):
        jitter = 1 + 0.01 * (seed % 7)
        return {"curves": {n: [(0, 1.0), (1, v * jitter)] for n, v in final.items()},
                "final": {n: v * jitter for n, v in final.items()}, "sizes": dict.fromkeys(final, 10)}
    return experiment


def test_dataset_claims_follow_the_measured_order(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "dataset_experiment", _planted({"full": 0.020, "compressed": 0.021, "random": 0.2}))
    result = bench.run_dataset("quick", "cpu", 0, tmp_path)
    assert _claim(result, "compressed_matches_full").holds and _claim(result, "random_subset_worse").holds
    # a compressed set worse than the random subset (method and baseline swapped) fails both claims
    monkeypatch.setattr(bench, "dataset_experiment", _planted({"full": 0.020, "compressed": 0.2, "random": 0.021}))
    result = bench.run_dataset("quick", "cpu", 0, tmp_path)
    assert not _claim(result, "compressed_matches_full").holds and not _claim(result, "random_subset_worse").holds
    assert _claim(result, "random_subset_worse").per_seed["n"] == 3


def _planted_deep(init: dict, dev: dict, final: dict, magnitude: bool):
    """A ``deep_experiment`` stand-in with the given epoch-0 mismatches, deviations and final MSEs."""
    names = ["full", "compressed", "random"] + (["magnitude"] if magnitude else [])

    def experiment(seed, **_):
        jitter = 1 + 0.01 * (seed % 7)
        return {"curves": {n: [(0, 1.0), (1, final[n] * jitter)] for n in names},
                "deviation": {n: dev[n] * jitter for n in names}, "gap": dict.fromkeys(names, 0.1),
                "initial_rmse_to_full": {n: init[n] * jitter for n in names}, "output_std": 1.0,
                "widths": {n: [10, 4, 10] for n in names}, "compression_seconds": 0.1,
                "magnitude_available": magnitude}
    return experiment


def test_deep_claims_follow_the_measured_order_and_skip_without_torch_pruning(tmp_path, monkeypatch):
    good = ({"full": 1e-9, "compressed": 0.1, "random": 10.0, "magnitude": 1.0},
            {"full": 1e-9, "compressed": 0.2, "random": 1.0, "magnitude": 1.0},
            {"full": 0.01, "compressed": 0.011, "random": 0.02, "magnitude": 0.02})
    monkeypatch.setattr(bench, "deep_experiment", _planted_deep(*good, magnitude=True))
    result = bench.run_deep("quick", "cpu", 0, tmp_path)
    assert len(result.claims) == 6 and all(c.holds for c in result.claims)
    # compressed and magnitude swapped: every comparison with torch-pruning fails
    swapped = tuple({**t, "compressed": t["magnitude"], "magnitude": t["compressed"]} for t in good)
    monkeypatch.setattr(bench, "deep_experiment", _planted_deep(*swapped, magnitude=True))
    result = bench.run_deep("quick", "cpu", 0, tmp_path)
    assert not any(_claim(result, n).holds for n in ("beats_magnitude_pruning_at_init", "magnitude_pruning_deviates",
                                                     "beats_magnitude_pruning_after_training"))
    monkeypatch.setattr(bench, "deep_experiment", _planted_deep(*good, magnitude=False))
    result = bench.run_deep("quick", "cpu", 0, tmp_path)
    assert [c.name for c in result.claims] == ["initial_prediction_match", "random_subnetwork_deviates",
                                               "compressed_final_close_to_full"]
    assert any("torch_pruning is not importable" in row.get("note", "") for row in result.rows)
    assert result.metrics["magnitude_available"] == 0.0
