"""The raised cosine, its removable singularity, and the real-arithmetic COSMO-RC kernel."""
import math

import pytest
import torch
from iclr26_cosmo_inr import cosmo_rc, raised_cosine


def textbook_rc(x, T, beta):
    return (1 / T) * torch.sinc(x / T) * torch.cos(math.pi * beta * x / T) / (1 - (2 * beta * x / T) ** 2)


def complex_sinc(z):
    return torch.sin(math.pi * z) / (math.pi * z)


@pytest.mark.parametrize("T", [0.7, 1.3, 5.0])
def test_value_at_zero_is_one_over_T(T):
    assert raised_cosine(torch.zeros(1, dtype=torch.float64), T, 0.3).item() == pytest.approx(1 / T, rel=1e-12)


@pytest.mark.parametrize("beta,ns", [(0.3, [1, 2, 3, -2]), (0.5, [2, 3, -3])])
def test_zeros_at_multiples_of_T(beta, ns):
    T = 1.3
    x = torch.tensor([n * T for n in ns], dtype=torch.float64)
    assert raised_cosine(x, T, beta).abs().max() < 1e-12


@pytest.mark.parametrize("beta,limit", [(0.3, -0.0999260081), (0.5, 0.0)])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-7)])
def test_singular_point_gives_the_finite_limit(beta, limit, dtype, tol):
    T = 1.3
    s = T / (2 * beta)
    exact = math.pi / (4 * T) * math.sin(math.pi / (2 * beta)) / (math.pi / (2 * beta))
    assert exact == pytest.approx(limit, abs=1e-9)
    x = torch.tensor([s, -s, s + 1e-6, s - 1e-6], dtype=dtype)
    h = raised_cosine(x, T, beta)
    assert torch.isfinite(h).all()
    assert (h[:2] - exact).abs().max().item() < tol  # at the singular point itself
    assert (h[2:] - exact).abs().max().item() < 1e-5  # and continuous around it


def test_singularity_free_form_equals_the_textbook_quotient():
    T, beta = 1.3, 0.3
    x = torch.linspace(-6, 6, 401, dtype=torch.float64)
    x = x[(x.abs() - T / (2 * beta)).abs() > 1e-3]
    torch.testing.assert_close(raised_cosine(x, T, beta), textbook_rc(x, T, beta), atol=1e-10, rtol=0)


def test_complex_kernel_matches_the_complex_formula():
    gen = torch.Generator().manual_seed(0)
    z = torch.complex(torch.randn(500, generator=gen, dtype=torch.float64),
                      torch.randn(500, generator=gen, dtype=torch.float64))
    T, C, beta = 1.3, 0.8, 0.3
    ref = ((1 / T) * complex_sinc(z / T) * torch.cos(math.pi * beta * z / T) / (1 - (2 * beta * z / T) ** 2)
           * torch.exp(2j * math.pi * C * z))
    err = (cosmo_rc(z, T, C, beta) - ref).abs() / ref.abs().clamp_min(1.0)
    assert err.max() < 1e-5


def test_real_input_matches_complex_input_with_zero_imaginary_part():
    x = torch.linspace(-4, 4, 333, dtype=torch.float64)
    torch.testing.assert_close(cosmo_rc(x, 1.1, 0.7), cosmo_rc(torch.complex(x, torch.zeros_like(x)), 1.1, 0.7))


@pytest.mark.parametrize("beta", [0.3, 0.5])
def test_gradcheck_real_and_complex_including_the_singular_point(beta):
    T = 1.3
    s = T / (2 * beta)
    x = torch.tensor([0.0, 0.4, s, -s, 2.7], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: raised_cosine(v, T, beta), (x,))
    assert torch.autograd.gradcheck(lambda v: cosmo_rc(v, T, 0.8, beta), (x,))
    z = torch.tensor([s + 0j, -s + 0j, 0.3 + 0.2j, 0.5 - 0.4j, 0.0j], dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: cosmo_rc(v, T, 0.8, beta), (z,))


def test_T_and_C_receive_finite_gradients():
    T = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    C = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    z = torch.complex(torch.linspace(-1, 1, 50, dtype=torch.float64), torch.linspace(1, -1, 50, dtype=torch.float64))
    cosmo_rc(z, T, C).abs().square().sum().backward()
    assert torch.isfinite(T.grad) and torch.isfinite(C.grad) and T.grad != 0 and C.grad != 0


@pytest.mark.parametrize("beta", [-0.1, 1.5, math.nan])
def test_beta_outside_unit_interval_is_refused(beta):
    with pytest.raises(ValueError, match="beta"):
        raised_cosine(torch.zeros(3), 1.0, beta)


def test_non_tensor_input_is_refused():
    with pytest.raises(TypeError, match="x"):
        cosmo_rc([0.1, 0.2], 1.0, 1.0)
