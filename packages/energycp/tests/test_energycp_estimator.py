"""The scikit-learn estimator contract and user score objects."""
import numpy as np
import pytest
from iclr26_energycp import EnergyConformalClassifier
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import estimator_checks as ec


def _logits(n=400, k=5, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 2.0
    return z, y


def test_clone_get_set_params_and_repr():
    model = EnergyConformalClassifier(score="raps", T_energy=0.5, random_state=3)
    copy = clone(model)
    assert copy is not model and copy.get_params() == model.get_params()
    assert set(model.get_params(deep=False)) == set(model.get_params(deep=True))
    assert model.set_params(alpha=0.2, beta=2.0) is model and model.alpha == 0.2 and model.beta == 2.0
    with pytest.raises(ValueError, match="nope"):
        model.set_params(nope=1)
    assert repr(model) == "EnergyConformalClassifier(score='raps', alpha=0.2, T_energy=0.5, beta=2.0, random_state=3)"
    assert repr(EnergyConformalClassifier()) == "EnergyConformalClassifier()"


def test_unfitted_use_raises_sklearn_not_fitted_error():
    z, _ = _logits()
    with pytest.raises(NotFittedError, match="not fitted"):
        EnergyConformalClassifier().predict_set(z)


@pytest.mark.parametrize("check", [ec.check_no_attributes_set_in_init, ec.check_get_params_invariance,
                                   ec.check_set_params, ec.check_parameters_default_constructible])
def test_sklearn_estimator_checks(check):
    model = EnergyConformalClassifier()
    check(type(model).__name__, model)


def test_user_score_object_matches_the_builtin_score():
    z, y = _logits()

    class OneMinusP:  # LAC with the multiplicative weight; a get_params makes it tunable through set_params
        def __init__(self, power=1.0):
            self.power = power

        def get_params(self):
            return {"power": self.power}

        def set_params(self, **params):
            self.__dict__.update(params)

        def __call__(self, probs, labels=None, rng=None):
            p = probs if labels is None else probs[np.arange(len(probs)), labels]
            return (1.0 - p) ** self.power

    custom = EnergyConformalClassifier(score=OneMinusP(), energy=False).fit(z[:200], y[:200])
    builtin = EnergyConformalClassifier(score="lac", energy=False).fit(z[:200], y[:200])
    assert custom.q_hat_ == pytest.approx(builtin.q_hat_)
    assert np.array_equal(custom.predict_set(z[200:]), builtin.predict_set(z[200:]))
    weighted = EnergyConformalClassifier(score=OneMinusP(), random_state=0).fit(z[:200], y[:200])
    assert weighted.evaluate(z[200:], y[200:])["coverage"] >= 0.8
    assert weighted.get_params()["score__power"] == 1.0
    weighted.set_params(score__power=2.0)
    assert weighted.score.power == 2.0
    with pytest.raises(ValueError, match="shape"):
        EnergyConformalClassifier(score=lambda p, labels=None, rng=None: p[:, 0]).fit(z, y).predict_set(z)
    with pytest.raises(ValueError, match="score: expected one of"):
        EnergyConformalClassifier(score=3).fit(z, y)
    with pytest.raises(ValueError, match="to_dict"):
        custom.to_dict()
