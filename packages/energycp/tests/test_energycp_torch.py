"""The torch backend: same scores and sets as numpy, on the tensor's own device."""
import numpy as np
import pytest
from iclr26_energycp import EnergyConformalClassifier, energy, scores

torch = pytest.importorskip("torch")


def untuned(*args, **kwargs):
    """The estimator with the fixed weight T_energy = beta = 1 (no tuning in fit) unless given."""
    return EnergyConformalClassifier(*args, **{"T_energy": 1.0, "beta": 1.0, **kwargs})


def data(seed=0, n=200, K=6):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K)) * 2
    z[:10, :3] = 0.0
    return z, rng.integers(0, K, n)


@pytest.mark.parametrize("base", ["lac", "aps", "raps", "saps"])
def test_numpy_and_torch_scores_agree(base):
    z, y = data()
    u = np.random.default_rng(1).random(z.shape)
    kw = {} if base == "lac" else {"u": u}
    a = scores.energy_score(base, z, T_energy=0.5, beta=3.0, **kw)
    b = scores.energy_score(base, torch.tensor(z), T_energy=0.5, beta=3.0,
                            **({} if base == "lac" else {"u": torch.tensor(u)}))
    assert isinstance(b, torch.Tensor)
    np.testing.assert_allclose(b.numpy(), a, atol=1e-6)
    np.testing.assert_allclose(energy.energy_weight(torch.tensor(z)).numpy(), energy.energy_weight(z), rtol=1e-12)


def _sets_equal(device):
    z, y = data(2)
    zt, _ = data(3)
    for score in ("lac", "aps", "raps", "saps"):
        a = untuned(score, random_state=5).fit(z, y).predict_set(zt)
        tz = torch.tensor(z, device=device)
        b = untuned(score, random_state=5).fit(tz, torch.tensor(y, device=device))
        out = b.predict_set(torch.tensor(zt, device=device))
        assert out.device.type == torch.device(device).type
        assert np.array_equal(out.cpu().numpy(), a)


def test_numpy_and_torch_sets_agree_on_cpu():
    _sets_equal("cpu")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_numpy_and_torch_sets_agree_on_cuda():
    _sets_equal("cuda")
