"""The Newton booster alone: regularised leaves in closed form, the corrected fixed point, and
scikit-learn's HistGradientBoosting as an independent reference."""
import numpy as np
import pytest
from iclr26_instance_noise import data, losses, models
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import log_loss


def _booster(**kw):
    base = {"rho": None, "validation_fraction": None, "random_state": 0}
    return models.CorrectedGradientBoosting(**(base | kw))


@pytest.mark.parametrize("mode, reg_lambda", [("forward", 1.0), ("backward", 5.0), ("none", 0.0)])
def test_one_round_leaves_are_the_regularised_newton_steps(mode, reg_lambda):
    b = data.linear_instance_noise(n=400, seed=4)
    model = _booster(mode=mode, n_estimators=1, learning_rate=1.0, reg_lambda=reg_lambda).fit(b.X, b.y_noisy, rho=b.rho)
    t0 = np.full(len(b.X), model.init_)
    g, h = losses.grad_hess(t0, b.y_noisy, None if mode == "none" else b.rho, mode)
    (tree,) = model.estimators_
    leaves = tree.apply(b.X.astype(np.float32))
    expected = {leaf: -g[leaves == leaf].sum() / (h[leaves == leaf].sum() + reg_lambda) for leaf in np.unique(leaves)}
    np.testing.assert_allclose(model.decision_function(b.X) - model.init_, [expected[leaf] for leaf in leaves],
                               rtol=1e-9, atol=1e-12)


def test_max_delta_step_caps_every_leaf():
    b = data.linear_instance_noise(n=400, seed=5)
    capped = _booster(n_estimators=20, max_delta_step=0.3).fit(b.X, b.y_noisy, rho=b.rho)
    free = _booster(n_estimators=20).fit(b.X, b.y_noisy, rho=b.rho)
    leaf_values = [np.abs(t.tree_.value[t.tree_.children_left == -1]).max() for t in capped.estimators_]
    assert max(leaf_values) <= 0.3 + 1e-12
    assert max(np.abs(t.tree_.value[t.tree_.children_left == -1]).max() for t in free.estimators_) > 0.3


def test_forward_booster_converges_to_the_corrected_group_posterior():
    # one binary feature: the booster's fixed point solves rho + (1 - 2 rho) p = noisy share, per group
    rng = np.random.default_rng(0)
    x = np.repeat([0.0, 1.0], 2000)
    y_noisy = (rng.random(4000) < np.where(x == 0, 0.35, 0.70)).astype(int)
    rho = 0.2
    model = _booster(mode="forward", n_estimators=300, learning_rate=0.5, max_depth=1, min_samples_leaf=1,
                     reg_lambda=1.0).fit(x[:, None], y_noisy, rho=np.full(4000, rho))
    share = np.array([y_noisy[x == 0].mean(), y_noisy[x == 1].mean()])
    np.testing.assert_allclose(model.predict_proba(np.array([[0.0], [1.0]]))[:, 1], (share - rho) / (1 - 2 * rho),
                               atol=1e-4)


def test_uncorrected_booster_matches_histgradientboosting():
    X, y = data.breast_cancer()
    idx = np.random.default_rng(0).permutation(len(y))
    tr, te = idx[:400], idx[400:]
    shrink = {}
    for lam in (0.0, 10.0):
        ours = _booster(mode="none", n_estimators=200, reg_lambda=lam).fit(X[tr], y[tr])
        ref = HistGradientBoostingClassifier(learning_rate=0.05, max_iter=200, max_depth=3, min_samples_leaf=20,
                                             max_leaf_nodes=None, l2_regularization=lam, early_stopping=False,
                                             random_state=0).fit(X[tr], y[tr])
        p, q = ours.predict_proba(X[te])[:, 1], ref.predict_proba(X[te])[:, 1]
        assert abs(log_loss(y[te], p) - log_loss(y[te], q)) < 0.03
        assert np.mean(np.abs(p - q)) < 0.03
        shrink[lam] = (np.abs(ours.decision_function(X[tr])).mean(), np.abs(ref.decision_function(X[tr])).mean())
    # leaf L2 shrinks the training logits, by a similar amount in both
    assert shrink[10.0][0] < 0.8 * shrink[0.0][0] and shrink[10.0][1] < 0.8 * shrink[0.0][1]
    assert abs(shrink[10.0][0] / shrink[10.0][1] - 1) < 0.2


@pytest.mark.parametrize("field, value, match", [("reg_lambda", -1.0, "reg_lambda"),
                                                 ("max_delta_step", 0.0, "max_delta_step"),
                                                 ("stopping", "sideways", "stopping"),
                                                 ("stopping_cv", 1, "stopping_cv")])
def test_booster_arguments_are_checked(field, value, match):
    X = np.random.default_rng(0).normal(size=(60, 2))
    with pytest.raises(ValueError, match=match):
        _booster(**{field: value}).fit(X, np.tile([0, 1], 30), rho=np.full(60, 0.1))


def test_cross_fitted_stopping_refits_all_rows_for_the_best_mean_round():
    b = data.linear_instance_noise(n=400, seed=3)
    cv = _booster(mode="forward", n_estimators=30, stopping_cv=3).fit(b.X, b.y_noisy, rho=b.rho)
    assert len(cv.validation_loss_) == 31 and 0 < cv.n_estimators_ == int(np.argmin(cv.validation_loss_))
    refit = _booster(mode="forward", n_estimators=cv.n_estimators_).fit(b.X, b.y_noisy, rho=b.rho)
    # the kept model is the booster grown on every row for that many rounds
    assert np.allclose(cv.decision_function(b.X_test), refit.decision_function(b.X_test))
