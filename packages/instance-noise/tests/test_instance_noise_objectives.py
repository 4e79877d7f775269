"""The LightGBM/XGBoost custom objective and metric: the same numbers as ``grad_hess`` and ``corrected_ce``,
and, where the libraries are installed (extras ``lightgbm``/``xgboost``), the libraries' own binary
objectives at rho = 0 and the corrected fixed point at constant rho."""
from types import SimpleNamespace

import numpy as np
import pytest
from iclr26_instance_noise import data, losses, models, objectives


def _data(y):
    return SimpleNamespace(get_label=lambda: np.asarray(y, dtype=np.float32))


@pytest.mark.parametrize("mode", ["forward", "backward"])
def test_objective_and_metric_are_the_corrected_loss(mode):
    rng = np.random.default_rng(0)
    t, y, rho = rng.normal(0, 2, 300), rng.integers(0, 2, 300), rng.uniform(0, 0.45, 300)
    g, h = objectives.corrected_objective(rho, mode)(t, _data(y))
    g_ref, h_ref = losses.grad_hess(t, y, rho, mode)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-12)
    name, value, higher_is_better = objectives.corrected_metric(rho, mode)(t, _data(y))
    assert name == f"{mode}_corrected_ce" and higher_is_better is False
    assert abs(value - losses.corrected_logistic(t, y, rho, mode).mean()) < 1e-12
    assert len(objectives.corrected_metric(rho, mode, library="xgboost")(t, _data(y))) == 2


def test_objective_refuses_rows_that_do_not_match_rho():
    objective = objectives.corrected_objective(np.full(10, 0.1))
    with pytest.raises(ValueError, match="rho: expected one flip probability per row"):
        objective(np.zeros(12), _data(np.tile([0, 1], 6)))
    with pytest.raises(ValueError, match="library"):
        objectives.corrected_metric(np.full(10, 0.1), library="catboost")
    with pytest.raises(ValueError, match="mode"):
        objectives.corrected_objective(np.full(10, 0.1), mode="none")


def _two_groups():
    """One binary feature; noisy shares 0.35 and 0.70 per group; the clean fixed point per group."""
    rng = np.random.default_rng(0)
    x = np.repeat([0.0, 1.0], 2000)
    y_noisy = (rng.random(4000) < np.where(x == 0, 0.35, 0.70)).astype(int)
    share = np.array([y_noisy[x == 0].mean(), y_noisy[x == 1].mean()])
    return x[:, None], y_noisy, share


@pytest.mark.parametrize("library", objectives.LIBRARIES)
@pytest.mark.parametrize("mode", ["forward", "backward"])
def test_objective_on_the_librarys_own_data_object_is_grad_hess(library, mode):
    """The labels come from a real ``lightgbm.Dataset`` / ``xgboost.DMatrix``; preds are the library's raw scores."""
    lib = pytest.importorskip(library)
    X, y = data.breast_cancer()
    rho = np.random.default_rng(1).uniform(0, 0.45, len(y))
    if library == "lightgbm":
        dtrain = lib.Dataset(X, y, params={"verbose": -1}).construct()
        booster = lib.train({"objective": "binary", "num_leaves": 4, "verbose": -1, "num_threads": 1}, dtrain, 5)
        t = booster.predict(X, raw_score=True)
    else:
        dtrain = lib.DMatrix(X, y)
        booster = lib.train({"objective": "binary:logistic", "max_depth": 2, "nthread": 1}, dtrain, 5)
        t = booster.predict(dtrain, output_margin=True)
    g, h = objectives.corrected_objective(rho, mode)(t, dtrain)
    g_ref, h_ref = losses.grad_hess(t, y, rho, mode)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-12)
    assert np.ptp(g) > 0.1  # the boosted scores differ per row, so this compares varied gradients


def test_lightgbm_with_the_objective_is_lightgbm_binary_at_zero_rho_and_corrects_at_constant_rho():
    lgb = pytest.importorskip("lightgbm")
    X, y = data.breast_cancer()
    base = {"num_leaves": 8, "min_data_in_leaf": 20, "lambda_l2": 1.0, "learning_rate": 0.1, "verbose": -1,
            "num_threads": 1, "deterministic": True, "force_row_wise": True}
    ref = lgb.train(base | {"objective": "binary", "boost_from_average": False}, lgb.Dataset(X, y), 30)
    ours = lgb.train(base | {"objective": objectives.corrected_objective(np.zeros(len(y)), "backward")},
                     lgb.Dataset(X, y), 30)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), ref.predict(X, raw_score=True), atol=1e-5)
    X1, y_noisy, share = _two_groups()
    rho = 0.2
    fwd = lgb.train(base | {"objective": objectives.corrected_objective(np.full(4000, rho)), "learning_rate": 0.5,
                            "min_data_in_leaf": 1}, lgb.Dataset(X1, y_noisy), 300)
    p = losses.sigmoid(fwd.predict(np.array([[0.0], [1.0]]), raw_score=True))
    np.testing.assert_allclose(p, (share - rho) / (1 - 2 * rho), atol=1e-3)


def test_xgboost_with_the_objective_is_xgboost_logistic_at_zero_rho_and_corrects_at_constant_rho():
    xgb = pytest.importorskip("xgboost")
    X, y = data.breast_cancer()
    base = {"max_depth": 3, "lambda": 1.0, "eta": 0.1, "nthread": 1, "tree_method": "exact"}
    dtrain = xgb.DMatrix(X, y)
    ref = xgb.train(base | {"objective": "binary:logistic", "base_score": 0.5}, dtrain, 30)
    ours = xgb.train(base | {"base_score": 0.0}, dtrain, 30,
                     obj=objectives.corrected_objective(np.zeros(len(y)), "backward"))
    np.testing.assert_allclose(ours.predict(dtrain, output_margin=True), ref.predict(dtrain, output_margin=True),
                               atol=1e-5)
    X1, y_noisy, share = _two_groups()
    rho = 0.2
    fwd = xgb.train(base | {"base_score": 0.0, "eta": 0.5, "max_depth": 1}, xgb.DMatrix(X1, y_noisy), 300,
                    obj=objectives.corrected_objective(np.full(4000, rho)))
    p = losses.sigmoid(fwd.predict(xgb.DMatrix(np.array([[0.0], [1.0]])), output_margin=True))
    np.testing.assert_allclose(p, (share - rho) / (1 - 2 * rho), atol=1e-3)


def test_lightgbm_stops_on_the_corrected_metric_like_our_booster():
    lgb = pytest.importorskip("lightgbm")
    b = data.linear_instance_noise(n=1000, seed=7)
    tr, va = np.arange(800), np.arange(800, 1000)
    params = {"objective": objectives.corrected_objective(b.rho[tr]), "num_leaves": 8, "learning_rate": 0.05,
              "lambda_l2": 1.0, "verbose": -1, "num_threads": 1, "deterministic": True}
    record = {}
    booster = lgb.train(params, lgb.Dataset(b.X[tr], b.y_noisy[tr]), 200,
                        valid_sets=[lgb.Dataset(b.X[va], b.y_noisy[va])], feval=objectives.corrected_metric(b.rho[va]),
                        callbacks=[lgb.record_evaluation(record)])
    curve = np.array(record["valid_0"]["forward_corrected_ce"])
    by_hand = models.corrected_ce(booster.predict(b.X[va], raw_score=True), b.y_noisy[va].astype(float), b.rho[va],
                                  "forward")
    assert abs(curve[-1] - by_hand) < 1e-9
    assert curve.min() < curve[0] - 0.02  # the corrected booster learns the clean posterior's direction
