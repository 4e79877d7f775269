"""The objectives of the methods ported from the benchmark's code (PAN, CGenPU, LaGAM, VAE-PU), each against a
numpy reference written from the benchmark's definitions (fixed tensors, to 1e-6), and the update directions of
their loops."""
import numpy as np
import pytest
import torch
from iclr26_pubench.losses import cgenpu_auxiliary_loss, cgenpu_generator_alignment, cgenpu_kld, pan_objective

RNG = np.random.default_rng(7)
R_U, D_P, D_U = RNG.uniform(0.01, 0.99, 9), RNG.uniform(0.01, 0.99, 5), RNG.uniform(0.01, 0.99, 9)


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def pan_reference(r_u, d_p, d_u, eps, w):
    """sum log D(p) + sum max(log(1 - D(u)) - log(1 - mean D(u)), 0) over the first min(n_p, n_u) U rows,
    + w sum (log(1 - R(u)) - log R(u)) (2 D(u) - 1) over all U; each log(v) as log(max(v + eps, eps))."""
    m = min(len(d_p), len(d_u))
    lg = lambda v: np.log(np.maximum(v + eps, eps))  # noqa: E731
    first = np.sum(lg(d_p)) + np.sum(np.maximum(lg(1 - d_u[:m]) - np.log(max(1 - d_u[:m].mean(), eps)), 0))
    return first + w * np.sum((lg(1 - r_u) - lg(r_u)) * (2 * d_u - 1))


@pytest.mark.parametrize("eps, w", [(1e-2, 1e-4), (1e-3, 0.5)])
def test_pan_objective_matches_the_reference(eps, w):
    got = pan_objective(_t(R_U), _t(D_P), _t(D_U), eps, w).item()
    assert got == pytest.approx(pan_reference(R_U, D_P, D_U, eps, w), abs=1e-6)
    # the hinge is active for some rows and not for others on these tensors, so both branches are exercised
    gap = np.log(1 - D_U[:5] + eps) - np.log(1 - D_U[:5].mean())
    assert (gap > 0).any() and (gap < 0).any()


def test_pan_gradients_point_the_official_way():
    r_u = _t(R_U).requires_grad_()
    d_u = _t(D_U).requires_grad_()
    pan_objective(r_u, _t(D_P), d_u, 1e-2, 0.5).backward()
    # R descends: where D(u) > 1/2 the recognizer's gradient step raises R(u) (the term falls as R(u) grows)
    assert np.all(np.sign(-r_u.grad.numpy()) == np.sign(2 * D_U - 1))
    # the mean of D(u) in the hinge is a detached reference: its gradient is the hinge rows' own term only
    eps, m = 1e-2, 5
    active = np.log(1 - D_U[:m] + eps) - np.log(1 - D_U[:m].mean()) > 0
    expected = 0.5 * 2 * (np.log(1 - R_U + eps) - np.log(R_U + eps))
    expected[:m] += np.where(active, -1 / (1 - D_U[:m] + eps), 0.0)
    np.testing.assert_allclose(d_u.grad.numpy(), expected, atol=1e-6)


def kld_reference(p, q, eps=1e-7, mean=True):
    p, q = np.clip(p, eps, 1), np.clip(q, eps, 1)
    v = p * np.log(p / q)
    return v.mean() if mean else v.sum()


@pytest.mark.parametrize("mean", [True, False])
def test_cgenpu_losses_match_the_reference(mean):
    a_xp, a_gp, a_gn = RNG.uniform(0, 1, 6), RNG.uniform(0, 1, 6), RNG.uniform(0, 1, 6)
    a_xp[0], a_gn[1] = 0.0, 1.0  # the eps clamp at both ends
    align = kld_reference(a_xp, a_gp, mean=mean) + kld_reference(a_gp, 1 - a_gn, mean=mean)
    aux = kld_reference(np.ones(6), a_xp, mean=mean) + align
    assert cgenpu_kld(_t(a_xp), _t(a_gp), reduce_mean=mean).item() == pytest.approx(
        kld_reference(a_xp, a_gp, mean=mean), abs=1e-6)
    assert cgenpu_generator_alignment(_t(a_xp), _t(a_gp), _t(a_gn), mean).item() == pytest.approx(align, abs=1e-6)
    assert cgenpu_auxiliary_loss(_t(a_xp), _t(a_gp), _t(a_gn), mean).item() == pytest.approx(aux, abs=1e-6)
    # kld(1, A(x_p)) = -mean log A(x_p): zero only when A calls every real positive positive
    assert cgenpu_kld(torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)).item() == 0.0


def test_cgenpu_hidden_sizes():
    from iclr26_pubench.methods.cgenpu import cgenpu_hidden

    assert cgenpu_hidden(64) == [256, 128, 64]
    assert cgenpu_hidden(784) == [512, 256, 128]
    assert cgenpu_hidden(3072) == [1024, 512, 256]


