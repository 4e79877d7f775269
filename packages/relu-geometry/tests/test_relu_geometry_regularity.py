"""The weight g, the weighted path norm, the BEoS bound, half-space depth and the activation report."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_relu_geometry import (
    TwoLayerReLU,
    activation_report,
    beos_bound,
    beta_radial,
    depth_beta_radial,
    halfspace_depth,
    shatter_curve,
    weight_g,
    weight_g_tilde,
    weighted_path_norm,
)
from iclr26_relu_geometry.regularity import check_radius
from scipy import special


def g_tilde_uniform(t):
    return ((1 - t) / 2) ** 3 * np.sqrt(1 + ((1 + t) / 2) ** 2)


def test_weight_g_tilde_matches_closed_form_on_uniform_interval():
    X = np.random.default_rng(0).uniform(-1, 1, (1_000_000, 1))
    t = np.array([-0.5, 0.0, 0.5])
    got = weight_g_tilde(np.ones((3, 1)), t, X)
    np.testing.assert_allclose(got, g_tilde_uniform(t), rtol=0.01)
    np.testing.assert_allclose(weight_g(np.ones((3, 1)), t, X), np.minimum(g_tilde_uniform(t), g_tilde_uniform(-t)),
                               rtol=0.01)


def test_empty_cap_gives_zero_not_nan():
    X = np.random.default_rng(0).uniform(-1, 1, (100, 2))
    assert weight_g_tilde([1.0, 0.0], 5.0, X)[0] == 0.0
    assert weight_g([1.0, 0.0], 5.0, X)[0] == 0.0


def test_path_norm_is_invariant_under_neuron_rescaling():
    X = beta_radial(200, 3, 1.0, rng=0)
    model = TwoLayerReLU(3, 16, generator=torch.Generator().manual_seed(0)).double()
    before_f, before_p = model(X.double()), weighted_path_norm(model, X)
    c = torch.linspace(0.3, 3.0, 16, dtype=torch.float64)
    with torch.no_grad():
        model.W.mul_(c[:, None])
        model.b.mul_(c)
        model.v.div_(c)
    torch.testing.assert_close(model(X.double()), before_f, rtol=1e-6, atol=1e-9)
    assert weighted_path_norm(model, X) == pytest.approx(before_p, rel=1e-6)


def test_path_norm_equals_neuronwise_sum():
    X = beta_radial(300, 2, 0.5, rng=1, as_numpy=True)
    model = TwoLayerReLU(2, 4, generator=torch.Generator().manual_seed(1))
    W, b, v = (p.detach().double().numpy() for p in (model.W, model.b, model.v))
    expected = 0.0
    for k in range(4):
        nw = np.linalg.norm(W[k])
        u, t = W[k] / nw, b[k] / nw
        expected += abs(v[k]) * nw * weight_g(u, t, X)[0]
    assert weighted_path_norm(model, X) == pytest.approx(expected, rel=1e-6)


def test_beos_bound_formula_and_radius_check():
    assert beos_bound(0.2, 0.02, 1.0) == pytest.approx(5 - 0.5 + 2 * 0.2)
    with pytest.raises(ValueError, match="eta"):
        beos_bound(0.0, 0.1, 1.0)
    with pytest.raises(ValueError, match="R"):
        check_radius(np.array([[2.0, 0.0]]), 1.0)
    with pytest.raises(ValueError, match="max ‖x‖"):
        beos_bound(0.2, 0.02, 1.0, X=np.array([[0.6, 0.9]]))
    assert beos_bound(0.2, 0.0, 1.0, X=np.array([[0.6, 0.8]])) == pytest.approx(4.5)


@pytest.mark.parametrize("s", [0.0, 0.3, 0.7])
def test_depth_closed_form_on_the_sphere_d3(s):
    X = beta_radial(200_000, 3, "sphere", rng=0, as_numpy=True)
    q = np.array([[s, 0.0, 0.0]]) @ np.linalg.qr(np.random.default_rng(5).standard_normal((3, 3)))[0]
    got = halfspace_depth(q, X, n_dirs=50, rng=0)[0]
    assert got == pytest.approx((1 - s) / 2, abs=0.01)
    assert depth_beta_radial(s, 3, "sphere") == pytest.approx((1 - s) / 2, abs=1e-12)


def test_exact_2d_depth_on_evenly_spaced_circle():
    n = 4000
    ang = 2 * np.pi * (np.arange(n) + 0.5) / n
    X = np.c_[np.cos(ang), np.sin(ang)]
    s = np.array([0.0, 0.25, 0.5, 0.9])
    got, method = halfspace_depth(np.c_[s, np.zeros(4)], X, return_method=True)
    assert method == "exact"
    np.testing.assert_allclose(got, np.arccos(s) / np.pi, atol=1e-3)


def test_random_direction_depth_is_an_upper_bound_close_to_exact():
    X = np.random.default_rng(0).standard_normal((400, 2))
    Q = np.random.default_rng(1).standard_normal((30, 2))
    exact = halfspace_depth(Q, X)
    approx, method = halfspace_depth(Q, X, n_dirs=500, rng=0, exact_if_d_le=0, return_method=True)
    assert method == "approximate (upper bound)"
    assert np.all(approx >= exact - 1e-12) and np.max(approx - exact) < 0.02


def test_population_depth_beta_radial_against_monte_carlo_and_sphere_formula():
    d, alpha, s = 5, 1.5, 0.2
    X = beta_radial(400_000, d, alpha, rng=3, as_numpy=True)
    assert depth_beta_radial(s, d, alpha) == pytest.approx(np.mean(X[:, 0] >= s), abs=3e-3)
    assert depth_beta_radial(0.4, 7, 0) == pytest.approx(0.5 * special.betainc(3, 0.5, 1 - 0.16), rel=1e-12)


def test_shatter_curve_grows_with_cap_mass():
    sphere = shatter_curve(beta_radial(2000, 5, 0, rng=0), p_grid=(0.01, 0.1), n_dirs=100, rng=0)
    deep = shatter_curve(beta_radial(2000, 5, 5.0, rng=0), p_grid=(0.01, 0.1), n_dirs=100, rng=0)
    assert sphere["median_g"][0] > 0 and deep["median_g"][0] > 0
    assert sphere["p"] == [0.01, 0.1]
    assert sphere["median_g"][0] < sphere["median_g"][1]


def test_activation_report_counts_and_sole_activators():
    model = TwoLayerReLU(1, 2)
    with torch.no_grad():
        model.W.copy_(torch.tensor([[1.0], [1.0]]))
        model.b.copy_(torch.tensor([0.5, -10.0]))
        model.v.copy_(torch.tensor([3.0, 0.1]))
    X = np.array([[0.0], [0.2], [1.0]])
    rep = activation_report(model, X, top_fraction=0.5)
    assert rep["counts"] == [1, 3]
    assert rep["n_shattering"] == 1 and rep["sole_activator_fraction"] == pytest.approx(1 / 3)
    assert rep["n_patterns"] == 2 and rep["n_dead"] == 0


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.floats(-1.5, 1.5))
def test_weight_g_is_nonnegative_and_symmetric(seed, t):
    rng = np.random.default_rng(seed)
    X, u = rng.standard_normal((60, 3)), rng.standard_normal(3)
    g = weight_g(u, t, X)[0]
    assert g >= 0 and g == pytest.approx(weight_g(-u, -t, X)[0])
