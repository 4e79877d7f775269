"""Gauge identities, closed forms, the Chebyshev centre and bad input of the constraint sets."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_gfm import (
    Ball,
    Box,
    Ellipsoid,
    FunctionalSet,
    GaugeMap,
    Intersection,
    Polytope,
    StarUnion,
    chebyshev_center,
    constraint_set,
    uniform_ball,
)

F64 = torch.float64


def _sets():
    hexagon = constraint_set("hexagon-rings")
    simplex = constraint_set("simplex-dirichlet", 3)
    ell = Ellipsoid(np.diag([1.0, 0.25, 2.0]), np.array([0.3, -0.2, 0.1]), center=[0.5, 0.3, 0.0])
    inter = Intersection([simplex, Ball([0.25, 0.25, 0.25], 0.3)])
    star = constraint_set("lshape-star")
    return {"hexagon": hexagon, "simplex": simplex, "ellipsoid": ell, "intersection": inter, "star": star}


def _interior_points(C, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return GaugeMap(C).from_ball(uniform_ball(n, C.dim, g, dtype=torch.float64) * 0.999)


@pytest.mark.parametrize("name", list(_sets()))
def test_round_trip_both_ways(name):
    C = _sets()[name]
    T = GaugeMap(C)
    g = torch.Generator().manual_seed(1)
    z = uniform_ball(10_000, C.dim, g, dtype=torch.float64)
    x = T.from_ball(z)
    assert torch.allclose(T.to_ball(x), z, atol=1e-10)
    lo, hi = C.bounding_box()
    cand = lo + (hi - lo) * torch.rand(20_000, C.dim, generator=g, dtype=F64)
    inside = cand[C.violation(cand) == 0][:10_000]
    assert torch.allclose(T.from_ball(T.to_ball(inside)), inside, atol=1e-10)


@pytest.mark.parametrize("name", list(_sets()))
def test_norm_of_image_is_the_gauge_and_boundary_maps_to_sphere(name):
    C = _sets()[name]
    T = GaugeMap(C)
    x = _interior_points(C, 2000)
    assert torch.allclose(torch.linalg.norm(T.to_ball(x), dim=1), C.gauge(x - C.center), atol=1e-12)
    u = torch.randn(2000, C.dim, generator=torch.Generator().manual_seed(2), dtype=F64)
    u /= torch.linalg.norm(u, dim=1, keepdim=True)
    boundary = C.center + C.radial(u)[:, None] * u
    assert (torch.linalg.norm(T.to_ball(boundary), dim=1) - 1).abs().max() < 1e-12


@settings(max_examples=15, deadline=None)
@given(s=st.floats(0.0, 50.0), seed=st.integers(0, 1000))
def test_gauge_is_positively_homogeneous(s, seed):
    for C in _sets().values():
        y = torch.randn(50, C.dim, generator=torch.Generator().manual_seed(seed), dtype=F64)
        assert torch.allclose(C.gauge(s * y), s * C.gauge(y), rtol=1e-10, atol=1e-12)


def test_intersection_gauge_is_max_of_members():
    inter = _sets()["intersection"]
    y = torch.randn(500, 3, generator=torch.Generator().manual_seed(3), dtype=F64)
    members = torch.stack([m.gauge_from(inter.center, y) for m in inter.sets])
    assert torch.equal(inter.gauge(y), members.max(dim=0).values)
    assert (members.argmax(dim=0) == 0).any() and (members.argmax(dim=0) == 1).any()


def test_polytope_gauge_matches_bisection_gauge():
    C = _sets()["hexagon"]
    A, b = C.A, C.b
    g = FunctionalSet([lambda x, i=i: x @ A[i] - b[i] for i in range(A.shape[0])], C.center, r_max=10.0)
    y = torch.randn(300, 2, generator=torch.Generator().manual_seed(4), dtype=F64)
    assert torch.allclose(g.gauge(y), C.gauge(y), atol=1e-8)


def test_ball_map_is_a_scaling_and_box_gauge_is_sup_norm():
    B = Ball([0.5, -1.0, 2.0], 3.0)
    x = _interior_points(B, 500)
    assert torch.allclose(GaugeMap(B).to_ball(x), (x - B.center) / 3.0, atol=1e-14)
    box = Box(-np.ones(4), np.ones(4))
    y = torch.randn(500, 4, generator=torch.Generator().manual_seed(5), dtype=F64)
    assert torch.allclose(box.gauge(y), y.abs().max(dim=1).values, atol=1e-14)


def test_centre_maps_to_origin_without_nan():
    for C in _sets().values():
        T = GaugeMap(C)
        z = T.to_ball(C.center[None])
        assert torch.equal(z, torch.zeros_like(z))
        assert torch.equal(T.from_ball(torch.zeros(1, C.dim, dtype=F64)), C.center[None])


def test_chebyshev_centre_matches_cvxpy_and_box():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(0)
    A = rng.standard_normal((12, 3))
    b = 1.0 + rng.random(12)
    c, r = chebyshev_center(A, b)
    x, rr = cp.Variable(3), cp.Variable()
    norms = np.linalg.norm(A, axis=1)
    cp.Problem(cp.Maximize(rr), [A @ x + rr * norms <= b]).solve(solver=cp.CLARABEL, tol_gap_abs=1e-12,
                                                                     tol_gap_rel=1e-12, tol_feas=1e-12)
    assert abs(r - rr.value) < 1e-7 and np.allclose(c.numpy(), x.value, atol=1e-6)
    box = Box([0.0, 0.0], [1.0, 4.0])
    assert torch.allclose(box.center, torch.tensor([0.5, 2.0], dtype=F64)) and box.inradius == 0.5
    simplex = constraint_set("simplex-dirichlet", 3)
    assert math.isclose(simplex.inradius, 1 / (3 + math.sqrt(3)), rel_tol=1e-9)


def test_star_union_is_star_shaped_and_validates_centre():
    star = _sets()["star"]
    assert bool(star.contains(torch.tensor([[0.9, -0.9], [-0.9, 0.9]], dtype=F64)).all())
    assert not bool(star.contains(torch.tensor([[0.5, 0.5]], dtype=F64))[0])
    with pytest.raises(ValueError, match="center"):
        StarUnion(star.sets, center=[0.5, -0.5])


def test_bad_sets_raise_clear_errors():
    with pytest.raises(ValueError, match="empty"):
        Polytope([[1.0], [-1.0]], [-1.0, -1.0])
    with pytest.raises(ValueError, match="unbounded"):
        Polytope([[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0])
    with pytest.raises(ValueError, match="center"):
        Polytope([[1.0], [-1.0]], [1.0, 1.0], center=[1.0])
    with pytest.raises(ValueError, match="symmetric"):
        Ellipsoid([[1.0, 0.5], [0.0, 1.0]], [0.0, 0.0])
    with pytest.raises(ValueError, match="positive definite"):
        Ellipsoid([[1.0, 0.0], [0.0, -1.0]], [0.0, 0.0])
    with pytest.raises(ValueError, match="center"):
        FunctionalSet([lambda x: x[:, 0] - 1.0], [2.0], r_max=5.0)
    half_line = FunctionalSet([lambda x: x[:, 0] - 1.0], [0.0], r_max=5.0)
    with pytest.raises(ValueError, match="r_max"):
        half_line.gauge(torch.tensor([[-1.0]], dtype=F64))
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        _sets()["hexagon"].gauge(torch.zeros(3, 3, dtype=F64))
