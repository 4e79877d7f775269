import warnings

import numpy as np
import pytest
from iclr26_perm_compress import MomentCompressor, moments, sigmoid_benchmark, symmetric_value, tchakaloff_bound
from iclr26_perm_compress.compressor import STANDARDISED_VARIANT
from scipy.special import expit

VARIANTS = {"official": {}, "standardised": STANDARDISED_VARIANT}


def _poly(W):
    return (W @ [0.3, -1.2, 0.7] + 0.4) ** 4 + W[:, 0] * W[:, 1] ** 2 - 2 * W[:, 2]


@pytest.mark.parametrize("strategy", ["hybrid", "greedy"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_polynomials_of_degree_k_are_exact(strategy, variant):
    rng = np.random.default_rng(0)
    W = rng.uniform(-1, 1, (1500, 3))
    mc = MomentCompressor(k=4, target_size=60, strategy=strategy, random_state=0, **VARIANTS[variant]).fit(W)
    assert mc.support_.size <= 60 and (mc.weights_ > 0).all()
    assert mc.weights_.sum() == pytest.approx(1500, rel=1e-12)
    exact = symmetric_value(W, None, _poly)
    assert symmetric_value(mc.points_, mc.weights_, _poly) == pytest.approx(exact, rel=1e-9)


def test_standardised_compression_preserves_raw_moments():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(2000, 2)) * [30.0, 0.01] + [500.0, -3.0]  # badly scaled, far from the origin
    mc = MomentCompressor(k=3, target_size=40, standardize=True, random_state=1).fit(W)
    # raw moments compared after centring, where float64 can resolve them
    centred = W - W.mean(axis=0)
    p0 = moments(centred / centred.std(axis=0), None, 3)
    p1 = moments(centred[mc.support_] / centred.std(axis=0), mc.weights_, 3)
    np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-9 * np.abs(p0).max())
    raw0, raw1 = moments(W, None, 3), moments(mc.points_, mc.weights_, 3)
    np.testing.assert_allclose(raw1, raw0, rtol=1e-9)


def test_degree_k_plus_one_error_scales_like_r_to_the_k_plus_one():
    rng = np.random.default_rng(2)
    z = rng.uniform(-1, 1, (300, 2))
    centre = np.array([0.2, -0.1])
    g = lambda W: np.exp(W[:, 0] + 0.5 * W[:, 1])  # noqa: E731
    k, errors, radii = 2, [], [0.1, 0.05, 0.025]
    for r in radii:
        W = centre + r * z
        mc = MomentCompressor(k=k, target_size=tchakaloff_bound(2, k), standardize=False, random_state=0).fit(W)
        errors.append(abs(symmetric_value(mc.points_, mc.weights_, g) - symmetric_value(W, None, g)))
    slope = np.polyfit(np.log(radii), np.log(errors), 1)[0]
    assert abs(slope - (k + 1)) <= 0.3
    assert errors[-1] > 0


def test_one_dimensional_rule_matches_gauss_legendre_moments():
    n, d = 3, 5000
    k = 2 * n - 1
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (d, 1))
    mc = MomentCompressor(k=k, random_state=0).fit(w)
    assert mc.support_.size <= k + 1
    for j in range(k + 1):
        assert mc.weights_ @ mc.points_[:, 0] ** j == pytest.approx(np.sum(w[:, 0] ** j), rel=1e-9, abs=1e-9 * d)
    nodes, gw = np.polynomial.legendre.leggauss(n)
    for j in range(1, k + 1):
        empirical = mc.weights_ @ mc.points_[:, 0] ** j / d
        assert abs(empirical - (gw / 2) @ nodes**j) <= 0.05


