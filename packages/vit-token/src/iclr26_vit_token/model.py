"""``SpecViT``: a pre-norm Vision Transformer whose [CLS]/patch specialisation is a config switch.

Block ``l`` with ``x = [x_cls; X_patch]`` of shape ``(B, 1 + P, D)``::

    h  = concat(LN1_cls(x_cls), LN1_patch(X_patch))                  if l in S_norm, else LN1(x)
    qkv = concat(h_cls W_qkv_cls + b_cls, H_patch W_qkv_patch + b_patch)  if l in S_qkv, else h W_qkv + b
    x  = x + LS1(Proj(MHSA(qkv)))                                    # attention over all tokens, shared
    h2 = concat(LN2_cls(x_cls), LN2_patch(X_patch))                  if l in S_norm, else LN2(x)
    x  = x + LS2(MLP(h2))

The default configuration specialises both norms of the first half of the blocks and the QKV
projection of the first third (the "+8 % parameters" model of the paper); the base ViT is the
same class with ``spec_norm_blocks="none", spec_qkv_blocks="none"``. Module and parameter names
follow timm's ``VisionTransformer`` so state dicts map one to one; a specialised layer ``name``
holds its two copies as ``name.prefix`` ([CLS] and routed registers) and ``name.patch``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from .layers import LayerScale, TokenSpecLayerNorm, TokenSpecLayerScale, TokenSpecLinear

BLOCK_RANGES = ("none", "all", "first_half", "first_third")
ARCH_KEYS = ("img_size", "patch_size", "in_chans", "dim", "depth", "heads", "mlp_ratio", "num_registers",
             "num_classes", "layerscale")
BASE = {"spec_norm_blocks": "none", "spec_qkv_blocks": "none", "spec_ls": False, "spec_final_norm": False}
SEPNORM = {"spec_norm_blocks": "all", "spec_qkv_blocks": "none", "spec_ls": True, "spec_final_norm": True}
LN_EPS = 1e-6


def vit_base_config() -> dict[str, Any]:
    """ViT-B/16 at 224 px: D=768, 12 blocks, 12 heads (backbone 85,798,656 parameters)."""
    return {"img_size": 224, "patch_size": 16, "dim": 768, "depth": 12, "heads": 12}


def vit_small_config() -> dict[str, Any]:
    """ViT-S/16 at 224 px: D=384, 12 blocks, 6 heads (backbone 21,665,664 parameters)."""
    return {"img_size": 224, "patch_size": 16, "dim": 384, "depth": 12, "heads": 6}


def vit_cpu_config() -> dict[str, Any]:
    """The CPU preset: 32 px images, patch 4 (P=64), D=64, 6 blocks, 2 heads (backbone 307,392 parameters)."""
    return {"img_size": 32, "patch_size": 4, "dim": 64, "depth": 6, "heads": 2}


def resolve_blocks(spec: str | Iterable[int] | None, depth: int, name: str) -> tuple[int, ...]:
    """Block indices selected by ``spec``.

    ``"none"`` (or ``None``) selects no block, ``"all"`` every block, ``"first_half"`` the first
    ``ceil(depth / 2)`` and ``"first_third"`` the first ``depth // 3`` (so ``depth=1`` keeps its one
    block in the half and none in the third); an iterable gives the indices explicitly.

    Raises:
        ValueError: an unknown name or an index outside ``[0, depth)``.
    """
    if spec is None or spec == "none":
        return ()
    if isinstance(spec, str):
        counts = {"all": depth, "first_half": math.ceil(depth / 2), "first_third": depth // 3}
        if spec not in counts:
            raise ValueError(f"{name}: expected one of {BLOCK_RANGES} or a list of block indices, got {spec!r}")
        return tuple(range(counts[spec]))
    blocks = tuple(sorted(set(int(i) for i in spec)))
    bad = [i for i in blocks if not 0 <= i < depth]
    if bad:
        raise ValueError(f"{name}: block indices must lie in [0, {depth}) for depth={depth}, got {bad}")
    return blocks


class Attention(nn.Module):
    """Multi-head self-attention over all tokens; ``qkv`` may be a ``TokenSpecLinear`` (specialised)."""

    def __init__(self, dim: int, heads: int, spec_qkv: bool = False, spec_proj: bool = False, n_prefix: int = 1):
        super().__init__()
        self.heads = heads
        self.qkv = TokenSpecLinear(dim, 3 * dim, n_prefix) if spec_qkv else nn.Linear(dim, 3 * dim)
        self.proj = TokenSpecLinear(dim, dim, n_prefix) if spec_proj else nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, D = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)  # (3, B, H, N, hd)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])  # (B, H, N, hd)
        return self.proj(y.transpose(1, 2).reshape(B, N, D))


class Mlp(nn.Module):
    """``fc2(GELU(fc1(x)))``; either linear may be specialised (an ablation of the paper)."""

    def __init__(self, dim: int, hidden: int, spec: bool = False, n_prefix: int = 1):
        super().__init__()
        self.fc1 = TokenSpecLinear(dim, hidden, n_prefix) if spec else nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = TokenSpecLinear(hidden, dim, n_prefix) if spec else nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """A pre-norm transformer block whose sub-layers are optionally token-specialised.

    Args:
        dim, heads, mlp_ratio: width, attention heads, MLP hidden width / ``dim``.
        spec_norm: both LayerNorms specialised; spec_qkv / spec_proj / spec_mlp: the QKV
            projection / output projection / MLP specialised.
        layerscale: initial LayerScale value, or None for no LayerScale.
        n_prefix: how many leading tokens take the [CLS] copy (1 + routed registers).
        spec_ls: the LayerScales specialised (needs ``layerscale``).

    Input and output ``(B, N, dim)``.
    """

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0, spec_norm: bool = False, spec_qkv: bool = False,
                 spec_proj: bool = False, spec_mlp: bool = False, layerscale: float | None = None, n_prefix: int = 1,
                 spec_ls: bool = False):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim, heads: dim must be divisible by heads, got dim={dim}, heads={heads}")

        def norm() -> nn.Module:
            return TokenSpecLayerNorm(dim, n_prefix, LN_EPS) if spec_norm else nn.LayerNorm(dim, eps=LN_EPS)

        def scale() -> nn.Module:
            if layerscale is None:
                return nn.Identity()
            return TokenSpecLayerScale(dim, layerscale, n_prefix) if spec_ls else LayerScale(dim, layerscale)

        self.norm1 = norm()
        self.attn = Attention(dim, heads, spec_qkv, spec_proj, n_prefix)
        self.ls1 = scale()
        self.norm2 = norm()
        self.mlp = Mlp(dim, int(dim * mlp_ratio), spec_mlp, n_prefix)
        self.ls2 = scale()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


def _shared_key(key: str) -> str:
    """``blocks.0.norm1.prefix.weight`` -> ``blocks.0.norm1.weight`` (the shared layer a copy came from)."""
    return ".".join(p for p in key.split(".") if p not in ("prefix", "patch"))


class SpecViT(nn.Module):
    """Vision Transformer with specialised [CLS]/patch parameters in chosen blocks.

    Args:
        img_size, patch_size, in_chans: image side (pixels), patch side, input channels;
            ``img_size`` must be divisible by ``patch_size``.
        dim, depth, heads, mlp_ratio: width D, number of blocks, heads, MLP ratio.
        num_registers: extra learned tokens placed after [CLS] (no position embedding).
        spec_norm_blocks: blocks whose two LayerNorms are specialised (``S_norm``; see ``resolve_blocks``).
        spec_qkv_blocks: blocks whose QKV projection is specialised (``S_qkv``).
        spec_proj_blocks, spec_mlp_blocks: ablations, output projection / MLP specialised.
        spec_ls: specialise LayerScale wherever norms are specialised (only when ``layerscale`` is set).
        spec_final_norm: specialise the final LayerNorm.
        register_path: ``"cls"`` routes registers through the [CLS] copies, ``"patch"`` through the patch copies.
        num_classes: size of a linear head on the final [CLS] (0: no head).
        layerscale: initial LayerScale value, or None for none.

    Token order inside the model: ``[CLS, registers..., patches...]`` of shape ``(B, 1 + R + P, D)``.

    Raises:
        ValueError: bad sizes, block indices out of range, unknown ``register_path``.
    """

    def __init__(self, img_size: int = 32, patch_size: int = 4, in_chans: int = 3, dim: int = 64, depth: int = 6,
                 heads: int = 2, mlp_ratio: float = 4.0, num_registers: int = 0,
                 spec_norm_blocks: str | Iterable[int] | None = "first_half",
                 spec_qkv_blocks: str | Iterable[int] | None = "first_third", spec_ls: bool = True,
                 spec_final_norm: bool = False, register_path: str = "cls", num_classes: int = 0,
                 layerscale: float | None = None, spec_proj_blocks: str | Iterable[int] | None = "none",
                 spec_mlp_blocks: str | Iterable[int] | None = "none"):
        super().__init__()
        for name, value, low in (("img_size", img_size, 1), ("patch_size", patch_size, 1), ("in_chans", in_chans, 1),
                                 ("dim", dim, 1), ("depth", depth, 1), ("heads", heads, 1),
                                 ("num_registers", num_registers, 0), ("num_classes", num_classes, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
        if img_size % patch_size:
            raise ValueError(f"img_size: expected a multiple of patch_size={patch_size}, got {img_size}")
        if register_path not in ("cls", "patch"):
            raise ValueError(f"register_path: expected 'cls' or 'patch', got {register_path!r}")
        self.arch = {"img_size": img_size, "patch_size": patch_size, "in_chans": in_chans, "dim": dim, "depth": depth,
                     "heads": heads, "mlp_ratio": float(mlp_ratio), "num_registers": num_registers,
                     "num_classes": num_classes, "layerscale": layerscale}
        self.s_norm = resolve_blocks(spec_norm_blocks, depth, "spec_norm_blocks")
        self.s_qkv = resolve_blocks(spec_qkv_blocks, depth, "spec_qkv_blocks")
        self.s_proj = resolve_blocks(spec_proj_blocks, depth, "spec_proj_blocks")
        self.s_mlp = resolve_blocks(spec_mlp_blocks, depth, "spec_mlp_blocks")
        self.spec = {"spec_norm_blocks": self.s_norm, "spec_qkv_blocks": self.s_qkv, "spec_ls": bool(spec_ls),
                     "spec_final_norm": bool(spec_final_norm), "register_path": register_path,
                     "spec_proj_blocks": self.s_proj, "spec_mlp_blocks": self.s_mlp}
        self.patch_size, self.dim, self.num_registers = patch_size, dim, num_registers
        self.grid = img_size // patch_size
        self.n_prefix = 1 + num_registers if register_path == "cls" else 1

        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(in_chans, dim, patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.reg_token = nn.Parameter(torch.zeros(1, num_registers, dim)) if num_registers else None
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + self.grid**2, dim))
        self.blocks = nn.ModuleList(
            Block(dim, heads, mlp_ratio, spec_norm=i in self.s_norm, spec_qkv=i in self.s_qkv,
                  spec_proj=i in self.s_proj, spec_mlp=i in self.s_mlp, layerscale=layerscale,
                  n_prefix=self.n_prefix, spec_ls=bool(spec_ls) and i in self.s_norm)
            for i in range(depth))
        self.norm = TokenSpecLayerNorm(dim, self.n_prefix, LN_EPS) if spec_final_norm else nn.LayerNorm(dim, eps=LN_EPS)
        self.head = nn.Linear(dim, num_classes) if num_classes else None
        self._init_weights()

    def _init_weights(self) -> None:
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        if self.reg_token is not None:
            nn.init.normal_(self.reg_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    # ----------------------------------------------------------------- forward
    def _pos_embed_for(self, h: int, w: int) -> torch.Tensor:
        """Position embeddings ``(1, 1 + h*w, D)``, bicubically interpolated when the grid is not the trained one."""
        if h == w == self.grid:
            return self.pos_embed
        cls_pos, patch_pos = self.pos_embed[:, :1], self.pos_embed[:, 1:]
        grid = patch_pos.reshape(1, self.grid, self.grid, self.dim).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(h, w), mode="bicubic", align_corners=False)
        return torch.cat([cls_pos, grid.permute(0, 2, 3, 1).reshape(1, h * w, self.dim)], dim=1)

    def patchify(self, images: torch.Tensor) -> tuple[torch.Tensor, int, int]:
        """Patch embeddings ``(B, P, D)`` and the grid ``(h, w)`` of ``images`` ``(B, C, H, W)``.

        Raises:
            ValueError: wrong channel count, or H/W not divisible by the patch size.
        """
        c = self.patch_embed.proj.in_channels
        if images.dim() != 4 or images.shape[1] != c:
            raise ValueError(f"images: expected (B, {c}, H, W), got {tuple(images.shape)}")
        H, W = images.shape[-2:]
        if H % self.patch_size or W % self.patch_size:
            raise ValueError(f"images: H and W must be divisible by patch_size={self.patch_size}, got {H}x{W}")
        x = self.patch_embed.proj(images)  # (B, D, h, w)
        h, w = x.shape[-2:]
        return x.flatten(2).transpose(1, 2), h, w

    def prepare_tokens(self, images: torch.Tensor, mask: torch.Tensor | None = None,
                       mask_token: torch.Tensor | None = None) -> torch.Tensor:
        """Input tokens ``(B, 1 + R + P, D)``: [CLS], registers, then patches with their position embeddings.

        Args:
            images: ``(B, C, H, W)``.
            mask: optional ``(B, P)`` boolean; masked patch embeddings are replaced by ``mask_token`` ``(D,)``
                before the position embedding is added (iBOT/DINOv2 masking).
        """
        x, h, w = self.patchify(images)
        if mask is not None:
            if mask_token is None or mask.shape != x.shape[:2]:
                raise ValueError(f"mask: expected shape {tuple(x.shape[:2])} together with a mask_token, "
                                 f"got {tuple(mask.shape)} and mask_token={mask_token is not None}")
            x = torch.where(mask.unsqueeze(-1), mask_token.to(x.dtype).expand_as(x), x)
        pos = self._pos_embed_for(h, w)
        B = x.shape[0]
        parts = [self.cls_token.expand(B, -1, -1) + pos[:, :1]]
        if self.reg_token is not None:
            parts.append(self.reg_token.expand(B, -1, -1))
        parts.append(x + pos[:, 1:])
        return torch.cat(parts, dim=1)

    def forward_features(self, images: torch.Tensor, mask: torch.Tensor | None = None,
                         mask_token: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Final-norm features: ``cls`` ``(B, D)``, ``patches`` ``(B, P, D)``, ``registers`` ``(B, R, D)``."""
        x = self.prepare_tokens(images, mask, mask_token)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        r = 1 + self.num_registers
        return {"cls": x[:, 0], "registers": x[:, 1:r], "patches": x[:, r:]}

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, num_classes)`` when the model has a head, else [CLS] features ``(B, D)``."""
        cls = self.forward_features(images)["cls"]
        return self.head(cls) if self.head is not None else cls

    # --------------------------------------------------------------- structure
    def backbone_parameters(self) -> dict[str, nn.Parameter]:
        """Every parameter except the classification head, by name."""
        return {k: p for k, p in self.named_parameters() if not k.startswith("head.")}

    def param_overhead(self) -> dict[str, Any]:
        """Backbone parameters of the equivalent unspecialised ViT (``base``), added by specialisation (``extra``)
        and ``ratio = extra / base``; both copies of each specialised layer are counted, the head is not."""
        total = sum(p.numel() for p in self.backbone_parameters().values())
        extra = sum(p.numel() for k, p in self.backbone_parameters().items() if ".prefix." in f".{k}")
        base = total - extra
        return {"base": base, "extra": extra, "ratio": extra / base}

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False):
        """``nn.Module.load_state_dict`` that refuses, whatever ``strict``, a state dict lacking a specialised layer.

        Raises:
            ValueError: a specialised copy (``*.prefix.*`` / ``*.patch.*``) is missing, with the layer named; a
                shared checkpoint goes through ``SpecViT.from_base`` instead.
        """
        missing = sorted({k.rsplit(".", 2)[0] for k in self.state_dict()
                          if _shared_key(k) != k and k not in state_dict})
        if missing:
            raise ValueError(f"state_dict: the specialised layer(s) {missing} are missing (the checkpoint has "
                             "shared weights or another configuration); build the model with SpecViT.from_base "
                             "to copy shared weights into both copies")
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    @classmethod
    def from_base(cls, base: nn.Module, **spec: Any) -> SpecViT:
        """A specialised copy of ``base`` computing the same function: every specialised layer's two copies
        start from ``base``'s shared weights.

        Args:
            base: a ``SpecViT`` (specialised or not) or a timm ``VisionTransformer``.
            **spec: the specialisation options of ``SpecViT`` (defaults: the paper's configuration);
                architecture keys may be repeated only with ``base``'s values.

        Raises:
            ValueError: ``spec`` changes the architecture (width, depth, ...), or ``base`` is specialised in a
                layer that the new model shares (that cannot preserve the function).
            TypeError: ``base`` is neither a ``SpecViT`` nor a timm ``VisionTransformer``.
        """
        if isinstance(base, SpecViT):
            arch, source = dict(base.arch), base.state_dict()
        elif type(base).__name__ == "VisionTransformer" and type(base).__module__.startswith("timm"):
            from .convert import timm_to_base

            arch, source = timm_to_base(base)
        else:
            raise TypeError(f"base: expected a SpecViT or a timm VisionTransformer, got {type(base).__name__}")
        clash = {k: (v, arch[k]) for k, v in spec.items() if k in ARCH_KEYS and v != arch[k]}
        if clash:
            raise ValueError(f"from_base: the architecture must match base; (given, base) differ for {clash}")
        unknown = set(spec) - set(ARCH_KEYS) - {"spec_norm_blocks", "spec_qkv_blocks", "spec_ls", "spec_final_norm",
                                                "register_path", "spec_proj_blocks", "spec_mlp_blocks"}
        if unknown:
            raise ValueError(f"from_base: unknown option(s) {sorted(unknown)}")
        model = cls(**{**arch, **spec})
        target = model.state_dict()
        for key in target:
            src = key if key in source else _shared_key(key)
            if src not in source:
                raise ValueError(f"from_base: base is specialised at {key.rsplit('.', 1)[0]!r} but the new model "
                                 "shares it; a shared layer cannot reproduce two copies")
            target[key] = source[src].detach().clone()
        model.load_state_dict(target)
        ref = next(iter(base.parameters()))
        return model.to(device=ref.device, dtype=ref.dtype)


def count_flops(model: nn.Module, img_size: int | None = None) -> int:
    """FLOPs of one forward pass of one ``(1, C, img_size, img_size)`` image, by ``torch.utils.flop_counter``.

    Counts matrix products (linear, attention, patch convolution); normalisation and
    element-wise ops are not counted, as usual.
    """
    from torch.utils.flop_counter import FlopCounterMode

    size = img_size if img_size is not None else model.arch["img_size"]
    ref = next(iter(model.parameters()))
    x = torch.zeros(1, model.patch_embed.proj.in_channels, size, size, device=ref.device, dtype=ref.dtype)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(x)
    return int(counter.get_total_flops())
