"""The paper's analysis: how the pre-attention LayerNorm separates [CLS] from patch tokens."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .model import SpecViT
from .pretrain import to_tensor


def _check_block(model: SpecViT, block: int) -> None:
    depth = len(model.blocks)
    if isinstance(block, bool) or not isinstance(block, int) or not 0 <= block < depth:
        raise ValueError(f"block: expected an integer in [0, {depth}), got {block!r}")


@torch.no_grad()
def _norm1_io(model: SpecViT, images: np.ndarray, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Input and output ``(n, N, D)`` of ``blocks[block].norm1`` for uint8 ``images``."""
    _check_block(model, block)
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    handle = model.blocks[block].norm1.register_forward_hook(lambda m, i, o: seen.append((i[0], o)))
    try:
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        for start in range(0, len(images), 256):
            model.forward_features(to_tensor(images[start:start + 256], device))
        model.train(was_training)
    finally:
        handle.remove()
    return torch.cat([s[0] for s in seen]), torch.cat([s[1] for s in seen])


def _cosines(x: torch.Tensor, n_skip: int) -> tuple[float, float]:
    """(mean cos([CLS], patch), mean off-diagonal cos(patch, patch)) of tokens ``x`` ``(n, N, D)``."""
    cls = F.normalize(x[:, 0].double(), dim=-1)
    patches = F.normalize(x[:, n_skip:].double(), dim=-1)  # (n, P, D)
    cls_patch = torch.einsum("nd,npd->np", cls, patches).mean(1)  # per image, averaged over patches
    gram = patches @ patches.transpose(1, 2)
    P = patches.shape[1]
    patch_patch = (gram.sum((1, 2)) - gram.diagonal(dim1=1, dim2=2).sum(1)) / (P * (P - 1))
    return float(cls_patch.mean()), float(patch_patch.mean())


def token_cosine_stats(model: SpecViT, images: np.ndarray, block: int) -> dict[str, float]:
    """Cosine similarities before and after the pre-attention LayerNorm of ``blocks[block]``.

    Per image: the cosine between [CLS] and each patch vector averaged over patches, and the mean
    cosine over distinct patch pairs; then averaged over images (nothing subtracted).

    Returns:
        ``{"cls_patch_pre", "cls_patch_post", "patch_patch_pre", "patch_patch_post"}``.

    Raises:
        ValueError: ``block`` out of range.
    """
    pre, post = _norm1_io(model, images, block)
    skip = 1 + model.num_registers
    cp_pre, pp_pre = _cosines(pre, skip)
    cp_post, pp_post = _cosines(post, skip)
    return {"cls_patch_pre": cp_pre, "cls_patch_post": cp_post, "patch_patch_pre": pp_pre, "patch_patch_post": pp_post}


def _affine(norm: nn.Module, which: str) -> torch.Tensor:
    """The LayerNorm gamma ``(D,)`` applied to the [CLS] (``which="prefix"``) or patch tokens."""
    return getattr(norm, which).weight if hasattr(norm, which) else norm.weight


def ln_dimension_specialisation(model: SpecViT, images: np.ndarray, block: int) -> np.ndarray:
    """Per-dimension token-type specialisation ``s_d`` in [-1, 1] of ``blocks[block].norm1``, shape ``(D,)``.

    With ``z`` the standardised LayerNorm input (before the affine part) and ``gamma`` the scale applied to each
    token type, ``a_d = |gamma^cls_d E[z^cls_d]|`` and ``b_d = |gamma^patch_d E[z^patch_d]|`` (means over images
    and patches), ``s_d = (a_d - b_d) / (a_d + b_d)``: +1 for a dimension carried only by [CLS], -1 only by patches.

    Raises:
        ValueError: ``block`` out of range.
    """
    pre, _ = _norm1_io(model, images, block)
    z = (pre - pre.mean(-1, keepdim=True)) / pre.var(-1, unbiased=False, keepdim=True).add(1e-6).sqrt()
    norm = model.blocks[block].norm1
    skip = 1 + model.num_registers
    a = (_affine(norm, "prefix") * z[:, 0].mean(0)).abs()
    b = (_affine(norm, "patch") * z[:, skip:].mean((0, 1))).abs()
    return ((a - b) / (a + b + 1e-12)).detach().cpu().numpy()
