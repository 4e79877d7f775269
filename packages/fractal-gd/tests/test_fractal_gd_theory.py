"""Closed forms of the scalar / scalar-vector theory against independent computations."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_fractal_gd import (
    critical_step_size,
    gd_scalar,
    gd_vector,
    hessian_eigs,
    in_convergence_region,
    minimizers,
    quotient_map,
)


def test_reduction_identity_vectors():
    rng = np.random.default_rng(1)
    u, v = rng.standard_normal((2, 5))
    y, eta = 1.3, 0.21
    r = u @ v - y
    u1, v1 = u - eta * r * v, v - eta * r * u  # one GD step written out independently
    a1, b1 = quotient_map(np.sum((u + v) ** 2), np.sum((u - v) ** 2), y, eta)
    np.testing.assert_allclose([a1, b1], [np.sum((u1 + v1) ** 2), np.sum((u1 - v1) ** 2)], rtol=1e-12)
    imb0, imb1 = u @ u - v @ v, u1 @ u1 - v1 @ v1
    np.testing.assert_allclose(imb1, (1 - eta**2 * r**2) * imb0, rtol=1e-12)
    res = gd_vector(u, v, y, eta, steps=1)
    np.testing.assert_allclose(res.u, u1, rtol=1e-14)


def test_quotient_map_regularised_matches_gd():
    u, v, y, eta, lam = 0.7, -1.9, 0.5, 0.9, 0.2
    res = gd_scalar(u, v, y, eta, lam, steps=1)
    a, b = quotient_map((u + v) ** 2, (u - v) ** 2, y, eta, lam)
    np.testing.assert_allclose([a, b], [(res.u + res.v) ** 2, (res.u - res.v) ** 2], rtol=1e-12)


def test_closed_form_is_smaller_root():
    rng = np.random.default_rng(2)
    u, v = rng.uniform(-4, 4, (2, 10_000))
    y = 1.0
    star = critical_step_size(u, v, y)
    n2, q = u * u + v * v, u * v
    checked = 0
    for i in range(u.size):
        roots = np.roots([y * (q[i] - y), -n2[i], 4.0])
        pos = roots[(np.abs(roots.imag) < 1e-12) & (roots.real > 0)].real
        root = pos.min()
        if root < 1 / y:
            assert star[i] == pytest.approx(root, rel=1e-10)
            checked += 1
        else:
            assert star[i] == pytest.approx(1 / y, rel=1e-15)
    assert checked > 5000


@settings(max_examples=30, deadline=None)
@given(st.floats(-4, 4), st.floats(-4, 4), st.floats(0.2, 3), st.floats(0.05, 1.5))
def test_region_is_eta_below_eta_star(u, v, y, eta):
    star = critical_step_size(u, v, y)
    assert 0 < star <= 1 / y
    if abs(eta - star) > 1e-9:
        assert in_convergence_region(u, v, y, eta) == (eta < star)


def test_negative_target_uses_sign_flip():
    assert critical_step_size(1.0, 0.3, -2.0) == critical_step_size(1.0, -0.3, 2.0)
    assert in_convergence_region(1.0, 0.3, -2.0, 0.1) == in_convergence_region(1.0, -0.3, 2.0, 0.1)


def test_hessian_at_minimisers_and_finite_differences():
    y, lam = 0.5, 0.2
    for u, v in minimizers(y, lam):
        np.testing.assert_allclose(hessian_eigs(u, v, y, lam), sorted([2 * (y - lam), 2 * lam]), atol=1e-12)

    def loss(w):
        return 0.5 * (w[0] * w[1] - y) ** 2 + 0.5 * lam * (w @ w)

    w, h = np.array([0.8, -1.3]), 1e-4
    fd = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            fd[i, j] = (loss(w + ei + ej) - loss(w + ei - ej) - loss(w - ei + ej) + loss(w - ei - ej)) / (4 * h * h)
    np.testing.assert_allclose(hessian_eigs(*w, y, lam), np.linalg.eigvalsh(fd), atol=1e-6)


def test_local_stability_threshold():
    y, lam = 0.5, 0.1  # y - lam = 0.4 > lam
    m = np.sqrt(y - lam)
    u0, v0 = m + 7e-5, m - 4e-5
    ok = gd_scalar(u0, v0, y, 0.99 / (y - lam), lam, steps=20000)
    assert ok.converged and abs(ok.u - m) < 1e-6
    bad = gd_scalar(u0, v0, y, 1.01 / (y - lam), lam, steps=3000, record=True)
    hu, hv = bad.trajectory
    assert np.max(np.hypot(hu - m, hv - m)) > 1e-2


def test_zero_target():
    with pytest.raises(ValueError, match="y"):
        critical_step_size(1.0, 2.0, 0.0)
    assert critical_step_size(1.0, 2.0, 0.0, allow_zero_target=True) == pytest.approx(4 / 5)


@pytest.mark.parametrize("call, arg", [
    (lambda: in_convergence_region(1, 1, 1, -0.1), "eta"),
    (lambda: in_convergence_region(1, 1, 1, 0.0), "eta"),
    (lambda: critical_step_size(np.nan, 1, 1), "u"),
    (lambda: critical_step_size([1, 2], [1, 2, 3], 1), "u, v"),
    (lambda: gd_scalar(1, 1, 1, 0.5, lam=-0.1), "lam"),
    (lambda: minimizers(0.5, 0.5), "lam"),
    (lambda: minimizers(0.5, 0.0), "lam"),
    (lambda: quotient_map(-1.0, 1.0, 1, 0.5), "a, b"),
    (lambda: gd_scalar(1, 1, 1, 0.5, steps=1.5), "steps"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises((ValueError, TypeError), match=arg):
        call()


def test_gd_never_produces_nan():
    res = gd_scalar(np.array([40.0, 0.3]), np.array([35.0, 1.2]), 1.0, 0.5, steps=50)
    assert res.diverged.tolist() == [True, False]
    assert np.all(np.isfinite(res.u)) and res.steps_to_diverge[0] >= 1
