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
