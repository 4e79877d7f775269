"""The fused COSMO-RC layer equals the plain-autograd formula (values and gradients) and saves only its input."""
import pytest
import torch
from iclr26_cosmo_inr import COSMOINR
from iclr26_cosmo_inr.activations import cosmo_rc_pair
from iclr26_cosmo_inr.kernel import cosmo_rc_layer, series_band, sinc_quotient, sinc_series
from iclr26_cosmo_inr.models import phase_normalise

F64 = torch.float64


def reference_layer(re, im, T, C, beta, normalise):
    if normalise:
        re, im = phase_normalise(re, im)
    out = cosmo_rc_pair(re, im, T, C, beta)
    return phase_normalise(*out) if normalise else out


def inputs(beta, complex_input, T=1.3):
    """Random points plus the removable points u = 0 and y = ±1/2 and the edges of the series band.

    (No |x| < 1e-5 besides 0: there torch.sinc's own derivative, in the reference, loses digits.)"""
    gen = torch.Generator().manual_seed(0)
    pole = T / (2 * beta)
    edge = T * series_band(F64) ** 0.5
    special = torch.tensor([0.0, 1e-5, edge * 0.999, edge * 1.001, pole, -pole, pole + 1e-7, pole - edge / beta],
                           dtype=F64)
    re = torch.cat([special, torch.randn(200, generator=gen, dtype=F64) * 2])
    im = None
    if complex_input:
        im = torch.cat([torch.zeros(len(special), dtype=F64), torch.randn(200, generator=gen, dtype=F64) * 0.3])
    return re, im


@pytest.mark.parametrize("beta", [0.5, 0.3])
@pytest.mark.parametrize("complex_input,normalise", [(False, False), (True, False), (True, True)])
def test_values_and_gradients_equal_the_complex_formula_to_1e10(beta, complex_input, normalise):
    re, im = inputs(beta, complex_input)
    if normalise:  # z = 0 is the guard point of the normalisation (gradient ~ 1/eps)
        re, im = re[1:], im[1:]
    leaves = [t.requires_grad_() for t in (re, im) if t is not None]
    T = torch.tensor(1.3, dtype=F64, requires_grad=True)
    C = torch.tensor(0.8, dtype=F64, requires_grad=True)
    fused = cosmo_rc_layer(re, im, T, C, beta, normalise)
    ref = reference_layer(re, im, T, C, beta, normalise)
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(2, len(re), generator=gen, dtype=F64)
    for a, b in zip(fused, ref):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)
    grads = [torch.autograd.grad((out[0] * w[0] + out[1] * w[1]).sum(), leaves + [T, C]) for out in (fused, ref)]
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("beta", [0.5, 0.3])
def test_gradcheck_at_the_removable_points(beta):
    T = torch.tensor(1.3, dtype=F64, requires_grad=True)
    C = torch.tensor(0.8, dtype=F64, requires_grad=True)
    pole = 1.3 / (2 * beta)
    x = torch.tensor([0.0, 1e-9, 0.4, pole, -pole, pole + 1e-7, 2.7], dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, t, c: cosmo_rc_layer(v, None, t, c, beta), (x, T, C))
    re = torch.tensor([pole, -pole, 0.3, 0.5, 0.0, pole + 1e-6], dtype=F64, requires_grad=True)
    im = torch.tensor([0.0, 1e-7, 0.2, -0.4, 0.0, 0.0], dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, t, c: cosmo_rc_layer(a, b, t, c, beta), (re, im, T, C))
    assert torch.autograd.gradcheck(lambda a, b, t, c: cosmo_rc_layer(a, b, t, c, beta, True),
                                    (re + 0.1, im + 0.1, T, C))


