"""The Tier C methods' objectives, each against a numpy reference written from the benchmark's definitions
(fixed tensors, to 1e-6), and the update directions of their loops."""
import numpy as np
import pytest
import torch
from iclr26_pubench.losses import cgenpu_auxiliary_loss, cgenpu_generator_alignment, cgenpu_kld, pan_objective

RNG = np.random.default_rng(7)
R_U, D_P, D_U = RNG.uniform(0.01, 0.99, 9), RNG.uniform(0.01, 0.99, 5), RNG.uniform(0.01, 0.99, 9)


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def pan_reference(r_u, d_p, d_u, eps, w):
    """sum log D(p) + sum max(log(1 - D(u)) - log(1 - mean D(u)), 0) over the first min(n_p, n_u) U rows,
    + w sum (log(1 - R(u)) - log R(u)) (2 D(u) - 1) over all U; each log(v) as log(max(v + eps, eps))."""
    m = min(len(d_p), len(d_u))
    lg = lambda v: np.log(np.maximum(v + eps, eps))  # noqa: E731
    first = np.sum(lg(d_p)) + np.sum(np.maximum(lg(1 - d_u[:m]) - np.log(max(1 - d_u[:m].mean(), eps)), 0))
    return first + w * np.sum((lg(1 - r_u) - lg(r_u)) * (2 * d_u - 1))


@pytest.mark.parametrize("eps, w", [(1e-2, 1e-4), (1e-3, 0.5)])
def test_pan_objective_matches_the_reference(eps, w):
    got = pan_objective(_t(R_U), _t(D_P), _t(D_U), eps, w).item()
    assert got == pytest.approx(pan_reference(R_U, D_P, D_U, eps, w), abs=1e-6)
    # the hinge is active for some rows and not for others on these tensors, so both branches are exercised
    gap = np.log(1 - D_U[:5] + eps) - np.log(1 - D_U[:5].mean())
    assert (gap > 0).any() and (gap < 0).any()


def test_pan_gradients_point_the_official_way():
    r_u = _t(R_U).requires_grad_()
    d_u = _t(D_U).requires_grad_()
    pan_objective(r_u, _t(D_P), d_u, 1e-2, 0.5).backward()
    # R descends: where D(u) > 1/2 the recognizer's gradient step raises R(u) (the term falls as R(u) grows)
    assert np.all(np.sign(-r_u.grad.numpy()) == np.sign(2 * D_U - 1))
    # the mean of D(u) in the hinge is a detached reference: its gradient is the hinge rows' own term only
    eps, m = 1e-2, 5
    active = np.log(1 - D_U[:m] + eps) - np.log(1 - D_U[:m].mean()) > 0
    expected = 0.5 * 2 * (np.log(1 - R_U + eps) - np.log(R_U + eps))
    expected[:m] += np.where(active, -1 / (1 - D_U[:m] + eps), 0.0)
    np.testing.assert_allclose(d_u.grad.numpy(), expected, atol=1e-6)


def kld_reference(p, q, eps=1e-7, mean=True):
    p, q = np.clip(p, eps, 1), np.clip(q, eps, 1)
    v = p * np.log(p / q)
    return v.mean() if mean else v.sum()


@pytest.mark.parametrize("mean", [True, False])
def test_cgenpu_losses_match_the_reference(mean):
    a_xp, a_gp, a_gn = RNG.uniform(0, 1, 6), RNG.uniform(0, 1, 6), RNG.uniform(0, 1, 6)
    a_xp[0], a_gn[1] = 0.0, 1.0  # the eps clamp at both ends
    align = kld_reference(a_xp, a_gp, mean=mean) + kld_reference(a_gp, 1 - a_gn, mean=mean)
    aux = kld_reference(np.ones(6), a_xp, mean=mean) + align
    assert cgenpu_kld(_t(a_xp), _t(a_gp), reduce_mean=mean).item() == pytest.approx(
        kld_reference(a_xp, a_gp, mean=mean), abs=1e-6)
    assert cgenpu_generator_alignment(_t(a_xp), _t(a_gp), _t(a_gn), mean).item() == pytest.approx(align, abs=1e-6)
    assert cgenpu_auxiliary_loss(_t(a_xp), _t(a_gp), _t(a_gn), mean).item() == pytest.approx(aux, abs=1e-6)
    # kld(1, A(x_p)) = -mean log A(x_p): zero only when A calls every real positive positive
    assert cgenpu_kld(torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)).item() == 0.0


def test_cgenpu_hidden_sizes():
    from iclr26_pubench.methods.cgenpu import cgenpu_hidden

    assert cgenpu_hidden(64) == [256, 128, 64]
    assert cgenpu_hidden(784) == [512, 256, 128]
    assert cgenpu_hidden(3072) == [1024, 512, 256]
