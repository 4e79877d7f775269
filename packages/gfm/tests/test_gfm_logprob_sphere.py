"""Issue 33: ``log_prob`` against the analytic change of variables, ``SphericalCap`` (exp/log, feasibility,
save/load) and a user-supplied velocity network."""
import math

import pytest
import torch
from iclr26_gfm import Ball, GaugeFlowMatching, SphericalCap, make_target, uniform_ball, violation_rate
from iclr26_gfm.baselines import MirrorFM, PlainFM, ProjectedFM, ReflectedFM, RejectionFM
from iclr26_gfm.cli import main


class LinearField(torch.nn.Module):
    """User velocity net ``v(z, t) = A z`` (time-independent): the flow is ``z₁ = e^A z₀``."""

    def __init__(self, A):
        super().__init__()
        self.A = torch.nn.Parameter(torch.as_tensor(A, dtype=torch.float32))

    def forward(self, z, t):
        return z @ self.A.T


def test_log_prob_matches_analytic_change_of_variables_on_a_ball():
    C = Ball([0.5, -1.0], 2.0)
    A = torch.tensor([[0.2, 0.5], [-0.3, -0.1]], dtype=torch.float64)
    X = C.center + 1.5 * uniform_ball(300, 2, dtype=torch.float64)
    model = GaugeFlowMatching(C, source="gaussian", n_steps_train=0, velocity_net=LinearField(A)).fit(X)
    z = (X - C.center) / 2.0
    z0 = z @ torch.linalg.matrix_exp(-A).T
    truth = -0.5 * (z0 * z0).sum(1) - math.log(2 * math.pi) - torch.trace(A) - 2 * math.log(2.0)
    got = model.log_prob(X, steps=100, solver="heun")
    assert float((got - truth).abs().max()) <= 1e-3
    assert float((model.log_prob(X, steps=100, solver="euler") - truth).abs().max()) > 1e-4  # Euler is first order
    outside = C.center + torch.tensor([[2.5, 0.0]], dtype=torch.float64)
    assert model.log_prob(outside).item() == -math.inf


def test_log_prob_of_a_rotation_flow_is_uniform_on_the_ball():
    C = Ball([0.0, 0.0], 3.0)
    X = 3.0 * 0.95 * uniform_ball(200, 2, dtype=torch.float64)
    rot = LinearField([[0.0, 0.5], [-0.5, 0.0]])                    # divergence 0, preserves the ball
    model = GaugeFlowMatching(C, n_steps_train=0, velocity_net=rot).fit(X)
    got = model.log_prob(X, steps=50)
    assert torch.allclose(got, torch.full_like(got, -math.log(math.pi * 9.0)), atol=1e-6)



def test_baseline_densities_match_their_closed_forms(zero_field):
    X, C = make_target("simplex-dirichlet", 200, 3, seed=4)
    plain = PlainFM(n_steps_train=0, velocity_net=zero_field()).fit(X)
    x = X[:50]
    gauss = -0.5 * (x * x).sum(1) - 1.5 * math.log(2 * math.pi)
    assert torch.allclose(plain.log_prob(x, steps=5), gauss, atol=1e-5)      # the CNF runs in float32
    rejection = RejectionFM.from_fitted(plain, C)
    with pytest.raises(RuntimeError, match="sample"):
        rejection.log_prob(x)
    rejection.sample(500, steps=2)
    assert torch.allclose(rejection.log_prob(x, steps=5), gauss - math.log(rejection.acceptance_), atol=1e-5)
    assert rejection.log_prob(torch.tensor([[0.9, 0.9, 0.9]], dtype=torch.float64), acceptance=0.5).item() == -math.inf
    with pytest.raises(ValueError, match="acceptance"):
        rejection.log_prob(x, acceptance=0.0)
    with pytest.raises(TypeError, match="atoms"):
        ProjectedFM.from_fitted(plain, C).log_prob(x)
    with pytest.raises(TypeError, match="ReflectedFM"):
        ReflectedFM(C, hidden=(8,), n_steps_train=0).fit(X).log_prob(x)
    Xb, box = make_target("box-arcsine", 200, 2, seed=0)
    mirror = MirrorFM(box, n_steps_train=0, velocity_net=zero_field()).fit(Xb)
    xb = Xb[((Xb > 0.01) & (Xb < 0.99)).all(dim=1)][:50]               # away from the logit clamp at 1e-6
    y = torch.logit(xb)                                               # box [0, 1]^2: x = sigmoid(y)
    analytic = -0.5 * (y * y).sum(1) - math.log(2 * math.pi) - torch.log(xb * (1 - xb)).sum(1)
    assert torch.allclose(mirror.log_prob(xb, steps=3), analytic, atol=1e-5)
    assert mirror.log_prob(torch.tensor([[1.5, 0.5]], dtype=torch.float64)).item() == -math.inf


