"""Schedules: closed forms (criterion 1), shapes, and bad input."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_osr_temperature import schedules


def test_negcos_one_rise_closed_form():
    t = np.arange(11)
    expected = 0.5 + 0.75 * (1 - np.cos(np.pi * t / 10))
    np.testing.assert_allclose(schedules.NegativeCosine(0.5, 2.0, n_epochs=10).as_array(10), expected,
                               rtol=0, atol=1e-12)


def test_negcos_holds_tau_max_after_n_and_wrap_reproduces_reference():
    s = schedules.NegativeCosine(0.5, 2.0, n_epochs=10)
    assert s(10) == s(15) == 2.0
    ref = schedules.NegativeCosine(0.5, 2.0, n_epochs=10, wrap=True)
    assert ref(10) == 0.5 and ref(5) == pytest.approx(s(5), abs=1e-15)


def test_gcos_defaults_minima_maxima_and_hold():
    tau = schedules.GeneralizedCosine(0.5, 2.0, n_epochs=600, period=200, shift=1.0).as_array(700)
    for t in (0, 200, 400):
        assert tau[t] == pytest.approx(0.5, abs=1e-12)
    for t in (100, 300):
        assert tau[t] == pytest.approx(2.0, abs=1e-12)
    assert np.all(tau[500:] == 2.0)
    assert tau[450] < 2.0


def test_gcos_shift0_starts_at_tau_max():
    s = schedules.GeneralizedCosine(0.5, 2.0, n_epochs=600, period=200, shift=0.0)
    assert s(0) == pytest.approx(2.0) and s(100) == pytest.approx(0.5)


def test_exponential_midpoint_is_geometric_mean():
    s = schedules.ExponentialIncrease(0.5, 2.0, n_epochs=40)
    assert s(20) == pytest.approx(math.sqrt(0.5 * 2.0), rel=1e-12)


def test_linear_log_random_and_periodic_negcos_warning():
    assert schedules.LinearIncrease(0.5, 2.0, 10)(5) == pytest.approx(1.25)
    assert schedules.LinearIncrease(0.5, 2.0, 10, period=10)(10) == 0.5
    assert schedules.LinearDecrease(2.0, 0.5, 10)(0) == 2.0 and schedules.LinearDecrease(0.5, 2.0, 10)(10) == 0.5
    log = schedules.LogarithmicIncrease(0.5, 2.0, 10)
    assert log(0) == 0.5 and log(1) == 0.5 and log(10) == 2.0 and 0.5 < log(5) < 2.0
    r = schedules.RandomUniform(0.5, 2.0, seed=3)
    values = r.as_array(50)
    assert np.all((values >= 0.5) & (values <= 2.0)) and r(7) == r(7) and np.unique(values).size > 40
    with pytest.warns(UserWarning, match="period"):
        p = schedules.NegativeCosine(0.5, 2.0, n_epochs=100, period=20)
    assert p(0) == 0.5 and p(10) == 0.5 and p(5) == pytest.approx(1.25)


@settings(max_examples=25, deadline=None)
@given(lo=st.floats(0.01, 5.0), width=st.floats(0.0, 5.0), n=st.integers(1, 300))
def test_negcos_one_rise_is_monotone_within_range(lo, width, n):
    tau = schedules.NegativeCosine(lo, lo + width, n_epochs=n).as_array(n + 5)
    assert np.all(np.diff(tau) >= -1e-12)
    assert tau[0] == pytest.approx(lo) and tau[-1] == pytest.approx(lo + width)


def test_get_by_name():
    assert isinstance(schedules.get("gcosm", n_epochs=10, period=4), schedules.GeneralizedCosine)
    assert schedules.get("constant", tau=0.3)(5) == 0.3
    with pytest.raises(ValueError, match="name"):
        schedules.get("cosine")


@pytest.mark.parametrize("make, arg", [
    (lambda: schedules.Constant(0.0), "tau"),
    (lambda: schedules.NegativeCosine(-1.0, 2.0, 10), "tau_min"),
    (lambda: schedules.NegativeCosine(0.5, 0.0, 10), "tau_max"),
    (lambda: schedules.NegativeCosine(2.0, 0.5, 10), "tau_min, tau_max"),
    (lambda: schedules.ExponentialIncrease(0.5, 2.0, 0), "n_epochs"),
    (lambda: schedules.NegativeCosine(0.5, 2.0, 10, period=0), "period"),
    (lambda: schedules.GeneralizedCosine(0.5, 2.0, 10, period=-5), "period"),
    (lambda: schedules.GeneralizedCosine(0.5, 2.0, 10, shift=1.5), "shift"),
    (lambda: schedules.Constant(1.0)(-1), "t"),
    (lambda: schedules.Constant(1.0)(float("nan")), "t"),
])
def test_bad_input_raises_value_error_naming_the_argument(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()
