"""The shared backbone: a patch-stem vision encoder and a pre-LN prefix-LM transformer with a KV cache.

Sequence = [64 visual tokens; prompt tokens; output tokens]. Attention is bidirectional over the prefix
(visual + prompt, padding masked) and causal over the outputs, which also see the whole prefix.

Coordinates are anchored to pixels by one shared sinusoidal code (``position_code``): each visual token
carries the code of its patch centre (x in the first half of the channels, y in the second) beside its
learned position embedding, and the logit of coordinate token ``<ck>`` gets the extra term
``h_x . code(k)`` at an x coordinate and ``h_y . code(k)`` at a y coordinate (a tied readout per axis;
``h_x``, ``h_y`` = the first and second half of the hidden state). Copying a patch's code to an output then
already names that patch's coordinate on the right axis, and y never leaks into an x logit. The same code is the
tied input of a written coordinate (``PrefixLM.embed``: ``<ck>`` fed back carries ``code(k)`` in its axis' half),
so the later corners of a box can follow the object its first corner found. Coordinates
always come in ``x, y`` pairs, so the axis of an output position is the parity of the coordinate tokens
before it. Without it a model trained from scratch memorises positions per image instead of
learning to read them (see the package README, "Why the coordinates were at chance").
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class NetConfig:
    """Backbone sizes (the API default is the spec's ~0.4M-parameter model)."""

    vocab_size: int
    d_model: int = 96
    n_layers: int = 3
    n_heads: int = 4
    d_mlp: int = 384
    image_size: int = 64
    max_prompt: int = 16
    max_out: int = 64
    coord_start: int = 0
    coord_bins: int = 0
    pointer: int = 0

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "d_mlp", "max_prompt", "max_out"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive integer, got {v!r}")
        if isinstance(self.pointer, bool) or not isinstance(self.pointer, int) or self.pointer < 0:
            raise ValueError(f"pointer: expected a non-negative integer (0 = no pixel pointer), got {self.pointer!r}")
        if self.d_model % self.n_heads or self.d_model % 4:
            raise ValueError(f"d_model: expected a multiple of 4 and of n_heads={self.n_heads}, got {self.d_model}")
        if self.coord_start < 0 or self.coord_bins < 0 or self.coord_start + self.coord_bins > self.vocab_size:
            raise ValueError(f"coord_start, coord_bins: expected a token range inside the vocabulary of "
                             f"{self.vocab_size}, got {self.coord_start}, {self.coord_bins}")
        if self.image_size % 8 or self.image_size < 8:
            raise ValueError(f"image_size: expected a positive multiple of 8, got {self.image_size}")

    def to_dict(self) -> dict:
        return asdict(self)


TOK_STD = 0.3
"""Init std of the token embeddings: near the unit-scale patch codes and the normalised patch content (at 0.02 the
instruction words were about 30x weaker than the codes, as the raw patch content was; see ``PrefixLM``)."""
PATCH = 8  # pixels per visual token side (stride-2 conv, then stride-4 patch conv)


def position_code(p: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal code of positions ``p`` (N,) in patch units -> (N, dim): ``[sin(p w_j), cos(p w_j)]``.

    ``dim // 2`` frequencies ``w_j = 3 * 20^(-j / (dim // 2))`` rad per patch: the fastest turns 0.375 rad
    per pixel (so neighbouring pixels differ), the slowest about 0.2 rad per patch (so distant patches do).
    """
    q = dim // 2
    w = 3.0 * 20.0 ** (-torch.arange(q, dtype=torch.float32) / q)
    a = p.float()[:, None] * w
    return torch.cat([torch.sin(a), torch.cos(a)], 1)


class Block(nn.Module):
    """Pre-LN transformer block; ``forward`` also returns this layer's keys and values (for the cache)."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_mlp), nn.GELU(), nn.Linear(cfg.d_mlp, cfg.d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None):
        """x (B, T, d); mask (B, 1, T, T_past + T), True = may attend; past: keys, values (B, h, T_past, d/h)."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x)), (k, v)


class PrefixLM(nn.Module):
    """Vision stem (3x3 stride-2 conv 3->32, GELU, 4x4 stride-4 patch conv 32->d) + prefix-LM transformer."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.GELU(), nn.Conv2d(32, d, 4, 4))
        # unit-scale stem features: raw, the patch content was ~30x weaker than the codes it sits beside
        self.stem_norm = nn.GroupNorm(1, 32)
        g = cfg.image_size // PATCH
        n_vis = g * g
        self.vis_pos = nn.Parameter(torch.randn(1, n_vis, d) * 0.02)
        half = d // 2
        axis = position_code(torch.arange(g), half)  # (g, d/2), patch centres in patch units
        code = torch.cat([axis[None, :, :].expand(g, g, half), axis[:, None, :].expand(g, g, half)], -1)
        self.register_buffer("vis_code", code.reshape(1, n_vis, d), persistent=False)
        # coordinate bin k covers pixels [k S/B, (k+1) S/B); its centre in patch units:
        centre = ((torch.arange(cfg.coord_bins) + 0.5) * cfg.image_size / max(cfg.coord_bins, 1)) / PATCH - 0.5
        self.register_buffer("coord_code", position_code(centre, half), persistent=False)  # (bins, d/2)
        if cfg.pointer:
            c = cfg.pointer
            # on the stem's first (stride-2) feature map: one cell per 2x2 pixels
            # the middle conv dilated: a cell sees 19 px, a whole object (shape, not only colour)
            self.pix = nn.Sequential(nn.Conv2d(32, c, 3, 1, 1), nn.GELU(), nn.Conv2d(c, c, 3, 1, 2, dilation=2),
                                     nn.GELU(), nn.Conv2d(c, c, 3, 1, 1), nn.GroupNorm(1, c))
            self.ptr_q = nn.Linear(d, c)
            self.ptr_ctx = nn.Linear(d, c)  # the final visual tokens' states, broadcast to their 4x4 cells
            # the cell column / row holding bin k's centre
            cell = ((torch.arange(cfg.coord_bins) + 0.5) * cfg.image_size / max(cfg.coord_bins, 1) / 2).long()
            self.register_buffer("bin_cell", cell.clamp(max=cfg.image_size // 2 - 1), persistent=False)
        self.prompt_pos = nn.Parameter(torch.randn(1, cfg.max_prompt, d) * 0.02)
        self.out_pos = nn.Parameter(torch.randn(1, cfg.max_out, d) * 0.02)
        self.tok = nn.Embedding(cfg.vocab_size, d)
        nn.init.normal_(self.tok.weight, std=TOK_STD)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, cfg.vocab_size)

    def prefix(self, images: torch.Tensor, prompt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Embeds images uint8 (B, S, S, 3) and prompt ids (B, P) -> ``(tokens (B, n_vis + P, d), pixels)``;
        ``pixels`` (B, pointer, S/2, S/2): the half-resolution features the pointer readout scores (None without
        it)."""
        x = self.stem[1](self.stem[0](images.permute(0, 3, 1, 2).float() / 255.0 - 0.5))
        x = self.stem_norm(x)  # (B, 32, S/2, S/2)
        vis = self.stem[2](x).flatten(2).transpose(1, 2) + self.vis_pos + self.vis_code
        pixels = self.pix(x) if self.cfg.pointer else None
        return torch.cat([vis, self.embed(prompt) + self.prompt_pos[:, :prompt.shape[1]]], 1), pixels

    def embed(self, ids: torch.Tensor, before: torch.Tensor | None = None) -> torch.Tensor:
        """Token embeddings (B, T, d) of ids (B, T); a coordinate token ``<ck>`` also gets ``code(k)`` in its axis'
        half (x first, y second, as the patch codes): the tied input of the coordinate readout, so a written
        coordinate names its pixel. ``before`` (B,): coordinate tokens already fed before ``ids`` (axis = parity)."""
        e = self.tok(ids)
        if self.cfg.coord_bins == 0:
            return e
        coord = self.is_coord(ids)
        n_before = coord.long().cumsum(1) - coord.long() + (0 if before is None else before[:, None])
        code = self.coord_code[(ids - self.cfg.coord_start).clamp(0, self.cfg.coord_bins - 1)] * coord[..., None]
        y = (n_before % 2 == 1)[..., None]
        return e + torch.cat([code.masked_fill(y, 0.0), code.masked_fill(~y, 0.0)], -1)

    def _keys_valid(self, prompt_mask: torch.Tensor) -> torch.Tensor:
        n_vis = self.vis_pos.shape[1]
        ones = torch.ones(prompt_mask.shape[0], n_vis, dtype=torch.bool, device=prompt_mask.device)
        return torch.cat([ones, prompt_mask], 1)

    def forward(self, images: torch.Tensor, prompt: torch.Tensor, prompt_mask: torch.Tensor,
                out_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, L, V) for the output positions.

        Args:
            images: uint8 (B, S, S, 3); prompt: ids (B, P); prompt_mask: bool (B, P), False at padding;
            out_in: ids (B, L) fed to the outputs (``<bos>`` then the target shifted right).
        """
        pre, pixels = self.prefix(images, prompt)
        n_pre, n_out = pre.shape[1], out_in.shape[1]
        x = torch.cat([pre, self.embed(out_in) + self.out_pos[:, :n_out]], 1)
        t = n_pre + n_out
        i = torch.arange(t, device=x.device)
        causal = (i[None, :] < n_pre) | (i[None, :] <= i[:, None]) & (i[:, None] >= n_pre)
        valid = torch.cat([self._keys_valid(prompt_mask),
                           torch.ones(x.shape[0], n_out, dtype=torch.bool, device=x.device)], 1)
        mask = causal[None, None] & valid[:, None, None, :]
        for blk in self.blocks:
            x, _ = blk(x, mask)
        return self.logits(x[:, n_pre:], self.is_coord(out_in).cumsum(1) % 2, self._with_context(pixels, x))

    def _with_context(self, pixels: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor | None:
        """Adds to the pointer's cells (B, c, S/2, S/2) a projection of the final state of the visual token
        covering each (x: (B, T, d), visual tokens first): the instruction-aware part of the pointer's features."""
        if pixels is None:
            return None
        g = self.cfg.image_size // PATCH
        ctx = self.ptr_ctx(self.ln_f(x[:, :g * g])).transpose(1, 2).reshape(x.shape[0], -1, g, g)
        return pixels + ctx.repeat_interleave(PATCH // 2, 2).repeat_interleave(PATCH // 2, 3)

    def is_coord(self, ids: torch.Tensor) -> torch.Tensor:
        """Whether each token id is a coordinate token (same shape, bool)."""
        lo = self.cfg.coord_start
        return (ids >= lo) & (ids < lo + self.cfg.coord_bins)

    def logits(self, h: torch.Tensor, axis: torch.Tensor, pixels: torch.Tensor | None = None) -> torch.Tensor:
        """Final hidden states (B, ..., d) -> logits (B, ..., V): the linear head, the tied coordinate readout and
        the pointer.

        ``axis`` (B, ...) is 0 where the next coordinate would be an x, 1 where it would be a y. The pointer scores
        every pixel, ``score = q(h) . pixels[:, :, v, u]``, and adds to the logit of x bin k the log-sum-exp of
        the scores down pixel column ``bin_pixel[k]`` (to a y bin: along the row), so a coordinate is read where
        the features the query matches are (minus log S: a mean, so an untrained pointer adds nothing).
        """
        z = self.ln_f(h)
        out = self.head(z)
        lo, n = self.cfg.coord_start, self.cfg.coord_bins
        if n == 0:
            return out
        half = h.shape[-1] // 2
        read = torch.where(axis[..., None] == 0, h[..., :half] @ self.coord_code.T, h[..., half:] @ self.coord_code.T)
        if pixels is not None:
            score = torch.einsum("b...c,bcvu->b...vu", self.ptr_q(z), pixels)
            per_axis = torch.where(axis[..., None] == 0, score.logsumexp(-2), score.logsumexp(-1))  # (B, ..., S)
            read = read + per_axis[..., self.bin_cell] - math.log(pixels.shape[-1])  # 0 while the scores are 0
        return torch.cat([out[..., :lo], out[..., lo:lo + n] + read, out[..., lo + n:]], -1)

    def encode(self, images: torch.Tensor, prompt: torch.Tensor, prompt_mask: torch.Tensor) -> dict:
        """Runs the prefix once; returns the cache ``{"kv": [(k, v) per layer], "valid": (B, n_pre) bool,
        "coords": (B,) coordinate tokens fed so far, "pixels": the pointer's pixel features or None}``."""
        x, pixels = self.prefix(images, prompt)
        valid = self._keys_valid(prompt_mask)
        mask = valid[:, None, None, :].expand(-1, 1, x.shape[1], -1)
        kv = []
        for blk in self.blocks:
            x, layer_kv = blk(x, mask)
            kv.append(layer_kv)
        return {"kv": kv, "valid": valid, "coords": torch.zeros(x.shape[0], dtype=torch.long, device=x.device),
                "pixels": self._with_context(pixels, x)}

    def step(self, cache: dict, token: torch.Tensor, position: int) -> torch.Tensor:
        """Feeds output token ids (B,) at output ``position``; returns next-token logits (B, V); extends the cache."""
        x = self.embed(token[:, None], cache["coords"]) + self.out_pos[:, position:position + 1]
        valid = torch.cat([cache["valid"], torch.ones(x.shape[0], 1, dtype=torch.bool, device=x.device)], 1)
        mask = valid[:, None, None, :]
        for j, blk in enumerate(self.blocks):
            x, cache["kv"][j] = blk(x, mask, cache["kv"][j])
        cache["valid"] = valid
        cache["coords"] = cache["coords"] + self.is_coord(token)
        return self.logits(x[:, 0], cache["coords"] % 2, cache["pixels"])
