"""Sharpness by Hessian-vector products against full Hessians and closed forms; GD stability and determinism."""
import math

import pytest
import torch
from iclr26_relu_geometry import TwoLayerReLU, sharpness, train_gd
from torch import nn


def full_hessian_top(model, X, y):
    params = list(model.parameters())
    shapes = [p.shape for p in params]
    flat0 = torch.cat([p.detach().reshape(-1) for p in params])

    def loss_of(flat):
        out, start = {}, 0
        for (name, _), shape in zip(model.named_parameters(), shapes):
            size = math.prod(shape)
            out[name] = flat[start:start + size].reshape(shape)
            start += size
        pred = torch.func.functional_call(model, out, (X,))
        return 0.5 * torch.mean((pred - y) ** 2)

    H = torch.autograd.functional.hessian(loss_of, flat0)
    return float(torch.linalg.eigvalsh(H).max())


def test_power_iteration_matches_full_hessian_on_tiny_net():
    g = torch.Generator().manual_seed(0)
    model = TwoLayerReLU(2, 5, generator=g).double()
    X = torch.randn(20, 2, generator=g, dtype=torch.float64)
    y = torch.randn(20, generator=g, dtype=torch.float64)
    expected = full_hessian_top(model, X, y)
    assert sharpness(model, X, y, iters=5000, tol=1e-12) == pytest.approx(expected, rel=1e-4)
    assert sharpness(model, X, y, method="lanczos", tol=1e-10) == pytest.approx(expected, rel=1e-4)


def test_linear_model_sharpness_is_top_eigenvalue_of_gram():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(50, 4, generator=g, dtype=torch.float64) * torch.tensor([1.0, 2.0, 0.5, 0.1], dtype=torch.float64)
    model = nn.Linear(4, 1, bias=False).double()
    expected = float(torch.linalg.eigvalsh(X.T @ X / 50).max())
    assert sharpness(model, X, torch.zeros(50, dtype=torch.float64), iters=2000, tol=1e-12) == pytest.approx(
        expected, rel=1e-6)


class Saddle(nn.Module):
    """f = θ1² + θ2 at θ = 0 with y = 1.5: L = ½(f − y)², Hessian diag(−3, 1)."""

    def __init__(self):
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(2, dtype=torch.float64))

    def forward(self, X):
        return (self.theta[0] ** 2 + self.theta[1]) * torch.ones(X.shape[0], dtype=X.dtype)


def test_negative_dominant_eigenvalue_is_not_returned_as_max():
    X, y = torch.ones(3, 1, dtype=torch.float64), torch.full((3,), 1.5, dtype=torch.float64)
    assert sharpness(Saddle(), X, y, iters=500, tol=1e-10) == pytest.approx(1.0, rel=1e-6)


class Quadratic(nn.Module):
    """L = ½ a θ² through f = sqrt(a)·θ with y = 0."""

    def __init__(self, a):
        super().__init__()
        self.a = a
        self.theta = nn.Parameter(torch.ones((), dtype=torch.float64))

    def forward(self, X):
        return math.sqrt(self.a) * self.theta * torch.ones(X.shape[0], dtype=X.dtype)


@pytest.mark.parametrize("factor, diverges", [(0.9, False), (1.1, True)])
def test_gd_on_quadratic_diverges_iff_eta_exceeds_two_over_a(factor, diverges):
    a = 4.0
    X, y = torch.ones(2, 1, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
    model = Quadratic(a)
    assert sharpness(model, X, y) == pytest.approx(a)
    hist = train_gd(model, X, y, eta=factor * 2 / a, steps=500)
    assert hist.diverged is diverges


def test_sharpness_strict_raises_without_convergence():
    g = torch.Generator().manual_seed(0)
    model = TwoLayerReLU(3, 50, generator=g)
    X, y = torch.randn(40, 3, generator=g), torch.randn(40, generator=g)
    with pytest.raises(RuntimeError, match="did not converge"):
        sharpness(model, X, y, iters=2, tol=1e-12, strict=True)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        sharpness(model, X, y, iters=2, tol=1e-12)


def _sphere_problem(n=128, seed=0):
    from iclr26_relu_geometry import RunConfig, make_data

    return make_data(RunConfig(alpha=0.0, n=n, n_test=256, seed=seed))


def test_same_seed_gives_bitwise_identical_history():
    X, y, Xt, yt, ct, _ = _sphere_problem(64)
    hists = []
    for _ in range(2):
        model = TwoLayerReLU(5, 32, generator=torch.Generator().manual_seed(3))
        hists.append(train_gd(model, X, y, 0.2, 150, Xt, yt, ct, log_every=10, sharpness_every=50).to_dict())
    assert hists[0] == hists[1]
    assert len(hists[0]["test_mse_clean"]) == len(hists[0]["steps"]) == 16


def test_gd_reaches_the_edge_of_stability_plateau():
    X, y, *_ = _sphere_problem(128)
    model = TwoLayerReLU(5, 256, generator=torch.Generator().manual_seed(0))
    eta, steps = 0.2, 1200
    hist = train_gd(model, X, y, eta, steps, sharpness_every=100, sharpness_iters=30)
    late = [s for t, s in zip(hist.sharpness_steps, hist.sharpness) if t >= 0.75 * steps]
    assert not hist.diverged and late
    assert max(abs(s * eta / 2 - 1) for s in late) < 0.15


def test_training_arguments_are_checked_and_divergence_is_flagged():
    X, y, *_ = _sphere_problem(32)
    model = TwoLayerReLU(5, 8)
    with pytest.raises(ValueError, match="eta"):
        train_gd(model, X, y, eta=0.0, steps=10)
    with pytest.raises(ValueError, match="y"):
        train_gd(model, X, y[:-1], eta=0.1, steps=10)
    with pytest.raises(ValueError, match="width"):
        TwoLayerReLU(5, 0)
    hist = train_gd(TwoLayerReLU(5, 64, generator=torch.Generator().manual_seed(0)), X, 100 * y, eta=50.0, steps=200)
    assert hist.diverged and hist.steps[-1] < 200


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_run_matches_cpu_sharpness():
    from iclr26_relu_geometry import RunConfig, run_experiment

    config = RunConfig(alpha=0.3, n=64, n_test=64, width=32, steps=100, sharpness_iters=200)
    cpu, _, _ = run_experiment(config, "cpu")
    gpu, model, _ = run_experiment(config, "cuda")
    assert model.W.device.type == "cuda"
    assert gpu["sharpness"] == pytest.approx(cpu["sharpness"], rel=1e-3)
    assert gpu["train_mse"] == pytest.approx(cpu["train_mse"], rel=1e-3)
