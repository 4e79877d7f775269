"""Chebyshev harmonic analysis: Jacobi–Anger, parity, Bessel expansion of sin."""
import math

import numpy as np
import pytest
import scipy.special
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_cosmo_inr import chebyshev_coefficients, cosmo, harmonic_profile, named_activation


@pytest.mark.parametrize("zeta", [0.5, 2 * math.pi * 1.3, 10.0])
def test_chebyshev_coefficients_of_complex_exponential_are_bessel_values(zeta):
    coeffs = chebyshev_coefficients(lambda u: torch.exp(1j * zeta * u), 1.0, 64)
    n = np.arange(coeffs.size)
    exact = np.where(n == 0, 1.0, 2.0) * (1j**n) * scipy.special.jv(n, zeta)
    assert np.abs(coeffs - exact).max() < 1e-10


@pytest.mark.parametrize("name,empty", [("sin", "even"), ("tanh", "even"), ("gauss", "odd"), ("rc", "odd")])
def test_symmetric_activations_have_half_empty_harmonic_grid(name, empty):
    coeffs = chebyshev_coefficients(named_activation(name), 3.0, 64)
    gap = coeffs[2::2] if empty == "even" else coeffs[1::2]
    assert np.abs(gap).max() <= 1e-12 * np.abs(coeffs).max()
    assert harmonic_profile(named_activation(name), 3.0, 32).support_ratio <= 1e-12


def test_cosmo_rc_has_complete_support():
    prof = harmonic_profile(named_activation("cosmo_rc", T=1.3, C=0.8), 3.0, 32)
    assert prof.support_ratio > 1e-2
    assert prof.e_even == pytest.approx(0.0725, abs=2e-3) and prof.e_odd == pytest.approx(0.0726, abs=2e-3)


def test_zero_modulation_returns_the_base_activation_exactly():
    x = torch.linspace(-3, 3, 101, dtype=torch.float64)
    out = cosmo(x, torch.tanh, 0.0)
    assert torch.equal(out.real, torch.tanh(x)) and torch.equal(out.imag, torch.zeros_like(x))


@settings(max_examples=8, deadline=None)
@given(st.floats(0.2, 12.0))
def test_sine_harmonics_match_the_bessel_expansion(a):
    prof = harmonic_profile(torch.sin, a, 32, degree=64)
    odd = np.abs(prof.coeffs[1::2])
    m = np.arange(odd.size)
    np.testing.assert_allclose(odd, 2 * np.abs(scipy.special.jv(2 * m + 1, a)), atol=1e-12)


@pytest.mark.parametrize("kwargs", [{"amplitude": 0.0}, {"amplitude": math.nan}, {"degree": 0}])
def test_bad_arguments_are_refused(kwargs):
    with pytest.raises(ValueError):
        chebyshev_coefficients(torch.sin, **{"amplitude": 1.0, "degree": 8, **kwargs})


def test_unknown_activation_name_is_refused():
    with pytest.raises(ValueError, match="activation"):
        named_activation("relu6")


def test_default_degree_does_not_alias_sin_90u():
    # sin(90u) = 2 sum_m (-1)^m J_{2m+1}(90) T_{2m+1}(u), so E_odd = 4 sum_{k odd} J_k(90)^2 = 1 - J_0(180)
    exact = 1.0 - scipy.special.j0(180.0)
    adaptive = harmonic_profile(lambda u: torch.sin(90 * u), 1.0, 32)
    assert abs(adaptive.e_odd - exact) <= 1e-6 and adaptive.e_even <= 1e-20
    assert abs(harmonic_profile(lambda u: torch.sin(90 * u), 1.0, 32, degree=64).e_odd - exact) > 0.05


@pytest.mark.parametrize("name", ["sin", "tanh", "gauss", "finer", "rc", "cosmo_rc"])
def test_default_degree_energies_equal_the_highest_degree_to_1e6(name):
    # the benchmark's activations at amplitude 3 (sin is sin(90u)): no aliasing at the chosen degree
    fn = named_activation(name)
    adaptive, finest = harmonic_profile(fn, 3.0, 32), harmonic_profile(fn, 3.0, 32, degree=1 << 14)
    assert abs(adaptive.e_even - finest.e_even) <= 1e-6 and abs(adaptive.e_odd - finest.e_odd) <= 1e-6
