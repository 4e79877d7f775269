"""The mathematics of the corrections against closed forms, finite differences and scipy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_instance_noise import losses
from scipy.optimize import minimize_scalar

floats = st.floats(-8, 8, allow_nan=False)
rhos = st.floats(0.0, 0.49, allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(t=floats, y=st.integers(0, 1), rho=rhos, base=st.sampled_from(losses.BASE_LOSSES))
def test_backward_correction_is_unbiased(t, y, rho, base):
    # E over the flip of the corrected loss equals the clean loss, for every t (test 1)
    expected = (1 - rho) * losses.backward_loss(t, y, rho, base) + rho * losses.backward_loss(t, 1 - y, rho, base)
    assert abs(expected - losses.base_loss(t, y, base)) < 1e-10 * max(1.0, abs(float(losses.base_loss(t, y, base))))


def test_backward_ce_is_ce_with_real_target():
    rng = np.random.default_rng(0)
    t, y, rho = rng.normal(0, 4, 500), rng.integers(0, 2, 500), rng.uniform(0, 0.45, 500)
    target = (y - rho) / (1 - 2 * rho)
    np.testing.assert_allclose(losses.corrected_logistic(t, y, rho, "backward"),
                               np.log1p(np.exp(t)) - target * t, rtol=0, atol=1e-12)


@pytest.mark.parametrize("eta, rho", [(0.1, 0.3), (0.7, 0.2), (0.95, 0.44), (0.5, 0.0)])
def test_forward_population_minimiser_is_the_clean_posterior(eta, rho):
    noisy = rho + (1 - 2 * rho) * eta

    def risk(t):
        return float(noisy * losses.forward_loss(t, 1, rho) + (1 - noisy) * losses.forward_loss(t, 0, rho))

    t_star = minimize_scalar(risk, bounds=(-15, 15), method="bounded", options={"xatol": 1e-10}).x
    assert abs(1 / (1 + np.exp(-t_star)) - eta) < 1e-6


@pytest.mark.parametrize("mode", ["backward", "forward"])
def test_gradient_matches_finite_differences(mode):
    rng = np.random.default_rng(1)
    t, y, rho = rng.normal(0, 2, 200), rng.integers(0, 2, 200), rng.uniform(0, 0.45, 200)
    g, h = losses.grad_hess(t, y, rho, mode)
    eps = 1e-6
    loss = losses.corrected_logistic
    fd = (loss(t + eps, y, rho, mode) - loss(t - eps, y, rho, mode)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    fd2 = (losses.grad_hess(t + eps, y, rho, mode)[0] - losses.grad_hess(t - eps, y, rho, mode)[0]) / (2 * eps)
    if mode == "backward":
        np.testing.assert_allclose(h, fd2, rtol=1e-6, atol=1e-9)
    else:
        # Fisher curvature = expectation of the true second derivative when y~ ~ Bernoulli(p~)
        p_noisy = rho + (1 - 2 * rho) / (1 + np.exp(-t))
        d2 = [(losses.grad_hess(t + eps, np.full(200, c), rho, mode)[0]
               - losses.grad_hess(t - eps, np.full(200, c), rho, mode)[0]) / (2 * eps) for c in (0, 1)]
        np.testing.assert_allclose(h, p_noisy * d2[1] + (1 - p_noisy) * d2[0], rtol=1e-5, atol=1e-9)


def test_no_correction_is_plain_cross_entropy():
    t, y = np.array([-3.0, 0.5, 7.0]), np.array([1, 0, 1])
    np.testing.assert_allclose(losses.corrected_logistic(t, y, None), np.log1p(np.exp(-(2 * y - 1) * t)), atol=1e-12)
    np.testing.assert_allclose(losses.corrected_logistic(t, y, np.zeros(3), "forward"),
                               losses.corrected_logistic(t, y, None), atol=1e-12)


@pytest.mark.parametrize("mode", ["backward", "forward"])
def test_torch_loss_matches_numpy_and_passes_gradcheck(mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    t, y, rho = rng.normal(0, 2, 50), rng.integers(0, 2, 50), rng.uniform(0, 0.45, 50)
    module = losses.InstanceCorrectedBCE(mode=mode)
    tt = torch.tensor(t, dtype=torch.float64, requires_grad=True)
    yt, rt = torch.tensor(y, dtype=torch.float64), torch.tensor(rho, dtype=torch.float64)
    assert abs(module(tt, yt, rt).item() - losses.corrected_logistic(t, y, rho, mode).mean()) < 1e-12
    assert torch.autograd.gradcheck(lambda z: module(z, yt, rt), (tt,))
    grad = torch.autograd.grad(module(tt, yt, rt), tt)[0].numpy()
    np.testing.assert_allclose(grad, losses.grad_hess(t, y, rho, mode)[0] / 50, atol=1e-12)


@pytest.mark.cuda
def test_torch_loss_stays_on_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    t = torch.randn(10, device="cuda")
    out = losses.InstanceCorrectedBCE("forward")(t, (t > 0).float(), torch.full((10,), 0.2, device="cuda"))
    assert out.device.type == "cuda"
