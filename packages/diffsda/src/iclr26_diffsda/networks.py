"""Backbones: the per-element MLP (time series / audio) and a small U-Net (video frames).

``ConcatMLP`` is the code's 5-layer MLP with the raw input re-concatenated at every layer;
``MLPDenoiser`` is F_theta for 1-D elements (FiLM by the noise embedding and by the latent
embedding, as in the code's ``TimitDiff``); ``UNet`` is F_theta for image frames (AdaGN by
both embeddings) and, without conditioning, the per-frame feature network of the encoder.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


class FourierFeatures(nn.Module):
    """Random Fourier features of a scalar: (B,) -> (B, 2 n) with frequencies ~ N(0, scale^2) (a fixed buffer)."""

    def __init__(self, n: int = 16, scale: float = 16.0):
        super().__init__()
        self.register_buffer("freqs", torch.randn(n) * scale)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        angle = 2 * math.pi * t[:, None].to(self.freqs.dtype) * self.freqs[None, :]
        return torch.cat([angle.cos(), angle.sin()], dim=1)


class NoiseEmbedding(nn.Module):
    """temb = MLP(FourierFeatures(c_noise)): (B,) -> (B, width)."""

    def __init__(self, width: int):
        super().__init__()
        self.fourier = FourierFeatures()
        self.mlp = nn.Sequential(nn.Linear(32, width), nn.SiLU(), nn.Linear(width, width))

    def forward(self, c_noise: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.fourier(c_noise))


class ConcatMLP(nn.Module):
    """Per-element feature network: ``layers`` blocks Linear -> LayerNorm -> SiLU -> Dropout of width ``width``,
    the raw input concatenated to the input of every block after the first. (B, in_dim) -> (B, width).

    With ``linear_last`` the last block is Linear -> LayerNorm without activation or dropout, as in the
    official encoder's feature MLP (the BiLSTM reads normalised, signed features).
    """

    def __init__(self, in_dim: int, width: int, layers: int = 5, dropout: float = 0.1, linear_last: bool = False):
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(in_dim if i == 0 else width + in_dim, width) for i in range(layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(width) for _ in range(layers)])
        self.dropout = nn.Dropout(dropout)
        self.linear_last = bool(linear_last)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        last = len(self.linears) - 1
        for i, (linear, norm) in enumerate(zip(self.linears, self.norms)):
            h = norm(linear(h if i == 0 else torch.cat([h, x], dim=1)))
            if not (self.linear_last and i == last):
                h = self.dropout(F.silu(h))
        return h


class MLPDenoiser(nn.Module):
    """F_theta for flattened elements: (x_in (B, *elem), c_noise (B,), z (B, cond_dim)) -> (B, *elem).

    4 conditioned hidden layers of width ``width`` (layer i > 0 sees concat(h, x_in)); each:
    h <- Linear(h); h <- h (1 + scale_t) + shift_t from SiLU(temb); the same from SiLU(aemb);
    LayerNorm; SiLU; dropout. The last layer is linear without conditioning.
    """

    def __init__(self, in_dim: int, cond_dim: int, width: int, layers: int = 5, dropout: float = 0.1):
        super().__init__()
        hidden = layers - 1
        self.temb = NoiseEmbedding(width)
        self.aemb = nn.Linear(cond_dim, width)
        self.linears = nn.ModuleList([nn.Linear(in_dim if i == 0 else width + in_dim, width) for i in range(hidden)])
        self.film_t = nn.ModuleList([nn.Linear(width, 2 * width) for _ in range(hidden)])
        self.film_a = nn.ModuleList([nn.Linear(width, 2 * width) for _ in range(hidden)])
        self.norms = nn.ModuleList([nn.LayerNorm(width) for _ in range(hidden)])
        self.out = nn.Linear(width + in_dim, in_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, c_noise: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(shape[0], -1)
        temb, aemb = F.silu(self.temb(c_noise)), F.silu(self.aemb(z))
        h = x
        for i, linear in enumerate(self.linears):
            h = linear(h if i == 0 else torch.cat([h, x], dim=1))
            scale, shift = self.film_t[i](temb).chunk(2, dim=1)
            h = h * (1 + scale) + shift
            scale, shift = self.film_a[i](aemb).chunk(2, dim=1)
            h = h * (1 + scale) + shift
            h = self.dropout(F.silu(self.norms[i](h)))
        return self.out(torch.cat([h, x], dim=1)).reshape(shape)


def _groups(channels: int) -> int:
    return math.gcd(32, channels)


class ResBlock(nn.Module):
    """GroupNorm-SiLU-Conv twice with an AdaGN (scale, shift) from the conditioning embedding, if any."""

    def __init__(self, c_in: int, c_out: int, emb_dim: int | None, dropout: float):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(_groups(c_in), c_in), nn.Conv2d(c_in, c_out, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(_groups(c_out), c_out), nn.Conv2d(c_out, c_out, 3, padding=1)
        self.ada = nn.Linear(emb_dim, 2 * c_out) if emb_dim else None
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, emb: torch.Tensor | None) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.norm2(h)
        if self.ada is not None:
            scale, shift = self.ada(emb)[:, :, None, None].chunk(2, dim=1)
            h = h * (1 + scale) + shift
        return self.skip(x) + self.conv2(self.dropout(F.silu(h)))


class SelfAttention(nn.Module):
    """Single-head self-attention over the pixels of a feature map, with a residual connection."""

    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(_groups(channels), channels)
        self.qkv, self.proj = nn.Conv2d(channels, 3 * channels, 1), nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor, emb: torch.Tensor | None = None) -> torch.Tensor:
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return x + self.proj(out.transpose(1, 2).reshape(b, c, h, w))


class UNet(nn.Module):
    """A U-Net over (B, C, H, W) frames: ``res_blocks`` ResBlocks per level, channels ch x mults,
    self-attention at the levels in ``attn_levels``; conditioned (AdaGN) on an embedding of width
    ``emb_dim`` when given. H and W must be divisible by 2^(len(mults) - 1)."""

    def __init__(self, in_ch: int, out_ch: int, ch: int = 64, mults: tuple[int, ...] = (1, 2, 2, 2),
                 res_blocks: int = 2, attn_levels: tuple[int, ...] = (2,), emb_dim: int | None = None,
                 dropout: float = 0.1):
        super().__init__()
        self.stem = nn.Conv2d(in_ch, ch, 3, padding=1)
        self.down, skips, c = nn.ModuleList(), [ch], ch
        for level, m in enumerate(mults):
            for _ in range(res_blocks):
                self.down.append(ResBlock(c, ch * m, emb_dim, dropout))
                c = ch * m
                if level in attn_levels:
                    self.down.append(SelfAttention(c))
                skips.append(c)
            if level < len(mults) - 1:
                self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                skips.append(c)
        self.mid = nn.ModuleList([ResBlock(c, c, emb_dim, dropout), SelfAttention(c), ResBlock(c, c, emb_dim, dropout)])
        self.up = nn.ModuleList()
        for level in reversed(range(len(mults))):
            for _ in range(res_blocks + 1):
                self.up.append(ResBlock(c + skips.pop(), ch * mults[level], emb_dim, dropout))
                c = ch * mults[level]
                if level in attn_levels:
                    self.up.append(SelfAttention(c))
            if level > 0:
                self.up.append(nn.Upsample(scale_factor=2, mode="nearest"))
        self.head = nn.Sequential(nn.GroupNorm(_groups(c), c), nn.SiLU(), nn.Conv2d(c, out_ch, 3, padding=1))

    def forward(self, x: torch.Tensor, emb: torch.Tensor | None = None) -> torch.Tensor:
        h = self.stem(x)
        hs = [h]
        for layer in self.down:
            h = layer(h, emb) if isinstance(layer, (ResBlock, SelfAttention)) else layer(h)
            if not isinstance(layer, SelfAttention):
                hs.append(h)
            else:
                hs[-1] = h
        for layer in self.mid:
            h = layer(h, emb)
        for layer in self.up:
            if isinstance(layer, ResBlock):
                h = layer(torch.cat([h, hs.pop()], dim=1), emb)
            elif isinstance(layer, SelfAttention):
                h = layer(h, emb)
            else:
                h = layer(h)
        return self.head(h)


class UNetDenoiser(nn.Module):
    """F_theta for image frames: (x_in (B, C, H, W), c_noise (B,), z (B, cond_dim)) -> (B, C, H, W);
    the U-Net is conditioned on temb + aemb (AdaGN)."""

    def __init__(self, channels: int, cond_dim: int, ch: int = 64, dropout: float = 0.1):
        super().__init__()
        emb = 4 * ch
        self.temb = NoiseEmbedding(emb)
        self.aemb = nn.Linear(cond_dim, emb)
        self.unet = UNet(channels, channels, ch=ch, emb_dim=emb, dropout=dropout)

    def forward(self, x: torch.Tensor, c_noise: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.unet(x, F.silu(self.temb(c_noise) + self.aemb(z)))


class ConvFeatures(nn.Module):
    """Per-frame feature network of the conv encoder: a small unconditioned U-Net whose output map
    is flattened and projected: (B, C, H, W) -> (B, width)."""

    def __init__(self, elem_shape: tuple[int, int, int], width: int, ch: int = 32, out_ch: int = 4):
        super().__init__()
        c, h, w = elem_shape
        self.unet = UNet(c, out_ch, ch=ch, mults=(1, 2), res_blocks=1, attn_levels=(), dropout=0.0)
        self.proj = nn.Sequential(nn.Linear(out_ch * h * w, width), nn.SiLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.unet(x).flatten(1))
