"""Jacobian, mass preservation and the ball's boundary operator."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_gfm import Box, Ellipsoid, GaugeMap, ball_boundary_step, constraint_set, uniform_ball
from iclr26_gfm.gauge import _reflect_once
from scipy.stats import chi2


@pytest.mark.parametrize("C", [constraint_set("hexagon-rings"),
                               Ellipsoid(np.diag([1.0, 0.25]), np.array([0.2, 0.1]), center=[0.6, 0.5])])
def test_log_det_matches_autograd_jacobian(C):
    T = GaugeMap(C)
    z = uniform_ball(20, 2, torch.Generator().manual_seed(0), dtype=torch.float64)
    for zi, ld in zip(z, T.log_abs_det_from_ball(z)):
        J = torch.autograd.functional.jacobian(lambda v: T.from_ball(v[None])[0], zi)
        assert torch.isclose(torch.linalg.slogdet(J).logabsdet, ld, rtol=1e-6)


def test_mass_in_cones_is_preserved_and_box_image_is_not_uniform():
    C = Box([0.0, 0.0], [1.0, 2.0])
    T = GaugeMap(C)
    z = uniform_ball(40_000, 2, torch.Generator().manual_seed(1), dtype=torch.float64)
    x = T.from_ball(z)
    ang_z = torch.atan2(z[:, 1], z[:, 0])
    y = x - C.center
    ang_x = torch.atan2(y[:, 1], y[:, 0])
    edges = torch.linspace(-np.pi, np.pi, 13, dtype=torch.float64)
    assert torch.equal(torch.bucketize(ang_z, edges), torch.bucketize(ang_x, edges))
    counts = torch.histogramdd(x, bins=[8, 8], range=[0.0, 1.0, 0.0, 2.0]).hist.flatten().numpy()
    expected = len(x) / 64
    stat = ((counts - expected) ** 2 / expected).sum()
    assert stat > chi2.ppf(0.999, 63)


def test_single_reflection_preserves_tangent_and_distance():
    z = np.array([[0.2, 0.1, -0.3]])
    z_new = np.array([[1.5, 0.4, 0.2]])
    p, r = _reflect_once(z, z_new)
    n = p[0]
    assert np.isclose(np.linalg.norm(n), 1.0)
    assert np.isclose(np.linalg.norm(r - p), np.linalg.norm(z_new - p))
    tangent_in, tangent_out = (z_new - p)[0] - ((z_new - p)[0] @ n) * n, (r - p)[0] - ((r - p)[0] @ n) * n
    np.testing.assert_allclose(tangent_in, tangent_out, atol=1e-14)
    assert np.isclose((r - p)[0] @ n, -((z_new - p)[0] @ n))


def test_grazing_step_needs_more_than_one_reflection():
    delta, L = 0.01, 0.5
    z_prev = torch.tensor([[1.0 - 1e-9, -0.0]], dtype=torch.float64)
    z_new = torch.tensor([[1.0 + delta, L]], dtype=torch.float64)
    _, once = _reflect_once(z_prev.numpy(), z_new.numpy())
    assert np.linalg.norm(once) > 1
    assert torch.linalg.norm(ball_boundary_step(z_prev, z_new, "reflect")) <= 1


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), length=st.floats(0.01, 10.0), d=st.integers(2, 6))
def test_reflect_always_returns_inside_the_ball(seed, length, d):
    g = torch.Generator().manual_seed(seed)
    z = uniform_ball(256, d, g, dtype=torch.float64)
    step = torch.randn(256, d, generator=g, dtype=torch.float64)
    step = length * step / torch.linalg.norm(step, dim=1, keepdim=True)
    out = ball_boundary_step(z, z + step, "reflect")
    assert (torch.linalg.norm(out, dim=1) <= 1 + 1e-12).all()


def test_operator_touches_only_rows_outside_and_keeps_dtype():
    from iclr26_gfm.gauge import boundary_step_counted

    g = torch.Generator().manual_seed(2)
    z = 0.9 * uniform_ball(500, 3, g)
    z_new = z + 0.3 * torch.randn(500, 3, generator=g)
    before = z_new.clone()
    outside = torch.linalg.norm(z_new, dim=1) > 1
    for mode in ("reflect", "radial", "project"):
        out, count = boundary_step_counted(z, z_new, mode)
        assert out.dtype == torch.float32 and count == int(outside.sum()) > 0
        assert torch.equal(out[~outside], z_new[~outside]) and (torch.linalg.norm(out, dim=1) <= 1 + 1e-6).all()
        assert not torch.equal(out[outside], z_new[outside]) and torch.equal(z_new, before)   # input untouched


def test_radial_and_project_modes():
    z = torch.tensor([[1.2, 0.0], [0.0, 0.5], [0.0, -3.0]], dtype=torch.float64)
    prev = torch.zeros_like(z)
    radial = ball_boundary_step(prev, z, "radial")
    assert torch.allclose(radial, torch.tensor([[0.8, 0.0], [0.0, 0.5], [0.0, 0.0]], dtype=torch.float64))
    assert torch.allclose(ball_boundary_step(prev, z, "project")[2], torch.tensor([0.0, -1.0], dtype=torch.float64))
    assert torch.equal(ball_boundary_step(prev, z, "none"), z)
    with pytest.raises(ValueError, match="mode"):
        ball_boundary_step(prev, z, "clip")
