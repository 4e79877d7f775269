"""PU risks and method losses as pure torch functions (tested directly against numpy).

Conventions: ``logits`` is ``(n,)`` real scores g(x); ``s`` is ``(n,)`` with 1 = labeled positive and
0 = unlabeled; a margin loss l(z) is ``sigmoid`` sigma(-z), ``logistic`` softplus(-z) or ``squared``
(z - 1)^2 / 2. Batch counts of L and U are clamped to >= 1.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

LOSSES = ("sigmoid", "logistic", "squared")


def margin_loss(z: torch.Tensor, loss: str = "sigmoid") -> torch.Tensor:
    """Elementwise l(z) for a margin ``z``."""
    if loss == "sigmoid":
        return torch.sigmoid(-z)
    if loss == "logistic":
        return F.softplus(-z)
    if loss == "squared":
        return (z - 1.0) ** 2 / 2.0
    raise ValueError(f"loss: expected one of {list(LOSSES)}, got {loss!r}")


def risk_terms(logits: torch.Tensor, s: torch.Tensor, loss: str = "sigmoid"):
    """(R_p^+, R_p^-, R_u^-): mean_L l(g), mean_L l(-g), mean_U l(-g); scalars."""
    lab = (s == 1).to(logits.dtype)
    unl = 1.0 - lab
    n_l, n_u = lab.sum().clamp_min(1.0), unl.sum().clamp_min(1.0)
    pos, neg = margin_loss(logits, loss), margin_loss(-logits, loss)
    return (lab * pos).sum() / n_l, (lab * neg).sum() / n_l, (unl * neg).sum() / n_u


def negative_risk(logits: torch.Tensor, s: torch.Tensor, prior: float, loss: str = "sigmoid") -> torch.Tensor:
    """r_n = R_u^- - prior * R_p^-, the estimate of the negative-class risk (can go below 0 when overfitting)."""
    _, rpn, run = risk_terms(logits, s, loss)
    return run - prior * rpn


def upu_risk(logits: torch.Tensor, s: torch.Tensor, prior: float, loss: str = "sigmoid") -> torch.Tensor:
    """Unbiased PU risk (du Plessis et al. 2015): prior R_p^+ + R_u^- - prior R_p^-."""
    rpp, rpn, run = risk_terms(logits, s, loss)
    return prior * rpp + run - prior * rpn


def nnpu_risk(logits: torch.Tensor, s: torch.Tensor, prior: float, loss: str = "sigmoid", nonneg: bool = True,
              beta: float = 0.0, gamma: float = 1.0) -> torch.Tensor:
    """Non-negative PU risk (Kiryo et al. 2017) as the tensor to call ``backward`` on.

    When r_n >= -beta (or ``nonneg`` is False) it is prior R_p^+ + r_n. Otherwise its value is
    prior R_p^+ - beta while its gradient is that of -gamma r_n (the "defitting" step).
    """
    rpp, rpn, run = risk_terms(logits, s, loss)
    r_n = run - prior * rpn
    if not nonneg or r_n.item() >= -beta:
        return prior * rpp + r_n
    step = -gamma * r_n
    return step + (prior * rpp - beta - step).detach()


def vpu_loss(log_phi_x: torch.Tensor, log_phi_p: torch.Tensor, log_phi_mix: torch.Tensor | None = None,
             target_mix: torch.Tensor | None = None, lam: float = 0.03) -> torch.Tensor:
    """VPU (Chen et al. 2020): L_var = logsumexp(log Phi(X_b)) - log|X_b| - mean log Phi(P_b), plus lam * L_mix.

    ``log_phi_x (n_x,)`` over all rows of the batch, ``log_phi_p (n_p,)`` over labeled positives;
    the optional MixUp term is mean((log target - log Phi(mixed))^2).
    """
    n = torch.tensor(float(log_phi_x.numel()), device=log_phi_x.device)
    var = torch.logsumexp(log_phi_x, 0) - torch.log(n) - log_phi_p.mean()
    if log_phi_mix is None:
        return var
    return var + lam * ((torch.log(target_mix) - log_phi_mix) ** 2).mean()


def distpu_loss(logits: torch.Tensor, s: torch.Tensor, prior: float) -> torch.Tensor:
    """Dist-PU label-distribution loss: |1 - mean_L p| + |mean_U p - prior| / (2 prior), p = sigmoid(g)."""
    p = torch.sigmoid(logits)
    lab = s == 1
    mean_l = p[lab].mean() if lab.any() else p.new_tensor(1.0)
    mean_u = p[~lab].mean() if (~lab).any() else p.new_tensor(prior)
    return (1.0 - mean_l).abs() + (mean_u - prior).abs() / (2.0 * prior)


def entropy(p: torch.Tensor) -> torch.Tensor:
    """Binary entropy H(p) elementwise, with p clamped away from 0 and 1."""
    p = p.clamp(1e-6, 1 - 1e-6)
    return -(p * p.log() + (1 - p) * (1 - p).log())


def symmetric_softplus(a: torch.Tensor, b: torch.Tensor | float) -> torch.Tensor:
    """d(a, b) = softplus(a - b) + softplus(b - a); symmetric, minimal (2 ln 2) at a = b."""
    return F.softplus(a - b) + F.softplus(b - a)


def pulda_loss(logits: torch.Tensor, s: torch.Tensor, prior: float, ema_u: torch.Tensor | None = None,
               alpha_u: float = 0.85) -> tuple[torch.Tensor, torch.Tensor]:
    """PULDA label-distribution alignment: 2 prior (1 - mean_L p) + d(mean_U p, prior).

    With ``ema_u`` (the previous EMA of mean_U p, ``None`` on the first batch) the U mean is
    alpha_u * ema_u + (1 - alpha_u) * mean_U p and the U term is divided by (1 - alpha_u).
    Returns ``(loss, new_ema_u)`` where ``new_ema_u`` is detached.
    """
    p = torch.sigmoid(logits)
    lab = s == 1
    mean_l = p[lab].mean() if lab.any() else p.new_tensor(1.0)
    mean_u = p[~lab].mean() if (~lab).any() else p.new_tensor(prior)
    if ema_u is None:
        u_term, new = symmetric_softplus(mean_u, prior), mean_u
    else:
        new = alpha_u * ema_u + (1.0 - alpha_u) * mean_u
        u_term = symmetric_softplus(new, prior) / (1.0 - alpha_u)
    return 2.0 * prior * (1.0 - mean_l) + u_term, new.detach()


def two_way_margin_loss(logits: torch.Tensor, s: torch.Tensor, prior: float, margin: float = 0.6) -> torch.Tensor:
    """PULDA's two-way sigmoid term: prior mean_L C+ + d(mean_U C-, prior mean_L C-) (without EMA).

    C+(z) = sigma(z) sigma(-(z - m)), C-(z) = sigma(z + m) sigma(-z).
    """
    cp = torch.sigmoid(logits) * torch.sigmoid(-(logits - margin))
    cn = torch.sigmoid(logits + margin) * torch.sigmoid(-logits)
    lab = s == 1
    if not lab.any() or lab.all():
        return logits.new_tensor(0.0)
    return prior * cp[lab].mean() + symmetric_softplus(cn[~lab].mean(), prior * cn[lab].mean())


def pan_objective(r_u: torch.Tensor, d_p: torch.Tensor, d_u: torch.Tensor, eps: float = 1e-2,
                  loss2_weight: float = 1e-4) -> torch.Tensor:
    """The PAN objective of the benchmark (Hu et al., AAAI 2021); D ascends it, the recognizer R descends it.

    With probabilities ``r_u = R(x_u)`` ``(n_u,)``, ``d_p = D(x_p)`` ``(n_p,)``, ``d_u = D(x_u)`` ``(n_u,)``,
    m = min(n_p, n_u) and log+(v) = log(max(v + eps, eps)):
    sum_p log+(D(p)) + sum_{first m of U} max(log+(1 - D(u)) - log(max(1 - mean D(u), eps)), 0)
    + loss2_weight * sum_U (log+(1 - R(u)) - log+(R(u))) (2 D(u) - 1); the mean of D over the m U rows is
    detached (a reference level, not a path for the gradient). Returns a scalar.
    """
    m = min(d_p.numel(), d_u.numel())
    if m == 0 or r_u.numel() == 0:
        raise ValueError("d_p, d_u, r_u: PAN needs at least one labeled-positive and one unlabeled row")

    def log_plus(v):
        return torch.log(torch.clamp(v + eps, min=eps))

    d_um = d_u[:m]
    reference = torch.log(torch.clamp(1.0 - d_um.detach().mean(), min=eps))
    adversarial = log_plus(d_p).sum() + torch.clamp(log_plus(1.0 - d_um) - reference, min=0.0).sum()
    recognizer = ((log_plus(1.0 - r_u) - log_plus(r_u)) * (2.0 * d_u - 1.0)).sum()
    return adversarial + loss2_weight * recognizer


def cgenpu_kld(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-7, reduce_mean: bool = True) -> torch.Tensor:
    """The CGenPU divergence term: mean (or sum) of p log(p / q) with p, q clamped to [eps, 1]; ``(n,)`` -> scalar."""
    p, q = torch.clamp(p, eps, 1.0), torch.clamp(q, eps, 1.0)
    v = p * torch.log(p / q)
    return v.mean() if reduce_mean else v.sum()


def cgenpu_auxiliary_loss(a_xp: torch.Tensor, a_gp: torch.Tensor, a_gn: torch.Tensor,
                          reduce_mean: bool = True) -> torch.Tensor:
    """The auxiliary classifier A's CGenPU loss on probabilities of real positives ``a_xp``, generated positives
    ``a_gp`` and generated negatives ``a_gn`` (each ``(n,)``, equal lengths for the last two terms):
    kld(1, A(x_p)) + kld(A(x_p), A(g_p)) + kld(A(g_p), 1 - A(g_n)). The generator minimises the last two."""
    return (cgenpu_kld(torch.ones_like(a_xp), a_xp, reduce_mean=reduce_mean)
            + cgenpu_generator_alignment(a_xp, a_gp, a_gn, reduce_mean))


def cgenpu_generator_alignment(a_xp: torch.Tensor, a_gp: torch.Tensor, a_gn: torch.Tensor,
                               reduce_mean: bool = True) -> torch.Tensor:
    """kld(A(x_p), A(g_p)) + kld(A(g_p), 1 - A(g_n)): the auxiliary alignment the CGenPU generator minimises."""
    return (cgenpu_kld(a_xp, a_gp, reduce_mean=reduce_mean)
            + cgenpu_kld(a_gp, 1.0 - a_gn, reduce_mean=reduce_mean))


def lagam_bce(logits: torch.Tensor, target: torch.Tensor, clamp: float = 1e-4) -> torch.Tensor:
    """LaGAM's class-normalised soft-label cross-entropy.

    ``logits`` ``(n,)``; ``target`` ``(n, 2)`` soft labels, column 0 = negative, column 1 = positive. With
    q = clamp([1 - sigma(g), sigma(g)], clamp, 1 - clamp): sum_k (sum_i -t_ik log q_ik) / (sum_i t_ik + 1e-8), so each
    class weighs the same however many rows carry it. Returns a scalar.
    """
    p = torch.sigmoid(logits.reshape(-1, 1))
    q = torch.cat([1.0 - p, p], dim=1).clamp(clamp, 1.0 - clamp)
    return ((-(target * q.log()).sum(0)) / (target.sum(0) + 1e-8)).sum()


def lagam_contrastive(q: torch.Tensor, k: torch.Tensor, clusters: torch.Tensor | None = None,
                      logits: torch.Tensor | None = None, temperature: float = 0.07, cutoff: bool = False,
                      n_neighbors: int = 0) -> torch.Tensor:
    """LaGAM's contrastive loss over a weak view ``q`` and a strong view ``k`` (each ``(n, m)``, rows L2-normalised).

    Instance part: for anchor i, the log-softmax of q_i . k_i / T over the 2n - 1 other columns of [q; k], negated
    and averaged. Cluster part (when ``clusters`` ``(n,)`` is given): the positives of anchor i are the columns of
    [q; k] in the same cluster (and, with ``cutoff``, on the same side of ``logits > 0.5``, as the benchmark
    thresholds the raw logit), plus its ``n_neighbors`` most similar columns; the loss is minus the mean over
    anchors of the mean log-probability of its positives (self column excluded). Returns a scalar.
    """
    n = len(q)
    keys = torch.cat([q, k])
    sim = q @ keys.T / temperature
    self_col = torch.zeros_like(sim, dtype=torch.bool)
    self_col[torch.arange(n), torch.arange(n)] = True
    loss = -(sim[torch.arange(n), n + torch.arange(n)] - torch.logsumexp(sim.masked_fill(self_col, -torch.inf), 1))
    loss = loss.mean()
    if clusters is None:
        return loss
    both = torch.cat([clusters, clusters])
    mask = (clusters[:, None] == both[None, :]).to(q.dtype)
    if cutoff:
        side = (logits.detach().reshape(-1) > 0.5)
        mask = mask * (side[:, None] == torch.cat([side, side])[None, :]).to(q.dtype)
    if n_neighbors > 0:
        top = torch.topk(q @ keys.T, k=min(int(n_neighbors), 2 * n), dim=1).indices
        mask = ((mask + torch.zeros_like(mask).scatter(1, top, 1.0)) > 0.5).to(q.dtype)
    keep = (~self_col).to(q.dtype)
    mask = (mask * keep).detach()
    shifted = sim - sim.max(dim=1, keepdim=True).values.detach()
    log_prob = shifted - torch.log((shifted.exp() * keep).sum(1, keepdim=True) + 1e-12)
    return loss - ((mask * log_prob).sum(1) / (mask.sum(1) + 1e-8)).mean()


def vaepu_responsibility(h_y: torch.Tensor, mu: torch.Tensor, var: torch.Tensor, p: float) -> torch.Tensor:
    """VAE-PU's posterior that the label code ``h_y`` ``(n, m)`` comes from the positive GMM component.

    ``mu``, ``var``: ``(2, m)`` diagonal Gaussians, row 0 negative, row 1 positive; ``p`` the positive weight.
    c_k = -1/2 sum_j ((h - mu_kj)^2 / var_kj + log(var_kj + 1e-9)) + log(w_k + 1e-9), w = (1 - p, p); returns
    softmax(c)[:, 1] as ``(n, 1)``.
    """
    w = torch.tensor([1.0 - p, p], dtype=h_y.dtype, device=h_y.device)
    c = -0.5 * (((h_y[:, None, :] - mu) ** 2 / var) + torch.log(var + 1e-9)).sum(2) + torch.log(w + 1e-9)
    return torch.softmax(c, dim=1)[:, 1:]


def vaepu_vade_terms(h_y_mu, h_y_lss, h_o_mu, h_o_lss, h_y, recon, x, cl_logits, observed, mu, var,
                     p: float) -> dict[str, torch.Tensor]:
    """The seven terms of VAE-PU's (Na et al., CIKM 2020) evidence lower bound, as the benchmark sums them
    (Gaussian likelihood); the VaDE loss is minus their sum.

    Args: encoder outputs ``h_y_mu``, ``h_y_lss`` ``(n, m_y)`` and ``h_o_mu``, ``h_o_lss`` ``(n, m_o)`` (log
    variances), the sampled label code ``h_y``, the reconstruction ``recon`` and input ``x`` ``(n, d)``, the
    observation classifier's logits ``cl_logits`` ``(n, 1)``, ``observed`` ``(n,)`` (1 = labeled), the GMM ``mu``,
    ``var`` ``(2, m_y)`` and positive weight ``p``.

    Terms (each a mean over rows): gmm = E_c[-1/2 sum (log var_c + (exp(lss) + (mu_y - mu_c)^2) / var_c)];
    kl_o = -1/2 sum (exp(lss_o) + mu_o^2); recon = -1/2 sum (recon - x)^2; ent_y = 1/2 sum (1 + lss_y);
    ent_o = 1/2 sum (1 + lss_o); prior_c = -c log(c / p + 1e-9) - (1 - c) log((1 - c) / (1 - p) + 1e-9) (with
    1e-9 added to p and 1 - p); obs = -BCE(cl_logits, observed); c = ``vaepu_responsibility(h_y, ...)``.
    """
    c = vaepu_responsibility(h_y, mu, var, p)
    per_comp = -0.5 * (torch.log(var + 1e-9)
                       + (h_y_lss.exp()[:, None, :] + (h_y_mu[:, None, :] - mu) ** 2) / var).sum(2)
    return {
        "gmm": ((1.0 - c) * per_comp[:, :1] + c * per_comp[:, 1:]).mean(),
        "kl_o": -0.5 * (h_o_lss.exp() + h_o_mu ** 2).sum(1).mean(),
        "recon": -0.5 * ((recon - x) ** 2).sum(1).mean(),
        "ent_y": 0.5 * (1.0 + h_y_lss).sum(1).mean(),
        "ent_o": 0.5 * (1.0 + h_o_lss).sum(1).mean(),
        "prior_c": (-c * torch.log(c / (p + 1e-9) + 1e-9)
                    - (1.0 - c) * torch.log((1.0 - c) / (1.0 - p + 1e-9) + 1e-9)).mean(),
        "obs": -F.binary_cross_entropy_with_logits(cl_logits.reshape(-1), observed.to(cl_logits.dtype)),
    }


def vaepu_pn_loss(g_pl: torch.Tensor, g_pu: torch.Tensor, g_u: torch.Tensor, pi_pl: float, pi_pu: float,
                  pi_u: float) -> tuple[torch.Tensor, torch.Tensor]:
    """VAE-PU's PN risk on logits of labeled positives ``g_pl``, generated unlabeled positives ``g_pu`` and
    unlabeled rows ``g_u`` (each ``(n,)``), sigmoid loss, weights = the sample's shares pi_pl = |L|/n,
    pi_pu = #positives in U / n, pi_u = |U|/n.

    r_n = -pi_pu mean sigma(g_pu) + pi_u mean sigma(g_u); the loss is pi_pl mean sigma(-g_pl) + pi_pu mean
    sigma(-g_pu) + r_n, or -r_n when r_n < 0. Returns (loss, r_n).
    """
    neg = -pi_pu * torch.sigmoid(g_pu).mean() + pi_u * torch.sigmoid(g_u).mean()
    if neg < 0:
        return -neg, neg
    return pi_pl * torch.sigmoid(-g_pl).mean() + pi_pu * torch.sigmoid(-g_pu).mean() + neg, neg