def test_trained_model_log_prob_is_finite():
    C = Ball([0.0, 0.0, 0.0], 1.0)
    X = 0.8 * uniform_ball(400, 3, dtype=torch.float64)
    model = GaugeFlowMatching(C, source="gaussian", boundary="none", hidden=(32, 32), n_steps_train=50,
                              batch_size=64).fit(X)
    lp = model.log_prob(X[:100], steps=40)
    assert lp.shape == (100,) and torch.isfinite(lp).all()


def test_spherical_cap_exp_log_round_trip_and_bad_input():
    cap = SphericalCap([1.0, 2.0, 2.0], 1.2)
    g = torch.Generator().manual_seed(0)
    v = 1.19 * uniform_ball(2000, 2, g, dtype=torch.float64)
    x = cap.exp(v)
    assert torch.allclose(torch.linalg.norm(x, dim=1), torch.ones(2000, dtype=torch.float64), atol=1e-14)
    assert float((cap.log(x) - v).abs().max()) <= 1e-10
    assert float((cap.exp(cap.log(x)) - x).abs().max()) <= 1e-10
    assert violation_rate(cap, x) == 0.0 and float(cap.violation(x).max()) <= 1e-12
    assert not cap.contains(-cap.pole[None]).item()
    with pytest.raises(ValueError, match="angle"):
        SphericalCap([0.0, 0.0, 1.0], 4.0)
    with pytest.raises(ValueError, match="pole"):
        SphericalCap([0.0, 0.0, 0.0], 1.0)


def test_gfm_on_a_spherical_cap_is_feasible_and_saves(tmp_path, capsys):
    cap = SphericalCap([0.0, 0.0, 1.0], 0.6)
    g = torch.Generator().manual_seed(1)
    X = cap.exp(0.6 * uniform_ball(500, 2, g, dtype=torch.float64))
    X = X[cap.contains(X)]
    model = GaugeFlowMatching(cap, hidden=(32, 32), n_steps_train=30, batch_size=64).fit(X)
    S = model.sample(2000, steps=20)
    assert S.shape == (2000, 3) and violation_rate(cap, S) == 0.0
    model.save(tmp_path / "m.pt")
    again = GaugeFlowMatching.load(tmp_path / "m.pt")
    assert isinstance(again.constraint, SphericalCap)
    assert torch.equal(again.sample(50, steps=5), GaugeFlowMatching.load(tmp_path / "m.pt").sample(50, steps=5))
    assert torch.isfinite(model.log_prob(X[:20], steps=10)).any()
    assert main(["sample", "--model", str(tmp_path / "m.pt"), "-n", "100", "--steps", "5", "--device", "cpu",
                 "--out", str(tmp_path)]) == 0
    assert "violation rate 0," in capsys.readouterr().out


def test_user_velocity_net_is_trained_copied_and_needed_to_load(tmp_path):
    C = Ball([0.0, 0.0], 1.0)
    X = 0.9 * uniform_ball(300, 2, dtype=torch.float64)
    user = LinearField([[0.0, 0.0], [0.0, 0.0]])
    model = GaugeFlowMatching(C, n_steps_train=20, batch_size=64, velocity_net=user).fit(X)
    assert isinstance(model.net_, LinearField) and model.net_ is not user
    assert float(user.A.detach().abs().sum()) == 0 and float(model.net_.A.detach().abs().sum()) > 0  # trained a copy
    assert violation_rate(C, model.sample(500, steps=10)) == 0.0
    model.save(tmp_path / "u.pt")
    with pytest.raises(ValueError, match="velocity_net"):
        GaugeFlowMatching.load(tmp_path / "u.pt")
    again = GaugeFlowMatching.load(tmp_path / "u.pt", velocity_net=LinearField([[0.0, 0.0], [0.0, 0.0]]))
    assert torch.equal(again.net_.A, model.net_.A)
    with pytest.raises(TypeError, match="velocity_net"):
        GaugeFlowMatching(C, velocity_net=lambda z, t: z)
    wrong = torch.nn.Linear(2, 3)
    with pytest.raises(ValueError, match="velocity_net"):
        GaugeFlowMatching(C, n_steps_train=1, velocity_net=_TwoArg(wrong)).fit(X)


class _TwoArg(torch.nn.Module):
    def __init__(self, lin):
        super().__init__()
        self.lin = lin

    def forward(self, z, t):
        return self.lin(z)
