"""The corrected-vs-baseline claims are paired over derived seeds and fail for a worse method."""
import importlib.util

import numpy as np
import pytest
from iclr26_instance_noise import bench
from iclr26_shared.bench import derive_seeds

CENTRAL = {bench.LINEAR: "2a forward with oracle rho beats noisy CE",
           bench.GBM: "8 breast_cancer: forward-oracle GBM improves clean log-loss"}


@pytest.mark.parametrize("benchmark", list(CENTRAL), ids=lambda b: b.name)
def test_smoke_pairs_the_central_claim_over_two_derived_seeds(tmp_path, benchmark):
    result = benchmark.run("smoke", "cpu", 2, tmp_path)
    claim = next(c for c in result.claims if c.name == CENTRAL[benchmark])
    assert claim.per_seed["seeds"] == derive_seeds(2, 2) and claim.per_seed["n"] == 2
    diff = np.array(claim.per_seed["method"]) - np.array(claim.per_seed["baseline"])
    sign = -1 if benchmark is bench.GBM else 1  # log-loss: lower is better
    np.testing.assert_allclose(claim.per_seed["values"], sign * diff)
    if benchmark is bench.LINEAR:  # the cleanlab anchor's arm and claims exist exactly when cleanlab is installed
        anchored = importlib.util.find_spec("cleanlab") is not None
        methods = [r["method"] for r in result.rows]
        assert ("cleanlab" in methods) is anchored
        assert (bench.CLEANLAB_NOT_APPLICABLE in methods) is not anchored  # reported, not failed, when absent
        assert sum("cleanlab" in c.name for c in result.claims) == (2 if anchored else 0)


def test_cleanlab_arm_prunes_and_refits_the_logistic_regression():
    pytest.importorskip("cleanlab")
    from iclr26_instance_noise import data

    b = data.linear_instance_noise(n=1000, seed=8)
    accuracy, cosine = bench._cleanlab_arm(b, 1e-3, 0)
    assert 0.8 < accuracy <= 1.0 and cosine > 0.9


def _planted_records(name: str, fwd_loss: list[float], noisy_loss: list[float], seeds: list[int]) -> list[dict]:
    """Rows of the shape ``_gbm_dataset`` returns for dataset ``name``, with the given clean log-losses per seed."""
    out = []
    for s, f, n in zip(seeds, fwd_loss, noisy_loss):
        for arm in bench.GBM_ARMS:
            loss = f if arm.startswith("forward") else n
            out.append({"dataset": name, "learner": "gbm", "arm": arm, "seed": s, "accuracy": 0.9,
                        "log_loss": loss, "rounds": 10})
        out.append({"dataset": name, "learner": "rho", "arm": "rho_hat", "seed": s, "rho_mae": 0.1,
                    "noise_rate": 0.2})
    return out


def test_gbm_log_loss_claim_fails_when_the_corrected_booster_is_worse(tmp_path, monkeypatch):
    seeds = derive_seeds(0, bench.GBM_SCALES["quick"].n_seeds)
    better, worse = [0.30, 0.32, 0.29, 0.31, 0.30][:len(seeds)], [0.40, 0.41, 0.42, 0.40, 0.43][:len(seeds)]
    name = CENTRAL[bench.GBM]
    for fwd, noisy, holds in ((better, worse, True), (worse, better, False)):
        monkeypatch.setattr(bench, "_gbm_dataset",
                            lambda name, *a, fwd=fwd, noisy=noisy: _planted_records(name, fwd, noisy, seeds))
        claim = next(c for c in bench.run_gbm("quick", "cpu", 0, tmp_path).claims if c.name == name)
        assert claim.holds is holds and claim.per_seed["n"] == len(seeds)