def test_sinc_series_and_quotient_agree_at_the_band_edge():
    w = (torch.tensor([0.01, 0.1], dtype=F64), torch.tensor([0.0, 0.05], dtype=F64))
    z = torch.complex(*w)
    sin_w, cos_w = torch.sin(torch.pi * z), torch.cos(torch.pi * z)
    quotient = sinc_quotient(w, (sin_w.real, sin_w.imag), (cos_w.real, cos_w.imag))
    for a, b in zip(sinc_series(w), quotient):
        torch.testing.assert_close(torch.complex(*a), torch.complex(*b), atol=1e-12, rtol=0)


def test_a_hidden_layer_saves_only_its_input():
    saved = []
    n = 1000
    re, im = torch.randn(n, requires_grad=True), torch.randn(n, requires_grad=True)
    T, C = torch.tensor(5.77, requires_grad=True), torch.tensor(1.73, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel()) or t, lambda t: t):
        cosmo_rc_layer(re, im, T, C, 0.5, True)
    assert sum(saved) == 2 * n + 2
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel()) or t, lambda t: t):
        reference_layer(re, im, T, C, 0.5, True)
    assert sum(saved) > 10 * n  # the plain formula keeps many intermediates


@pytest.mark.parametrize("kwargs", [{}, {"hidden_norm": "none"}, {"modulate": False}])
def test_fused_model_equals_the_reference_model(kwargs):
    coords = torch.rand(64, 2, dtype=F64) * 2 - 1
    outs = []
    for kernel in ("fused", "reference"):
        torch.manual_seed(0)
        model = COSMOINR(2, 2, hidden_features=8, hidden_layers=2, prior="none", kernel=kernel, **kwargs).double()
        out = model(coords)
        out.square().sum().backward()
        outs.append([out] + [p.grad for p in model.parameters()])
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


def test_normalise_needs_a_complex_input():
    with pytest.raises(ValueError, match="normalise"):
        cosmo_rc_layer(torch.zeros(3), None, torch.tensor(1.0), torch.tensor(1.0), normalise=True)


def paper_formula(z, T, C, beta):
    """ψ(z) = (1/T) sinc(z/T) cos(πβz/T) / (1 − (2βz/T)²) · e^{j2πCz} with torch's complex128 operations."""
    u = z / T
    h = torch.sin(torch.pi * u) / (torch.pi * u) * torch.cos(torch.pi * beta * u) / (1 - (2 * beta * u) ** 2) / T
    return h * torch.exp(2j * torch.pi * C * z)


@pytest.mark.parametrize("beta", [0.5, 0.3])
@pytest.mark.parametrize("normalise", [False, True])
def test_fused_layer_equals_the_paper_s_complex_formula_to_1e10(beta, normalise):
    # values and the gradients of a real loss (input, T, C), against plain complex128 autograd of the
    # quotient form, at points away from the removable singularities (where the quotient is 0/0)
    gen = torch.Generator().manual_seed(2)
    T0 = 1.3
    re, im = torch.randn(400, generator=gen, dtype=F64) * 2, torch.randn(400, generator=gen, dtype=F64) * 0.3
    u = torch.complex(re, im) / T0
    keep = ((u.abs() > 0.05) & ((2 * beta * u).abs() - 1).abs().gt(0.05)).nonzero().ravel()
    re, im = re[keep].requires_grad_(), im[keep].requires_grad_()
    T = torch.tensor(T0, dtype=F64, requires_grad=True)
    C = torch.tensor(0.8, dtype=F64, requires_grad=True)
    fused = torch.complex(*cosmo_rc_layer(re, im, T, C, beta, normalise))
    z = torch.complex(re, im)
    z = z / z.abs() if normalise else z
    psi = paper_formula(z, T, C, beta)
    psi = psi / psi.abs() if normalise else psi
    torch.testing.assert_close(fused, psi, atol=1e-10, rtol=1e-10)
    w = torch.randn(2, len(re), generator=gen, dtype=F64)
    grads = [torch.autograd.grad((out.real * w[0] + out.imag * w[1]).sum(), (re, im, T, C)) for out in (fused, psi)]
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)
