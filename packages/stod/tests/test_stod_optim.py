import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_stod import RiemannianSGD, householder_kernels, orthogonality_error, qr_retraction, riemannian_gradient


def test_hundred_random_steps_stay_orthogonal():
    gen = torch.Generator().manual_seed(0)
    O = torch.nn.Parameter(householder_kernels(4, 16, "householder_random", generator=gen))
    opt = RiemannianSGD([O], lr=0.05, momentum=0.5)
    for _ in range(100):
        O.grad = torch.randn(O.shape, generator=gen)
        opt.step()
    assert orthogonality_error(O.detach()) <= 1e-5


@given(st.integers(2, 8), st.integers(0, 10**6))
@settings(max_examples=10, deadline=None)
def test_riemannian_gradient_is_tangent(d, seed):
    gen = torch.Generator().manual_seed(seed)
    O = qr_retraction(torch.randn(d, d, generator=gen, dtype=torch.float64))
    R = riemannian_gradient(O, torch.randn(d, d, generator=gen, dtype=torch.float64))
    skew = O.T @ R
    assert torch.allclose(skew, -skew.T, atol=1e-6)


def test_qr_retraction_sign_convention():
    A = torch.randn(5, 5, dtype=torch.float64)
    Q = qr_retraction(A)
    R = Q.T @ A
    assert torch.all(torch.diagonal(R) > 0)
    assert torch.allclose(torch.triu(R), R, atol=1e-10)


def test_step_decreases_quadratic_objective():
    torch.manual_seed(1)
    target = qr_retraction(torch.randn(6, 6))
    O = torch.nn.Parameter(torch.eye(6))
    opt = RiemannianSGD([O], lr=0.05)

    def loss():
        return 0.5 * (O - target).pow(2).sum()

    before = loss().item()
    for _ in range(20):
        opt.zero_grad()
        loss().backward()
        opt.step()
    assert loss().item() < before


def test_non_square_parameters_refused():
    with pytest.raises(ValueError, match="square"):
        RiemannianSGD([torch.nn.Parameter(torch.zeros(3, 4))])
    with pytest.raises(ValueError, match="lr"):
        RiemannianSGD([torch.nn.Parameter(torch.eye(3))], lr=0.0)
