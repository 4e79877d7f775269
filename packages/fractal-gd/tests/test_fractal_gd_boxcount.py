"""Box counting against shapes of known dimension."""
import numpy as np
import pytest
from iclr26_fractal_gd import boundary_mask, box_counting_dimension
from iclr26_fractal_gd.fractal import CONVENTIONS, boundary_dimension, dimension_spread, koch_snowflake


def test_disk_boundary_is_one_dimensional():
    n = 1024
    yy, xx = np.mgrid[:n, :n]
    disk = ((xx - 500.3) ** 2 + (yy - 520.7) ** 2 < 350**2).astype(np.int8)
    assert 0.95 <= box_counting_dimension(boundary_mask(disk)).D <= 1.05


def test_salt_and_pepper_fills_the_plane():
    mask = np.random.default_rng(0).random((512, 512)) < 0.5
    assert 1.9 <= box_counting_dimension(mask).D <= 2.0


def _koch(level):
    pts = np.array([[0.0, 0.0], [1.0, 0.0]])
    rot = np.array([[0.5, -np.sqrt(3) / 2], [np.sqrt(3) / 2, 0.5]])
    for _ in range(level):
        a, b = pts[:-1], pts[1:]
        d = (b - a) / 3
        p1, p2 = a + d, a + 2 * d
        peak = p1 + d @ rot.T
        pts = np.concatenate([np.stack([a, p1, peak, p2], 1).reshape(-1, 2), pts[-1:]])
    return pts


def test_koch_curve_dimension():
    n = 2048
    pts = _koch(6)
    t = np.linspace(0, 1, 8)[:, None, None]
    dense = (pts[:-1] + t * (pts[1:] - pts[:-1])).reshape(-1, 2)
    ij = np.clip((dense * (n - 1)).astype(int), 0, n - 1)
    mask = np.zeros((n, n), bool)
    mask[ij[:, 1] + n // 8, ij[:, 0]] = True
    assert 1.20 <= box_counting_dimension(mask, fit_range=(2, 256)).D <= 1.32


def test_boundary_marks_right_and_lower_changes():
    lab = np.zeros((4, 4), np.int8)
    lab[:, 2:] = 1
    m = boundary_mask(lab)
    assert m[:, 1].all() and m.sum() == 4


def test_errors_and_warning():
    with pytest.raises(ValueError, match="empty"):
        box_counting_dimension(np.zeros((64, 64), bool))
    with pytest.raises(ValueError, match="box sizes"):
        box_counting_dimension(np.ones((64, 64), bool), fit_range=(2, 4))
    with pytest.raises(TypeError, match="mask"):
        box_counting_dimension(np.ones((64, 64)))
    mask = np.zeros((256, 256), bool)
    mask[::16, ::16] = True  # isolated points: flat counts below 16 px, area scaling above
    with pytest.warns(UserWarning, match="R\\^2"):
        box_counting_dimension(mask)


def test_each_convention_alone_on_sets_of_known_dimension():
    n, fit = 2048, (8, 512)
    koch = koch_snowflake(6, n)
    yy, xx = np.mgrid[:n, :n]
    line = ((0.618034 * yy + 0.3 * xx) > 0.4 * n).astype(np.int8)
    salt = (np.random.default_rng(1).random((n // 4, n // 4)) < 0.5).astype(np.int8)
    for conv in CONVENTIONS:
        assert abs(boundary_dimension(koch, conv, fit).D - np.log(4) / np.log(3)) <= 0.02, conv
        assert abs(boundary_dimension(line, conv, fit).D - 1.0) <= 0.05, conv
        assert boundary_dimension(salt, conv, (8, 128)).D == pytest.approx(2.0, abs=1e-9), conv
    assert box_counting_dimension(np.ones((n, n), bool), fit_range=fit).D == pytest.approx(2.0, abs=1e-9)
    with pytest.raises(ValueError, match="convention"):
        boundary_dimension(koch, "edge6")
    with pytest.raises(ValueError, match="single label"):
        boundary_dimension(np.zeros((64, 64), np.int8), "mixed_box")


def test_dimension_spread_covers_every_choice():
    koch = koch_snowflake(5, 512)
    spread = dimension_spread([koch[::2, ::2], koch], fit_starts=(2, 4))
    assert len(spread.estimates) == 2 * 3 * 2
    assert spread.low <= spread.D <= spread.high
    assert len(spread.select(resolution=512, fit_start=4)) == 3
