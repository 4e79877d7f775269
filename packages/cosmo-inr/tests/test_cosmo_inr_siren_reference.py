"""Opt-in: the SIREN baseline against siren-pytorch's ``SirenNet`` (skipped when siren-pytorch is absent).

``SirenNet(w0=30, w0_initial=30)`` is the SIREN of the paper (its default hidden w0 = 1 is not); with the
same weights it must compute the same function as ``models.SIREN``, its weight bounds must be ours, and
trained with this package's loop on the quick benchmark's images it must reach the level the benchmark's
SIREN sanity claim is calibrated on (``bench.SIREN_REFERENCE``).
"""
import numpy as np
import pytest
import torch
from iclr26_cosmo_inr import fit_signal, get_coords
from iclr26_cosmo_inr.bench import CONFIGS, SIREN_REFERENCE, SIREN_TOLERANCE_DB, _images
from iclr26_cosmo_inr.models import SIREN

siren_pytorch = pytest.importorskip("siren_pytorch")


def _pair(width: int, out: int, layers: int, seed: int):
    torch.manual_seed(seed)
    ours = SIREN(2, out, hidden_features=width, hidden_layers=layers)
    torch.manual_seed(seed)
    theirs = siren_pytorch.SirenNet(2, width, out, num_layers=layers + 1, w0=30.0, w0_initial=30.0)
    theirs.in_features = 2  # fit_signal reads it to check the coordinates
    return ours, theirs, [*ours.net, ours.final], [*theirs.layers, theirs.last_layer]


def test_same_weights_give_the_same_function():
    ours, theirs, mine, their_layers = _pair(32, 3, 3, 0)
    ours, theirs = ours.double(), theirs.double()
    with torch.no_grad():
        for a, b in zip(mine, their_layers, strict=True):
            b.weight.copy_(a.weight)
            b.bias.copy_(a.bias)
    x = torch.rand(500, 2, dtype=torch.float64) * 2 - 1
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-12, rtol=0)


def test_weight_bounds_are_siren_pytorch_s():
    # first layer U(-1/in, 1/in), hidden and output U(±sqrt(6/W)/30); only the biases differ (ours keep
    # PyTorch's default U(±1/sqrt(in)) as the official SIREN code does, SirenNet draws them like the weights)
    _, _, mine, their_layers = _pair(128, 3, 3, 0)
    for a, b in zip(mine, their_layers, strict=True):
        assert a.weight.abs().max().item() == pytest.approx(b.weight.abs().max().item(), rel=0.02)


def test_trained_siren_reaches_siren_pytorch_s_level_on_the_quick_images():
    cfg = CONFIGS["quick"]
    psnr = {"ours": [], "theirs": []}
    size = cfg["size"]
    for seed, image in enumerate(_images(cfg).values(), start=1):  # calibration seeds 1, 2, 3
        coords, values = get_coords(size, size), torch.as_tensor(image.reshape(size * size, -1))
        ours, theirs, _, _ = _pair(cfg["width"], values.shape[1], cfg["layers"], seed)
        for key, model in (("ours", ours), ("theirs", theirs)):
            psnr[key].append(fit_signal(model, coords, values, iters=cfg["iters"], lr=1e-3).best_psnr)
    theirs, ours = np.mean(psnr["theirs"]), np.mean(psnr["ours"])
    assert abs(theirs - SIREN_REFERENCE["quick"]) <= 0.5  # the benchmark's reference level is reproducible
    assert ours >= theirs - SIREN_TOLERANCE_DB
