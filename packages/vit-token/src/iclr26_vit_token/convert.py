"""Conversion from a timm ``VisionTransformer`` to the unspecialised ``SpecViT`` layout.

timm is not a dependency: the model is read through its attributes and state dict. Supported are the
standard pre-norm ViTs (class token, ``global_pool="token"``, optional registers and LayerScale, no
QK-norm, no pre-norm, no ``fc_norm``); anything else raises instead of converting approximately.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

_PER_BLOCK = ("norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
              "norm2.weight", "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias",
              "ls1.gamma", "ls2.gamma")


def _size(value: Any) -> int:
    if isinstance(value, (tuple, list)):
        if len(set(value)) != 1:
            raise ValueError(f"timm model: only square images/patches are supported, got {tuple(value)}")
        return int(value[0])
    return int(value)


def timm_to_base(vit: nn.Module) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Architecture keywords and a ``SpecViT`` (unspecialised) state dict computing the same function as ``vit``.

    Position embeddings that timm adds to registers (``no_embed_class=False``) are folded into the register
    tokens; a class token without position embedding (``no_embed_class=True``) gets a zero one.

    Raises:
        ValueError: an unsupported timm configuration (the reason is named).
    """
    blocks = list(vit.blocks)
    if getattr(vit, "cls_token", None) is None or getattr(vit, "global_pool", "token") != "token":
        raise ValueError("timm model: a class token with global_pool='token' is required")
    if getattr(vit, "dynamic_img_size", False):
        raise ValueError("timm model: dynamic_img_size models are not supported; SpecViT interpolates itself")
    attn = blocks[0].attn
    extra = [n for n, m in (("norm_pre", vit.norm_pre), ("fc_norm", vit.fc_norm), ("q_norm", attn.q_norm),
                            ("k_norm", attn.k_norm)) if not isinstance(m, nn.Identity)]
    if extra:
        raise ValueError(f"timm model: layers {extra} have no SpecViT counterpart")
    ls = blocks[0].ls1
    layerscale = float(ls.gamma.detach().flatten()[0]) if hasattr(ls, "gamma") else None
    num_registers = int(getattr(vit, "num_reg_tokens", 0))
    arch = {"img_size": _size(vit.patch_embed.img_size), "patch_size": _size(vit.patch_embed.patch_size),
            "in_chans": int(vit.patch_embed.proj.in_channels), "dim": int(vit.embed_dim), "depth": len(blocks),
            "heads": int(attn.num_heads), "mlp_ratio": blocks[0].mlp.fc1.out_features / vit.embed_dim,
            "num_registers": num_registers, "num_classes": int(getattr(vit, "num_classes", 0)),
            "layerscale": layerscale}
    sd = {k: v.detach().clone() for k, v in vit.state_dict().items()}
    out: dict[str, torch.Tensor] = {"patch_embed.proj.weight": sd.pop("patch_embed.proj.weight"),
                                    "patch_embed.proj.bias": sd.pop("patch_embed.proj.bias"),
                                    "cls_token": sd.pop("cls_token")}
    pos = sd.pop("pos_embed")
    if getattr(vit, "no_embed_class", False):
        pos = torch.cat([torch.zeros_like(pos[:, :1]), pos], dim=1)
        reg_pos = None
    else:
        n_prefix = 1 + num_registers
        reg_pos, pos = pos[:, 1:n_prefix], torch.cat([pos[:, :1], pos[:, n_prefix:]], dim=1)
    out["pos_embed"] = pos
    if num_registers:
        reg = sd.pop("reg_token")
        out["reg_token"] = reg + reg_pos if reg_pos is not None else reg
    for i in range(len(blocks)):
        for name in _PER_BLOCK:
            key = f"blocks.{i}.{name}"
            if key in sd:
                out[key] = sd.pop(key)
    for key in ("norm.weight", "norm.bias", "head.weight", "head.bias"):
        if key in sd:
            out[key] = sd.pop(key)
    if sd:
        raise ValueError(f"timm model: parameters without a SpecViT counterpart: {sorted(sd)[:5]}")
    return arch, out
