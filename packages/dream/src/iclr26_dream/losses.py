"""DREAM's losses: encoding (VAE + graph reconstruction), clustering (entropy + DEC KL) and the
triple-granularity alignment (cross-view distillation, intra-sample InfoNCE, inter-cluster triplet)."""
from __future__ import annotations

import math

import numpy as np
import torch
from torch.nn import functional as F

DENSE_LIMIT = 5000


def gaussian_kl(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """KL(N(μ, diag e^S) ‖ N(0, I)) per row: −½ Σ_j (1 + S_j − μ_j² − e^{S_j}); shape ``(N,)``."""
    return -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1)


def vae_loss(x: torch.Tensor, x_hat: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor,
             lambda1: float = 1.0) -> torch.Tensor:
    """(1/N)‖X̂ − X‖_F² + λ₁ (1/N) Σ_i KL_i for one view (inputs ``(N, d)`` and ``(N, z)``)."""
    n = x.shape[0]
    return (x_hat - x).pow(2).sum() / n + lambda1 * gaussian_kl(mu, logvar).sum() / n


GRAPH_WEIGHTINGS = ("uniform", "balanced")


def graph_recon_loss(H: torch.Tensor, A: torch.Tensor, sampled: bool | None = None,
                     generator: torch.Generator | None = None, weighting: str = "uniform",
                     rows: torch.Tensor | None = None) -> torch.Tensor:
    """L_Structure of one view: (1/N²)‖sigmoid(HHᵀ) − A‖_F² (``weighting="uniform"``, the spec's form).

    ``weighting="balanced"`` gives edges and non-edges equal total weight:
    ½ mean_{A_ij=1}(σ_ij − 1)² + ½ mean_{A_ij=0} σ_ij² (the usual GAE re-weighting; with ~1 % edges the
    uniform mean is minimised by H ≈ 0, σ ≡ ½, where the branch learns nothing).

    Args:
        H: ``(N, z)`` structural embedding.
        A: ``(N, N)`` binary adjacency without self-loops, dense or sparse.
        sampled: ``None`` = automatic (sampled above N = 5000). The sampled estimator uses
            all positive edges plus as many uniformly drawn pairs, keeps those that are
            non-edges, and reweights both parts to the full-matrix mean; no N×N tensor is formed.
        generator: for the sampled pairs.
        weighting: ``"uniform"`` or ``"balanced"``.
        rows: optional row indices (dense only): the loss of the rows ``rows`` of sigmoid(HHᵀ) − A,
            an unbiased mini-batch estimate.

    Returns:
        A scalar tensor.
    """
    if weighting not in GRAPH_WEIGHTINGS:
        raise ValueError(f"weighting: expected one of {GRAPH_WEIGHTINGS}, got {weighting!r}")
    n = H.shape[0]
    if sampled is None:
        sampled = n > DENSE_LIMIT
    if not sampled:
        dense = A.to_dense() if A.is_sparse else A
        left = H if rows is None else H[rows]
        target = dense if rows is None else dense[rows]
        err = (torch.sigmoid(left @ H.T) - target).pow(2)
        if weighting == "uniform":
            return err.mean()
        n_pos = target.sum().clamp_min(1.0)
        n_neg = (target.numel() - target.sum()).clamp_min(1.0)
        return 0.5 * (err * target).sum() / n_pos + 0.5 * (err * (1 - target)).sum() / n_neg
    A = A.coalesce() if A.is_sparse else A.to_sparse().coalesce()
    rows_, cols = A.indices()
    n_edges = rows_.numel()
    pos = torch.sigmoid((H[rows_] * H[cols]).sum(dim=1))
    pairs = torch.randint(0, n * n, (max(n_edges, 1),), generator=generator, device="cpu").to(H.device)
    is_edge = torch.isin(pairs, rows_ * n + cols)
    pairs = pairs[~is_edge]
    i, j = pairs // n, pairs % n
    neg = torch.sigmoid((H[i] * H[j]).sum(dim=1))
    neg_mean = neg.pow(2).mean() if neg.numel() else H.sum() * 0
    if weighting == "balanced":
        return 0.5 * (pos - 1).pow(2).mean() + 0.5 * neg_mean
    return ((pos - 1).pow(2).sum() + (n * n - n_edges) * neg_mean) / (n * n)


def distill_loss(embeddings) -> torch.Tensor:
    """Cross-view distillation Σ_v (1/N)‖E^{(v)} − E*‖_F², E* = detached mean over views.

    Args:
        embeddings: list of V tensors ``(N, z)``.
    """
    stacked = torch.stack(list(embeddings), dim=0)
    target = stacked.mean(dim=0).detach()
    return (stacked - target).pow(2).sum() / stacked.shape[1]


