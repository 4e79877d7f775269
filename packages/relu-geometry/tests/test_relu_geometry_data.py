"""The samplers follow the laws the paper defines; bad arguments are refused."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_relu_geometry import (
    BallMixture,
    RunConfig,
    ball_mixture,
    beta_radial,
    digits_dataset,
    gaussian_shell,
    lines,
    load_mnist_local,
    make_data,
    make_targets,
    target_function,
)
from scipy import stats


@pytest.mark.parametrize("alpha", [0.3, 1.0, 5.0])
def test_beta_radial_norm_follows_beta_1_alpha(alpha):
    X = beta_radial(20000, 5, alpha, rng=1, as_numpy=True)
    assert stats.kstest(np.linalg.norm(X, axis=1), stats.beta(1, alpha).cdf).pvalue > 0.01


def test_beta_radial_direction_is_uniform_on_sphere():
    d = 5
    X = beta_radial(20000, d, 1.0, rng=2, as_numpy=True)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert np.abs(U.mean(axis=0)).max() < 0.02
    assert np.abs(np.cov(U.T) - np.eye(d) / d).max() < 0.02


def test_sphere_points_have_unit_norm_and_tensor_output():
    X = beta_radial(100, 4, "sphere", rng=0)
    assert X.dtype == torch.float32 and X.shape == (100, 4)
    assert torch.allclose(X.norm(dim=1), torch.ones(100))


def test_ball_mixture_points_lie_in_their_subspace_with_ball_radii():
    rng = np.random.default_rng(3)
    mix = BallMixture.random(d=10, m=2, J=3, radius=0.7, rng=rng)
    X, comp = mix.sample(20000, rng)
    for j in range(3):
        rel = X[comp == j] - mix.centers[j]
        V = mix.bases[j]
        residual = rel - rel @ V @ V.T
        assert np.abs(residual).max() < 1e-6
        radii = np.linalg.norm(rel, axis=1)
        assert stats.kstest(radii / 0.7, lambda r: np.clip(r, 0, 1) ** 2).pvalue > 0.01


def test_lines_are_one_dimensional_components():
    X, comp = ball_mixture(500, 6, 1, 4, rng=0, return_component=True, as_numpy=True)
    sv = np.linalg.svd(X[comp == 0] - X[comp == 0][0], compute_uv=False)
    assert sv[1] < 1e-8 * sv[0]
    assert lines(50, 6, rng=0).shape == (50, 6)


def test_gaussian_shell_concentrates_near_unit_sphere():
    norms = gaussian_shell(2000, 400, rng=0).norm(dim=1)
    assert abs(float(norms.mean()) - 1) < 0.01 and float(norms.std()) < 0.05


def test_targets_share_the_function_and_add_noise_of_level_sigma():
    X = beta_radial(20000, 5, 1.0, rng=0, as_numpy=True)
    noisy, clean = make_targets(X, noise=0.5, rng=1)
    noisy2, clean2 = make_targets(X, noise=0.5, rng=2)
    np.testing.assert_array_equal(clean, clean2)
    assert abs(np.std(noisy - clean) - 0.5) < 0.01 and not np.array_equal(noisy, noisy2)
    assert np.all(make_targets(X, kind="zero", noise=0.0)[1] == 0)


def test_make_data_returns_the_training_clean_targets_and_noise_of_energy_sigma2():
    X, y, _, _, _, clean = make_data(RunConfig(alpha=1.0, n=4000, n_test=100, seed=5))
    assert torch.allclose(clean, torch.from_numpy(target_function(X.numpy())).float(), atol=1e-5)
    energy = float(torch.mean((y - clean) ** 2)) / 0.25
    assert abs(energy - 1) < 4 * np.sqrt(2 / 4000) and energy != 1.0


def test_digits_are_scaled_to_unit_max_norm():
    X, y, clean = digits_dataset(noise=0.0, rng=0)
    assert X.shape == (1797, 64) and abs(float(X.norm(dim=1).max()) - 1) < 1e-6
    assert torch.equal(y, clean) and float(clean.min()) == -0.5 and float(clean.max()) == 0.5


def test_mnist_loader_reads_npz_and_explains_missing_data(tmp_path):
    np.savez(tmp_path / "m.npz", x=np.random.default_rng(0).integers(0, 255, (5, 784), dtype=np.uint8),
             y=np.arange(5))
    X, labels = load_mnist_local(tmp_path / "m.npz")
    assert X.shape == (5, 784) and labels.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        load_mnist_local(tmp_path / "nothing")


def test_mnist_family_reads_only_the_local_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="mnist"):
        make_data(RunConfig(family="mnist", d=784, n=100, n_test=100))
    with pytest.raises(ValueError, match="60000"):
        RunConfig(family="mnist", d=784, n=60000, n_test=100)


@pytest.mark.parametrize("call, match", [
    (lambda: beta_radial(10, 3, -0.1), "alpha"),
    (lambda: beta_radial(1, 3, 1.0), "n"),
    (lambda: ball_mixture(10, 3, 3, 2), "m"),
    (lambda: ball_mixture(10, 3, 0, 2), "m"),
    (lambda: ball_mixture(10, 3, 1, 0), "J"),
    (lambda: make_targets(np.zeros((3, 2)), kind="sine"), "kind"),
])
def test_bad_data_arguments_raise_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=15, deadline=None)
@given(alpha=st.floats(0.0, 10.0), d=st.integers(1, 8), seed=st.integers(0, 1000))
def test_beta_radial_stays_in_the_unit_ball(alpha, d, seed):
    X = beta_radial(50, d, alpha, rng=seed, as_numpy=True)
    assert np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)
