"""Scores and the energy weight: closed forms, brute force, consistency, invariances, limits."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_energycp import energy, scores

Z = np.array([[2.0, 1.0, 0.0]])
P = np.exp(Z) / np.exp(Z).sum()


def softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_closed_forms_on_three_class_toy():
    assert energy.negative_energy(Z)[0] == pytest.approx(2.4076, abs=1e-4)
    assert energy.energy_weight(Z, 1.0, 1.0)[0] == pytest.approx(2.4938, abs=1e-4)
    assert energy.free_energy(Z, T=1.0)[0] == pytest.approx(-2.4076, abs=1e-4)
    np.testing.assert_allclose(P[0], [0.6652, 0.2447, 0.0900], atol=1e-4)
    assert scores.aps(P, [1], randomized=False)[0] == pytest.approx(0.9100, abs=1e-4)
    assert scores.raps(P, [2], penalty=0.2, kreg=1, randomized=False)[0] == pytest.approx(1.4)
    assert scores.saps(P, [2], weight=0.2, randomized=False)[0] == pytest.approx(1.0652, abs=1e-4)
    assert scores.lac(P, [0])[0] == pytest.approx(1 - 0.6652, abs=1e-4)


def brute(name, p, u, penalty=0.2, kreg=2, weight=0.2):
    """Loop reference: sort each row by (-p, class), accumulate."""
    n, K = p.shape
    out = np.zeros((n, K))
    for i in range(n):
        order = sorted(range(K), key=lambda k: (-p[i, k], k))
        total = 0.0
        for r, k in enumerate(order):
            total += p[i, k]
            if name == "aps":
                out[i, k] = total - u[i, k] * p[i, k]
            elif name == "raps":
                out[i, k] = total - u[i, k] * p[i, k] + penalty * max(0, r + 1 - kreg)
            else:
                top = p[i, order[0]]
                out[i, k] = (1 - u[i, k]) * top if r == 0 else top + weight * (r - u[i, k])
    return out


@pytest.mark.parametrize("name", ["aps", "raps", "saps"])
def test_matches_loop_reference_with_ties(name):
    rng = np.random.default_rng(1)
    z = rng.normal(size=(40, 7))
    z[:10, 2:5] = 0.5  # exact ties in the probabilities
    p, u = softmax(z), rng.random((40, 7))
    got = getattr(scores, name)(p, u=u)
    np.testing.assert_allclose(got, brute(name, p, u), atol=1e-12)


@pytest.mark.parametrize("base", ["lac", "aps", "raps", "saps"])
@pytest.mark.parametrize("weight", ["energy", "entropy", "none"])
def test_one_label_equals_gathered_all_label_exactly(base, weight):
    rng = np.random.default_rng(2)
    z = rng.normal(size=(60, 5)) * 3
    z[:8, :3] = 1.0
    y = rng.integers(0, 5, 60)
    u = rng.random((60, 5))
    kw = {} if base == "lac" else {"u": u}
    full = scores.energy_score(base, z, None, T_energy=0.7, beta=2.0, weight=weight, **kw)
    kw1 = {} if base == "lac" else {"u": u[np.arange(60), y]}
    one = scores.energy_score(base, z, y, T_energy=0.7, beta=2.0, weight=weight, **kw1)
    assert np.array_equal(one, full[np.arange(60), y])


def test_energy_lac_sign_follows_calibration_form():
    z = np.array([[3.0, 0.0, -1.0], [0.1, 0.0, -0.1]])
    w = energy.energy_weight(z)
    got = scores.energy_score("lac", z)
    np.testing.assert_allclose(got, -softmax(z) / w[:, None], rtol=1e-12, atol=1e-15)


def test_energy_aps_is_aps_times_weight():
    rng = np.random.default_rng(3)
    z, u = rng.normal(size=(20, 4)), rng.random((20, 4))
    got = scores.energy_score("aps", z, T_energy=2.0, beta=0.5, u=u)
    want = scores.aps(softmax(z), u=u) * energy.energy_weight(z, 2.0, 0.5)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_shift_invariance_of_base_and_shift_of_g():
    rng = np.random.default_rng(4)
    z, u, c, T = rng.normal(size=(10, 6)), rng.random((10, 6)), 3.7, 0.5
    for name in ("aps", "raps", "saps"):
        a = scores.energy_score(name, z, weight="none", u=u)
        b = scores.energy_score(name, z + c, weight="none", u=u)
        np.testing.assert_allclose(a, b, atol=1e-12)
    g0, g1 = energy.negative_energy(z, T), energy.negative_energy(z + c, T)
    np.testing.assert_allclose(g1 - g0, c / T, rtol=1e-12)


def test_permuting_classes_permutes_scores():
    rng = np.random.default_rng(5)
    z, u = rng.normal(size=(15, 6)), rng.random((15, 6))
    perm = rng.permutation(6)
    a = scores.energy_score("raps", z, u=u, kreg=1)
    b = scores.energy_score("raps", z[:, perm], u=u[:, perm], kreg=1)
    np.testing.assert_allclose(b, a[:, perm], atol=1e-12)


def test_limits_of_beta_and_temperature():
    rng = np.random.default_rng(6)
    z = rng.normal(size=(30, 5)) * 2
    g = energy.negative_energy(z)
    np.testing.assert_allclose(energy.energy_weight(z, 1.0, 1e4), np.maximum(g, 0.0), atol=1e-3)
    np.testing.assert_allclose(energy.negative_energy(z, 1e-3) * 1e-3, z.max(1), atol=1e-2)
    w = energy.energy_weight(z, 1.0, 1e-9)
    np.testing.assert_allclose(w, np.log(2) / 1e-9 + g / 2, rtol=1e-9)


def test_large_logits_do_not_overflow():
    z = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4 + 1, -1e4 + 2]])
    w = energy.energy_weight(z)
    assert np.isfinite(w).all() and w[0] == pytest.approx(1e4)
    assert np.isfinite(scores.energy_score("saps", z, randomized=False)).all()


def test_float32_input_matches_float64():
    rng = np.random.default_rng(7)
    z = rng.normal(size=(20, 5)).astype(np.float32)
    a = scores.energy_score("aps", z, rng=0)
    b = scores.energy_score("aps", z.astype(np.float64), rng=0)
    assert a.dtype == np.float64 and np.array_equal(a, b)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), K=st.integers(2, 8), seed=st.integers(0, 2**31 - 1),
       base=st.sampled_from(["aps", "raps", "saps"]))
def test_property_scores_bounded_and_consistent(n, K, seed, base):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K)) * rng.uniform(0.1, 10)
    u, y = rng.random((n, K)), rng.integers(0, K, n)
    full = scores.energy_score(base, z, u=u)
    assert np.array_equal(scores.energy_score(base, z, y, u=u[np.arange(n), y]), full[np.arange(n), y])
    assert (full >= 0).all()
    if base == "aps":  # APS without randomisation is the cumulative mass, at most 1 before weighting
        assert (scores.aps(softmax(z), randomized=False) <= 1 + 1e-12).all()


@pytest.mark.parametrize("call, match", [
    (lambda: scores.energy_score("aps", np.zeros(3)), "2-D"),
    (lambda: scores.energy_score("aps", np.zeros((3, 1))), "K >= 2"),
    (lambda: scores.energy_score("aps", np.array([[0.0, np.nan]])), "finite"),
    (lambda: scores.energy_score("aps", np.array([[0.0, np.inf]])), "finite"),
    (lambda: scores.energy_score("aps", Z, [3]), r"\[0, 3\)"),
    (lambda: scores.energy_score("aps", Z, [-1]), r"\[0, 3\)"),
    (lambda: scores.energy_score("aps", Z, T_energy=0), "T_energy"),
    (lambda: scores.energy_score("aps", Z, beta=-1), "beta"),
    (lambda: scores.energy_score("aps", Z, T_cal=0), "T_cal"),
    (lambda: scores.raps(P, kreg=-1), "kreg"),
    (lambda: scores.raps(P, kreg=1.5), "kreg"),
    (lambda: scores.raps(P, penalty=-0.1), "penalty"),
    (lambda: scores.saps(P, weight=0), "weight"),
    (lambda: scores.aps(np.array([[0.2, 0.2]])), "probabilities"),
    (lambda: scores.energy_score("top", Z), "base"),
    (lambda: scores.energy_score("aps", Z, weight="softmax"), "weight"),
])
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_non_integer_labels_raise_value_error():
    with pytest.raises(ValueError, match="integer class labels"):
        scores.energy_score("aps", Z, np.array([0.5]))
