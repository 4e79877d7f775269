"""The split-conformal predictor: quantile, coverage, monotonicity, degeneracy, state, errors."""
import json
import math

import numpy as np
import pytest
from iclr26_energycp import EnergyConformalClassifier, conformal_quantile, energy


def untuned(*args, **kwargs):
    """The estimator with the fixed weight T_energy = beta = 1 (no tuning in fit) unless given."""
    return EnergyConformalClassifier(*args, **{"T_energy": 1.0, "beta": 1.0, **kwargs})


def test_quantile_index_n9_largest_and_n8_infinite():
    s = np.arange(9.0)
    assert conformal_quantile(s, 0.1) == 8.0
    with pytest.warns(UserWarning, match="inf"):
        assert math.isinf(conformal_quantile(s[:8], 0.1))


def test_infinite_quantile_gives_full_sets():
    rng = np.random.default_rng(0)
    z, y = rng.normal(size=(8, 4)), rng.integers(0, 4, 8)
    with pytest.warns(UserWarning, match="inf"):
        model = untuned("aps", alpha=0.1, random_state=0).fit(z, y)
    assert model.predict_set(z).all()


def softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def draw(rng, n, K=10):
    """Exchangeable (logits, labels): Dirichlet probabilities, label drawn from them, random logit offsets."""
    p = rng.dirichlet(np.full(K, 0.3), size=n)
    y = (rng.random(n)[:, None] > np.cumsum(p, 1)).sum(1).clip(0, K - 1)
    z = np.log(np.maximum(p, 1e-12)) * rng.uniform(0.5, 2.0, (n, 1)) + rng.normal(0, 2, (n, 1))
    return z, y


def test_coverage_over_200_exchangeable_draws():
    alpha, n = 0.1, 1000
    rng = np.random.default_rng(2024)
    covs = {(s, e): [] for s in ("aps", "raps", "saps") for e in (False, True)}
    for _ in range(200):
        zc, yc = draw(rng, n)
        zt, yt = draw(rng, n)
        seed = int(rng.integers(2**31))
        for score, energy_on in covs:
            m = untuned(score, energy=energy_on, alpha=alpha, random_state=seed).fit(zc, yc)
            covs[(score, energy_on)].append(m.predict_set(zt)[np.arange(n), yt].mean())
    for key, c in covs.items():
        assert 1 - alpha - 0.004 <= np.mean(c) <= 1 - alpha + 1 / (n + 1) + 0.004, (key, np.mean(c))


def test_lower_energy_sample_gets_no_larger_set():
    rng = np.random.default_rng(3)
    zc, yc = draw(rng, 500)
    base = rng.normal(size=(50, 10))
    for score in ("aps", "raps", "saps"):
        m = untuned(score, alpha=0.1, randomized=False).fit(zc, yc)
        low_energy = m.predict_set(base + 3.0).sum(1)  # z + 3 has lower energy, same softmax
        high_energy = m.predict_set(base).sum(1)
        assert (low_energy <= high_energy).all()


def test_tiny_beta_reproduces_base_sets():
    rng = np.random.default_rng(4)
    zc, yc = draw(rng, 500)
    zt, _ = draw(rng, 300)
    for score in ("lac", "aps", "raps", "saps"):
        sets = [untuned(score, energy=e, beta=1e-9, randomized=False).fit(zc, yc).predict_set(zt)
                for e in (False, True)]
        assert (sets[0] == sets[1]).all(1).mean() >= 0.99


def test_scaling_the_weight_leaves_lac_sets_unchanged():
    rng = np.random.default_rng(5)
    zc, yc = draw(rng, 400)
    zt, _ = draw(rng, 200)
    model = untuned("lac", T_energy=0.5, beta=2.0).fit(zc, yc)
    wc, wt = energy.energy_weight(zc, 0.5, 2.0), energy.energy_weight(zt, 0.5, 2.0)
    pc, pt = softmax(zc), softmax(zt)
    for k in (1.0, 7.0):  # k = 1 checks the reference itself against the classifier
        q = conformal_quantile(-pc[np.arange(len(yc)), yc] / (k * wc), 0.1)
        assert np.array_equal(model.predict_set(zt), -pt / (k * wt)[:, None] <= q)


def test_repeated_calls_with_same_seed_are_identical_and_ties_stable():
    z = np.zeros((30, 5))
    z[:, :2] = 1.0  # ties everywhere
    y = np.arange(30) % 5
    a = untuned("raps", kreg=1, random_state=7).fit(z, y).predict_set(z)
    b = untuned("raps", kreg=1, random_state=7).fit(z, y).predict_set(z)
    assert np.array_equal(a, b)


