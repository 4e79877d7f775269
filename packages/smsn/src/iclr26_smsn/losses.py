"""Losses of SMSN: segmentation (soft Dice + CE), KL compression, masked reconstruction, orthogonality.

L = L_seg + λ_e·L_e + L_r + λ_o·L_o (L_r already carries β and γ).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def _regions(probs: torch.Tensor) -> torch.Tensor:
    """Class probabilities ``(B, 4, ...)`` -> region probabilities WT, TC, ET ``(B, 3, ...)``."""
    return torch.stack([probs[:, 1:].sum(1), probs[:, 1] + probs[:, 3], probs[:, 3]], dim=1)


def dice_ce_loss(logits: torch.Tensor, target: torch.Tensor, eps: float = 1.0) -> torch.Tensor:
    """Soft Dice over the BraTS regions (WT, TC, ET) plus cross-entropy.

    Args:
        logits: ``(B, 4, *spatial)`` over classes {0, 1, 2, 3} (BraTS 0, 1, 2, 4).
        target: ``(B, *spatial)`` class indices in {0, 1, 2, 3}.
        eps: Dice smoothing.

    Returns:
        scalar: ``(1 - mean soft Dice) + CE``.
    """
    if logits.shape[0] != target.shape[0] or logits.shape[2:] != target.shape[1:]:
        raise ValueError(f"target: expected shape {(logits.shape[0], *logits.shape[2:])}, got {tuple(target.shape)}")
    probs = _regions(logits.softmax(1))
    onehot = _regions(F.one_hot(target, logits.shape[1]).movedim(-1, 1).to(probs.dtype))
    dims = tuple(range(2, probs.ndim))
    inter = (probs * onehot).sum(dims)
    dice = (2 * inter + eps) / (probs.sum(dims) + onehot.sum(dims) + eps)
    return (1 - dice.mean()) + F.cross_entropy(logits, target)


def kl_standard_normal(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """KL(N(μ, σ²) ‖ N(0, 1)) = ½(μ² + σ² − 1 − log σ²), averaged over all elements; shapes must match."""
    if mu.shape != logvar.shape:
        raise ValueError(f"logvar: expected the shape of mu {tuple(mu.shape)}, got {tuple(logvar.shape)}")
    return 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).mean()


def masked_recon_loss(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Squared error over available modalities only: per sample the mean over its available elements, then the
    mean over samples (so a batch's value is the mean of its shards' values, as data-parallel training needs).

    Args:
        pred, target: ``(B, K, ...)``.
        mask: ``(B, K)`` availability; entries with mask 0 contribute nothing whatever their values.

    Returns:
        scalar: mean_b Σ_k M_bk (pred_bk − target_bk)² / (number of available elements of b); a sample with
        nothing available contributes 0; equal to the plain MSE when the mask is all ones.
    """
    if pred.shape != target.shape:
        raise ValueError(f"target: expected the shape of pred {tuple(pred.shape)}, got {tuple(target.shape)}")
    if mask.shape != pred.shape[:2]:
        raise ValueError(f"mask: expected shape {tuple(pred.shape[:2])}, got {tuple(mask.shape)}")
    m = mask.to(pred.dtype).reshape(*mask.shape, *([1] * (pred.ndim - 2)))
    sq = torch.where(m > 0, (pred - target) ** 2, torch.zeros((), dtype=pred.dtype, device=pred.device))
    per = pred[0, 0].numel()
    return (sq.flatten(1).sum(1) / (m.flatten(1).sum(1) * per).clamp_min(1.0)).mean()


def orthogonality_loss(z: torch.Tensor, xs: torch.Tensor, mask: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """L_o = mean over batch of Σ_i M_i · mean over locations of cos²(z, x_si) over channels.

    *Inferred*: the paper squares the inner product ⟨z, x_si⟩; unnormalised over C channels it is
    O(C) at initialisation (78-128 for C = 64, most of the total loss with λ_o = 0.1), so the
    inner product is taken between unit vectors per location (each cos² lies in [0, 1]).

    Args:
        z: ``(B, C, *s)`` (z2).
        xs: ``(B, M, C, *s)`` modality-specific features.
        mask: ``(B, M)`` availability.
    """
    if xs.shape[:1] + xs.shape[2:] != z.shape:
        raise ValueError(f"xs: expected (B, M, {', '.join(map(str, z.shape[1:]))}), got {tuple(xs.shape)}")
    inner = (z.unsqueeze(1) * xs).sum(2) / (z.unsqueeze(1).norm(dim=2) * xs.norm(dim=2) + eps)  # (B, M, *s)
    per_mod = inner.pow(2).flatten(2).mean(2)
    return (per_mod * mask.to(per_mod.dtype)).sum(1).mean()


class SMSNLoss:
    """L = dice_ce + λ_e·kl + recon + λ_o·orth; parallel models (no aux terms) get dice_ce only.

    Args:
        lambda_e: weight of the KL compression term (default 1e-3).
        lambda_o: weight of the orthogonality term (default 0.1).
    """

    def __init__(self, lambda_e: float = 1e-3, lambda_o: float = 0.1):
        if lambda_e < 0 or lambda_o < 0:
            raise ValueError(f"lambda_e, lambda_o: expected >= 0, got {lambda_e}, {lambda_o}")
        self.lambda_e, self.lambda_o = lambda_e, lambda_o

    def __call__(self, output, target: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        """``output`` a ``SegOutput``, ``target (B, *spatial)`` class indices -> (total loss, terms)."""
        seg = dice_ce_loss(output.logits, target)
        total, terms = seg, {"seg": float(seg.detach())}
        aux = output.aux
        for key, weight in (("kl", self.lambda_e), ("recon", 1.0), ("orth", self.lambda_o)):
            if aux.get(key) is not None:
                total = total + weight * aux[key]
                terms[key] = float(aux[key].detach())
        terms["total"] = float(total.detach())
        return total, terms
