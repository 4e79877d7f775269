"""Deep-MLP compression: exactness for polynomial activations, the two-layer special case, the product 1/c rule."""
import sys

import numpy as np
import pytest
import torch
from iclr26_perm_compress import attach_compressed_dynamics, compress_two_layer, dense_two_layer
from iclr26_perm_compress.deep import (
    WeightedMLP,
    compress_mlp,
    dense_mlp,
    magnitude_prune_mlp,
    random_mlp_subnetwork,
)
from torch import nn


class Square(nn.Module):
    """``x -> x^2``: a degree-2 polynomial activation."""

    def forward(self, x):
        return x * x


def _bottleneck(activation=nn.Tanh, sizes=(2, 150, 3, 120, 1), seed=0):
    return dense_mlp(sizes, activation, generator=torch.Generator().manual_seed(seed)).double()


def test_polynomial_activation_is_reproduced_exactly():
    # act = x^2 (p = 2): v act(w.a + b) has degree 3 in the object, so k = 3 keeps every layer's output exactly
    net = _bottleneck(Square)
    small = compress_mlp(net, (84, None, 60), k=3, random_state=0)
    assert small.hidden_widths[0] <= 84 and small.hidden_widths[1] == 3 and small.hidden_widths[2] <= 60
    assert small.weights(0).sum().item() == pytest.approx(150, rel=1e-9)
    assert small.weights(2).sum().item() == pytest.approx(120, rel=1e-9)
    x = torch.rand(500, 2, dtype=torch.float64) * 2 - 1
    with torch.no_grad():
        ref, out = net(x), small(x)
        random = random_mlp_subnetwork(net, (84, None, 60), np.random.default_rng(0))(x)
    scale = ref.abs().max()
    assert (out - ref).abs().max() <= 1e-8 * scale
    assert (random - ref).abs().max() > 1e-3 * scale  # a random subset of the same mass is not exact
    assert torch.allclose(small.fold()(x), out, atol=1e-12)


def test_order_below_the_activation_degree_is_not_exact():
    net = _bottleneck(Square)
    small = compress_mlp(net, (84, None, 60), k=2, random_state=0)
    x = torch.rand(500, 2, dtype=torch.float64) * 2 - 1
    with torch.no_grad():
        assert (small(x) - net(x)).abs().max() > 1e-6 * net(x).abs().max()


def test_two_layer_case_is_compress_two_layer():
    gen = torch.Generator().manual_seed(3)
    two = dense_two_layer(2, 400, 1, generator=gen).double()
    plain = nn.Sequential(two.hidden, two.activation, two.output)
    ours = compress_mlp(plain, [60], k=3, random_state=5)
    ref = compress_two_layer(two, k=3, target_width=60, random_state=5)
    assert torch.equal(ours.linears[0].weight, ref.hidden.weight)
    assert torch.allclose(ours.weights(0), ref.c, rtol=1e-12)


def test_kept_layers_give_the_same_net():
    net = _bottleneck()
    same = compress_mlp(net, (None, 3, 500), k=2)
    x = torch.randn(50, 2, dtype=torch.float64)
    with torch.no_grad():
        assert torch.equal(same(x), net(x))
    assert same.hidden_widths == [150, 3, 120]


def _expand(net: WeightedMLP) -> WeightedMLP:
    """The plain net where neuron j of every hidden layer is repeated ``c_j`` (integer) times."""
    reps = [torch.repeat_interleave(torch.arange(w), net.weights(i).long()) for i, w in enumerate(net.hidden_widths)]
    linears = []
    for i, lin in enumerate(net.linears):
        rows = reps[i] if i < len(reps) else torch.arange(lin.out_features)
        cols = reps[i - 1] if i > 0 else torch.arange(lin.in_features)
        new = nn.Linear(cols.numel(), rows.numel()).double()
        with torch.no_grad():
            new.weight.copy_(lin.weight[rows][:, cols])
            new.bias.copy_(lin.bias[rows])
        linears.append(new)
    return WeightedMLP(linears, list(net.activations))


