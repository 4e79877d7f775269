"""The estimator interface: scikit-learn contract, bad input, the gauss2 Bayes check, every method fits."""
import math

import numpy as np
import pytest
from iclr26_pubench import BBEPU, NNPU, PUET, REGISTRY, NaivePU, PNOracle, gauss2_sample, get_method, make_pu_split
from scipy.stats import norm
from sklearn.base import clone
from sklearn.metrics import roc_auc_score


@pytest.fixture(scope="module")
def gauss_split():
    X, y = gauss2_sample(1200, 0.4, 0)
    return make_pu_split(X, y, 0.5, random_state=0)


FAST = {NNPU: {"epochs": 3, "backbone": "linear", "selection": "last"}, PUET: {"n_estimators": 3, "max_depth": 5},
        BBEPU: {"epochs": 3, "backbone": "linear", "selection": "last"}}


@pytest.mark.parametrize("cls", [NNPU, PUET, BBEPU])
def test_sklearn_contract(cls, gauss_split):
    est = cls(random_state=3, **FAST[cls])
    params = est.get_params()
    twin = clone(est)
    assert twin.get_params() == params and twin is not est
    twin.set_params(random_state=4)
    assert twin.random_state == 4 and est.random_state == 3
    kw = {} if cls is BBEPU else {"prior": gauss_split.prior}
    assert est.fit(gauss_split.X, gauss_split.s, **kw) is est
    again = clone(est).fit(gauss_split.X, gauss_split.s, **kw)
    assert np.array_equal(est.decision_function(gauss_split.X), again.decision_function(gauss_split.X))
    proba = est.predict_proba(gauss_split.X[:5])
    assert proba.shape == (5, 2) and np.allclose(proba.sum(1), 1)
    assert set(np.unique(est.predict(gauss_split.X))) <= {0, 1} and est.fit_time_ >= 0


def test_pn_linear_reaches_bayes_accuracy():
    X, y = gauss2_sample(4000, 0.4, 1)
    sp = make_pu_split(X, y, 0.5, random_state=1)
    pn = PNOracle(backbone="linear", epochs=20, batch_size=128, lr=1e-2, selection="last", random_state=0)
    pn.fit(sp.X, sp.s, y=sp.y)
    X_te, y_te = gauss2_sample(100_000, 0.4, 2)
    k = -math.log(0.4 / 0.6) / 2
    a_b = 0.4 * norm.cdf((2 - k) / math.sqrt(2)) + 0.6 * norm.cdf((2 + k) / math.sqrt(2))
    assert abs((pn.predict(X_te) == y_te).mean() - a_b) <= 0.01


def test_nnpu_beats_naive_on_gauss2(gauss_split):
    X_te, y_te = gauss2_sample(5000, 0.4, 9)
    kw = {"backbone": "linear", "epochs": 15, "batch_size": 128, "lr": 1e-2, "selection": "last", "random_state": 0}
    nn = NNPU(**kw).fit(gauss_split.X, gauss_split.s, prior=gauss_split.prior)
    naive = NaivePU(**kw).fit(gauss_split.X, gauss_split.s)
    assert (nn.predict(X_te) == y_te).mean() > (naive.predict(X_te) == y_te).mean() + 0.05


@pytest.mark.parametrize("key", list(REGISTRY))
def test_every_method_fits_and_predicts(key, gauss_split):
    from iclr26_pubench.sweep import SMOKE

    spec = get_method(key)
    accepted = spec.cls().get_params()
    est = spec.build("cpu", random_state=0, **{k: v for k, v in SMOKE.items() if k in accepted})
    kw = {"prior": gauss_split.prior} if spec.needs_prior else {}
    if key == "pn":
        kw["y"] = gauss_split.y
    est.fit(gauss_split.X, gauss_split.s, X_val=gauss_split.X[:200], s_val=gauss_split.s[:200],
            y_val=gauss_split.y[:200], **kw)
    pred = est.predict(gauss_split.X)
    assert pred.shape == (len(gauss_split.s),) and np.isfinite(est.decision_function(gauss_split.X)).all()


def test_the_18_methods_and_tiers():
    from iclr26_pubench.methods import THE_18

    assert len(THE_18) == 18
    # PAN, CGenPU, LaGAM and VAE-PU follow the benchmark's objectives and loops
    # (tests/test_pubench_official_losses.py); every learner is Tier A or B
    assert {m.tier for m in REGISTRY.values()} == {"A", "B"}
    assert {REGISTRY[k].tier for k in ("pan", "cgenpu", "lagam", "vaepu")} == {"B"}


