import numpy as np
import pytest
import torch
from iclr26_smsn import SMSN, ParallelFusionNet, SMSNLoss, reorder_modalities, subset_masks
from iclr26_smsn.bench import mask_leakage
from iclr26_smsn.inference import channels_last, norm_act_, phase_kernels, run_layers, upsampled_conv

WIDTHS = (4, 8, 8)


def test_reorder_first_is_available_and_uniform():
    mask = torch.tensor([[True, False, True, False]]).expand(10_000, -1)
    gen = torch.Generator().manual_seed(1)
    order = reorder_modalities(mask, gen)
    assert torch.equal(order.sort(1).values, torch.arange(4).expand(10_000, -1))
    first = order[:, 0]
    assert mask[torch.arange(10_000), first].all()
    assert abs((first == 0).float().mean().item() - 0.5) < 0.02


def test_reorder_deterministic_priority():
    masks = torch.as_tensor(subset_masks())
    order = reorder_modalities(masks, random=False)
    assert masks[torch.arange(15), order[:, 0]].all()
    assert order[-1].tolist() == [3, 1, 2, 0]


@pytest.mark.parametrize("model", [SMSN(widths=WIDTHS), *[ParallelFusionNet(f, widths=WIDTHS)
                                                         for f in ParallelFusionNet.FUSIONS]],
                         ids=["smsn", *ParallelFusionNet.FUSIONS])
def test_no_leakage_untrained(model):
    torch.manual_seed(0)
    leak, repeat = mask_leakage(model, torch.randn(2, 4, 8, 8))
    assert leak <= 1e-6 and repeat <= 1e-6


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("ndim", [2, 3])
def test_shapes_every_subset(batch, ndim):
    model = SMSN(ndim=ndim, widths=WIDTHS, recon_target="image" if ndim == 3 else "feature").train()
    shape = (batch, 4) + (8,) * ndim
    loss = SMSNLoss()
    for mask in subset_masks():
        m = torch.as_tensor(mask).expand(batch, -1)
        out = model(torch.randn(shape), m)
        assert out.logits.shape == (batch, 4) + (8,) * ndim
        assert out.aux["z2"].shape == (batch, 8) + (2,) * ndim
        assert bool(m[torch.arange(batch), out.aux["order"][:, 0]].all())
        total, terms = loss(out, torch.randint(0, 4, (batch,) + (8,) * ndim))
        assert all(np.isfinite(v) for v in terms.values())


def test_aux_losses_finite_with_three_missing():
    model = SMSN(widths=WIDTHS).train()
    out = model(torch.randn(2, 4, 8, 8), torch.tensor([[0, 0, 0, 1], [1, 0, 0, 0]]))
    for key in ("kl", "recon", "orth"):
        assert torch.isfinite(out.aux[key])
    out.aux["recon"].backward()


@pytest.mark.parametrize("x,mask,match", [
    (torch.randn(2, 4, 8, 8), torch.zeros(2, 4), "all-zero"),
    (torch.randn(2, 4, 8, 8), torch.ones(2, 3), "mask"),
    (torch.randn(2, 3, 8, 8), torch.ones(2, 3), "x"),
    (torch.randn(2, 4, 10, 8), torch.ones(2, 4), "divisible"),
    (torch.full((2, 4, 8, 8), float("nan")), torch.ones(2, 4), "NaN"),
])
def test_bad_input(x, mask, match):
    with pytest.raises(ValueError, match=match):
        SMSN(widths=WIDTHS)(x, mask)


def test_bad_constructor():
    with pytest.raises(ValueError, match="fusion"):
        ParallelFusionNet("sum")
    with pytest.raises(ValueError, match="recon_target"):
        SMSN(recon_target="pixels")


