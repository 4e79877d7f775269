"""EDM preconditioning, the Karras grid and the Heun sampler against closed forms."""
import numpy as np
import pytest
import torch
from iclr26_diffsda import edm

SD = 0.5
SIGMAS = np.logspace(-3, 2, 41)


def test_preconditioning_identities():
    s = SIGMAS
    np.testing.assert_allclose(edm.c_skip(s, SD) + (edm.c_out(s, SD) / SD) ** 2, 1.0, rtol=1e-12)
    np.testing.assert_allclose(edm.c_in(s, SD) ** 2 * (s**2 + SD**2), 1.0, rtol=1e-12)
    np.testing.assert_allclose(edm.loss_weight(s, SD) * edm.c_out(s, SD) ** 2, 1.0, rtol=1e-12)
    cs = edm.c_skip(s, SD)
    np.testing.assert_allclose((1 - cs) ** 2 * SD**2 + cs**2 * s**2, edm.c_out(s, SD) ** 2, rtol=1e-12)


def test_point_values():
    assert edm.c_skip(SD, SD) == pytest.approx(0.5)
    assert edm.c_in(0.0, SD) * SD == pytest.approx(1.0)
    assert edm.c_noise(1.0) == 0.0
    assert float(edm.c_noise(torch.tensor(np.e**4))) == pytest.approx(1.0)


@pytest.mark.parametrize("sigma", [0.01, 0.5, 5.0])
def test_training_target_unit_variance_monte_carlo(sigma):
    rng = np.random.default_rng(0)
    x0 = rng.normal(0, SD, 100_000)
    xs = x0 + sigma * rng.normal(size=x0.shape)
    target = (x0 - edm.c_skip(sigma, SD) * xs) / edm.c_out(sigma, SD)
    assert target.std() == pytest.approx(1.0, rel=0.02)


def test_karras_grid_matches_numpy():
    n = 18
    got = edm.karras_sigmas(n).numpy()
    i = np.arange(n, dtype=np.float64)
    ref = (80.0 ** (1 / 7) + i / (n - 1) * (0.002 ** (1 / 7) - 80.0 ** (1 / 7))) ** 7
    np.testing.assert_allclose(got[:-1], ref, rtol=1e-12)
    assert got[-1] == 0.0 and got[0] == pytest.approx(80.0) and got[-2] == pytest.approx(0.002)


def test_karras_grid_matches_k_diffusion():
    kd = pytest.importorskip("k_diffusion")
    ref = kd.sampling.get_sigmas_karras(18, 0.002, 80, 7).numpy()
    np.testing.assert_allclose(edm.karras_sigmas(18).numpy(), ref, rtol=1e-6)


def optimal_denoiser(x, sigma, z):
    """D*(x; sigma) = sd^2 / (sigma^2 + sd^2) x for data ~ N(0, sd^2 I)."""
    return (SD**2 / (sigma**2 + SD**2)).reshape(-1, *([1] * (x.dim() - 1))) * x


def test_heun_deterministic_gain_of_optimal_denoiser():
    out = edm.heun_sample(optimal_denoiser, torch.ones(1, 1, dtype=torch.float64), steps=64)
    assert float(out) == pytest.approx(0.5, rel=0.01)


def test_heun_samples_have_data_distribution():
    x_T = torch.randn(10_000, 4, generator=torch.Generator().manual_seed(0))
    out = edm.heun_sample(optimal_denoiser, x_T, steps=32)
    assert float(out.std()) == pytest.approx(0.5, abs=0.01)
    assert abs(float(out.mean())) <= 0.01


def test_invert_then_sample_returns_input():
    x0 = torch.randn(256, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * SD
    x_T = edm.heun_invert(optimal_denoiser, x0, steps=64)
    back = edm.heun_sample(optimal_denoiser, x_T, steps=64)
    assert float(((back - x0) ** 2).mean().sqrt()) <= 1e-3


def test_heun_with_exact_denoiser_of_a_tiny_dataset_lands_on_its_points():
    """The ideal denoiser of a finite set (posterior mean over its points) makes the 12-step sampler of the
    quick benchmark return data points, with each frame's pitch track equal to its nearest point's."""
    from iclr26_diffsda import make_tones
    from iclr26_diffsda.evaluate import pitch_track

    pts = torch.tensor(make_tones(8, frames=8, seed=5).x.reshape(-1, 32), dtype=torch.float64)

    def exact(x, sigma, z):
        d2 = ((x[:, None, :] - pts[None]) ** 2).sum(-1)
        return torch.softmax(-d2 / (2 * sigma[:, None] ** 2), dim=1) @ pts

    out = edm.heun_sample(exact, torch.randn(256, 32, generator=torch.Generator().manual_seed(0),
                                             dtype=torch.float64), steps=12)
    nearest = ((out[:, None] - pts[None]) ** 2).sum(-1).min(1)
    assert float(nearest.values.sqrt().max()) <= 1e-3
    f_out = pitch_track(out.numpy()[:, None, :])
    f_near = pitch_track(pts[nearest.indices].numpy()[:, None, :])
    assert np.abs(f_out - f_near).max() <= 1e-3
    assert len(set(nearest.indices.tolist())) >= 40  # samples spread over the set, not one mode


@pytest.mark.parametrize("kwargs, match", [({"steps": 1}, "steps"), ({"steps": 10, "sigma_min": 80.0}, "sigma_min"),
                                           ({"steps": 10, "sigma_min": 0.0}, "sigma_min")])
def test_bad_grid(kwargs, match):
    with pytest.raises(ValueError, match=match):
        edm.karras_sigmas(**kwargs)
