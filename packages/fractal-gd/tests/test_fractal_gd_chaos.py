"""Finite-time Lyapunov exponents and the periodic-orbit entropy estimate against closed forms."""
import numpy as np
import pytest
from iclr26_fractal_gd.chaos import ftle_map, periodic_points, topological_entropy


def test_ftle_at_the_fixed_points_is_the_log_of_the_top_multiplier():
    y, eta, lam = 0.5, 1.0, 0.2
    m = np.sqrt(y - lam)
    ftle, tau = ftle_map(np.array([0.0, m]), np.array([0.0, m]), y, eta, lam, steps=15)
    # origin: Df = [[1 - eta lam, eta y], [eta y, 1 - eta lam]], top eigenvalue 1.3; minimiser: I - eta H, top 0.6
    np.testing.assert_allclose(ftle, [np.log(1 - eta * lam + eta * y), np.log(1 - eta * 2 * lam)], atol=1e-12)
    assert tau.tolist() == [15, 15]


def test_ftle_stops_at_escape():
    ftle, tau = ftle_map(np.array([3.9]), np.array([3.8]), 0.5, 1.0, 0.2, steps=20)
    assert 1 <= tau[0] < 20 and ftle[0] > 0


def test_periodic_points_grow_like_three_to_the_n():
    counts = [periodic_points(0.5, 1.0, 0.2, n, seeds_per_side=200).shape[0] for n in (1, 2, 3)]
    assert counts == [1, 5, 25]  # 3^n fixed points of f^n minus the 2 attracting minimisers (n = 1, 3), minus 4 (n = 2)
    h, per = topological_entropy(0.5, 1.0, 0.2, (1, 2, 3), seeds_per_side=200)
    assert per == {1: 1, 2: 5, 3: 25} and h == pytest.approx(np.log(25) / 3)
    with pytest.raises(ValueError, match="period"):
        periodic_points(0.5, 1.0, 0.2, 0)
