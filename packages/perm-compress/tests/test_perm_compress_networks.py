import numpy as np
import pytest
import torch
from iclr26_perm_compress import (
    WeightedReplacementSampler,
    WeightedTwoLayerNet,
    attach_compressed_dynamics,
    compress_dataset,
    compress_two_layer,
    dense_two_layer,
    lth_experiment,
    moments,
    random_subnetwork,
)
from torch import nn


def _dense(width=300, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, width), nn.Tanh(), nn.Linear(width, 3)).double()


def test_unit_weights_equal_the_dense_net_and_folding_keeps_outputs():
    net = _dense()
    x = torch.rand(64, 2, dtype=torch.float64)
    w = WeightedTwoLayerNet.from_dense(net, np.arange(300), np.ones(300))
    assert torch.equal(w(x), net(x))
    sub = WeightedTwoLayerNet.from_dense(net, np.arange(0, 300, 3), np.linspace(0.5, 2, 100))
    torch.testing.assert_close(sub.fold()(x), sub(x), rtol=1e-12, atol=1e-12)


def test_compressed_net_is_close_and_keeps_neuron_moments():
    net = _dense(width=600)
    small = compress_two_layer(net, k=2, target_width=150, random_state=0)  # 3 outputs: objects in R^6
    assert small.width <= 150
    assert float(small.c.sum()) == pytest.approx(600, rel=1e-9)
    dense_objects = WeightedTwoLayerNet.from_dense(net, np.arange(600), np.ones(600)).neuron_objects()
    p0 = moments(dense_objects, None, 2)
    p1 = moments(small.neuron_objects(), small.c.numpy(), 2)
    np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-9 * np.abs(p0).max())
    x = torch.rand(500, 2, dtype=torch.float64) * 2 - 1
    with torch.no_grad():
        err = (small(x) - net(x)).pow(2).mean().sqrt()
        rnd = (random_subnetwork(net, 150, rng=np.random.default_rng(0))(x) - net(x)).pow(2).mean().sqrt()
    assert err < 0.5 * rnd


def test_gradient_hook_gives_the_per_neuron_gradient():
    net = WeightedTwoLayerNet.from_dense(_dense(width=20), np.arange(20), np.linspace(0.3, 4, 20)).double()
    attach_compressed_dynamics(net)
    x, y = torch.rand(16, 2, dtype=torch.float64), torch.rand(16, 3, dtype=torch.float64)
    loss = lambda: ((net(x) - y) ** 2).sum()  # noqa: E731
    loss().backward()
    j, eps = 7, 1e-6
    for param, index in ((net.hidden.weight, (j, 1)), (net.hidden.bias, (j,)), (net.output.weight, (2, j))):
        with torch.no_grad():
            param[index] += eps
            up = loss().item()
            param[index] -= 2 * eps
            down = loss().item()
            param[index] += eps
        fd = (up - down) / (2 * eps)
        assert param.grad[index].item() == pytest.approx(fd / net.c[j].item(), rel=1e-6)
    assert net.output.bias.grad is not None  # unscaled; only neuron parameters carry the hook


def test_bad_nets_and_zero_weights_are_refused():
    with pytest.raises(TypeError, match="net:"):
        compress_two_layer(nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1)))
    with pytest.raises(TypeError, match="weighted_net"):
        attach_compressed_dynamics(_dense())
    net = WeightedTwoLayerNet(2, 5, weights=torch.tensor([1.0, 0.0, 2.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="prune"):
        attach_compressed_dynamics(net)
    assert net.prune().width == 4
    with pytest.raises(ValueError, match="target_size"):
        compress_two_layer(_dense(width=50), k=3, target_width=10)


def test_lth_runs_are_deterministic_and_compressed_tracks_full():
    kw = dict(width=200, target_width=40, k=2, n_train=512, n_test=500, epochs=2, batch_size=128, log_every=1, seed=3)
    a, b = lth_experiment(**kw), lth_experiment(**kw)
    assert a["curves"] == b["curves"]
    assert set(a["curves"]) == {"full", "compressed", "random", "random_rescaled"}
    assert a["initial_rmse_to_full"]["compressed"] < a["initial_rmse_to_full"]["random"]


def test_dataset_compression_and_weighted_sampler():
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (800, 2)), rng.normal(size=800)
    Xc, yc, w = compress_dataset(X, y, k=2, target_size=50, random_state=0)
    assert Xc.shape[0] == yc.shape[0] == w.shape[0] <= 50 and w.sum() == pytest.approx(800)
    objects = np.column_stack([X, y])
    np.testing.assert_allclose(moments(np.column_stack([Xc, yc]), w, 2), moments(objects, None, 2), rtol=1e-9,
                               atol=1e-9)
    with pytest.raises(ValueError, match="y:"):
        compress_dataset(X, y[:10])
    sampler = WeightedReplacementSampler([1.0, 0.0, 3.0], 4000, generator=torch.Generator().manual_seed(0))
    counts = np.bincount(list(sampler), minlength=3)
    assert len(sampler) == 4000 and counts[1] == 0 and abs(counts[2] / 4000 - 0.75) < 0.03
    with pytest.raises(ValueError, match="weights"):
        WeightedReplacementSampler([-1.0, 2.0], 10)


def test_dense_two_layer_uses_the_generator():
    a = dense_two_layer(2, 10, generator=torch.Generator().manual_seed(1))
    b = dense_two_layer(2, 10, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a.hidden.weight, b.hidden.weight) and a.hidden.weight.abs().max() <= 2**-0.5


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_weighted_net_on_cuda_matches_cpu():
    net = WeightedTwoLayerNet.from_dense(_dense(width=30), np.arange(30), np.linspace(1, 2, 30))
    x = torch.rand(8, 2, dtype=torch.float64)
    gpu = WeightedTwoLayerNet.from_dense(net.to("cuda"), np.arange(30), np.ones(30))
    torch.testing.assert_close(gpu(x.cuda()).cpu(), net.cpu()(x))
