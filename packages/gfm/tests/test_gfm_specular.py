"""Issue 33: the ``specular`` operator (reflection in ``C`` for steps that leave the ball), the ``uniform_set``
source ``T#Uniform(C)`` and the volumes its density needs."""
import math

import numpy as np
import pytest
import torch
from iclr26_gfm import Ball, Box, Ellipsoid, GaugeFlowMatching, GaugeMap, Intersection, Polytope, make_target
from iclr26_gfm.sets import ConvexSet, uniform_in_set


def _steps(C, n, length, seed):
    """Steps ``x → x + w`` from points strictly inside ``C`` ``(n, d)``, most of them leaving ``C``."""
    g = torch.Generator().manual_seed(seed)
    start = C.center + 0.9 * (uniform_in_set(C, n, g).to(torch.float64) - C.center)
    return start, start + length * torch.randn(n, C.dim, generator=g, dtype=torch.float64)


def test_log_volume_of_simplex_box_and_ellipsoid():
    _, simplex = make_target("simplex-dirichlet", 10, 3)
    assert abs(simplex.log_volume() - math.log(1 / 6)) < 1e-12
    assert abs(Box([0.0, -1.0], [2.0, 0.5]).log_volume() - math.log(3.0)) < 1e-12
    E = Ellipsoid(np.diag([4.0, 1.0, 0.25]), np.zeros(3))               # semi-axes 0.5, 1, 2
    assert abs(E.log_volume() - math.log(4 / 3 * math.pi)) < 1e-12
    with pytest.raises(ValueError, match="Intersection"):
        Intersection([Ball([0.0, 0.0], 1.0), Box([-0.5, -0.5], [0.5, 0.5])]).log_volume()


def test_single_face_reflection_is_the_mirror_image_and_generic_path_agrees():
    box = Box([0.0, 0.0], [1.0, 1.0])
    start = torch.tensor([[0.5, 0.5], [0.2, 0.8]], dtype=torch.float64)
    end = torch.tensor([[1.3, 0.6], [0.3, 0.7]], dtype=torch.float64)      # leaves through x = 1; stays inside
    got = box.reflect(start, end)
    assert torch.allclose(got, torch.tensor([[0.7, 0.6], [0.3, 0.7]], dtype=torch.float64), atol=1e-15)
    # the generic version (bisection for the exit point, central-difference normals) on many random steps
    start, end = _steps(box, 500, 0.6, seed=1)
    fast = box.reflect(start, end)
    generic = ConvexSet.reflect(box, start, end)
    assert int((box.violation(end) > 0).sum()) > 100
    assert float((fast - generic).abs().max()) < 1e-6
    assert float(box.violation(fast).max()) <= 1e-12


def test_specular_step_is_reflection_in_c_and_polytope_fast_path_matches_generic():
    X, C = make_target("simplex-dirichlet", 10, 3)
    gm = GaugeMap(C)
    start, end = _steps(C, 400, 0.5, seed=2)
    z_prev, z_new = gm.to_ball(start), gm.to_ball(end)          # T extends beyond C: ‖T(x)‖ = γ(x − x_c) > 1
    z, n_out = gm.specular_step(z_prev, z_new)
    outside = torch.linalg.norm(z_new, dim=1) > 1
    assert n_out == int(outside.sum()) > 100
    assert float(torch.linalg.norm(z, dim=1).max()) <= 1 + 1e-12
    assert torch.equal(z[~outside], z_new[~outside])                  # rows inside are untouched
    # in C the result is C's own specular reflection of the step T⁻¹(z) → T⁻¹(z')
    assert torch.allclose(gm.from_ball(z), C.reflect(start, end), atol=1e-12)
    # the same polytope through the generic (torch) path: an Intersection of one set has the same gauge
    generic = GaugeMap(Intersection([C], center=C.center)).specular_step(z_prev, z_new)[0]
    assert float((generic - z).abs().max()) < 1e-6


def test_specular_sampling_reflects_where_the_sphere_reflection_slides_along_the_face():
    """A step that leaves a box obliquely near a corner: the sphere's reflection (along the ray through x_c in C)
    moves the point away from the corner along the face, the specular one keeps its distance to the other face."""
    box = Box([0.0, 0.0], [1.0, 1.0])
    gm = GaugeMap(box)
    x_prev = torch.tensor([[0.95, 0.6]], dtype=torch.float64)
    x_new = torch.tensor([[1.05, 0.9]], dtype=torch.float64)
    spec = gm.from_ball(gm.specular_step(gm.to_ball(x_prev), gm.to_ball(x_new))[0])
    assert torch.allclose(spec, torch.tensor([[0.95, 0.9]], dtype=torch.float64), atol=1e-12)
    from iclr26_gfm import ball_boundary_step

    sphere = gm.from_ball(ball_boundary_step(gm.to_ball(x_prev), gm.to_ball(x_new), "reflect"))
    assert float(sphere[0, 1]) < 0.88 and float(box.violation(sphere)[0]) == 0   # 0.856: away from the corner


def test_uniform_set_source_is_uniform_on_c_and_its_density_is_one_over_the_volume(zero_field):
    box = Box([0.0, 0.0], [2.0, 1.0])
    X = uniform_in_set(box, 200, torch.Generator().manual_seed(0)).to(torch.float64)
    model = GaugeFlowMatching(box, source="uniform_set", n_steps_train=0, velocity_net=zero_field()).fit(X)
    S = model.sample(40_000, steps=2)
    assert torch.allclose(S.mean(0), box.center, atol=0.01)
    assert torch.allclose(S.var(0), torch.tensor([4 / 12, 1 / 12], dtype=torch.float64), rtol=0.03)
    got = model.log_prob(X[:50], steps=4)
    assert torch.allclose(got, torch.full_like(got, -math.log(2.0)), atol=1e-9)


def test_uniform_set_needs_a_volume_for_log_prob_and_bad_choices_are_named(zero_field):
    C = Intersection([Ball([0.0, 0.0], 1.0), Box([-0.8, -0.8], [0.8, 0.8])])
    X = C.center + 0.5 * (uniform_in_set(C, 100, torch.Generator().manual_seed(1)).to(torch.float64) - C.center)
    model = GaugeFlowMatching(C, source="uniform_set", n_steps_train=0, velocity_net=zero_field()).fit(X)
    with pytest.raises(ValueError, match="volume"):
        model.log_prob(X[:5])
    with pytest.raises(ValueError, match="source"):
        GaugeFlowMatching(C, source="uniform")
    with pytest.raises(ValueError, match="boundary"):
        GaugeFlowMatching(C, boundary="mirror")


def test_polytope_normal_is_the_gauge_gradient():
    C = Polytope(np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]), np.array([1.0, 2.0, 0.5]))
    y = torch.tensor([[0.3, 0.01], [0.01, 0.9], [-0.2, -0.3]], dtype=torch.float64)
    assert torch.allclose(C.normal(y), ConvexSet.normal(C, y), atol=1e-6)
