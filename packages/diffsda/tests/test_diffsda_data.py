"""Procedural data: ranges, ground truth recoverable by hand rules, determinism."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_diffsda.data import SeqSet, make_series, make_sprites, make_tones


def contour_rule(f0: np.ndarray) -> np.ndarray:
    """rising / falling from the end-to-start change; vibrato from the oscillation; else flat."""
    change = f0[:, -1] - f0[:, 0]
    wiggle = np.abs(np.diff(np.sign(np.diff(f0, axis=1)), axis=1)).sum(1) > 0
    out = np.full(len(f0), 2)
    out[change > 0.1] = 0
    out[change < -0.1] = 1
    out[wiggle] = 3
    return out


def test_tones_range_rule_and_peaks():
    ds = make_tones(400, seed=3)
    assert ds.x.shape == (400, 16, 32) and ds.x.dtype == np.float32
    assert ds.x.min() >= -1.5 and ds.x.max() <= 1.1
    np.testing.assert_array_equal(contour_rule(ds.dynamic_t), ds.dynamic["contour"])
    peak = ds.x.argmax(2)
    assert np.all(np.abs(peak - ds.dynamic_t) <= 1.0)


def test_tones_odd_timbre_has_no_second_harmonic():
    ds = make_tones(200, seed=4)
    odd = ds.static["timbre"] % 2 == 1
    f0 = ds.dynamic_t[odd, 0]
    frame = ds.x[odd, 0]
    second = frame[np.arange(len(f0)), np.rint(2 * f0).astype(int)]
    first = frame[np.arange(len(f0)), np.rint(f0).astype(int)]
    assert np.all(second < first - 0.5)


def motion_rule(centre: np.ndarray) -> np.ndarray:
    step = np.diff(centre, axis=1)
    net = centre[:, -1] - centre[:, 0]
    cross = (step[:, :-1, 0] * step[:, 1:, 1] - step[:, :-1, 1] * step[:, 1:, 0]).sum(1)
    table = {(1, 0): 0, (-1, 0): 1, (0, 1): 2, (0, -1): 3, (1, 1): 4, (-1, -1): 5}
    linear = np.all(step == step[:, :1], axis=(1, 2))
    out = np.where(cross > 0, 6, 7)
    for i in np.flatnonzero(linear):
        out[i] = table[tuple(np.sign(net[i]).astype(int))]
    return out


def test_sprites_in_canvas_and_motion_rule():
    ds = make_sprites(300, seed=5)
    assert ds.x.shape == (300, 8, 3, 16, 16)
    assert np.all(ds.dynamic_t >= 2) and np.all(ds.dynamic_t <= 13)
    np.testing.assert_array_equal(motion_rule(ds.dynamic_t), ds.dynamic["motion"])
    assert ds.x.min() >= -1 and ds.x.max() <= 1


@settings(max_examples=5, deadline=None)
@given(n=st.integers(1, 20), seed=st.integers(0, 2**31))
def test_generators_deterministic_by_seed(n, seed):
    for make in (make_tones, make_sprites, make_series):
        a, b = make(n, seed=seed), make(n, seed=seed)
        np.testing.assert_array_equal(a.x, b.x)
        assert all(np.array_equal(a.static[k], b.static[k]) for k in a.static)


def test_series_and_roundtrip():
    ds = make_series(50, seed=1)
    assert ds.x.shape == (50, 24, 4)
    back = SeqSet.from_arrays(ds.to_arrays())
    np.testing.assert_array_equal(back.x, ds.x)
    np.testing.assert_array_equal(back.dynamic["regime"], ds.dynamic["regime"])
