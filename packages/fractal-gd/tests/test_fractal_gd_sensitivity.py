"""Minimiser selection probes and the other fractal measures."""
import numpy as np
import pytest
from iclr26_fractal_gd import (
    bias_report,
    refinement_flip_fraction,
    segment_outcomes,
    uncertainty_exponent,
    zoom_sequence,
)


def test_segment_near_critical_is_sensitive_but_convergent():
    d = np.array([1.0, 0.3]) / np.hypot(1.0, 0.3)
    c = np.array([1.847, -0.409])  # eta*(c) is just above 0.8
    near = segment_outcomes(c - 5e-4 * d, c + 5e-4 * d, 200, 1.0, 0.8, steps=6000)
    far = segment_outcomes(c - 5e-4 * d, c + 5e-4 * d, 200, 1.0, 0.8 / 3, steps=6000)
    assert near["converged"].all() and far["converged"].all()
    assert near["final_imbalance"].std() > 10 * far["final_imbalance"].std()


def test_bias_report_inside_ellipse_converges_and_is_not_balanced():
    rep = bias_report(1.0, 0.8, n=300, rng=np.random.default_rng(5), steps=3000)
    assert rep["converged_fraction"] == 1.0
    assert rep["imbalance_std"] > 0.05 and rep["norm_excess_mean"] > 0
    with pytest.raises(ValueError, match="eta"):
        bias_report(1.0, 1.2)


def test_uncertainty_exponent_of_the_fractal_boundary():
    alpha, dim = uncertainty_exponent(1.0, 0.5, 0.2, (1e-2, 3e-3, 1e-3), 3000, np.random.default_rng(0), steps=200)
    assert 0 < alpha < 1 and dim == pytest.approx(2 - alpha)
    with pytest.raises(ValueError, match="eps_list"):
        uncertainty_exponent(1.0, 0.5, 0.2, (1e-2,), 10, np.random.default_rng(0))


def test_zoom_windows_and_refinement_errors():
    maps = zoom_sequence((1.99, -0.42), (1.0, 0.1), resolution=32, eta=1.0, y=0.5, lam=0.2, steps=200)
    assert [m.extent[1] - m.extent[0] for m in maps] == pytest.approx([1.0, 0.1])
    with pytest.raises(ValueError, match="resolutions"):
        refinement_flip_fraction({"eta": 1.0, "y": 0.5, "lam": 0.2}, [64, 96])