@pytest.fixture(scope="module")
def small_split():
    X, y = gauss2_sample(900, 0.4, 4)
    sp = make_pu_split(X[:700], y[:700], 0.5, random_state=4)
    return sp, X[700:800], y[700:800], X[800:], y[800:]


def test_lagam_fits_and_beats_chance(small_split):
    from iclr26_pubench import LaGAM

    sp, X_val, y_val, X_te, y_te = small_split
    est = LaGAM(hidden=32, epochs=8, warmup=3, n_clusters=8, batch_size=64, lr=0.05, selection="last", random_state=0)
    est.fit(sp.X, sp.s, X_val=X_val, s_val=(y_val == 1) & (np.arange(100) % 2 == 0), y_val=y_val)
    assert (est.predict(X_te) == y_te).mean() >= 0.75  # chance (all negative) is 0.6
    with pytest.raises(ValueError, match="y_val"):
        LaGAM(epochs=1).fit(sp.X, sp.s)


def test_vaepu_fits_and_beats_chance(small_split):
    from iclr26_pubench import VAEPU

    sp, X_val, y_val, X_te, y_te = small_split
    est = VAEPU(vae_epochs=5, epochs=40, n_h_y=4, n_h_o=2, hidden_enc=(32,), hidden_dec=(32,), hidden_disc=(32,),
                batch_size=128, batch_size_l=64, lr=1e-3, lr_vae=1e-3, lr_disc=1e-3, threshold="youden",
                selection="last", random_state=0)
    est.fit(sp.X, sp.s, prior=sp.prior, X_val=X_val, s_val=(y_val == 1) & (np.arange(100) % 2 == 0), y_val=y_val)
    # on 2-d data the observation code h_o sees all of x, so the generated rows stay U-like: the ranking beats
    # chance (AUC 0.5) clearly but stays far below nnPU's; on digits the CPU budget reaches AUC 0.91-0.97
    assert roc_auc_score(y_te, est.decision_function(X_te)) >= 0.65
    assert est.gmm_mu_.shape == (2, 4) and est.pi_[1] == pytest.approx(sp.prior * (sp.s == 0).sum() / len(sp.s))
    with pytest.raises(ValueError, match="y_val"):
        VAEPU(epochs=1, threshold="youden").fit(sp.X, sp.s, prior=sp.prior)
    with pytest.raises(ValueError, match="schedule"):
        VAEPU(epochs=4, schedule=(0.9, 0.5, 0.6, 0.5, 0.6)).fit(sp.X, sp.s, prior=sp.prior)


@pytest.mark.parametrize("kw, err, match", [
    ({"prior": None}, ValueError, "BBEPU"), ({"prior": 1.0}, ValueError, "prior: expected"),
    ({"prior": 0.4, "s": [0, 2, 1, 0]}, ValueError, "s: expected"),
    ({"prior": 0.4, "s": [1, 1, 1, 1]}, ValueError, "labeled and one unlabeled"),
    ({"prior": 0.4, "X": [[np.nan], [0.0], [1.0], [2.0]]}, ValueError, "finite"),
    ({"prior": 0.4, "X": "abc"}, TypeError, "X:"),
])
def test_bad_input(kw, err, match):
    args = {"X": np.arange(4.0)[:, None], "s": [1, 0, 0, 0], **kw}
    with pytest.raises(err, match=match):
        NNPU(epochs=1).fit(args["X"], args["s"], prior=args["prior"])


def test_minus_one_labels_and_unknown_options():
    est = NNPU(epochs=1, backbone="linear", selection="last").fit(np.arange(6.0)[:, None], [1, -1, -1, 1, -1, -1],
                                                                   prior=0.3)
    assert est.predict(np.zeros((2, 1))).shape == (2,)
    with pytest.raises(ValueError, match="selection"):
        NNPU(selection="best").fit(np.arange(4.0)[:, None], [1, 0, 0, 0], prior=0.3)
    with pytest.raises(ValueError, match="method: expected one of"):
        get_method("svm")
    with pytest.raises(ValueError, match="y:"):
        PNOracle().fit(np.zeros((4, 1)), [1, 0, 0, 0])
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((2, 3)))


@pytest.mark.cuda
def test_nnpu_runs_on_cuda(gauss_split):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    est = NNPU(epochs=2, device="cuda", selection="last", random_state=0)
    est.fit(gauss_split.X, gauss_split.s, prior=gauss_split.prior)
    assert next(est.model_.parameters()).is_cuda and est.predict(gauss_split.X).shape == (len(gauss_split.s),)