def _weighted_pair():
    """A small weighted MLP with integer ``c`` and its expanded plain net."""
    net = _bottleneck(sizes=(2, 5, 4, 3, 2))
    for i, c in enumerate(([1, 2, 3, 1, 2], [2, 1, 1, 3], [3, 1, 2])):
        net.weights(i).copy_(torch.tensor(c, dtype=torch.float64))
    return net, _expand(net)


@pytest.mark.parametrize(("optimizer", "hooked"), [(torch.optim.Adam, True), (torch.optim.SGD, True),
                                                   (torch.optim.SGD, False)])
def test_product_rule_follows_the_expanded_net(optimizer, hooked):
    net, big = _weighted_pair()
    if hooked:
        attach_compressed_dynamics(net)
    gen = torch.Generator().manual_seed(0)
    x, y = (torch.randn(64, 2, generator=gen, dtype=torch.float64) for _ in range(2))
    with torch.no_grad():
        assert torch.allclose(net(x), big(x), atol=1e-12)
    opts = [optimizer(m.parameters(), lr=1e-2) for m in (net, big)]
    for _ in range(20):
        for m, opt in zip((net, big), opts):
            opt.zero_grad()
            (m(x) - y).square().mean().backward()
            opt.step()
    with torch.no_grad():
        # with the rule the weighted net is the expanded net; without it (SGD) the trajectories part
        # (Adam is nearly invariant to a per-parameter gradient scale, so the rule shows under SGD)
        assert torch.allclose(net(x), big(x), atol=1e-10) == hooked


def test_random_subnetwork_keeps_the_mass():
    net = _bottleneck()
    sub = random_mlp_subnetwork(net, (30, None, 40), np.random.default_rng(1))
    assert sub.hidden_widths == [30, 3, 40]
    assert sub.weights(0).sum().item() == pytest.approx(150) and sub.weights(2).sum().item() == pytest.approx(120)
    assert random_mlp_subnetwork(net, (30, None, 40), np.random.default_rng(1), same_mass=False).weights(0).sum() == 30


def test_bad_inputs_are_refused():
    net = _bottleneck()
    with pytest.raises(ValueError, match=r"target_widths\[0\].*C\(m \+ k, k\) = 84.*m = 6"):
        compress_mlp(net, (40, None, 60), k=3)
    with pytest.raises(ValueError, match="target_widths: expected one value per hidden layer"):
        compress_mlp(net, (84, 60), k=3)
    with pytest.raises(ValueError, match="k: expected an integer order"):
        compress_mlp(net, (84, None, 60), k=0)
    with pytest.raises(ValueError, match=r"target_widths\[2\]"):
        compress_mlp(net, (84, None, 0), k=3)
    with pytest.raises(TypeError, match="net: expected nn.Sequential"):
        compress_mlp(nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1)), [2])
    with pytest.raises(TypeError, match="net: expected nn.Sequential"):
        compress_mlp(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1, bias=False)), [2])
    with pytest.raises(ValueError, match="sizes"):
        dense_mlp((2, 3))
    # equally wide neighbours: the object dimension exceeds any width, so no order fits
    wide = dense_mlp((2, 100, 100, 1))
    with pytest.raises(ValueError, match=r"target_widths\[0\].*m = 103"):
        compress_mlp(wide, (50, 50), k=1)


def test_magnitude_pruning_keeps_the_largest_l1_neurons():
    pytest.importorskip("torch_pruning")
    net = _bottleneck(sizes=(2, 20, 3, 10, 1))
    pruned = magnitude_prune_mlp(net, (5, None, 4))
    assert pruned.hidden_widths == [5, 3, 4]
    score = net.linears[0].weight.abs().sum(1) + net.linears[1].weight.abs().sum(0)
    top = torch.sort(torch.argsort(score, descending=True)[:5]).values
    assert torch.equal(pruned.linears[0].weight, net.linears[0].weight[top])
    assert torch.equal(pruned.linears[1].weight, net.linears[1].weight[:, top])


def test_magnitude_pruning_without_torch_pruning_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_pruning", None)
    with pytest.raises(ImportError, match=r"iclr26-perm-compress\[pruning\]"):
        magnitude_prune_mlp(_bottleneck(), (30, None, 30))
