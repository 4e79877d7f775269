"""Aligned matrix factorisation decouples into scalar modes."""
import numpy as np
import pytest
from iclr26_fractal_gd import aligned_init, critical_step_size_aligned, gd_matrix, gd_scalar, mode_amplitudes
from iclr26_fractal_gd.matrix import random_orthogonal


def test_aligned_gd_equals_per_mode_scalar_gd():
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((5, 4))
    alpha, beta = rng.uniform(-1.5, 1.5, (2, 3))
    R = random_orthogonal(3, rng)
    U0, V0 = aligned_init(Y, alpha, beta, rotation=R)
    eta = 0.9 * critical_step_size_aligned(Y, alpha, beta)
    res = gd_matrix(U0, V0, Y, eta, steps=100)
    a, b = mode_amplitudes(res.u, res.v, Y, R)
    sigma = np.linalg.svd(Y, compute_uv=False)
    for i in range(3):
        s = gd_scalar(alpha[i], beta[i], sigma[i], eta, steps=100)
        assert abs(a[i] - s.u) < 1e-10 and abs(b[i] - s.v) < 1e-10


def test_matrix_threshold_classifies_outcomes():
    rng = np.random.default_rng(4)
    Y = rng.standard_normal((4, 4))
    alpha, beta = rng.uniform(-2, 2, (2, 12, 4))
    U0, V0 = aligned_init(Y, alpha, beta, rng=rng)
    star = critical_step_size_aligned(Y, alpha, beta)
    assert np.all(star <= 1 / np.linalg.svd(Y, compute_uv=False)[0] + 1e-15)
    assert gd_matrix(U0, V0, Y, 0.95 * star, steps=20000, early_stop=True).converged.all()
    assert not gd_matrix(U0, V0, Y, 1.05 * star, steps=20000, early_stop=True).converged.any()


def test_matrix_bad_inputs():
    Y = np.eye(3)
    with pytest.raises(ValueError, match="rank"):
        aligned_init(Y, np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="rotation"):
        aligned_init(Y, np.ones(2), np.ones(2), rotation=np.ones((2, 2)))
    with pytest.raises(ValueError, match="U0, V0"):
        gd_matrix(np.ones((3, 2)), np.ones((4, 2)), Y, 0.1)
