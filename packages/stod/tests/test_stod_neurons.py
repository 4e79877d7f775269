import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_stod import LIF, heaviside_atan, heaviside_rect, heaviside_sigmoid


def hand_lif(current, T, tau=2.0, v_th=1.0):
    v, spikes, membrane = 0.0, [], []
    for _ in range(T):
        h = v + (current - v) / tau
        s = 1.0 if h >= v_th else 0.0
        v = h * (1 - s)
        spikes.append(s)
        membrane.append(h)
    return spikes, membrane


def test_lif_closed_form_constant_input():
    lif = LIF(tau=2.0, v_threshold=1.0)
    spikes, h = lif(torch.full((8, 1), 1.5), return_membrane=True)
    assert spikes.flatten().tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    assert h.flatten().tolist() == pytest.approx([0.75, 1.125] * 4, abs=1e-6)


@given(st.floats(0.0, 4.0), st.integers(1, 12))
@settings(max_examples=15, deadline=None)
def test_lif_matches_hand_loop(current, T):
    spikes, h = LIF()(torch.full((T, 1), current, dtype=torch.float64), return_membrane=True)
    ref_s, ref_h = hand_lif(current, T)
    assert spikes.flatten().tolist() == ref_s
    assert h.flatten().tolist() == pytest.approx(ref_h, abs=1e-9)


def test_atan_surrogate_gradient_value():
    u = torch.randn(50, dtype=torch.float64, requires_grad=True)
    heaviside_atan(u, 2.0).sum().backward()
    expected = 1.0 / (1 + (math.pi * u.detach()) ** 2)
    assert torch.allclose(u.grad, expected, atol=1e-6)


def test_sigmoid_and_rect_surrogates():
    u = torch.tensor([-0.7, -0.2, 0.0, 0.3], dtype=torch.float64, requires_grad=True)
    heaviside_sigmoid(u, 4.0).sum().backward()
    s = torch.sigmoid(4 * u.detach())
    assert torch.allclose(u.grad, 4 * s * (1 - s))
    u.grad = None
    heaviside_rect(u, 1.0).sum().backward()
    assert u.grad.tolist() == [0.0, 1.0, 1.0, 1.0]


def test_spike_forward_is_heaviside():
    u = torch.tensor([-1e-3, 0.0, 1e-3])
    assert heaviside_atan(u).tolist() == [0.0, 1.0, 1.0]


def test_lif_has_surrogate_gradient_in_eval_mode():
    lif = LIF().eval()
    x = torch.full((4, 3), 1.2, requires_grad=True)
    lif(x).sum().backward()
    assert x.grad.abs().sum() > 0


def test_lif_bad_input():
    with pytest.raises(ValueError, match="surrogate"):
        LIF(surrogate="relu")
    with pytest.raises(ValueError, match="tau"):
        LIF(tau=0.5)


def test_lif_matches_spikingjelly_when_installed():
    neuron = pytest.importorskip("spikingjelly.activation_based.neuron")
    surrogate = pytest.importorskip("spikingjelly.activation_based.surrogate")
    node = neuron.LIFNode(tau=2.0, decay_input=True, v_reset=0.0, surrogate_function=surrogate.ATan(),
                          step_mode="m", store_v_seq=True)
    current = torch.rand(10, 3, 7, generator=torch.Generator().manual_seed(0)) * 3
    spikes, h = LIF()(current, return_membrane=True)
    assert torch.equal(node(current), spikes)
    after_reset = h * (1 - spikes)
    assert torch.allclose(node.v_seq, after_reset, atol=1e-6)


def _spikingjelly_soft_lif(x_seq, tau, v_th):
    """SpikingJelly's LIFNode with v_reset=None, decay_input=False, re-implemented step by step."""
    v, out = torch.zeros_like(x_seq[0]), []
    for x in x_seq:
        v = v - v / tau + x  # neuronal_charge, decay_input=False, v_reset=None
        s = (v - v_th >= 0).to(x.dtype)  # neuronal_fire
        v = v - s * v_th  # neuronal_reset, soft
        out.append(s)
    return torch.stack(out)


def test_soft_reset_lif_matches_the_spikingjelly_rule():
    current = torch.rand(12, 4, 9, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 2
    lif = LIF(tau=1.1, v_reset=None, decay_input=False, surrogate="triangle", detach_membrane=True)
    assert torch.equal(lif(current), _spikingjelly_soft_lif(current, 1.1, 1.0))


def test_detached_membrane_stops_gradient_through_time():
    x = torch.full((3, 1), 0.8, dtype=torch.float64, requires_grad=True)
    for detach, through_time in ((True, False), (False, True)):
        x.grad = None
        LIF(surrogate="triangle", detach_membrane=detach)(x)[2].sum().backward()
        assert bool(x.grad[:2].abs().sum() > 0) is through_time
        assert x.grad[2].abs().item() > 0


def test_triangle_surrogate_gradient_value():
    from iclr26_stod.neurons import heaviside_triangle

    u = torch.tensor([-2.0, -0.5, 0.0, 0.25, 1.5], dtype=torch.float64, requires_grad=True)
    heaviside_triangle(u, 1.0).sum().backward()
    assert u.grad.tolist() == pytest.approx([0.0, 0.5, 1.0, 0.75, 0.0])


def test_soft_reset_lif_matches_spikingjelly_when_installed():
    neuron = pytest.importorskip("spikingjelly.activation_based.neuron")
    node = neuron.LIFNode(tau=1.1, decay_input=False, v_reset=None, step_mode="m")
    current = torch.rand(10, 3, 7, generator=torch.Generator().manual_seed(0)) * 3
    assert torch.equal(node(current), LIF(tau=1.1, v_reset=None, decay_input=False)(current))