def test_allow_empty_false_adds_top_label_only_to_empty_sets():
    rng = np.random.default_rng(8)
    zc, yc = draw(rng, 300)
    zt, yt = draw(rng, 300)
    a = untuned("saps", alpha=0.3, random_state=1).fit(zc, yc).predict_set(zt)
    b = untuned("saps", alpha=0.3, random_state=1, allow_empty=False).fit(zc, yc).predict_set(zt)
    assert (~a.any(1)).any(), "the test needs some empty sets"
    assert b.any(1).all()
    assert (b[a.any(1)] == a[a.any(1)]).all()
    empty = ~a.any(1)
    assert b[empty, zt[empty].argmax(1)].all() and (b[empty].sum(1) == 1).all()


def test_class_conditional_thresholds_cover_each_class():
    rng = np.random.default_rng(9)
    zc, yc = draw(rng, 3000, K=4)
    zt, yt = draw(rng, 3000, K=4)
    m = untuned("aps", alpha=0.1, class_conditional=True, random_state=0).fit(zc, yc)
    assert m.q_hat_.shape == (4,)
    sets = m.predict_set(zt)
    for k in range(4):
        assert sets[yt == k, k].mean() >= 0.85


def test_json_state_round_trip_gives_identical_sets():
    rng = np.random.default_rng(10)
    zc, yc = draw(rng, 200)
    zt, _ = draw(rng, 50)
    m = untuned("raps", alpha=0.1, random_state=3).fit(zc, yc)
    clone = EnergyConformalClassifier.from_dict(json.loads(json.dumps(m.to_dict())))
    assert np.array_equal(m.predict_set(zt), clone.predict_set(zt))
    assert clone.q_hat_ == m.q_hat_


def test_probabilities_warn_and_probs_input_refuses_energy():
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(4), size=50)
    y = rng.integers(0, 4, 50)
    with pytest.warns(UserWarning, match="probabilities"):
        untuned("aps").fit(p, y)
    with pytest.raises(ValueError, match="input='probs'"):
        untuned("aps", input="probs").fit(p, y)
    sets = untuned("aps", input="probs", energy=False, random_state=0).fit(p, y).predict_set(p)
    assert sets.shape == (50, 4)


def test_evaluate_returns_every_metric():
    rng = np.random.default_rng(12)
    zc, yc = draw(rng, 300)
    zt, yt = draw(rng, 300)
    out = untuned("aps", random_state=0).fit(zc, yc).evaluate(zt, yt)
    assert set(out) == {"coverage", "size", "sscv", "covgap", "vio_classes", "empty_rate", "diff_violation"}


@pytest.mark.parametrize("kwargs, match", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": 1.0}, "alpha"), ({"T_energy": 0.0}, "T_energy"),
    ({"beta": -1.0}, "beta"), ({"T_cal": 0.0}, "T_cal"), ({"kreg": -1}, "kreg"), ({"kreg": 2.5}, "kreg"),
    ({"penalty": -1.0}, "penalty"), ({"saps_weight": 0.0}, "saps_weight"), ({"score": "thr"}, "score"),
    ({"energy": "softmax"}, "energy"),
])
def test_bad_parameters_raise(kwargs, match):
    z, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 3
    with pytest.raises(ValueError, match=match):
        untuned(**kwargs).fit(z, y)


def test_predict_before_fit_and_k_mismatch_raise():
    z, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 3
    with pytest.raises(ValueError, match="fit"):
        untuned().predict_set(z)
    m = untuned().fit(z, y)
    with pytest.raises(ValueError, match="K = 3"):
        m.predict_set(np.zeros((2, 4)))


@pytest.mark.parametrize("score", ["lac", "aps", "raps", "saps"])
def test_predict_set_keeps_at_most_three_score_sized_arrays(score, monkeypatch):
    """Peak new memory of predict_set <= 3 float64 (n, K) arrays (measured 2.0-2.4: the probabilities, the
    scores and row-block temporaries); the row blocks give exactly the one-block sets."""
    import tracemalloc

    from iclr26_energycp import scores

    rng = np.random.default_rng(0)
    z, y = rng.normal(size=(4000, 500)) * 3, rng.integers(0, 500, 4000)
    model = untuned(score, random_state=0).fit(z, y)
    tracemalloc.start()
    try:
        sets = model.predict_set(z)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 3 * z.nbytes, peak / z.nbytes
    monkeypatch.setattr(scores, "_chunk_rows", lambda n, K: 10**9)
    assert np.array_equal(sets, untuned(score, random_state=0).fit(z, y).predict_set(z))
