"""The GFM estimator: feasibility under adversarial velocity, the FM identity on a ball, determinism,
baselines and bad input."""
import numpy as np
import pytest
import torch
from iclr26_gfm import (
    Ball,
    GaugeFlowMatching,
    MirrorFM,
    PlainFM,
    ProjectedFM,
    ReflectedFM,
    RejectionFM,
    boundary_atom_fraction,
    constraint_set,
    make_target,
    project,
    sample_target,
    sliced_wasserstein,
    violation_rate,
)
from iclr26_gfm.projection import project_dykstra

SMALL = {"hidden": (16, 16), "n_steps_train": 5, "batch_size": 32}


class Outward(torch.nn.Module):
    """Adversarial velocity: magnitude 10, pointing away from the origin."""

    def forward(self, z, t):
        return 10 * z / torch.linalg.norm(z, dim=1, keepdim=True).clamp(min=1e-12)


@pytest.mark.parametrize("name", ["simplex-dirichlet", "hexagon-rings", "lshape-star", "ellipsoid-shell"])
def test_adversarial_velocity_stays_feasible(name):
    X, C = make_target(name, 200, seed=0)
    for boundary in ("reflect", "radial", "project", "specular"):
        model = GaugeFlowMatching(C, boundary=boundary, **SMALL).fit(X)
        model.net_ = Outward()
        S = model.sample(2000, steps=7)
        assert violation_rate(C, S) == 0.0 and float(C.violation(S).max()) <= 1e-9
        assert model.sample_stats_["outside_iterates"] > 0


def test_gfm_on_a_ball_equals_plain_fm_on_rescaled_data():
    C = Ball([0.3, -0.2], 1.7)
    g = np.random.default_rng(0)
    u = g.standard_normal((400, 2))
    X = torch.as_tensor(C.center.numpy() + 1.7 * g.random((400, 1)) * u / np.linalg.norm(u, axis=1, keepdims=True))
    kw = {"hidden": (32, 32), "n_steps_train": 40, "batch_size": 64, "seed": 3, "coupling": "ot"}
    gfm = GaugeFlowMatching(C, source="gaussian", boundary="none", final_rescale=False, **kw).fit(X)
    plain = PlainFM(**kw).fit((X - C.center) / 1.7)
    a = gfm.sample(500, steps=20)
    b = C.center + 1.7 * plain.sample(500, steps=20).double()
    assert torch.allclose(a, b, atol=1e-5)


def test_same_seed_same_samples_and_save_load(tmp_path):
    X, C = make_target("simplex-dirichlet", 300, 3, seed=1)
    a = GaugeFlowMatching(C, seed=7, **SMALL).fit(X)
    b = GaugeFlowMatching(C, seed=7, **SMALL).fit(X)
    assert torch.equal(a.sample(100, steps=5), b.sample(100, steps=5))
    path = a.save(tmp_path / "m.pt")
    c = GaugeFlowMatching.load(path)
    assert torch.equal(c.sample(100, steps=5), GaugeFlowMatching(C, seed=7, **SMALL).fit(X).sample(100, steps=5))
    with pytest.raises(ValueError, match="PlainFM"):
        PlainFM.load(path)


def test_ema_averages_the_iterates_and_round_trips(tmp_path):
    X, C = make_target("simplex-dirichlet", 300, 3, seed=1)
    kw = {**SMALL, "seed": 7}
    ema = GaugeFlowMatching(C, ema_decay=0.9, **kw).fit(X)
    # by hand: the iterate after k steps is the k-step fit; average with decay min(0.9, (1 + k)/(10 + k))
    iterates = [[p.detach() for p in GaugeFlowMatching(C, **{**kw, "n_steps_train": k}).fit(X).net_.parameters()]
                for k in range(SMALL["n_steps_train"] + 1)]
    avg = iterates[0]
    for k, params in enumerate(iterates[1:]):
        decay = min(0.9, (1 + k) / (10 + k))
        avg = [decay * a + (1 - decay) * p for a, p in zip(avg, params)]
    for a, p in zip(avg, ema.net_.parameters()):
        assert torch.allclose(a, p, atol=1e-6)
    assert not torch.allclose(avg[0], iterates[-1][0])  # the average is not the last iterate
    again = GaugeFlowMatching.load(ema.save(tmp_path / "ema.pt"))
    assert again.ema_decay == 0.9 and torch.equal(again.sample(50, steps=5), ema.sample(50, steps=5))
    with pytest.raises(ValueError, match="ema_decay"):
        GaugeFlowMatching(C, ema_decay=1.0)


