"""Basin images: ellipse law, symmetries, backend parity, the naive reference, file round trip."""
import numpy as np
import pytest
from iclr26_fractal_gd import (
    basin_map,
    classify_points,
    in_convergence_region,
    naive_basin_labels,
    refinement_flip_fraction,
)
from iclr26_fractal_gd.basins import BasinMap, diagonal_clearance, grid_axes


def _near(mask, k):
    pad = np.pad(mask, k, mode="edge")
    out = np.zeros_like(mask)
    for di in range(2 * k + 1):
        for dj in range(2 * k + 1):
            out |= pad[di:di + mask.shape[0], dj:dj + mask.shape[1]] != mask
    return out


def test_ellipse_membership_matches_simulation():
    eta = 0.8
    b = basin_map(eta, 1.0, 0.0, resolution=201, steps=3000, labels="binary")
    inside = in_convergence_region(*np.meshgrid(*grid_axes((-4, 4, -4, 4), 201)), 1.0, eta)
    far = ~_near(inside, 2)
    assert np.mean((b.labels == 1)[far] == inside[far]) >= 0.9999  # no artefact line on u = -v


def test_grid_keeps_off_the_diagonals():
    """Every sample keeps >= 1/4 pixel from u = v and u = -v on the symmetric square, >= 1/8 on any square-pixel
    window; the old pixel-centre grid put a full row on u = -v (clearance 0)."""
    for res in (64, 201, 801, 1024):
        assert diagonal_clearance(*grid_axes((-4, 4, -4, 4), res)) >= 0.249
        centres = (np.arange(res) + 0.5) * 8.0 / res - 4
        assert diagonal_clearance(centres, centres) < 1e-12
    rng = np.random.default_rng(11)
    for _ in range(200):
        u0, v0, w = rng.uniform(-3, 3), rng.uniform(-3, 3), rng.choice([1e-3, 0.1, 1.0, 8.0])
        us, vs = grid_axes((u0, u0 + w, v0, v0 + w), int(rng.integers(16, 300)))
        assert diagonal_clearance(us, vs) >= 0.124
    b = basin_map(1.0, 0.5, 0.2, extent=(-1, 1, -1, 1), resolution=32, steps=5)
    assert b.params["diagonal_clearance_px"] >= 0.249


def test_symmetries_of_the_labels():
    u, v = np.meshgrid(*grid_axes((-4, 4, -4, 4), 128))
    u, v = u.ravel(), v.ravel()

    def lab(a, b):
        return classify_points(a, b, 0.5, 1.0, 0.2, steps=200)["labels"]

    base = lab(u, v)
    np.testing.assert_array_equal(base, lab(v, u))  # (u, v) -> (v, u)
    flipped = lab(-u, -v)  # (u, v) -> (-u, -v) swaps the branches
    np.testing.assert_array_equal(base, np.where(flipped == 1, 2, np.where(flipped == 2, 1, 0)))
    assert set(np.unique(base)) == {0, 1, 2}


def test_backend_parity_numpy_torch_cpu():
    pytest.importorskip("torch")
    a = basin_map(1.0, 0.5, 0.2, resolution=256, steps=200, backend="numpy")
    t = basin_map(1.0, 0.5, 0.2, resolution=256, steps=200, backend="torch", device="cpu")
    np.testing.assert_array_equal(a.labels, t.labels)


@pytest.mark.cuda
def test_backend_parity_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = basin_map(1.0, 0.5, 0.2, resolution=256, steps=200)
    t = basin_map(1.0, 0.5, 0.2, resolution=256, steps=200, backend="torch", device="cuda")
    assert np.mean(a.labels == t.labels) > 0.999


def test_masked_kernel_matches_naive_loop():
    fast = basin_map(0.8, 1.0, 0.0, resolution=64, steps=1500, labels="binary").labels
    np.testing.assert_array_equal(fast, naive_basin_labels(0.8, 1.0, 0.0, resolution=64, steps=1500))
    fast = basin_map(1.0, 0.5, 0.2, resolution=64, steps=200, labels="binary").labels
    np.testing.assert_array_equal(fast, naive_basin_labels(1.0, 0.5, 0.2, resolution=64, steps=200))


def test_supercritical_and_overflow_give_clean_labels():
    b = basin_map(1.05, 1.0, 0.0, resolution=64, steps=500, extent=(-40, 40, -40, 40))
    assert b.labels.dtype == np.int8 and set(np.unique(b.labels)) <= {0, 1, 2}
    assert np.count_nonzero(b.labels) == 0
    assert np.all(np.isfinite(b.final_u)) and np.all(b.steps_to_diverge[b.labels == 0] != 0)


def test_npz_round_trip(tmp_path):
    b = basin_map(1.0, 0.5, 0.2, resolution=32, steps=100)
    b.save_npz(tmp_path / "m.npz")
    c = BasinMap.load_npz(tmp_path / "m.npz")
    np.testing.assert_array_equal(b.labels, c.labels)
    assert c.params["eta"] == 1.0 and c.extent == b.extent


def test_refinement_flips_decrease():
    f = refinement_flip_fraction({"eta": 1.0, "y": 0.5, "lam": 0.2, "steps": 200}, [64, 128, 256])
    assert len(f) == 2 and 0 < f[1] < f[0]


def test_float32_warns():
    pytest.importorskip("torch")
    with pytest.warns(UserWarning, match="float32"):
        b = basin_map(1.0, 0.5, 0.2, resolution=32, steps=50, backend="torch", dtype="float32")
    assert b.params["dtype"] == "float32"


@pytest.mark.parametrize("kwargs, arg", [
    ({"resolution": 8}, "resolution"),
    ({"extent": (1, 1, -4, 4)}, "extent"),
    ({"labels": "three"}, "labels"),
    ({"backend": "jax"}, "backend"),
    ({"lam": 0.6}, "lam"),
    ({"eta": -1.0}, "eta"),
])
def test_bad_basin_arguments(kwargs, arg):
    base = {"eta": 1.0, "y": 0.5, "lam": 0.2, "resolution": 32, "steps": 10}
    with pytest.raises((ValueError, TypeError), match=arg):
        basin_map(**{**base, **kwargs})
