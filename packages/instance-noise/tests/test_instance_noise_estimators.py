"""Learners, estimators, noise generator and risk equivalence against independent computations."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_instance_noise import data, estimate, losses, metrics, models, noise
from scipy.stats import chi2
from sklearn.linear_model import LogisticRegression


def _overlapping(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ np.ones(d) + rng.normal(scale=2.0, size=n) > 0).astype(int)
    return X, y


def test_zero_rho_equals_sklearn_logistic_regression():
    X, y = _overlapping()
    lam = 1e-2
    ours = models.CorrectedLogisticRegression(mode="backward", lam=lam, rho=None).fit(X, y, rho=np.zeros(len(y)))
    ref = LogisticRegression(C=1 / (len(y) * lam), tol=1e-10, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_[0], atol=1e-4)
    assert abs(ours.intercept_ - ref.intercept_[0]) < 1e-4


def test_posterior_oracle_recovers_rho_exactly():
    b = data.linear_instance_noise(n=500, seed=3)
    eta = b.y_clean.astype(float)  # deterministic clean labels
    np.testing.assert_allclose(estimate.rho_from_posterior(b.rho + (1 - 2 * b.rho) * eta), b.rho, atol=1e-15)


def test_rho_posterior_is_out_of_fold():
    from sklearn.ensemble import RandomForestClassifier

    b = data.linear_instance_noise(n=600, seed=1)
    forest = RandomForestClassifier(n_estimators=20, bootstrap=False, random_state=0)
    cross_fitted = estimate.rho_posterior(b.X, b.y_noisy, estimator=forest, cv=3, random_state=0)
    in_sample = estimate.rho_from_posterior(forest.fit(b.X, b.y_noisy).predict_proba(b.X)[:, 1])
    assert in_sample.mean() < 0.01  # a model that saw the labels memorises them: rho_hat near 0
    assert cross_fitted.mean() > 2 * in_sample.mean()
    assert metrics.rho_mae(np.minimum(cross_fitted, 0.45), b.rho) < metrics.rho_mae(in_sample, b.rho)


def test_rho_knn_excludes_the_instance_itself():
    X = np.arange(6, dtype=float)[:, None]
    y = np.array([0, 0, 0, 1, 1, 1])
    # instance 2's two nearest others are 1 and 3 (labels 0, 1): half disagree
    assert estimate.rho_knn(X, y, k=2)[2] == 0.5
    assert estimate.rho_knn(X, y, k=2)[0] == 0.0


@settings(max_examples=20, deadline=None)
@given(votes=st.lists(st.lists(st.integers(0, 1), min_size=3, max_size=3), min_size=1, max_size=20))
def test_rho_annotators_is_shrunk_minority_share(votes):
    Y = np.array(votes)
    rho = estimate.rho_annotators(Y, a=1.0)
    ones = Y.sum(axis=1)
    np.testing.assert_allclose(rho, (np.minimum(ones, 3 - ones) + 1) / 5)
    assert np.all(rho < 0.5)


def test_region_noise_flips_at_rate_rho_independently_of_the_label():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200_000, 5))
    y = (X[:, 0] > 0).astype(int)
    y_noisy, rho = noise.instance_only_flip(X, y, kind="region", rho_max=0.45, random_state=1)
    flipped = y_noisy != y
    bins = np.digitize(rho, np.linspace(0, 0.45, 10))
    stat, cells = 0.0, 0
    for b in np.unique(bins):
        sel = bins == b
        if sel.sum() < 2000:
            continue
        assert abs(flipped[sel].mean() - rho[sel].mean()) < 0.01
        for c in (0, 1):  # flip counts per (rho bin, label) against their expectation given rho
            cell = sel & (y == c)
            observed, expected, var = flipped[cell].sum(), rho[cell].sum(), (rho[cell] * (1 - rho[cell])).sum()
            stat += (observed - expected) ** 2 / var
            cells += 1
    assert chi2.sf(stat, cells) > 0.01


@pytest.mark.parametrize("kind", ["region", "margin", "random"])
def test_noise_kinds_reach_a_requested_mean_rate(kind):
    X, y = _overlapping(n=2000)
    _, rho = noise.instance_only_flip(X, y, kind=kind, rate=0.2, random_state=0)
    assert np.all((rho >= 0) & (rho <= 0.45))
    assert abs(rho.mean() - 0.2) < (1e-6 if kind != "random" else 0.02)


def test_monte_carlo_risk_equivalence_and_a_wrong_correction_fails_it():
    b = data.linear_instance_noise(n=1000, seed=0)
    t = 4.0 * (b.X @ b.w_star)
    good = metrics.risk_gap(t, b.y_clean, b.rho, n_draws=2000)
    assert abs(good.z) <= 4
    rng = np.random.default_rng(123)
    draws = [losses.forward_loss(t, noise.flip_labels(b.y_clean, b.rho, rng), b.rho).mean() for _ in range(2000)]
    se = np.std(draws, ddof=1) / np.sqrt(2000)
    assert abs(np.mean(draws) - good.clean_loss) > 4 * se  # the forward loss is not risk-equivalent


@pytest.mark.parametrize("mode", ["backward", "forward", "none"])
def test_gbm_early_stopping_keeps_the_best_validation_round(mode):
    b = data.linear_instance_noise(n=500, seed=2)
    model = models.CorrectedGradientBoosting(mode=mode, n_estimators=40, rho=b.rho, random_state=0).fit(b.X, b.y_noisy)
    assert model.n_estimators_ == int(np.argmin(model.validation_loss_))
    assert len(model.validation_loss_) == 41
    assert model.predict_proba(b.X_test[:5]).shape == (5, 2)


def test_forward_oracle_correction_moves_the_linear_boundary_back():
    b = data.linear_instance_noise(n=3000, seed=20)
    noisy = models.CorrectedLogisticRegression(rho=None).fit(b.X, b.y_noisy)
    forward = models.CorrectedLogisticRegression(mode="forward", rho=b.rho).fit(b.X, b.y_noisy)
    assert forward.score(b.X_test, b.y_test) > noisy.score(b.X_test, b.y_test) + 0.02


def test_mlp_learns_and_predicts_probabilities():
    pytest.importorskip("torch")
    X, y = _overlapping(n=300)
    model = models.CorrectedMLP(hidden=(16,), epochs=5, rho=np.full(300, 0.1), random_state=0).fit(X, y)
    p = model.predict_proba(X)
    assert p.shape == (300, 2) and np.allclose(p.sum(axis=1), 1)
    assert len(model.validation_loss_) == 5
    assert model.score(X, y) > 0.6


def test_cross_validated_lam_scores_the_held_out_corrected_loss():
    from sklearn.model_selection import StratifiedKFold

    b = data.linear_instance_noise(n=600, seed=6)
    lams = (1e-3, 1e-1, 10.0)
    best, scores = models.cross_validated_lam(b.X, b.y_noisy, b.rho, "forward", lams=lams, cv=3, random_state=0)
    expected = []
    for lam in lams:  # the same folds, scored by hand with the forward loss
        fold_losses = []
        for tr, va in StratifiedKFold(3, shuffle=True, random_state=0).split(b.X, b.y_noisy):
            m = models.CorrectedLogisticRegression(mode="forward", lam=lam, rho=None).fit(b.X[tr], b.y_noisy[tr],
                                                                                          rho=b.rho[tr])
            fold_losses.append(losses.forward_loss(m.decision_function(b.X[va]), b.y_noisy[va], b.rho[va]).mean())
        expected.append(np.mean(fold_losses))
    np.testing.assert_allclose(scores, expected, rtol=1e-9)
    assert best == lams[int(np.argmin(expected))]
    assert scores[-1] > scores[0]  # lam = 10 swamps the (1 - 2 rho)-scaled forward gradient
    with pytest.raises(ValueError, match="cv"):
        models.cross_validated_lam(b.X, b.y_noisy, b.rho, "forward", cv=1)


def test_rho_knn_matches_a_loop_when_rows_are_duplicated():
    rng = np.random.default_rng(3)
    X = np.repeat(rng.normal(size=(40, 2)), 3, axis=0)  # every row three times: self may sit anywhere in a tie
    y = rng.integers(0, 2, len(X))
    k = 4
    from sklearn.neighbors import NearestNeighbors

    _, idx = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    expected = []
    for i, row in enumerate(idx):
        frac = y[[j for j in row if j != i][:k]].mean()
        expected.append(min(frac, 1 - frac))
    np.testing.assert_allclose(estimate.rho_knn(X, y, k=k), expected)


def test_wine_is_binary_and_standardised():
    X, y = data.wine_binary()
    assert X.shape == (178, 13) and int(y.sum()) == 71
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)


def test_default_posterior_model_is_early_stopped_and_closer_to_rho():
    from sklearn.ensemble import HistGradientBoostingClassifier

    b = data.linear_instance_noise(n=2000, seed=5)
    assert estimate.posterior_model().early_stopping is True
    stopped = estimate.rho_posterior(b.X, b.y_noisy, random_state=0)
    fixed = estimate.rho_posterior(b.X, b.y_noisy, HistGradientBoostingClassifier(max_iter=200, random_state=0),
                                   random_state=0)
    # 200 fixed rounds fit the flipped labels, pushing rho^ towards 0 where the flips are
    assert metrics.rho_mae(stopped, b.rho) < metrics.rho_mae(fixed, b.rho) - 0.003