def test_bad_training_data_is_refused():
    X, C = make_target("simplex-dirichlet", 50, 3, seed=0)
    bad = X.clone()
    bad[7] = torch.tensor([0.9, 0.9, 0.9])
    with pytest.raises(ValueError, match="row 7"):
        GaugeFlowMatching(C, **SMALL).fit(bad)
    GaugeFlowMatching(C, **SMALL).fit(bad, check_feasible=False)
    with pytest.raises(ValueError, match="3 columns"):
        GaugeFlowMatching(C, **SMALL).fit(X[:, :2])
    nan = X.clone()
    nan[4, 1] = float("nan")
    with pytest.raises(ValueError, match="row 4"):
        GaugeFlowMatching(C, **SMALL).fit(nan)
    with pytest.raises(TypeError, match="constraint"):
        GaugeFlowMatching("simplex")
    with pytest.raises(ValueError, match="boundary"):
        GaugeFlowMatching(C, boundary="clip")
    with pytest.raises(RuntimeError, match="fit"):
        GaugeFlowMatching(C).sample(10)


def test_exact_projections_land_on_the_set():
    g = torch.Generator().manual_seed(0)
    simplex = constraint_set("simplex-dirichlet", 3)
    Y = 2 * torch.randn(500, 3, generator=g, dtype=torch.float64)
    P = project(simplex, Y)
    assert float(simplex.violation(P).max()) <= 1e-12
    assert torch.allclose(P, torch.as_tensor(project_dykstra(Y.numpy(), simplex.A.numpy(), simplex.b.numpy())),
                          atol=1e-8)
    hexagon = constraint_set("hexagon-rings")
    Y2 = 2 * torch.randn(500, 2, generator=g, dtype=torch.float64)
    P2 = project(hexagon, Y2)
    assert torch.allclose(P2, torch.as_tensor(project_dykstra(Y2.numpy(), hexagon.A.numpy(), hexagon.b.numpy())),
                          atol=1e-8)
    outside = hexagon.violation(Y2) > 0
    assert boundary_atom_fraction(hexagon, P2[outside]) == 1.0


def test_baselines_share_the_plain_net_and_handle_constraints():
    X, C = make_target("simplex-dirichlet", 300, 3, seed=2)
    plain = PlainFM(**SMALL).fit(X)
    proj, rej = ProjectedFM.from_fitted(plain, C), RejectionFM.from_fitted(plain, C)
    assert proj.net_ is plain.net_
    assert violation_rate(C, proj.sample(300, steps=5)) == 0.0
    assert violation_rate(C, rej.sample(300, steps=5)) == 0.0 and 0 < rej.acceptance_ <= 1
    refl = ReflectedFM(C, **SMALL).fit(X)
    assert float(C.violation(refl.sample(300, steps=5).double()).max()) < 1e-5
    Xb, box = make_target("box-arcsine", 300, 2, seed=0)
    assert violation_rate(box, MirrorFM(box, **SMALL).fit(Xb).sample(300, steps=5)) == 0.0
    with pytest.raises(TypeError, match="Box"):
        MirrorFM(C)
    with pytest.raises(TypeError, match="Polytope"):
        ReflectedFM(constraint_set("ellipsoid-shell"))


def test_targets_are_seeded_feasible_and_sw_detects_difference():
    for name in ("simplex-dirichlet", "box-arcsine", "hexagon-rings", "ellipsoid-shell", "lshape-star"):
        X, C = make_target(name, 500, seed=3)
        assert torch.equal(X, sample_target(name, 500, seed=3))
        assert violation_rate(C, X) == 0.0
    a, b = sample_target("hexagon-rings", 2000, seed=0), sample_target("hexagon-rings", 2000, seed=1)
    assert sliced_wasserstein(a, b) < 0.5 * sliced_wasserstein(a, sample_target("lshape-star", 2000, seed=0))
    with pytest.raises(ValueError, match="dim"):
        make_target("hexagon-rings", 10, dim=3)


def test_mmd_equals_the_unbiased_formula():
    from iclr26_gfm import mmd_rbf

    g = np.random.default_rng(1)
    X, Y = g.random((40, 2)), g.random((30, 2)) + 0.1
    bw = (0.1, 0.5)

    def k(P, R):
        d2 = ((P[:, None] - R[None]) ** 2).sum(-1)
        return sum(np.exp(-d2 / (2 * s * s)) for s in bw)

    kxx, kyy = k(X, X), k(Y, Y)
    want = ((kxx.sum() - np.trace(kxx)) / (40 * 39) + (kyy.sum() - np.trace(kyy)) / (30 * 29)
            - 2 * k(X, Y).mean())
    got = mmd_rbf(torch.as_tensor(X), torch.as_tensor(Y), bandwidths=bw, block=16)   # several blocks
    assert abs(got - want) < 1e-12 and want > 0


