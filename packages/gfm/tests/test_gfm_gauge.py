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


def test_inplace_operator_gives_the_copying_operators_numbers():
    """The sampler's in-place operator writes exactly the rows the copying one returns, and only those."""
    from iclr26_gfm.gauge import boundary_step_counted

    g = torch.Generator().manual_seed(5)
    z = uniform_ball(2000, 3, g)
    z_new = z + 0.2 * torch.randn(2000, 3, generator=g)
    expected, count = boundary_step_counted(z, z_new, "reflect")
    target = z_new.clone()
    out, count_inplace = boundary_step_counted(z, target, "reflect", inplace=True)
    assert out is target and count_inplace == count > 0 and torch.equal(out, expected)


def test_repeated_reflection_equals_reflecting_one_row_at_a_time():
    """Rows still outside after a reflection recurse on their own: each row's result is that of its own sequence of
    single reflections (grazing steps need several), whatever the other rows do."""
    from iclr26_gfm.gauge import _reflect_rows

    g = np.random.default_rng(3)
    s = g.normal(size=(200, 2))
    s *= (0.999 + 0.001 * g.random((200, 1))) / np.linalg.norm(s, axis=1, keepdims=True)
    tangent = np.stack([-s[:, 1], s[:, 0]], axis=1)
    e = s + g.uniform(0.1, 3.0, (200, 1)) * tangent + 0.02 * s                     # grazing, long steps
    batch, reflections = _reflect_rows(s, e, 8), []
    for i in range(200):
        si, ei = s[i:i + 1], e[i:i + 1]
        count = 0
        while count < 8:
            si, ei = _reflect_once(si, ei)
            count += 1
            if ei @ ei[0] <= 1:
                break
        else:
            ei = ei / np.linalg.norm(ei)
        reflections.append(count)
        np.testing.assert_allclose(batch[i], ei[0], rtol=0, atol=1e-12)   # einsum's rounding may differ by a row
    assert (np.linalg.norm(batch, axis=1) <= 1 + 1e-12).all() and min(reflections) == 1 and max(reflections) == 8
