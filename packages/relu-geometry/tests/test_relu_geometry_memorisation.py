"""The tangent kernel against autograd, the self-influence against a matrix exponential and a closed form,
the stable initialisation keeping a wide net's neurons alive, and the plateau stop of GD."""
import numpy as np
import pytest
import scipy.linalg
import torch
from iclr26_relu_geometry import RunConfig, TwoLayerReLU, sharpness, train_gd
from iclr26_relu_geometry.experiments import run_experiment
from iclr26_relu_geometry.memorisation import kernel_self_influence, tangent_kernel
from iclr26_relu_geometry.training import stable_init


def _net(d=3, width=7, seed=0):
    return TwoLayerReLU(d, width, generator=torch.Generator().manual_seed(seed)).double()


def test_tangent_kernel_is_the_autograd_jacobian_gram():
    model, X = _net(), torch.randn(9, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    params = list(model.parameters())
    rows = [torch.cat([g.reshape(-1) for g in torch.autograd.grad(model(X[i:i + 1]).sum(), params)]) for i in range(9)]
    J = torch.stack(rows).numpy()
    assert tangent_kernel(model, X) == pytest.approx(J @ J.T, rel=1e-10, abs=1e-12)


def test_self_influence_is_the_diagonal_of_the_linearised_gd_smoother():
    model, X = _net(), torch.randn(9, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    theta = tangent_kernel(model, X)
    eta, steps = 0.2, 50
    S = np.eye(9) - scipy.linalg.expm(-(eta * steps / 9) * theta)  # loss ½·mean: rate 2·½·η·T/n
    si = kernel_self_influence(model, X, eta, steps)
    assert si == pytest.approx(np.diag(S), abs=1e-10)
    assert np.all(si <= kernel_self_influence(model, X, eta, 10 * steps) + 1e-12)
    with pytest.raises(ValueError, match="eta"):
        kernel_self_influence(model, X, -1.0, steps)


def test_self_influence_of_a_dead_network_is_the_mean_smoother():
    model, X = _net(), torch.rand(6, 3, dtype=torch.float64)
    with torch.no_grad():  # every neuron off on [0, 1]^3: only the output bias β moves f, Θ = 11ᵀ
        model.W.fill_(-1.0)
        model.b.fill_(1.0)
    si = kernel_self_influence(model, X, 0.2, 10)
    assert si == pytest.approx(np.full(6, -np.expm1(-0.2 * 10 / 6 * 6) / 6))


def test_stable_init_keeps_a_wide_net_alive_where_the_default_catapults():
    dead, lam = {}, {}
    for frac in (0.0, 0.5):  # width 512 > n = 128: the torch default starts far above 2/η = 10
        row = run_experiment(RunConfig(alpha=0.0, n=128, width=512, steps=400, n_test=100, seed=101,
                                       init_sharpness=frac))[0]
        dead[frac], lam[frac] = row["dead_fraction"], row["sharpness"]
    assert dead[0.0] > 0.25 and lam[0.0] < 3.0  # the catapult killed a third of the neurons and flattened the net
    assert dead[0.5] < 0.05 and lam[0.5] > lam[0.0]


def test_stable_init_meets_its_target_and_leaves_a_stable_net_alone():
    X = torch.nn.functional.normalize(torch.randn(128, 5, generator=torch.Generator().manual_seed(3)), dim=1)
    y = torch.randn(128, generator=torch.Generator().manual_seed(4))
    model = TwoLayerReLU(5, 1024, generator=torch.Generator().manual_seed(5))

    assert sharpness(model, X, y) > 10.0
    c = stable_init(model, X, y, eta=0.2, fraction=0.5)
    assert 0 < c < 1 and sharpness(model, X, y) <= 5.0 * 1.02
    assert stable_init(model, X, y, eta=0.2, fraction=0.9) == 1.0
    with pytest.raises(ValueError, match="fraction"):
        stable_init(model, X, y, eta=0.2, fraction=1.5)


def test_gd_stops_at_a_plateau_and_not_before():
    X = torch.rand(64, 2, generator=torch.Generator().manual_seed(6))
    y = X.sum(1)
    runs = {}
    for tol in (0.5, 1e-9):
        model = TwoLayerReLU(2, 16, generator=torch.Generator().manual_seed(7))
        runs[tol] = train_gd(model, X, y, 0.1, 3000, log_every=50, plateau_window=200, plateau_tol=tol)
    assert runs[0.5].plateaued and runs[0.5].steps[-1] < 3000 and runs[0.5].steps[-1] % 200 == 0
    assert not runs[1e-9].plateaued and runs[1e-9].steps[-1] == 3000
    with pytest.raises(ValueError, match="plateau_window"):
        train_gd(TwoLayerReLU(2, 4), X, y, 0.1, 10, log_every=30, plateau_window=100)
