"""Bad input gets a clear error naming the argument; near-1/2 rho is clipped with a warning."""
import numpy as np
import pytest
from iclr26_instance_noise import estimate, losses, models, noise

T, Y = np.zeros(4), np.array([0, 1, 0, 1])


@pytest.mark.parametrize("rho, rho_max, match", [
    (np.full(3, 0.1), 0.45, "shape"),
    (np.array([0.1, np.nan, 0.1, 0.1]), 0.45, "NaN"),
    (np.array([0.1, -0.1, 0.1, 0.1]), 0.45, ">= 0"),
    (np.array([0.1, 0.5, 0.1, 0.1]), None, "< 0.5"),
    (np.full(4, 0.1), 0.5, "rho_max"),
])
def test_bad_rho_is_refused(rho, rho_max, match):
    with pytest.raises(ValueError, match=match):
        losses.corrected_logistic(T, Y, rho, rho_max=rho_max)


@pytest.mark.parametrize("y, match", [(np.array([0, 1, 2, 1]), "binary only"), (np.array([0, 3, 0, 3]), "binary")])
def test_non_binary_labels_are_refused(y, match):
    with pytest.raises(ValueError, match=match):
        losses.corrected_logistic(T, y, None)


def test_plus_minus_one_and_boolean_labels_are_mapped():
    with pytest.warns(UserWarning, match="mapped"):
        a = losses.corrected_logistic(T, np.array([-1, 1, -1, 1]), 0.1)
    np.testing.assert_allclose(a, losses.corrected_logistic(T, Y, 0.1))
    np.testing.assert_allclose(losses.corrected_logistic(T, Y.astype(bool), 0.1), a)


def test_near_half_rho_is_clipped_with_a_count():
    with pytest.warns(UserWarning, match="2 of 4 values above rho_max"):
        out = losses.corrected_logistic(T + 1, Y, np.array([0.1, 0.4999999, 0.5, 0.2]))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[2], losses.corrected_logistic(T[:1] + 1, Y[2:3], 0.45)[0])


def test_estimator_and_model_arguments_are_checked():
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.tile([0, 1], 10)
    with pytest.raises(ValueError, match="cv"):
        estimate.rho_posterior(X, y, cv=1)
    with pytest.raises(ValueError, match="m >= 2"):
        estimate.rho_annotators(np.ones((5, 1)))
    with pytest.raises(ValueError, match="mode"):
        models.CorrectedLogisticRegression(mode="sideways", rho=None).fit(X, y)
    with pytest.raises(ValueError, match="shape"):
        models.CorrectedLogisticRegression(rho=np.full(3, 0.1)).fit(X, y)
    with pytest.raises(ValueError, match="kind"):
        noise.instance_only_flip(X, y, kind="nope")
    with pytest.raises(ValueError, match="X, y"):
        noise.instance_only_flip(X[:5], y)


def test_torch_loss_refuses_bad_rho():
    torch = pytest.importorskip("torch")
    module = losses.InstanceCorrectedBCE("backward", rho_max=None)
    with pytest.raises(ValueError, match="< 0.5"):
        module(torch.zeros(3), torch.tensor([0.0, 1.0, 0.0]), torch.tensor([0.1, 0.5, 0.1]))
    with pytest.raises(ValueError, match="rho_max"):
        losses.InstanceCorrectedBCE("forward", rho_max=0.6)