def lagam_bce_reference(g, t):
    """sum over classes k of (sum_i -t_ik log q_ik) / (sum_i t_ik + 1e-8), q = clip([1 - sigma, sigma], 1e-4,
    1 - 1e-4)."""
    p = 1 / (1 + np.exp(-g))
    q = np.clip(np.stack([1 - p, p], 1), 1e-4, 1 - 1e-4)
    return sum(-(t[:, k] * np.log(q[:, k])).sum() / (t[:, k].sum() + 1e-8) for k in (0, 1))


def test_lagam_bce_matches_the_reference():
    from iclr26_pubench.losses import lagam_bce

    g = np.array([-12.0, -1.5, 0.0, 0.3, 2.0, 11.0])  # both ends of the clamp
    t1 = np.array([0.0, 0.2, 1.0, 0.95, 0.5, 1.0])
    t = np.stack([1 - t1, t1], 1)
    assert lagam_bce(_t(g), _t(t)).item() == pytest.approx(lagam_bce_reference(g, t), abs=1e-6)
    # class-normalised: doubling every row of one class leaves that class's term unchanged
    hard = np.stack([1 - (t1 > 0.5), t1 > 0.5], 1).astype(float)
    twice = np.vstack([hard, hard])
    assert lagam_bce(_t(np.tile(g, 2)), _t(twice)).item() == pytest.approx(lagam_bce_reference(g, hard), abs=1e-6)


def lagam_contrastive_reference(q, k, clusters=None, logits=None, temp=0.07, cutoff=False, knn=0):
    """Instance term: mean_i -log(exp(s_i,n+i) / sum_{j != i} exp(s_ij)), s = q [q; k]^T / temp. Cluster term:
    minus mean_i of the mean over the positives j != i (same cluster, same side of logit > 0.5 with cutoff, or
    among the knn largest q_i . [q; k]_j) of s_ij - max_j s_ij - log(sum_{j != i} exp(s_ij - max_j s_ij) + 1e-12)."""
    n = len(q)
    keys = np.vstack([q, k])
    s = q @ keys.T / temp
    others = [[j for j in range(2 * n) if j != i] for i in range(n)]
    loss = np.mean([-(s[i, n + i] - np.log(np.exp(s[i, others[i]]).sum())) for i in range(n)])
    if clusters is None:
        return loss
    prot = []
    for i in range(n):
        pos = {j for j in range(2 * n) if clusters[j % n] == clusters[i]
               and (not cutoff or (logits[j % n] > 0.5) == (logits[i] > 0.5))}
        if knn:
            pos |= set(np.argsort(-(q @ keys.T)[i])[:knn].tolist())
        pos.discard(i)
        top = s[i].max()
        norm = np.log(np.exp(s[i, others[i]] - top).sum() + 1e-12)
        prot.append(sum(s[i, j] - top - norm for j in pos) / (len(pos) + 1e-8))
    return loss - np.mean(prot)


@pytest.mark.parametrize("clustered, cutoff, knn", [(False, False, 0), (True, False, 0), (True, True, 0),
                                                    (True, True, 3)])
def test_lagam_contrastive_matches_the_reference(clustered, cutoff, knn):
    from iclr26_pubench.losses import lagam_contrastive

    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    q, k = q / np.linalg.norm(q, axis=1, keepdims=True), k / np.linalg.norm(k, axis=1, keepdims=True)
    clusters = np.array([0, 1, 0, 2, 1, 0]) if clustered else None
    logits = np.array([1.2, -0.3, 0.1, 0.7, 2.0, -1.0])
    got = lagam_contrastive(_t(q), _t(k), None if clusters is None else torch.tensor(clusters), _t(logits), 0.07,
                            cutoff, knn).item()
    assert got == pytest.approx(lagam_contrastive_reference(q, k, clusters, logits, 0.07, cutoff, knn), abs=1e-6)


def gmm_reference(h, mu, var, p):
    w = np.array([1 - p, p])
    c = np.stack([-0.5 * (((h - mu[j]) ** 2 / var[j]) + np.log(var[j] + 1e-9)).sum(1) + np.log(w[j] + 1e-9)
                  for j in (0, 1)], 1)
    e = np.exp(c - c.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True))[:, 1:]