def intra_sample_infonce(l: torch.Tensor, mus, hs, tau: float = 0.5) -> torch.Tensor:
    """Triplet InfoNCE: for each sample i and view v, the fused l_i against its own μ_i^{(v)} and h_i^{(v)}.

    ℓ_i^{(v)} = −log[(e^{sim(l_i,μ_i)/τ} + e^{sim(l_i,h_i)/τ}) / Σ_j (e^{sim(l_i,μ_j)/τ} + e^{sim(l_i,h_j)/τ})],
    averaged over i and v (cosine similarity). An absent branch (``None`` lists or entries) drops
    its terms from numerator and denominator.

    Args:
        l: ``(N, z)``; mus, hs: lists of V tensors ``(N, z)`` or ``None``.
        tau: temperature > 0.

    In a mini-batch, pass the batch's rows of all three: the denominator then spans the batch.
    """
    n_views = len(mus if mus is not None else hs)
    anchors = F.normalize(l, dim=1)
    idx = torch.arange(l.shape[0], device=l.device)
    total = l.new_zeros(())
    for v in range(n_views):
        logits = [anchors @ F.normalize(src[v], dim=1).T / tau for src in (mus, hs) if src is not None]
        allv = torch.cat(logits, dim=1)  # (B, 2N) or (B, N)
        own = torch.stack([lg.gather(1, idx[:, None]).squeeze(1) for lg in logits], dim=1)
        total = total + (torch.logsumexp(allv, dim=1) - torch.logsumexp(own, dim=1)).mean()
    return total / n_views


def sample_triplets(pseudo, n_triplets: int, generator: np.random.Generator):
    """Draws (anchor, positive, negative) indices with ŷ_a = ŷ_p ≠ ŷ_n, p ≠ a.

    Anchors are uniform over samples whose pseudo-cluster has ≥ 2 members; positives uniform
    within, negatives uniform outside the anchor's cluster.

    Returns:
        three ``(R,)`` int arrays, empty when fewer than 2 clusters are non-empty.
    """
    pseudo = np.asarray(pseudo)
    n = pseudo.size
    order = np.argsort(pseudo, kind="stable")
    labels, start, count = np.unique(pseudo[order], return_index=True, return_counts=True)
    empty = np.empty(0, dtype=np.int64)
    if labels.size < 2:
        return empty, empty, empty
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    cluster = np.searchsorted(labels, pseudo)
    eligible = np.flatnonzero(count[cluster] >= 2)
    if eligible.size == 0:
        return empty, empty, empty
    a = generator.choice(eligible, size=n_triplets)
    c = cluster[a]
    local = rank[a] - start[c]
    r = np.floor(generator.random(n_triplets) * (count[c] - 1)).astype(np.int64)
    r = r + (r >= local)
    p = order[start[c] + r]
    s = np.floor(generator.random(n_triplets) * (n - count[c])).astype(np.int64)
    s = s + count[c] * (s >= start[c])
    neg = order[s]
    return a, p, neg


def inter_cluster_triplet(l: torch.Tensor, pseudo, n_triplets: int = 2048, margin: float = 1.0,
                          generator: np.random.Generator | None = None) -> torch.Tensor:
    """(1/R) Σ max(0, ‖l̃_a − l̃_p‖ − ‖l̃_a − l̃_n‖ + m) on ℓ2-normalised l over R sampled triplets.

    Returns 0 (still attached to the graph) when fewer than two pseudo-clusters are non-empty.
    """
    generator = generator if generator is not None else np.random.default_rng()
    a, p, neg = sample_triplets(pseudo, n_triplets, generator)
    if a.size == 0:
        return l.sum() * 0
    lt = F.normalize(l, dim=1)
    dev = l.device
    a, p, neg = (torch.as_tensor(t, device=dev) for t in (a, p, neg))
    d_pos = (lt[a] - lt[p]).pow(2).sum(dim=1).clamp_min(1e-12).sqrt()
    d_neg = (lt[a] - lt[neg]).pow(2).sum(dim=1).clamp_min(1e-12).sqrt()
    return F.relu(d_pos - d_neg + margin).mean()


def dec_target(q: torch.Tensor) -> torch.Tensor:
    """DEC target p_ik = (q_ik²/f_k) / Σ_j (q_ij²/f_j), f_k = Σ_i q_ik; computed without gradient."""
    with torch.no_grad():
        w = q.pow(2) / q.sum(dim=0, keepdim=True)
        return w / w.sum(dim=1, keepdim=True)


def cluster_loss(q: torch.Tensor, p: torch.Tensor, lambda3: float = 1.0, balance: float = 0.0) -> torch.Tensor:
    """L_Cluster = −(1/N) Σ q log q + λ₃ (1/N) Σ p log(p/q) [+ balance · (log K − H(q̄))], for ``(N, K)`` q, p.

    The optional cluster-balance term (q̄ = column mean of q, H its entropy; ≥ 0, zero for equal cluster
    masses) counteracts the collapse the per-sample entropy term can cause.
    """
    eps = 1e-12
    entropy = -(q * (q + eps).log()).sum(dim=1).mean()
    kl = (p * ((p + eps).log() - (q + eps).log())).sum(dim=1).mean()
    loss = entropy + lambda3 * kl
    if balance:
        marginal = q.mean(dim=0)
        loss = loss + balance * (math.log(q.shape[1]) + (marginal * (marginal + eps).log()).sum())
    return loss
