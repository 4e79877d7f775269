"""Scheduled CE, SupCon and ARPL against independent computations."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from iclr26_osr_temperature import data, losses, models, schedules, train


def test_constant_schedule_equals_plain_cross_entropy():
    torch.manual_seed(0)
    z, y = torch.randn(16, 5), torch.randint(0, 5, (16,))
    loss = losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), schedules.Constant(0.7))
    assert torch.equal(loss(z, y), F.cross_entropy(z / 0.7, y))


def test_scheduled_gradient_matches_closed_form_and_gradcheck():
    torch.manual_seed(1)
    tau, b, c = 0.37, 8, 4
    z = torch.randn(b, c, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, c, (b,))
    loss = losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), schedules.Constant(tau))
    (grad,) = torch.autograd.grad(loss(z, y), z)
    expected = (torch.softmax(z.detach() / tau, dim=1) - F.one_hot(y, c).double()) / tau / b
    torch.testing.assert_close(grad, expected, rtol=1e-10, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x: loss(x, y), (z,))


def test_step_advances_the_temperature_per_epoch_and_per_step():
    s = schedules.NegativeCosine(0.5, 2.0, n_epochs=4)
    per_epoch = losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), s, start=0)
    seen = [per_epoch.temperature] + [per_epoch.step() for _ in range(4)]
    np.testing.assert_allclose(seen, s.as_array(4))
    assert losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), s, start=1).temperature == s(1)
    per_step = losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), s, per="step", steps_per_epoch=2, start=0)
    per_step.step()
    assert per_step.epoch == 0.5 and per_step.temperature == pytest.approx(s(0.5))
    with pytest.raises(ValueError, match="steps_per_epoch"):
        losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), s, per="step")


def test_supcon_hand_computation():
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1])
    s = 0.1 / 0.07
    a1, a2 = s * math.log(1 + math.exp(-10)), s * math.log(2)
    assert a1 == pytest.approx(6.4856e-5, rel=1e-4) and a2 == pytest.approx(0.990210, abs=1e-6)
    assert float(losses.SupConLoss(0.1, 0.07)(z, y)) == pytest.approx((a1 + a2) / 2, abs=1e-9)
    assert float(losses.SupConLoss(0.1, 0.07)(z, y)) == pytest.approx(0.495138, abs=1e-6)
    assert float(losses.SupConLoss(0.1, 0.07, empty_positive="zero")(z, y)) == pytest.approx(0.330092, abs=1e-6)
    assert float(losses.SupConLoss(0.1, 0.07, scale_by_temperature=False)(z, y)) == pytest.approx(
        (a1 + a2) / 2 / s, abs=1e-9)


def _supcon_loops(feats, labels, tau, base):
    b, v, _ = feats.shape
    z = [feats[i, j] for j in range(v) for i in range(b)]
    lab = [int(labels[i]) for _ in range(v) for i in range(b)]
    total, count = 0.0, 0
    for i in range(len(z)):
        pos = [p for p in range(len(z)) if p != i and lab[p] == lab[i]]
        if not pos:
            continue
        denom = sum(math.exp(float(z[i] @ z[a]) / tau) for a in range(len(z)) if a != i)
        li = -sum(float(z[i] @ z[p]) / tau - math.log(denom) for p in pos) / len(pos)
        total += (tau / base) * li
        count += 1
    return total / count


def test_supcon_matches_double_loop_and_is_permutation_invariant():
    g = torch.Generator().manual_seed(2)
    feats = F.normalize(torch.randn(10, 2, 6, generator=g, dtype=torch.float64), dim=2)
    labels = torch.randint(0, 3, (10,), generator=g)
    loss = losses.SupConLoss(0.2, 0.07)
    value = float(loss(feats, labels))
    assert value == pytest.approx(_supcon_loops(feats, labels, 0.2, 0.07), abs=1e-6)
    perm = torch.randperm(10, generator=g)
    assert float(loss(feats[perm], labels[perm])) == pytest.approx(value, abs=1e-10)


def test_supcon_small_temperature_limit():
    g = torch.Generator().manual_seed(3)
    z = F.normalize(torch.randn(12, 4, generator=g, dtype=torch.float64), dim=1)
    y = torch.randint(0, 3, (12,), generator=g)
    sim = z @ z.T
    terms = []
    for i in range(12):
        others = [a for a in range(12) if a != i]
        pos = [p for p in others if y[p] == y[i]]
        if pos:
            terms.append(np.mean([float(sim[i, others].max() - sim[i, p]) for p in pos]))
    value = float(losses.SupConLoss(1e-3, 0.07)(z, y)) * 0.07
    assert value == pytest.approx(np.mean(terms), abs=1e-2)


def test_wrapper_sets_supcon_and_arpl_temperature():
    s = schedules.LinearIncrease(0.1, 0.4, n_epochs=3)
    wrapped = losses.TemperatureScheduledLoss(losses.SupConLoss(), s, start=0)
    wrapped.step()
    z = F.normalize(torch.randn(6, 2, 4), dim=2)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    assert float(wrapped(z, y)) == pytest.approx(float(losses.SupConLoss(temperature=s(1))(z, y)), rel=1e-6)
    torch.manual_seed(0)
    arpl = losses.ARPLLoss(3, 4, temperature=1.0)
    feats, labels = torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
    w = losses.TemperatureScheduledLoss(arpl, schedules.Constant(0.5))
    logits = arpl.logits(feats)
    d_e = (feats - arpl.points[labels]).pow(2).sum(1) / 4
    expected = F.cross_entropy(logits / 0.5, labels) + 0.1 * F.relu(d_e - arpl.radius).mean()
    torch.testing.assert_close(w(feats, labels), expected)
    manual = (torch.cdist(feats, arpl.points) ** 2) / 4 - feats @ arpl.points.T
    torch.testing.assert_close(logits, manual)


def test_temperature_reaches_the_loss_in_training():
    task = data.digits_osr(0)
    weights = []
    for tau in (1e-3, 1e3):
        torch.manual_seed(0)
        m = models.MLP(64, (128, 128), 6)
        train.fit_ce(m, task["Xtr"], task["ytr"], schedules.Constant(tau), epochs=1, seed=0)
        weights.append(torch.cat([p.detach().flatten() for p in m.parameters()]))
    assert float((weights[0] - weights[1]).norm()) > 1e-3


def test_loss_bad_input():
    with pytest.raises(ValueError, match="temperature"):
        losses.SupConLoss(temperature=0.0)
    with pytest.raises(ValueError, match="features"):
        losses.SupConLoss()(torch.randn(3), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="labels"):
        losses.SupConLoss()(torch.randn(3, 2), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="per"):
        losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), schedules.Constant(1.0), per="batch")
    with pytest.raises(ValueError, match="start"):
        losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), schedules.Constant(1.0), start=2)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_scheduled_loss_and_supcon_stay_on_the_input_device():
    z, y = torch.randn(8, 3, device="cuda"), torch.randint(0, 3, (8,), device="cuda")
    loss = losses.TemperatureScheduledLoss(torch.nn.CrossEntropyLoss(), schedules.Constant(0.5))(z, y)
    assert loss.device.type == "cuda"
    torch.testing.assert_close(loss.cpu(), F.cross_entropy(z.cpu() / 0.5, y.cpu()))
    feats = F.normalize(torch.randn(8, 2, 4, device="cuda"), dim=2)
    assert losses.SupConLoss()(feats, y).device.type == "cuda"
