import pytest
import torch
from iclr26_stod import DirectEncoder, EncodedSNN, SpikingConvNet, apgd, fgsm, pgd, robust_accuracy
from iclr26_stod.attacks import dlr_loss
from iclr26_stod.data import TensorBatches
from torch import nn


class Linear(nn.Module):
    def __init__(self, W, b):
        super().__init__()
        self.lin = nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            self.lin.weight.copy_(W)
            self.lin.bias.copy_(b)

    def forward(self, x):
        return self.lin(x.flatten(1))


def _snn(T=3):
    torch.manual_seed(0)
    return EncodedSNN(DirectEncoder(T), SpikingConvNet(width=(4, 8)))


def test_fgsm_two_class_closed_form():
    torch.manual_seed(0)
    W, b = torch.randn(2, 6), torch.randn(2)
    model = Linear(W, b)
    x, y = torch.rand(5, 1, 2, 3), torch.randint(0, 2, (5,))
    adv = fgsm(model, x, y, 0.1)
    other = 1 - y
    direction = torch.sign(W[other] - W[y]).reshape(5, 1, 2, 3)
    assert torch.allclose(adv, (x + 0.1 * direction).clamp(0, 1))


def test_fgsm_multiclass_direction():
    torch.manual_seed(1)
    W, b = torch.randn(4, 6), torch.randn(4)
    model = Linear(W, b)
    x, y = torch.rand(3, 1, 2, 3), torch.tensor([0, 2, 3])
    p = torch.softmax(model(x), 1)
    grad = (p - nn.functional.one_hot(y, 4)) @ W
    assert torch.allclose(fgsm(model, x, y, 0.05), (x + 0.05 * grad.sign().reshape(x.shape)).clamp(0, 1))


def test_attacks_stay_in_ball_and_box():
    model = _snn()
    x, y = torch.rand(6, 1, 8, 8), torch.randint(0, 10, (6,))
    for adv in (fgsm(model, x, y, 0.2), pgd(model, x, y, 0.2, steps=3)):
        assert (adv - x).abs().max() <= 0.2 + 1e-6
        assert adv.min() >= 0 and adv.max() <= 1


def test_pgd_one_step_equals_fgsm():
    model = _snn()
    x, y = torch.rand(6, 1, 8, 8), torch.randint(0, 10, (6,))
    assert torch.equal(pgd(model, x, y, 0.1, steps=1, alpha=0.1, random_start=False), fgsm(model, x, y, 0.1))


def test_eval_mode_attack_has_surrogate_gradient_and_restores_mode():
    model = _snn().train()
    x, y = torch.rand(6, 1, 8, 8), torch.randint(0, 10, (6,))
    adv = fgsm(model, x, y, 0.1)
    assert (adv != x).any()  # a zero input gradient would leave x unchanged (sign(0) = 0)
    assert model.training
    model.eval()
    xg = x.clone().requires_grad_(True)
    nn.functional.cross_entropy(model(xg), y).backward()
    assert xg.grad.abs().sum() > 0


def test_robust_accuracy_clean_matches_manual():
    model = _snn().eval()
    x, y = torch.rand(10, 1, 8, 8), torch.randint(0, 10, (10,))
    manual = float((model(x).argmax(1) == y).float().mean())
    assert robust_accuracy(model, TensorBatches(x, y, 4), "clean") == pytest.approx(manual)


def test_bad_attack_input():
    model = _snn()
    x, y = torch.rand(2, 1, 8, 8), torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="eps"):
        fgsm(model, x, y, -0.1)
    with pytest.raises(ValueError, match="steps"):
        pgd(model, x, y, 0.1, steps=0)
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        fgsm(model, x * 2 - 0.5, y, 0.1)
    with pytest.raises(ValueError, match="attack"):
        robust_accuracy(model, [(x, y)], "cw")


@pytest.mark.cuda
def test_stod_model_runs_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from iclr26_stod import build_model, gradient_temporal_collinearity

    model = build_model("stod", T=4).cuda().eval()
    model.encoder.keep_kernels = True
    x, y = torch.rand(8, 1, 8, 8, device="cuda"), torch.randint(0, 10, (8,), device="cuda")
    adv = pgd(model, x, y, 0.1, steps=2)
    assert adv.device.type == "cuda" and (adv - x).abs().max() <= 0.1 + 1e-6
    assert 0 <= gradient_temporal_collinearity(model, x, y) <= 1


def test_apgd_reaches_the_linear_optimum_and_stays_in_the_ball():
    torch.manual_seed(1)
    W, b = torch.randn(2, 6), torch.randn(2)
    model = Linear(W, b)
    x, y = 0.2 + 0.6 * torch.rand(64, 1, 2, 3), torch.randint(0, 2, (64,))
    eps = 0.1
    adv = apgd(model, x, y, eps, steps=20, generator=torch.Generator().manual_seed(0))
    assert (adv - x).abs().max() <= eps + 1e-6 and adv.min() >= 0 and adv.max() <= 1
    # for a linear two-class model the worst point of the ball is FGSM's corner: APGD fools exactly the
    # images that corner fools, and returns the others unchanged
    corner = fgsm(model, x, y, eps)
    with torch.no_grad():
        fooled, fooled_at_corner = model(adv).argmax(1) != y, model(corner).argmax(1) != y
    assert torch.equal(fooled, fooled_at_corner) and fooled.any() and not fooled.all()
    assert torch.equal(adv[~fooled], x[~fooled])


def test_apgd_on_a_spiking_net_is_at_least_as_strong_as_its_start():
    model, x = _snn(), torch.rand(32, 1, 8, 8)
    with torch.no_grad():
        y = model(x).argmax(1)  # every image starts correctly classified
    adv = apgd(model, x, y, 0.2, steps=10, loss="ce")
    assert (adv - x).abs().max() <= 0.2 + 1e-6
    assert robust_accuracy(model, [(x, y)], lambda m, a, b: adv) < 1.0


def test_apgd_restarts_only_add_fooled_images(trained_direct):
    model, x, y = trained_direct
    one = apgd(model, x, y, 0.1, steps=1, loss="dlr", generator=torch.Generator().manual_seed(0))
    three = apgd(model, x, y, 0.1, steps=1, loss="dlr", restarts=3, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        fooled_one, fooled_three = model(one).argmax(1) != y, model(three).argmax(1) != y
    # the first run is the same; later runs attack only what it left robust
    assert torch.equal(three[fooled_one], one[fooled_one]) and (fooled_three >= fooled_one).all()
    assert 0 < fooled_one.sum() < fooled_three.sum() < len(y)


def test_dlr_loss_and_bad_apgd_input():
    z = torch.tensor([[3.0, 1.0, 0.0, -1.0]])
    assert dlr_loss(z, torch.tensor([0])).item() == pytest.approx(-(3 - 1) / (3 - 0))
    assert dlr_loss(2 * z + 5, torch.tensor([2])).item() == pytest.approx(dlr_loss(z, torch.tensor([2])).item())
    model, x, y = Linear(torch.randn(2, 6), torch.randn(2)), torch.rand(2, 1, 2, 3), torch.tensor([0, 1])
    with pytest.raises(ValueError, match="loss"):
        apgd(model, x, y, 0.1, loss="cw")
    with pytest.raises(ValueError, match="restarts: expected an integer >= 1, got 0"):
        apgd(model, x, y, 0.1, restarts=0)
