"""ModelConformalClassifier: sets from a fitted scikit-learn classifier or a torch module."""
import numpy as np
import pytest
from iclr26_energycp import EnergyConformalClassifier, ModelConformalClassifier, model_logits
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    clf = LogisticRegression(max_iter=300).fit(X[:600] / 16, y[:600])
    return clf, X[600:] / 16, y[600:]


def test_sklearn_classifier_gives_the_sets_of_its_logits(digits):
    clf, X, y = digits
    conformal = EnergyConformalClassifier("raps", alpha=0.1, T_energy=1.0, beta=0.1, random_state=0)
    model = ModelConformalClassifier(clf, conformal).fit(X[:600], y[:600])
    sets = model.predict_set(X[600:])
    direct = clone(conformal).fit(clf.decision_function(X[:600]), y[:600]).predict_set(clf.decision_function(X[600:]))
    assert np.array_equal(sets, direct)
    assert conformal.__dict__.get("q_hat_") is None  # the given estimator is copied, not fitted
    assert sets[np.arange(len(sets)), y[600:]].mean() >= 0.85
    assert model.get_params()["conformal__alpha"] == 0.1
    model.set_params(conformal__alpha=0.2)
    assert model.conformal.alpha == 0.2 and clone(model).conformal.alpha == 0.2
    with pytest.raises(NotFittedError):
        ModelConformalClassifier(clf).predict_set(X)


def test_binary_logits_reproduce_predict_proba_and_mondrian_runs(digits):
    _, X, y = digits
    clf = LogisticRegression(max_iter=300).fit(X, y % 2)
    z = model_logits(clf, X)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    np.testing.assert_allclose(p, clf.predict_proba(X), atol=1e-10)
    mondrian = ModelConformalClassifier(clf, EnergyConformalClassifier(class_conditional=True, random_state=0))
    sets = mondrian.fit(X[:800], y[:800] % 2).predict_set(X[800:])
    assert np.asarray(mondrian.conformal_.q_hat_).shape == (2,) and sets.shape == (len(X) - 800, 2)


def test_probability_only_model_warns_and_bad_model_raises(digits):
    _, X, y = digits
    nb = GaussianNB().fit(X, y)
    with pytest.warns(UserWarning, match="log predict_proba"):
        z = model_logits(nb, X[:5])
    np.testing.assert_allclose(np.exp(z).sum(1), 1.0)
    with pytest.raises(TypeError, match="model: expected"):
        model_logits(object(), X)


def test_torch_module():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 8)).astype(np.float32)
    y = (X[:, :3].argmax(1)).astype(np.int64)
    net = torch.nn.Linear(8, 3)
    with torch.no_grad():
        net.weight.zero_()
        net.weight[:, :3] = 3 * torch.eye(3)
    model = ModelConformalClassifier(net, EnergyConformalClassifier("aps", T_energy=1.0, beta=1.0, random_state=0),
                                     batch_size=64).fit(X[:300], y[:300])
    sets = model.predict_set(X[300:])
    z = net(torch.as_tensor(X)).detach()
    assert torch.allclose(model_logits(net, X, batch_size=7), z)
    assert sets.shape == (100, 3) and bool(sets[torch.arange(100), torch.as_tensor(y[300:])].float().mean() > 0.8)