@pytest.mark.parametrize("name", ["smsn", *ParallelFusionNet.FUSIONS])
def test_decode_subset_equals_forward(name):
    """The shared-work evaluation path (encode once, cached skip terms and tokens) equals the plain forward of the
    zero-filled input for all 15 subsets, with the test-time order and with random orders."""
    torch.manual_seed(0)
    model = (SMSN(widths=(4, 8, 16)) if name == "smsn" else ParallelFusionNet(name, widths=(4, 8, 16))).eval()
    x = torch.randn(3, 4, 16, 16)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        prepared = model.prepare_subsets(x)
        for avail in torch.as_tensor(subset_masks()):
            m = avail.expand(3, -1)
            ref = model(x * m[:, :, None, None], m).logits
            assert torch.allclose(model.decode_subset(prepared, avail), ref, atol=1e-5, rtol=1e-5)
            if name == "smsn":
                order = reorder_modalities(m, gen)
                ref = model(x, m, order=order).logits
                assert torch.allclose(model.decode_subset(prepared, avail, order), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("ndim", [2, 3])
def test_upsampled_conv_equals_upsample_then_conv(ndim):
    gen = torch.Generator().manual_seed(ndim)
    x = torch.randn(2, 6, *([5] * ndim), generator=gen)
    weight, bias = torch.randn(3, 6, *([3] * ndim), generator=gen), torch.randn(3, generator=gen)
    add = torch.randn(2, 3, *([10] * ndim), generator=gen)
    conv = torch.nn.functional.conv2d if ndim == 2 else torch.nn.functional.conv3d
    ref = conv(torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest"), weight, bias, padding=1) + add
    assert torch.allclose(upsampled_conv(x, phase_kernels(weight), bias, add.clone()), ref, atol=1e-4, rtol=1e-5)


def test_decode_subset_equals_forward_3d():
    torch.manual_seed(0)
    model = SMSN(ndim=3, widths=(4, 8)).eval()
    x = torch.randn(2, 4, 8, 8, 8)
    with torch.no_grad():
        prepared = model.prepare_subsets(x)
        for avail in torch.as_tensor(subset_masks())[[0, 6, 14]]:
            m = avail.expand(2, -1)
            ref = model(x * m[:, :, None, None, None], m).logits
            assert torch.allclose(model.decode_subset(prepared, avail), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("channels", [8, 64])  # both ways of the variance (Gram diagonal, squares)
def test_norm_act_equals_instance_norm_then_leaky_relu(channels):
    gen = torch.Generator().manual_seed(channels)
    norm = torch.nn.InstanceNorm2d(channels, affine=True)
    with torch.no_grad():
        norm.weight.normal_(generator=gen)
        norm.bias.normal_(generator=gen)
        x = 3 * torch.randn(2, channels, 6, 10, generator=gen) + 1
        ref = torch.nn.functional.leaky_relu(norm(x), 0.01)
        for inp in (x.clone(), channels_last(x)):  # a copy for contiguous input, in place for channels-last
            out = norm_act_(inp, norm.weight, norm.bias, norm.eps, 0.01)
            assert out.is_contiguous(memory_format=torch.channels_last)
            assert (out.data_ptr() == inp.data_ptr()) == inp.is_contiguous(memory_format=torch.channels_last)
            assert torch.allclose(out, ref, atol=1e-5)


@pytest.mark.parametrize("ndim", [2, 3])
def test_encoders_channels_last_equal_grouped_forward(ndim):
    """Each modality's encoder run on its own (channels-last) equals the grouped-convolution encoder."""
    torch.manual_seed(ndim)
    model = SMSN(ndim=ndim, widths=(4, 8, 16)).eval()
    x = torch.randn(2, 4, *([8] * ndim))
    with torch.no_grad():
        for fast, ref in zip(model.encoders.forward_channels_last(x), model.encode(x), strict=True):
            assert fast.shape == ref.shape and torch.allclose(fast, ref, atol=1e-5)


def test_run_layers_rejects_other_layers():
    with pytest.raises(TypeError, match="layers"):
        run_layers([torch.nn.ReLU()], torch.randn(1, 2, 4, 4))


def test_stage_one_shared_by_test_time_orders():
    """The 15 test-time orders have 10 distinct (position 1, position 2) pairs; stage I is computed once per pair."""
    torch.manual_seed(0)
    model = SMSN(widths=(4, 8, 16)).eval()
    with torch.no_grad():
        prepared = model.prepare_subsets(torch.randn(2, 4, 16, 16))
        for avail in torch.as_tensor(subset_masks()):
            model.decode_subset(prepared, avail)
    assert len(prepared["fusion"][2]) == 10
