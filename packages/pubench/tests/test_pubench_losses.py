"""Risk identities, the nnPU gradient switch, unbiasedness, Dist-PU, PULDA, VPU, BBE, PUET, proxy accuracy."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_pubench import bbe_estimate, gauss2_sample, make_pu_split, oracle_metrics, proxy_accuracy, pu_risk
from iclr26_pubench.losses import distpu_loss, nnpu_risk, pulda_loss, symmetric_softplus, upu_risk, vpu_loss
from iclr26_pubench.methods.puet import leaf_value, node_risk
from scipy.stats import norm

NP_LOSS = {"sigmoid": lambda z: 1 / (1 + np.exp(z)), "logistic": lambda z: np.log1p(np.exp(-z)),
           "squared": lambda z: (z - 1) ** 2 / 2}


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), prior=st.floats(0.05, 0.95), loss=st.sampled_from(sorted(NP_LOSS)))
def test_upu_matches_numpy(seed, prior, loss):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=40) * 2
    s = (rng.random(40) < 0.3).astype(int)
    s[:2] = [1, 0]
    f = NP_LOSS[loss]
    by_hand = prior * f(g[s == 1]).mean() + f(-g[s == 0]).mean() - prior * f(-g[s == 1]).mean()
    val = upu_risk(torch.tensor(g, dtype=torch.float64), torch.tensor(s), prior, loss).item()
    assert val == pytest.approx(by_hand, abs=1e-6)
    assert pu_risk(s, g, prior, loss, nonneg=False) == pytest.approx(by_hand, abs=1e-9)
    if loss == "sigmoid":  # l(z) + l(-z) = 1 makes uPU = 2 prior R_p^+ + R_u^- - prior
        assert val == pytest.approx(2 * prior * f(g[s == 1]).mean() + f(-g[s == 0]).mean() - prior, abs=1e-9)


def test_nnpu_gradient_switch():
    torch.manual_seed(0)
    s = torch.tensor([1] * 10 + [0] * 10)
    g = torch.cat([3 + 0.1 * torch.randn(10), -3 + 0.1 * torch.randn(10)]).double().requires_grad_()
    prior, gamma, beta = 0.7, 0.5, 0.01
    out = nnpu_risk(g, s, prior, "sigmoid", beta=beta, gamma=gamma)
    out.backward()
    lab = s == 1
    rpp = torch.sigmoid(-g[lab]).mean()
    rn = torch.sigmoid(g[~lab]).mean() - prior * torch.sigmoid(g[lab]).mean()
    assert rn.item() < -beta
    assert out.item() == pytest.approx((prior * rpp - beta).item(), abs=1e-12)
    ref = g.detach().clone().requires_grad_()
    (-gamma * (torch.sigmoid(ref[~lab]).mean() - prior * torch.sigmoid(ref[lab]).mean())).backward()
    assert torch.allclose(g.grad, ref.grad, atol=1e-7)


def test_upu_is_unbiased_on_gauss2():
    X, y = gauss2_sample(2000, 0.4, 0)
    w = np.array([1.0, 1.0])
    g = X @ w
    f = NP_LOSS["sigmoid"]
    pn = 0.4 * f(g[y == 1]).mean() + 0.6 * f(-g[y == 0]).mean()
    risks = []
    for seed in range(200):
        sp = make_pu_split(X, y, 0.5, random_state=seed)
        risks.append(pu_risk(sp.s, sp.X @ w, sp.prior, "sigmoid", nonneg=False))
    se = np.std(risks) / math.sqrt(200)
    assert abs(np.mean(risks) - pn) <= 3 * se + 1e-12


def test_distpu_one_bin_form():
    rng = np.random.default_rng(1)
    g, s, prior = rng.normal(size=30), (rng.random(30) < 0.4).astype(int), 0.35
    p = 1 / (1 + np.exp(-g))
    expected = abs(1 - p[s == 1].mean()) + abs(p[s == 0].mean() - prior) / (2 * prior)
    assert distpu_loss(torch.tensor(g), torch.tensor(s), prior).item() == pytest.approx(expected, abs=1e-6)


def test_pulda_distance_and_ema():
    a, b = torch.tensor([0.2, 0.9, -1.0]), torch.tensor([0.7, 0.1, 2.0])
    assert torch.allclose(symmetric_softplus(a, b), symmetric_softplus(b, a))
    grid = torch.linspace(-2, 2, 401)
    d = symmetric_softplus(grid, 0.3)
    assert d.min().item() == pytest.approx(2 * math.log(2), abs=1e-4)
    assert grid[d.argmin()].item() == pytest.approx(0.3, abs=0.011)
    g, s = torch.randn(20), torch.tensor([1] * 5 + [0] * 15)
    plain, ema = pulda_loss(g, s, 0.4)
    p = torch.sigmoid(g)
    assert plain.item() == pytest.approx((2 * 0.4 * (1 - p[:5].mean()) + symmetric_softplus(p[5:].mean(), 0.4)).item())
    second, _ = pulda_loss(g, s, 0.4, ema_u=ema)
    assert second.item() == pytest.approx((2 * 0.4 * (1 - p[:5].mean()) + symmetric_softplus(ema, 0.4) / 0.15).item())


def test_vpu_invariance_and_jensen():
    torch.manual_seed(0)
    log_phi = torch.nn.functional.logsigmoid(torch.randn(50))
    base = vpu_loss(log_phi, log_phi[:10])
    shifted = vpu_loss(log_phi + 0.7, log_phi[:10] + 0.7)
    assert shifted.item() == pytest.approx(base.item(), abs=1e-6)
    assert vpu_loss(log_phi, log_phi).item() > 0  # Jensen, strict for non-constant Phi
    const = torch.full((8,), -0.3)
    assert vpu_loss(const, const).item() == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("alpha", [0.2, 0.5, 0.8])
def test_bbe_recovers_mixture_proportion(alpha):
    rng = np.random.default_rng(int(alpha * 10))
    n = 20_000
    sp = rng.uniform(0.5, 1, n)
    is_p = rng.random(n) < alpha
    su = np.where(is_p, rng.uniform(0.5, 1, n), rng.uniform(0, 0.5, n))
    assert abs(bbe_estimate(sp, su).value - alpha) <= 0.03


def test_puet_leaf_closed_form_matches_grid():
    X = np.linspace(0, 1, 40)
    s = (np.arange(40) % 3 == 0).astype(int)
    prior = 0.4
    n_l, n_u = s.sum(), (1 - s).sum()
    for split in (0.3, 0.6):
        node = X <= split
        a, b = prior * (s[node] == 1).sum() / n_l, (s[node] == 0).sum() / n_u
        grid = np.linspace(-3, 3, 60001)
        risk = -4 * a * grid + b * (grid + 1) ** 2
        assert float(leaf_value(a, b, "upu")) == pytest.approx(grid[risk.argmin()], abs=1e-4)
        assert float(node_risk(a, b, "upu")) == pytest.approx(risk.min(), abs=1e-4)
        assert float(node_risk(a, b, "upu")) == pytest.approx(4 * a - 4 * a**2 / b, abs=1e-12)


def test_proxy_accuracy_identity():
    rng = np.random.default_rng(0)
    X, y = gauss2_sample(20000, 0.4, 1)
    sp = make_pu_split(X, y, 0.5, random_state=2)
    pred = ((sp.X.sum(1) + rng.normal(scale=0.5, size=len(sp.s))) > 0).astype(int)
    src_pred = np.zeros(len(y), int)
    src_pred[sp.source_index] = pred
    acc = (src_pred[sp.source_index[sp.s == 0]] == y[sp.source_index[sp.s == 0]]).mean()
    pa = proxy_accuracy(sp.s, pred, sp.prior)
    se = 2 * sp.prior * math.sqrt(0.25 / (sp.s == 1).sum()) + math.sqrt(0.25 / (sp.s == 0).sum())
    assert abs((pa - sp.prior) - acc) <= 3 * se


def test_bayes_accuracy_of_gauss2():
    k = -math.log(0.4 / 0.6) / 2
    a_b = 0.4 * norm.cdf((2 - k) / math.sqrt(2)) + 0.6 * norm.cdf((2 + k) / math.sqrt(2))
    assert a_b == pytest.approx(0.92344, abs=5e-5)
    X, y = gauss2_sample(100_000, 0.4, 7)
    bayes = (2 * X.sum(1) + math.log(0.4 / 0.6) > 0).astype(int)
    assert (bayes == y).mean() == pytest.approx(a_b, abs=0.005)


def test_oracle_metrics_edge_cases():
    m = oracle_metrics([1, 1, 1], [0.2, 0.5, 0.9], [1, 1, 1])
    assert math.isnan(m["auc"]) and m["degenerate"] == 1.0 and m["accuracy"] == 1.0
    with pytest.raises(ValueError, match="s:"):
        proxy_accuracy([1, 1], [1, 0], 0.5)