def test_near_boundary_fraction_on_a_box_and_bad_input():
    from iclr26_gfm import Box, near_boundary_fraction

    box = Box([0.0, 0.0], [2.0, 1.0])
    # distances to the nearest face: 0.005, 0.02, 0.009 (the top face), 0.5
    X = torch.tensor([[0.005, 0.5], [1.0, 0.02], [1.5, 0.991], [1.0, 0.5]], dtype=torch.float64)
    assert near_boundary_fraction(box, X) == 0.5
    assert near_boundary_fraction(box, X, dist=0.03) == 0.75
    # uniform on the box: the share within 0.01 of a face is 1 - (1.98 * 0.98) / 2 = 0.0298
    g = torch.Generator().manual_seed(0)
    U = torch.rand(200_000, 2, generator=g, dtype=torch.float64) * torch.tensor([2.0, 1.0])
    assert abs(near_boundary_fraction(box, U) - 0.0298) < 0.002
    # near two faces (a corner of the box): only the first two corners' neighbourhoods
    Y = torch.tensor([[0.005, 0.008], [1.995, 0.5], [1.995, 0.999], [0.02, 0.005]], dtype=torch.float64)
    assert near_boundary_fraction(box, Y, faces=2) == 0.5 and near_boundary_fraction(box, Y) == 1.0
    # uniform: the four corner squares of side 0.01 hold 4e-4 / 2 of the mass
    assert abs(near_boundary_fraction(box, U, faces=2) - 2e-4) < 1e-4
    with pytest.raises(ValueError, match="faces"):
        near_boundary_fraction(box, X, faces=5)
    with pytest.raises(TypeError, match="Polytope"):
        near_boundary_fraction(Ball([0.0, 0.0], 1.0), X)
    with pytest.raises(ValueError, match="dist"):
        near_boundary_fraction(box, X, dist=0.0)


def test_ot_pairing_is_the_optimal_matching():
    import itertools

    from iclr26_gfm.model import ot_pairing

    g = torch.Generator().manual_seed(3)
    z0, z1 = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g)
    paired = ot_pairing(z0, z1)
    best = min(float((z0 - z1[list(p)]).pow(2).sum()) for p in itertools.permutations(range(6)))
    assert abs(float((z0 - paired).pow(2).sum()) - best) < 1e-5
    assert torch.equal(torch.sort(paired, dim=0).values, torch.sort(z1, dim=0).values)   # a permutation of z1


def test_ot_pairing_in_blocks_is_optimal_within_each_block_including_a_partial_one():
    import itertools

    from iclr26_gfm.model import ot_pairing

    g = torch.Generator().manual_seed(5)
    z0, z1 = torch.randn(8, 2, generator=g), torch.randn(8, 2, generator=g)
    paired = ot_pairing(z0, z1, block=3)                         # blocks 0:3, 3:6 and the partial 6:8
    for lo, hi in ((0, 3), (3, 6), (6, 8)):
        a, b = z0[lo:hi], z1[lo:hi]
        best = min(float((a - b[list(p)]).pow(2).sum()) for p in itertools.permutations(range(hi - lo)))
        assert abs(float((a - paired[lo:hi]).pow(2).sum()) - best) < 1e-5
        assert torch.equal(torch.sort(paired[lo:hi], dim=0).values, torch.sort(b, dim=0).values)


def test_sliced_w2_to_a_fixed_reference_matches_a_direct_computation():
    from iclr26_gfm.metrics import SlicedW2To

    g = torch.Generator().manual_seed(2)
    Y = torch.rand(300, 3, generator=g, dtype=torch.float64)
    ref = SlicedW2To(Y, 64, seed=1)
    for shift in (0.0, 0.3):                                     # the reference is reused, not consumed
        X = torch.rand(300, 3, generator=g, dtype=torch.float64) + shift
        th = ref.theta.numpy()
        px, py = np.sort(X.numpy() @ th, axis=0), np.sort(Y.numpy() @ th, axis=0)
        assert abs(ref(X) - float(np.sqrt(((px - py) ** 2).mean()))) < 1e-12
        assert ref(X) == sliced_wasserstein(X, Y, 64, seed=1)
    with pytest.raises(ValueError, match="columns"):
        ref(torch.rand(5, 2, dtype=torch.float64))


def test_off_centre_polytope_warns():
    from iclr26_gfm import Polytope

    A = [[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]
    with pytest.warns(UserWarning, match="inscribed radius"):
        GaugeFlowMatching(Polytope(A, [1.0, 1.0, 1.0, 1.0], center=[0.99, 0.0]))


@pytest.mark.cuda
def test_cuda_samples_are_feasible():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    X, C = make_target("hexagon-rings", 300, seed=0)
    model = GaugeFlowMatching(C, device="cuda", **SMALL).fit(X)
    S = model.sample(500, steps=5)
    assert S.device.type == "cuda" and violation_rate(C, S.cpu()) == 0.0
