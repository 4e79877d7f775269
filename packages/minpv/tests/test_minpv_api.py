"""Estimator API, gradient routing, bad input, CLI round trip and the smoke benchmark."""
import json

import numpy as np
import pytest
import torch
from iclr26_minpv import (
    ClassifierDRE,
    KumaraswamyMixturePath,
    TimeScoreDRE,
    TimeScoreNet,
    estimate_mi,
    estimators,
    gaussian_mi_task,
    ksg_mi,
    make_path,
    minpv_loss,
)
from iclr26_minpv.bench import MINPV
from iclr26_minpv.cli import main

TINY = dict(hidden=(16,), steps=20, batch_size=32, quad_points=10)


def test_gradient_routing():
    torch.manual_seed(0)
    net, path = TimeScoreNet(4, (8,)), make_path("minpv")
    x0, x1, t, tp = torch.randn(32, 4), torch.randn(32, 4), torch.rand(32, 1), torch.rand(32, 1)

    def grads(t_path):
        net.zero_grad()
        path.zero_grad()
        minpv_loss(net, path, x0, x1, t, t_path)[0].backward()
        return [p.grad.clone() for p in net.parameters()], [p.grad for p in path.parameters()]

    net_full, path_full = grads(tp)
    net_score, path_score = grads(None)
    assert all(torch.allclose(a, b) for a, b in zip(net_full, net_score))
    assert all(g is None or torch.all(g == 0) for g in path_score)
    assert any(g is not None and torch.any(g != 0) for g in path_full)


def test_determinism_and_modes():
    X, _, _ = gaussian_mi_task(4, 200, seed=0)
    a = TimeScoreDRE(**TINY).fit(X).log_ratio(X[:5])
    b = TimeScoreDRE(**TINY).fit(X).log_ratio(X[:5])
    assert np.array_equal(a, b)
    two = TimeScoreDRE(path="linear", **TINY).fit(X, np.random.default_rng(1).standard_normal((200, 4)))
    assert two.mode_ == "two_model" and TimeScoreDRE(**TINY).fit(X).mode_ == "gaussian_anchor"
    with pytest.raises(ValueError, match="log_density"):
        two.log_density(X)


def test_progress_wraps_every_models_steps_and_the_average_is_the_fitted_net():
    X, _, _ = gaussian_mi_task(4, 200, seed=0)
    seen = []

    def bar(steps):
        seen.append(len(steps))
        return steps

    averaged = TimeScoreDRE(**TINY).fit(X, np.random.default_rng(1).standard_normal((200, 4)), progress=bar)
    assert seen == [TINY["steps"], TINY["steps"]]
    last = TimeScoreDRE(**TINY, ema_decay=0.0).fit(X, np.random.default_rng(1).standard_normal((200, 4)))
    # the same iterates; only what is kept differs (the moving average vs the last step)
    assert not np.allclose(averaged.log_ratio(X[:5]), last.log_ratio(X[:5]))
    assert all(not p.requires_grad for p in averaged.nets_[0].parameters())


def test_log_density_adds_standardisation_log_det():
    X = np.random.default_rng(0).standard_normal((300, 2)) * 3.0 + 1.0
    model = TimeScoreDRE(path="trig", **TINY).fit(X)
    z = (X[:4] - model.mean_) / model.scale_
    expected = model.log_ratio(X[:4]) - 0.5 * (z**2).sum(1) - np.log(2 * np.pi) - np.log(model.scale_).sum()
    assert np.allclose(model.log_density(X[:4]), expected)


def test_pretrain_mode_freezes_a_fitted_path(monkeypatch):
    monkeypatch.setattr(estimators, "PRETRAIN_STEPS", 50)  # the 2,000 default steps are slow for a unit test
    X, _, _ = gaussian_mi_task(4, 100, seed=0)
    model = TimeScoreDRE(path_mode="pretrain", **TINY).fit(X)
    fresh = KumaraswamyMixturePath()
    assert not torch.allclose(model.path_.raw_a, fresh.raw_a)