def test_vaepu_vade_terms_match_the_reference():
    from iclr26_pubench.losses import vaepu_responsibility, vaepu_vade_terms

    rng = np.random.default_rng(11)
    n, my, mo, d, p = 7, 3, 2, 5, 0.4
    y_mu, y_lss, h_y = rng.normal(size=(n, my)), rng.normal(0, 0.5, (n, my)), rng.normal(size=(n, my))
    o_mu, o_lss = rng.normal(size=(n, mo)), rng.normal(0, 0.5, (n, mo))
    recon, x, cl = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, 1))
    obs = np.array([1, 1, 0, 0, 0, 0, 0])
    mu, var = rng.normal(size=(2, my)), rng.uniform(0.3, 2.0, (2, my))
    c = gmm_reference(h_y, mu, var, p)
    assert np.allclose(vaepu_responsibility(_t(h_y), _t(mu), _t(var), p).numpy(), c, atol=1e-6)
    comp = [-0.5 * (np.log(var[j] + 1e-9) + (np.exp(y_lss) + (y_mu - mu[j]) ** 2) / var[j]).sum(1, keepdims=True)
            for j in (0, 1)]
    sig = 1 / (1 + np.exp(-cl[:, 0]))
    expected = {
        "gmm": ((1 - c) * comp[0] + c * comp[1]).mean(),
        "kl_o": -0.5 * (np.exp(o_lss) + o_mu ** 2).sum(1).mean(),
        "recon": -0.5 * ((recon - x) ** 2).sum(1).mean(),
        "ent_y": 0.5 * (1 + y_lss).sum(1).mean(),
        "ent_o": 0.5 * (1 + o_lss).sum(1).mean(),
        "prior_c": (-c * np.log(c / (p + 1e-9) + 1e-9) - (1 - c) * np.log((1 - c) / (1 - p + 1e-9) + 1e-9)).mean(),
        "obs": np.mean(obs * np.log(sig) + (1 - obs) * np.log(1 - sig)),
    }
    got = vaepu_vade_terms(*map(_t, (y_mu, y_lss, o_mu, o_lss, h_y, recon, x, cl)), torch.tensor(obs), _t(mu),
                           _t(var), p)
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key].item() == pytest.approx(value, abs=1e-6), key


@pytest.mark.parametrize("shift", [0.0, 3.0])
def test_vaepu_pn_loss_matches_the_reference(shift):
    from iclr26_pubench.losses import vaepu_pn_loss

    rng = np.random.default_rng(5)
    g_pl, g_pu, g_u = rng.normal(size=4), rng.normal(shift, 1, 6), rng.normal(-shift, 1, 9)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    w = (0.05, 0.35, 0.95)
    neg = -w[1] * sig(g_pu).mean() + w[2] * sig(g_u).mean()
    loss = -neg if neg < 0 else w[0] * sig(-g_pl).mean() + w[1] * sig(-g_pu).mean() + neg
    got_loss, got_neg = vaepu_pn_loss(_t(g_pl), _t(g_pu), _t(g_u), *w)
    assert got_neg.item() == pytest.approx(neg, abs=1e-6) and got_loss.item() == pytest.approx(loss, abs=1e-6)
    assert (neg < 0) == (shift > 0)  # the two branches: the non-negative correction is exercised at shift 3


def test_lagam_meta_labels_follow_the_look_ahead_gradient():
    """The corrected label of each row is argmax over k of -d/d eps_ik of the validation loss after one SGD step
    (meta lr) on the classifier weights, here by central finite differences of that look-ahead; L rows stay 1."""
    from iclr26_pubench.losses import lagam_bce
    from iclr26_pubench.methods.lagam import LaGAM, LaGAMNet

    torch.manual_seed(0)
    est = LaGAM(meta_lr=0.5)
    est.model_ = LaGAMNet(3, 8).double()
    x, xv = torch.randn(6, 3, dtype=torch.float64), torch.randn(10, 3, dtype=torch.float64)
    yv = torch.nn.functional.one_hot((xv[:, 0] > 0).long(), 2).double()
    t = torch.tensor([1.0, 0.0, 0.0, 0.3, 0.0, 0.8], dtype=torch.float64)
    labels = torch.stack([1 - t, t], 1)
    names = [k for k, v in est.model_.named_parameters() if "classifier" in k and v.dim() > 1]
    assert names == ["classifier_head.1.weight", "classifier_head.3.weight", "final_classifier.weight"]
    got = est._meta_labels(x, labels, t == 1, xv, yv, torch.arange(10), names)

    def look_ahead(eps):
        params = dict(est.model_.named_parameters())
        grads = torch.autograd.grad(lagam_bce(est.model_(x), labels + eps), [params[k] for k in names])
        ahead = {**params, **{k: params[k] - 0.5 * g for k, g in zip(names, grads)}}
        return lagam_bce(torch.func.functional_call(est.model_, ahead, (xv,)), yv).item()

    h, fd = 1e-5, np.zeros((6, 2))
    for i in range(6):
        for k in range(2):
            e = torch.zeros(6, 2, dtype=torch.float64)
            e[i, k] = h
            fd[i, k] = (look_ahead(e) - look_ahead(-e)) / (2 * h)
    expected = np.argmax(-fd, axis=1)
    expected[0] = 1
    assert set(expected[1:].tolist()) == {0, 1}  # both corrections occur among the unlabeled rows
    assert np.array_equal(got.argmax(1).numpy(), expected) and np.allclose(got.sum(1).numpy(), 1)
