"""The classical PU baselines a practitioner expects (pulearn's): Elkan-Noto, bagging PU, Lee-Liu and PU-F1 scores.

pulearn is not a dependency; the checks are known answers (hand-computed values and identities).
"""
import numpy as np
import pytest
from iclr26_pubench import REGISTRY, BaggingPU, ElkanNoto, gauss2_sample, lee_liu_score, make_pu_split, pu_f1_score
from iclr26_pubench.sweep import RunSpec, run_one
from sklearn.linear_model import LogisticRegression


def test_lee_liu_and_pu_f1_hand_computed():
    s = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    pred = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0])
    # r = 3/4 of L predicted positive, P(pred=1) = 5/10: r^2 / P = 0.5625 / 0.5
    assert lee_liu_score(s, pred) == pytest.approx(1.125, abs=1e-12)
    # prior 0.5: precision = 0.5 * 0.75 / 0.5 = 0.75, F1 = 2 * 0.75 * 0.75 / 1.5
    assert pu_f1_score(s, pred, 0.5) == pytest.approx(0.75, abs=1e-12)
    assert lee_liu_score(s, np.zeros(10)) == 0.0
    with pytest.raises(ValueError, match="prior"):
        pu_f1_score(s, pred, 1.5)


def test_pu_f1_estimates_the_true_f1_under_scar():
    X, y = gauss2_sample(40000, 0.4, 0)
    split = make_pu_split(X, y, 0.3, scheme="single", random_state=0)
    pred = (split.X.sum(1) > 0.5).astype(int)  # a fixed, deliberately shifted rule
    tp = float((pred * split.y).sum())
    f1 = 2 * tp / (pred.sum() + split.y.sum())
    assert pu_f1_score(split.s, pred, float(split.y.mean())) == pytest.approx(f1, abs=0.02)
    recall, rate = tp / split.y.sum(), pred.mean()
    assert lee_liu_score(split.s, pred) == pytest.approx(recall**2 / rate, rel=0.05)


def test_elkan_noto_recovers_c_when_the_classes_separate():
    # e1 = E[g(x) | s=1] = c E[P(y=1|x) | y=1]: c itself when the classes do not overlap, below c when they do
    X, y = gauss2_sample(20000, 0.4, 1)
    split = make_pu_split(X, y, 0.3, scheme="single", random_state=1)
    assert ElkanNoto(random_state=0).fit(split.X, split.s).c_ < 0.3 - 0.03
    far = np.where(y[:, None] == 1, 3.0, -3.0) + np.random.default_rng(0).normal(size=X.shape)
    split = make_pu_split(far, y, 0.3, scheme="single", random_state=1)
    est = ElkanNoto(random_state=0).fit(split.X, split.s)
    assert est.c_ == pytest.approx(0.3, abs=0.02)
    assert (est.predict(split.X) == split.y).mean() >= 0.98


def test_bagging_pu_with_one_full_model_is_the_naive_classifier():
    X, y = gauss2_sample(2000, 0.4, 3)
    split = make_pu_split(X, y, 0.5, scheme="single", random_state=3)
    n_u = int((split.s == 0).sum())
    one = BaggingPU(estimator=LogisticRegression(), n_estimators=1, max_samples=n_u, bootstrap=False,
                    random_state=0).fit(split.X, split.s)
    X32 = split.X.astype(np.float32)  # the estimators see float32 features
    naive = LogisticRegression().fit(X32, split.s)
    np.testing.assert_allclose(one.decision_function(split.X), naive.predict_proba(X32)[:, 1], atol=1e-6)
    bag = BaggingPU(n_estimators=30, random_state=0).fit(split.X, split.s)
    u = split.s == 0
    oob = bag.oob_score_
    assert np.nanmean(oob[split.y[u] == 1]) > np.nanmean(oob[split.y[u] == 0]) + 0.3
    X_te, y_te = gauss2_sample(5000, 0.4, 4)
    assert (bag.predict(X_te) == y_te).mean() >= 0.85


@pytest.mark.parametrize("key", ["elkannoto", "baggingpu"])
def test_baselines_are_in_the_registry_and_the_sweep(key):
    assert REGISTRY[key].family == "baseline" and not REGISTRY[key].needs_prior
    rec = run_one(RunSpec("digits", key, 0.5, budget="smoke"))
    assert rec["status"] == "ok" and rec["test_accuracy"] > 0.5, rec.get("error")
