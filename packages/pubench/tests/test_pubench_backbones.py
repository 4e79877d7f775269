"""The paper budget: the official per-dataset networks (parameter counts computed by hand from the layer shapes),
early stopping on validation proxy accuracy with patience 10, and the official split seeds."""
import numpy as np
import pytest
import torch
from iclr26_pubench import NNPU, REGISTRY, make_pu_split
from iclr26_pubench.bench import OFFICIAL_SEEDS, official_seed
from iclr26_pubench.methods import build_backbone, official_backbone


def _n_params(module):
    return sum(p.numel() for p in module.parameters())


def _conv(c_in, c_out, k):
    return c_in * c_out * k * k + c_out


def test_official_parameter_counts():
    # CIFAR-10: six 3x3 conv+BN layers (96, 96, 96, 192, 192, 192), FC 12288-1000-1000-1
    convs = _conv(3, 96, 3) + 2 * _conv(96, 96, 3) + _conv(96, 192, 3) + 2 * _conv(192, 192, 3)
    bn = 2 * (3 * 96 + 3 * 192)
    cifar = convs + bn + (192 * 8 * 8 * 1000 + 1000) + (1000 * 1000 + 1000) + 1001
    assert cifar == 14_291_513 == _n_params(official_backbone((3, 32, 32)))
    lenet = _conv(1, 10, 5) + _conv(10, 20, 5) + (320 * 50 + 50) + 51
    assert lenet == 21_381 == _n_params(official_backbone((1, 28, 28)))
    stages = [(1, 32), (32, 64), (64, 128), (128, 256)]
    mri = sum(_conv(a, b, 3) + _conv(b, b, 3) + 4 * b for a, b in stages) + (256 * 64 + 64) + 65
    assert mri == 1_190_113 == _n_params(official_backbone((1, 128, 128)))
    for d in (57, 384):
        assert _n_params(official_backbone((d,))) == d * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128 \
            + 128 * 64 + 64 + 65 == 512 * d + 173_057
    for shape in ((3, 32, 32), (1, 28, 28), (1, 128, 128), (57,)):
        net = official_backbone(shape).eval()
        assert net(torch.zeros(2, *shape)).shape == (2, 1)


def test_backbone_bad_input():
    with pytest.raises(ValueError, match="needs images"):
        build_backbone("lenet", (64,))
    with pytest.raises(ValueError, match="at least 16x16"):
        build_backbone("lenet", (1, 8, 8))
    with pytest.raises(ValueError, match="expected one of"):
        build_backbone("resnet", (3, 32, 32))


def test_paper_budget_uses_the_official_network_and_early_stopping():
    nnpu = REGISTRY["nnpu"].build("paper")
    assert (nnpu.backbone, nnpu.patience, nnpu.selection, nnpu.lr, nnpu.epochs) == ("official", 10, "proxy_acc",
                                                                                   3e-4, 40)
    assert REGISTRY["nnpu"].build("cpu").patience is None


def test_early_stopping_after_patience_epochs_without_gain():
    rng = np.random.default_rng(0)
    y = (np.arange(400) % 2).astype(int)
    X = rng.normal(size=(400, 5)) + 2.0 * y[:, None]
    tr = make_pu_split(X[:300], y[:300], 0.5, random_state=0)
    va = make_pu_split(X[300:], y[300:], 0.5, random_state=1)
    kw = dict(epochs=200, lr=1e-2, batch_size=64, random_state=0, device="cpu", backbone="linear")
    est = NNPU(patience=10, **kw).fit(tr.X, tr.s, prior=tr.prior, X_val=va.X, s_val=va.s)
    hist = [h["val_proxy_acc"] for h in est.history_]
    assert est.stopped_epoch_ is not None and len(hist) < 200
    best = int(np.argmax(np.array(hist) > max(hist) - 1e-4))  # first epoch within MIN_DELTA of the best
    assert len(hist) - 1 - best >= 10 and all(h <= hist[best] + 1e-4 for h in hist[best:])
    assert NNPU(**kw).fit(tr.X, tr.s, prior=tr.prior, X_val=va.X, s_val=va.s).stopped_epoch_ is None


def test_official_seeds():
    assert OFFICIAL_SEEDS == (2, 25, 42, 52, 99, 103, 250, 666, 777, 2026)
    assert [official_seed(s) for s in (0, 2, 11)] == [2, 42, 25]
