import warnings

import pytest
import torch
from iclr26_stod import (
    DirectEncoder,
    EncodedSNN,
    SpikingConvNet,
    collinearity_matrix,
    gradient_temporal_collinearity,
    gtc_hessian_bound,
    per_step_gradients,
)
from iclr26_stod.gtc import reduce_collinearity
from torch import nn


class PerStepMLP(nn.Module):
    """A time-invariant, non-spiking backbone: the same map at every step."""

    def __init__(self):
        super().__init__()
        self.first_layer = nn.Linear(16, 8)
        self.rest = nn.Sequential(nn.Tanh(), nn.Linear(8, 3))

    def forward(self, x_seq):
        return self.rest(self.first_layer(x_seq.flatten(2)))


def test_direct_encoding_with_time_invariant_network_is_fully_collinear():
    torch.manual_seed(0)
    model = EncodedSNN(DirectEncoder(5), PerStepMLP())
    x, y = torch.rand(6, 1, 4, 4), torch.randint(0, 3, (6,))
    for wrt in ("input", "first_layer"):
        assert gradient_temporal_collinearity(model, x, y, wrt=wrt) == pytest.approx(1.0, abs=1e-6)


def test_orthogonal_gradients_and_scale_invariance():
    G = torch.zeros(3, 4)
    G[0, 0], G[1, 1], G[2, 2] = 1.0, 2.0, 3.0
    assert reduce_collinearity(collinearity_matrix(G), "max") == pytest.approx(0.0)
    H = torch.randn(4, 10)
    scaled = H.clone()
    scaled[2] *= 7.5
    assert torch.allclose(collinearity_matrix(H), collinearity_matrix(scaled), atol=1e-12)


def test_matrix_symmetric_unit_diagonal():
    torch.manual_seed(0)
    model = EncodedSNN(DirectEncoder(4), SpikingConvNet())
    x, y = torch.rand(8, 1, 8, 8), torch.randint(0, 10, (8,))
    C = gradient_temporal_collinearity(model, x, y, reduce="matrix")
    assert C.shape == (4, 4)
    assert torch.allclose(C, C.T)
    assert torch.allclose(torch.diagonal(C), torch.ones(4, dtype=C.dtype), atol=1e-6)


def test_first_layer_components_match_per_step_weight_aliases():
    torch.manual_seed(0)
    net = SpikingConvNet().eval()
    model = EncodedSNN(DirectEncoder(3), net)
    x, y = torch.rand(4, 1, 8, 8), torch.randint(0, 10, (4,))
    G = per_step_gradients(model, x, y, wrt="first_layer")
    # independent computation: run step t's first convolution with its own copy of W1
    W = net.first_layer.weight
    aliases = [W.detach().clone().requires_grad_(True) for _ in range(3)]
    z = torch.stack([nn.functional.conv2d(x, aliases[t], padding=1) for t in range(3)])
    h = net.block1.inner[1](z.flatten(0, 1)).reshape(3, 4, 16, 8, 8)
    logits = net.head(net.lif2(net.block2(net.lif1(h)))).mean(0)
    grads = torch.autograd.grad(nn.functional.cross_entropy(logits, y), aliases)
    assert torch.allclose(G, torch.stack(grads), atol=1e-6)
    assert torch.allclose(G.sum(0), torch.autograd.grad(nn.functional.cross_entropy(model(x), y), W)[0], atol=1e-6)


def test_zero_gradient_gives_nan_with_warning():
    G = torch.randn(3, 5)
    G[1] = 0
    with pytest.warns(UserWarning, match="zero"):
        C = collinearity_matrix(G)
    assert torch.isnan(C[0, 1]) and not torch.isnan(C[0, 2])


def test_bad_input():
    model = EncodedSNN(DirectEncoder(1), SpikingConvNet())
    with pytest.raises(ValueError, match="T >= 2"):
        gradient_temporal_collinearity(model, torch.rand(2, 1, 8, 8), torch.zeros(2, dtype=torch.long))
    model = EncodedSNN(DirectEncoder(2), SpikingConvNet())
    with pytest.raises(ValueError, match="wrt"):
        gradient_temporal_collinearity(model, torch.rand(2, 1, 8, 8), torch.zeros(2, dtype=torch.long), wrt="bias")


def _softmax_setup(copies, T=4):
    torch.manual_seed(3)
    x = torch.randn(5)
    xs = torch.stack([x + (0 if copies else 0.8) * torch.randn(5) for _ in range(T)])  # [T, 5]
    W = torch.randn(3, 5, dtype=torch.float64) * 0.3
    y = 1
    xs = xs.double()

    def loss(w):
        return nn.functional.cross_entropy((w @ xs.sum(0)).unsqueeze(0), torch.tensor([y]))

    z = (W @ xs.sum(0)).detach()
    p = torch.softmax(z, 0)
    dz = p - nn.functional.one_hot(torch.tensor(y), 3).double()
    G = torch.stack([torch.outer(dz, xs[t]) for t in range(T)])  # per-step contributions to dL/dW
    H = torch.autograd.functional.hessian(loss, W).reshape(15, 15)
    c = float(torch.linalg.eigvalsh(torch.diag(p) - torch.outer(p, p)).max() / dz.pow(2).sum())
    return float(torch.linalg.eigvalsh(H).max()), gtc_hessian_bound(G), c


def test_hessian_bound_on_linear_softmax():
    lam, bound, c = _softmax_setup(copies=False)
    assert lam <= c * bound * (1 + 1e-9)
    lam, bound, c = _softmax_setup(copies=True)  # identical copies: the bound is attained
    assert lam == pytest.approx(c * bound, rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gtc_hessian_bound(torch.ones(2, 3)) == pytest.approx(2 * 3 * 2)
