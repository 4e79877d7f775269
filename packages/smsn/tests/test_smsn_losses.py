import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_smsn import dice_ce_loss, kl_standard_normal, masked_recon_loss, orthogonality_loss


def test_kl_zero_at_standard_normal():
    assert kl_standard_normal(torch.zeros(3, 4), torch.zeros(3, 4)).item() == 0.0


@settings(max_examples=20, deadline=None)
@given(st.floats(-3, 3), st.floats(0.1, 3.0))
def test_kl_matches_closed_form(mu, sigma):
    got = kl_standard_normal(torch.tensor([mu], dtype=torch.float64), torch.tensor([2 * math.log(sigma)],
                                                                                   dtype=torch.float64))
    expected = 0.5 * (mu**2 + sigma**2 - 1 - math.log(sigma**2))
    assert got.item() == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_kl_gradcheck():
    mu = torch.randn(5, dtype=torch.float64, requires_grad=True)
    lv = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(kl_standard_normal, (mu, lv))


def test_masked_recon_ignores_masked_entries():
    pred, target = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    mask = torch.tensor([[1, 0, 1], [0, 0, 1]], dtype=torch.bool)
    base = masked_recon_loss(pred, target, mask)
    pred2 = pred.clone()
    pred2[0, 1] = 1e6
    pred2[1, :2] = float("nan")
    assert torch.equal(masked_recon_loss(pred2, target, mask), base)
    sample0 = sum(((pred[0, k] - target[0, k]) ** 2).sum() for k in (0, 2)) / (2 * 20)  # per-sample mean
    sample1 = ((pred[1, 2] - target[1, 2]) ** 2).sum() / 20
    manual = (sample0 + sample1) / 2
    assert base.item() == pytest.approx(manual.item(), rel=1e-6)


def test_masked_recon_all_ones_is_mse():
    pred, target = torch.randn(2, 3, 6), torch.randn(2, 3, 6)
    got = masked_recon_loss(pred, target, torch.ones(2, 3, dtype=torch.bool))
    assert got.item() == pytest.approx(torch.nn.functional.mse_loss(pred, target).item(), rel=1e-6)


def test_orthogonality_zero_for_orthogonal_features():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(1, 3, 2, 2))
    xs = rng.normal(size=(1, 2, 3, 2, 2))
    for i in range(2):  # Gram–Schmidt per location: remove the z component of every x_si
        zz = (z[0] ** 2).sum(0)
        xs[0, i] -= (xs[0, i] * z[0]).sum(0) / zz * z[0]
    got = orthogonality_loss(torch.tensor(z), torch.tensor(xs), torch.ones(1, 2, dtype=torch.bool))
    assert got.item() == pytest.approx(0.0, abs=1e-20)


def test_orthogonality_hand_computed():
    z = torch.tensor([[[[1.0]], [[2.0]]]])  # (1, 2 channels, 1, 1)
    xs = torch.tensor([[[[[3.0]], [[1.0]]], [[[0.0]], [[1.0]]]]])  # (1, 2 modalities, 2 channels, 1, 1)
    # cos^2(z, x_1) = 5^2 / (5 * 10) = 0.5; cos^2(z, x_2) = 2^2 / (5 * 1) = 0.8; second modality masked out
    assert orthogonality_loss(z, xs, torch.tensor([[True, False]])).item() == pytest.approx(0.5, rel=1e-5)
    assert orthogonality_loss(z, xs, torch.tensor([[True, True]])).item() == pytest.approx(1.3, rel=1e-5)


def test_dice_ce_lower_for_correct_prediction():
    target = torch.randint(0, 4, (2, 8, 8))
    good = torch.nn.functional.one_hot(target, 4).movedim(-1, 1).float() * 10
    assert dice_ce_loss(good, target) < dice_ce_loss(-good, target)
    assert dice_ce_loss(good, target).item() < 0.05


@pytest.mark.parametrize("widths", [(8, 16, 32), (16, 32, 64, 128)])
def test_orthogonality_term_at_most_tenth_of_segmentation_at_init(widths):
    """Issue 38: λ_o·L_o ≤ 0.1·L_seg for a freshly initialised SMSN (the unnormalised form was 3.5x L_seg)."""
    from iclr26_smsn import SMSN, SMSNLoss, make_phantom
    from iclr26_smsn.data import labels_to_classes

    torch.manual_seed(0)
    ph = make_phantom(8, 32, seed=5)
    out = SMSN(widths=widths).train()(torch.as_tensor(ph.images), torch.ones(8, 4, dtype=torch.bool))
    _, terms = SMSNLoss()(out, labels_to_classes(torch.as_tensor(ph.labels)))
    assert SMSNLoss().lambda_o * terms["orth"] <= 0.1 * terms["seg"], terms