def test_bad_input():
    X = np.zeros((10, 3))
    with pytest.raises(ValueError, match="same number of features"):
        TimeScoreDRE(**TINY).fit(X, np.zeros((10, 2)))
    with pytest.raises(ValueError, match="at least 2"):
        TimeScoreDRE(**TINY).fit(X[:1])
    with pytest.raises(ValueError, match="NaN"):
        TimeScoreDRE(**TINY).fit(np.full((10, 3), np.nan))
    with pytest.raises(ValueError, match="even"):
        gaussian_mi_task(5, 10)
    with pytest.raises(ValueError, match="n_components"):
        KumaraswamyMixturePath(n_components=0)
    with pytest.raises(ValueError, match="a_bounds"):
        KumaraswamyMixturePath(a_bounds=(0.0, 10.0))
    with pytest.raises(ValueError, match="eps"):
        KumaraswamyMixturePath(eps=0.2)
    with pytest.raises(ValueError, match="same number of samples"):
        estimate_mi(np.zeros((10, 1)), np.zeros((9, 1)))
    with pytest.raises(ValueError, match="path"):
        make_path("ot")
    with pytest.raises(ValueError, match="ema_decay"):
        TimeScoreDRE(**TINY, ema_decay=1.0).fit(X)
    with pytest.raises(ValueError, match="architecture"):
        TimeScoreDRE(**TINY, architecture="resnet").fit(X)


@pytest.mark.parametrize("architecture", ["concat_squash", "concat"])
def test_time_score_net_architectures(architecture):
    torch.manual_seed(0)
    net = TimeScoreNet(3, (8, 8), architecture)
    x = torch.randn(5, 3)
    out = net(x, torch.full((5, 1), 0.2))
    assert out.shape == (5, 1)
    assert not torch.allclose(out, net(x, torch.full((5, 1), 0.8)))  # the output depends on t
    layer = net.layers[0] if architecture == "concat_squash" else net.net[0]
    assert layer.linear.in_features == 3 if architecture == "concat_squash" else layer.in_features == 4


def test_estimate_mi_and_baselines_run():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(2000)
    y = 0.8 * x + 0.6 * rng.standard_normal(2000)
    truth = -0.5 * np.log(1 - 0.8**2)
    assert abs(ksg_mi(x, y) - truth) < 0.08
    assert np.isfinite(estimate_mi(x, y, path="linear", **TINY))
    joint = np.stack([x, y], 1)
    clf = ClassifierDRE("logistic", quadratic_features=True).fit(joint, rng.standard_normal((2000, 2)))
    assert abs(clf.kl_divergence(joint) - truth) < 0.15


def test_cli_round_trip(tmp_path, capsys):
    num = tmp_path / "num.npy"
    np.save(num, gaussian_mi_task(4, 200, seed=0)[0])
    out = tmp_path / "out"
    args = ["fit", "--num", str(num), "--out", str(out), "--steps", "10", "--hidden", "8", "--device", "cpu"]
    assert main(args) == 0
    assert np.load(out / "log_ratio.npy").shape == (200,)
    assert main(args) == 2 and "--force" in capsys.readouterr().err
    np.save(num, np.zeros(5))
    assert main([*args, "--force"]) == 2 and capsys.readouterr().err.startswith("error: --num: expected")
    assert main(["path-variance", "--paths", "linear", "minpv", "--fit-steps", "20", "--out", str(out)]) == 0
    values = json.loads((out / "path_variance.json").read_text())
    assert values["minpv"] < values["minpv_init"]
    assert main(["evaluate", "--d", "4", "--steps", "10", "--hidden", "8", "--n-eval", "50", "--out", str(out),
                 "--device", "cpu", "--quiet"]) == 0
    assert json.loads((out / "mi.json").read_text())["d"] == 4


def test_smoke_benchmark_json(tmp_path):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("minpv__smoke__*.json")
    result = json.loads(path.read_text())
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in result
    assert result["benchmark"] == MINPV.name and result["status"] == "ok"
    assert {r["method"] for r in result["rows"]} >= {"TimeScoreDRE[minpv]", "TimeScoreDRE[linear]"}
    assert all(isinstance(c["holds"], bool) for c in result["claims"])


def test_score_weight_depends_on_time_only():
    # λ_t = 1/V̄(t) with the given m₂: a weight depending on x₁ would bias the regression target
    torch.manual_seed(3)
    net, path = TimeScoreNet(4, (8,)), make_path("trig").double()
    net = net.double()
    x0, t = torch.randn(64, 4, dtype=torch.float64), torch.rand(64, 1, dtype=torch.float64) * 0.9 + 0.05
    x1 = torch.randn(64, 4, dtype=torch.float64) * torch.linspace(0.2, 3.0, 64, dtype=torch.float64)[:, None]
    _, parts = minpv_loss(net, path, x0, x1, t, None, second_moment=7.0)
    a, b, da, db = path.coefficients(t)
    xt = a * x0 + b * x1
    target = (-4 * da + db * (x0 * x1).sum(1, keepdim=True) + da * (x0**2).sum(1, keepdim=True)) / a
    v_bar = (2 * 4 * da**2 + db**2 * 7.0) / a**2
    expected = ((net(xt, t) - target) ** 2 / v_bar).mean()
    assert torch.allclose(parts["score"], expected.detach(), rtol=1e-10)