def test_sigmoid_benchmark_against_direct_formula():
    rng = np.random.default_rng(4)
    W, X, c = rng.uniform(-1, 1, (30, 2)), rng.normal(size=(10, 2)), rng.uniform(0, 1, 30)
    direct = sum(c[i] * np.mean([expit(W[i] @ X[a]) for a in range(10)]) for i in range(30)) / c.sum()
    assert sigmoid_benchmark(W, c, X) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_compression_beats_random_subsets_on_sigmoid_benchmark(variant):
    rng = np.random.default_rng(5)
    W, X = rng.uniform(-1, 1, (3000, 2)), rng.normal(size=(10, 2))
    mc = MomentCompressor(k=2, ratio=0.1, random_state=0, **VARIANTS[variant]).fit(W)
    exact = sigmoid_benchmark(W, None, X)
    random_error = np.mean([abs(sigmoid_benchmark(W[rng.choice(3000, mc.support_.size, replace=False)], None, X)
                                - exact) for _ in range(50)])
    assert abs(sigmoid_benchmark(mc.points_, mc.weights_, X) - exact) < 1e-3 * random_error


def test_default_is_the_official_construction():
    """Raw coordinates, k-means clusters of about N + 1 points, pure greedy from d' + 2000 alive points on."""
    rng = np.random.default_rng(7)
    W = rng.uniform(-1, 1, (2400, 2)) * [100.0, 0.01]  # standardising would change the clusters, raw does not
    greedy = MomentCompressor(k=2, target_size=400, random_state=0).fit(W)
    assert greedy.timings_["kmeans"] == 0 and greedy.n_iter_ == 2000  # 2400 <= 400 + 2000: one point per step
    hybrid = MomentCompressor(k=2, target_size=300, random_state=0).fit(W)
    assert hybrid.timings_["kmeans"] > 0 and hybrid.support_.size <= 300
    np.testing.assert_allclose(moments(hybrid.points_, hybrid.weights_, 2), moments(W, None, 2), rtol=1e-9)
    with pytest.raises(ValueError, match="greedy_threshold"):
        MomentCompressor(k=2, greedy_threshold=-1).fit(W)


@pytest.mark.parametrize("selection", ["sampled_diameter", "radius"])
def test_greedy_step_takes_the_tightest_cluster(selection):
    rng = np.random.default_rng(8)
    tight = 1e-3 * rng.uniform(-1, 1, (40, 2)) + 0.5  # any drawn seed in here has a tight cluster of N + 1 = 7
    W = np.vstack([tight, rng.uniform(-1, 1, (40, 2))])
    for state in range(5):
        mc = MomentCompressor(k=2, target_size=W.shape[0] - 1, strategy="greedy", greedy_selection=selection,
                              random_state=state).fit(W)
        removed = np.setdiff1d(np.arange(W.shape[0]), mc.support_)
        assert removed.size == 1 and removed[0] < 40


def test_bad_inputs_and_identity():
    W = np.random.default_rng(6).uniform(-1, 1, (100, 2))
    with pytest.raises(ValueError, match="Tchakaloff bound N_\\(m,k\\) = 10"):
        MomentCompressor(k=3, target_size=9).fit(W)
    with pytest.raises(ValueError, match="k:"):
        MomentCompressor(k=0).fit(W)
    with pytest.raises(ValueError, match="NaN"):
        MomentCompressor(k=2).fit(np.vstack([W, [np.inf, 0]]))
    with pytest.raises(ValueError, match="sample_weight"):
        MomentCompressor(k=2).fit(W, sample_weight=-np.ones(100))
    with pytest.raises(ValueError, match="at most one"):
        MomentCompressor(k=2, target_size=20, ratio=0.5).fit(W)
    with pytest.raises(ValueError, match="greedy_selection"):
        MomentCompressor(k=2, greedy_selection="nearest").fit(W)
    with pytest.raises(ValueError, match="strategy"):
        MomentCompressor(k=2, strategy="best").fit(W)
    with pytest.warns(UserWarning, match="identity"):
        mc = MomentCompressor(k=2, target_size=100).fit(W)
    np.testing.assert_array_equal(mc.support_, np.arange(100))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MomentCompressor(k=2, target_size=50, random_state=0).fit(W)
    with pytest.raises(ValueError, match="fit"):
        MomentCompressor().transform()
