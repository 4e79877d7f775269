"""SMSN (sequential information-bottleneck fusion) and the parallel-fusion baselines.

Both share ``_Backbone``: one convolutional encoder per modality (no weight sharing), a
U-Net decoder, skip features fused by the available-modality mean. They differ only in how
the deepest features ``x_i (B, C, h, w[, d])`` are fused into one bottleneck map.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .inference import channels_last, conv, phase_kernels, run_layers, upsampled_conv
from .losses import kl_standard_normal, masked_recon_loss, orthogonality_loss

# Test-time priority of the reference modality: FLAIR, T1ce, T2, T1 (indices into MODALITIES).
PRIORITY = (3, 1, 2, 0)


@dataclass
class SegOutput:
    """``logits (B, 4, *spatial)`` over classes {0, 1, 2, 3} (BraTS labels 0, 1, 2, 4) and auxiliary terms."""

    logits: torch.Tensor
    aux: dict = field(default_factory=dict)


def _conv(ndim: int, cin: int, cout: int, k: int = 3, groups: int = 1) -> nn.Module:
    return (nn.Conv2d if ndim == 2 else nn.Conv3d)(cin, cout, k, padding=k // 2, groups=groups)


def _norm(ndim: int, c: int) -> nn.Module:
    # Instance norm, never batch norm: batch statistics would couple the samples of a batch.
    return (nn.InstanceNorm2d if ndim == 2 else nn.InstanceNorm3d)(c, affine=True)


def _block(ndim: int, cin: int, cout: int, groups: int = 1) -> nn.Sequential:
    """Two (3×3 conv, instance norm, LeakyReLU) layers; ``groups`` independent blocks side by side."""
    return nn.Sequential(_conv(ndim, cin, cout, groups=groups), _norm(ndim, cout), nn.LeakyReLU(0.01),
                         _conv(ndim, cout, cout, groups=groups), _norm(ndim, cout), nn.LeakyReLU(0.01))


class _Encoders(nn.Module):
    """M modality-specific multi-scale encoders (no weight sharing), run as one grouped-convolution program.

    ``(B, M, S...) -> [(B, M, w_l, S/2^l...)]`` for each level l. Group i of every convolution sees only
    modality i's channels and instance norm is per channel, so this equals M separate encoders.
    """

    def __init__(self, ndim: int, widths: tuple[int, ...], n_modalities: int):
        super().__init__()
        chans = (1, *widths)
        m = n_modalities
        self.blocks = nn.ModuleList(_block(ndim, m * chans[i], m * chans[i + 1], groups=m)
                                    for i in range(len(widths)))
        self.pool = nn.MaxPool2d(2) if ndim == 2 else nn.MaxPool3d(2)
        self.widths, self.m = widths, m

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats = []
        for i, block in enumerate(self.blocks):
            x = block(x if i == 0 else self.pool(x))
            feats.append(x.reshape(x.shape[0], self.m, self.widths[i], *x.shape[2:]))
        return feats

    def forward_channels_last(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``forward`` for inference (equal up to float rounding), each modality's encoder on its own, channels-last.
        Per level ``(B, M, w_l, *S_l)``, stored as ``(B, M, *S_l, w_l)``: ``flatten(0, 1)`` and every modality's
        slice are channels-last views."""
        feats: list[torch.Tensor] = []
        for i in range(self.m):
            h = channels_last(x[:, i:i + 1])
            for level, block in enumerate(self.blocks):
                h = run_layers(block, h if level == 0 else self.pool(h), group=i, groups=self.m)
                if i == 0:
                    feats.append(h.new_empty(len(h), self.m, *h.shape[2:], h.shape[1]))
                feats[level][:, i] = h.movedim(1, -1)
        return [f.movedim(-1, 2) for f in feats]


class _Decoder(nn.Module):
    """U-Net decoder: bottleneck ``(B, w_L, ...)`` plus skips -> logits ``(B, n_classes, S...)``."""

    def __init__(self, ndim: int, widths: tuple[int, ...], n_classes: int):
        super().__init__()
        self.ndim = ndim
        self.blocks = nn.ModuleList(_block(ndim, widths[i + 1] + widths[i], widths[i])
                                    for i in reversed(range(len(widths) - 1)))
        self.head = _conv(ndim, widths[0], n_classes, k=1)

    def forward(self, bottleneck: torch.Tensor, skips: list[torch.Tensor]) -> torch.Tensor:
        x = bottleneck
        for block, skip in zip(self.blocks, reversed(skips)):
            x = F.interpolate(x, size=skip.shape[2:], mode="nearest")
            x = block(torch.cat([x, skip], dim=1))
        return self.head(x)

    def skip_terms(self, feats: list[torch.Tensor]) -> list[torch.Tensor]:
        """The skip half of each block's first convolution, per modality (no bias), channels-last.

        ``feats`` per level ``(B, M, w_l, *S_l)`` -> per block (deepest first) ``(B, M, *S_l, w_l)``. The
        convolution is linear, so the available-modality mean of these equals the skip half applied to the
        mean skip: computed once for all 15 subsets (``forward_terms``).
        """
        terms = []
        for block, f in zip(self.blocks, reversed(feats[:-1])):
            first = block[0]
            out = conv(channels_last(f.flatten(0, 1)), first.weight[:, -f.shape[2]:], None, first.padding)
            terms.append(out.movedim(1, -1).reshape(*f.shape[:2], *out.shape[2:], out.shape[1]))
        return terms

    def phase_kernels(self) -> list[torch.Tensor]:
        """Per block, ``inference.phase_kernels`` of the up-sampled half of its first convolution (``forward_terms``):
        that convolution maps (up-sampled w_{l+1}, skip w_l) channels to w_l."""
        return [phase_kernels(b[0].weight[:, : b[0].in_channels - b[0].out_channels]) for b in self.blocks]

    def forward_terms(self, bottleneck: torch.Tensor, terms: list[torch.Tensor],
                      kernels: list[torch.Tensor]) -> torch.Tensor:
        """Eval-mode ``forward`` with the skips given as their fused first-convolution terms ``(B, w_l, *S_l)``
        (channels-last, overwritten) and ``kernels = phase_kernels()``, channels-last throughout; each term's size
        must be twice the coarser level's (``check_input`` ensures it). Returns channels-last logits
        ``(B, n_classes, *S)``."""
        x = channels_last(bottleneck)
        for block, term, k in zip(self.blocks, terms, kernels):
            x = run_layers(block[1:], upsampled_conv(x, k, block[0].bias, term))
        return run_layers([self.head], x)


def _expand(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``(B, M)`` -> ``(B, M, 1, ..., 1)`` broadcastable against ``(B, M, C, *spatial)``."""
    return mask.to(like.dtype).reshape(*mask.shape, *([1] * (like.ndim - 2)))


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over available modalities: ``x (B, M, C, ...)``, ``mask (B, M)`` -> ``(B, C, ...)``."""
    m = _expand(mask, x)
    return (x * m).sum(1) / m.sum(1).clamp_min(1.0)


def check_mask(mask: torch.Tensor, batch: int, n_modalities: int) -> torch.Tensor:
    """Validates an availability mask and returns it as bool ``(B, M)``.

    Raises:
        ValueError: wrong shape, values other than 0/1, or a sample with no modality.
    """
    if not isinstance(mask, torch.Tensor):
        mask = torch.as_tensor(mask)
    if mask.shape != (batch, n_modalities):
        raise ValueError(f"mask: expected shape ({batch}, {n_modalities}), got {tuple(mask.shape)}")
    if mask.dtype != torch.bool:
        if not ((mask == 0) | (mask == 1)).all():
            raise ValueError("mask: expected 0/1 or bool values")
        mask = mask.bool()
    if not mask.any(dim=1).all():
        raise ValueError("mask: every sample needs at least one available modality (an all-zero mask was given)")
    return mask


def reorder_modalities(mask: torch.Tensor, generator: torch.Generator | None = None,
                       random: bool = True) -> torch.Tensor:
    """The modality order for the sequential fusion, ``(B, M)`` bool -> ``(B, M)`` long.

    ``random=True`` (training): position 1 is an available modality drawn uniformly, the
    others follow in a uniformly random order. ``random=False`` (test time): available
    modalities first in the priority FLAIR, T1ce, T2, T1, then the missing ones.
    Position 1 is never a missing modality.

    Raises:
        ValueError: see ``check_mask``.
    """
    mask = check_mask(mask, mask.shape[0], mask.shape[1])
    b, m = mask.shape
    if not random:
        rank = torch.empty(m, device=mask.device, dtype=torch.float32)
        prio = PRIORITY if m == 4 else tuple(range(m))
        rank[list(prio)] = torch.arange(m, device=mask.device, dtype=torch.float32)
        return torch.argsort(rank + m * (~mask).float(), dim=1, stable=True)
    draw = torch.rand(b, m, generator=generator, device=mask.device if generator is None else generator.device)
    draw = draw.to(mask.device)
    first = torch.where(mask, draw, -1.0).argmax(dim=1)
    keys = torch.rand(b, m, generator=generator, device=mask.device if generator is None else generator.device)
    keys = keys.to(mask.device).scatter(1, first[:, None], -1.0)
    return torch.argsort(keys, dim=1)


class _Backbone(nn.Module):
    """Per-modality encoders, skip fusion by available mean, U-Net decoder."""

    def __init__(self, in_modalities: int, n_classes: int, ndim: int, widths: tuple[int, ...]):
        super().__init__()
        if ndim not in (2, 3):
            raise ValueError(f"ndim: expected 2 or 3, got {ndim!r}")
        if len(widths) < 2 or any(int(w) < 1 for w in widths):
            raise ValueError(f"widths: expected at least two positive widths, got {widths!r}")
        self.in_modalities, self.n_classes, self.ndim = in_modalities, n_classes, ndim
        self.widths = tuple(int(w) for w in widths)
        self.encoders = _Encoders(ndim, self.widths, in_modalities)
        self.decoder = _Decoder(ndim, self.widths, n_classes)

    def check_input(self, x: torch.Tensor, mask) -> torch.Tensor:
        """Validates ``x (B, M, *spatial)`` and ``mask (B, M)``; returns the bool mask on ``x``'s device."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x: expected a torch.Tensor, got {type(x).__name__}")
        if x.ndim != self.ndim + 2 or x.shape[1] != self.in_modalities:
            raise ValueError(f"x: expected shape (B, {self.in_modalities}, {'H, W' if self.ndim == 2 else 'H, W, D'}),"
                             f" got {tuple(x.shape)}")
        factor = 2 ** (len(self.widths) - 1)
        bad = [s for s in x.shape[2:] if s % factor]
        if bad:
            pads = [(-s) % factor for s in x.shape[2:]]
            raise ValueError(f"x: spatial size {tuple(x.shape[2:])} must be divisible by {factor} "
                             f"({len(self.widths) - 1} pooling levels); pad by {pads}")
        if not torch.isfinite(x).all():
            raise ValueError("x: contains NaN or Inf")
        return check_mask(torch.as_tensor(mask, device=x.device), x.shape[0], self.in_modalities)

    def encode(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Encodes every modality: ``x (B, M, *S)`` -> per level ``(B, M, w_l, *S_l)`` (no masking)."""
        return self.encoders(x)

    def decode(self, feats: list[torch.Tensor], mask: torch.Tensor, order: torch.Tensor | None = None) -> SegOutput:
        """Fuses encoded features of the available modalities and decodes them.

        ``feats`` must be the encoding of the zero-filled input (``forward`` and
        ``evaluate_subsets`` guarantee it). Returns ``SegOutput``.
        """
        skips = [masked_mean(f, mask) for f in feats[:-1]]
        fused, aux = self.fuse(feats[-1], mask, order)
        return SegOutput(self.decoder(fused, skips), aux)

    def prepare_subsets(self, x: torch.Tensor) -> dict:
        """What every subset's evaluation of ``x (B, M, *S)`` (full input, checked by ``check_input``) shares: the
        encoding (``_Encoders.forward_channels_last``), the decoder's per-modality skip terms and phase kernels and
        the fusion's per-modality cache. Pass the result to ``decode_subset``."""
        feats = self.encoders.forward_channels_last(x)
        return {"bottleneck": feats[-1], "terms": self.decoder.skip_terms(feats),
                "kernels": self.decoder.phase_kernels(), "fusion": self._fusion_cache(feats[-1])}

    def _fusion_cache(self, x: torch.Tensor):
        return None

    def fuse_subset(self, x: torch.Tensor, avail: torch.Tensor, cache, order: torch.Tensor | None) -> torch.Tensor:
        """Fused bottleneck ``(B, C, *s)`` for one subset ``avail (M,)`` from the full features ``x (B, M, C, *s)``."""
        return self.fuse(x, avail.expand(len(x), -1), order)[0]

    def decode_subset(self, prepared: dict, avail: torch.Tensor, order: torch.Tensor | None = None) -> torch.Tensor:
        """Eval-mode logits ``(B, n_classes, *S)`` (channels-last) for the subset ``avail (M,)`` bool (same for
        the whole batch).

        Equals ``forward(x, mask)`` (up to float rounding) with ``prepared = prepare_subsets(x)``: a modality's
        encoding does not depend on the others, and masked modalities never reach the output.
        """
        idx = avail.nonzero().flatten().tolist()
        terms = []
        for t in prepared["terms"]:  # (B, M, *S, w): the mean over the available modalities, into a new tensor
            mean = t[:, idx[0]].clone() if len(idx) == 1 else t[:, idx[0]] + t[:, idx[1]]
            for i in idx[2:]:
                mean += t[:, i]
            terms.append(mean.div_(len(idx)).movedim(-1, 1))
        fused = self.fuse_subset(prepared["bottleneck"], avail, prepared["fusion"], order)
        return self.decoder.forward_terms(fused, terms, prepared["kernels"])

    def forward(self, x: torch.Tensor, mask, *, order: torch.Tensor | None = None) -> SegOutput:
        """Segments ``x (B, M, *S)`` using only the modalities with ``mask (B, M)`` true.

        Masked modalities are zero-filled here, whatever the caller passed.

        Raises:
            TypeError, ValueError: bad ``x`` or ``mask`` (shape, NaN/Inf, all-zero mask, indivisible size).
        """
        mask = self.check_input(x, mask)
        x = x * _expand(mask, x)
        return self.decode(self.encode(x), mask, order)

    def training_draws(self, mask: torch.Tensor, spatial: tuple[int, ...], generator: torch.Generator) -> dict:
        """The random inputs of one training step, drawn for a whole batch with ``generator`` and passed to
        ``forward`` as keyword arguments (``fit`` shards them under torchrun); none for parallel fusion."""
        return {}

    def fuse(self, x: torch.Tensor, mask: torch.Tensor, order: torch.Tensor | None):
        raise TypeError(f"{type(self).__name__} must define fuse")


class IBFM(nn.Module):
    """Two-stage information-bottleneck fusion module.

    Stage I: q(z1 | x_(1), x_(2)) = N(μ1, σ1²), [μ1, log σ1²] = f1([x_(1), x_(2)]).
    Stage II: q(z2 | z1, x_(3), x_(4)) = N(μ2, σ2²), [μ2, log σ2²] = f2([z1, x_(3), x_(4)]).
    Decoders g1, g2 reconstruct the stage inputs (features or down-sampled images) from z1, z2.
    """

    def __init__(self, ndim: int, channels: int, latent: int, recon_channels: int):
        super().__init__()
        self.latent = latent

        def head(cin: int) -> nn.Sequential:
            return nn.Sequential(_conv(ndim, cin, latent), _norm(ndim, latent), nn.LeakyReLU(0.01),
                                 _conv(ndim, latent, latent), _norm(ndim, latent), nn.LeakyReLU(0.01),
                                 _conv(ndim, latent, 2 * latent, k=1))

        def recon(cout: int) -> nn.Sequential:
            return nn.Sequential(_conv(ndim, latent, latent), nn.LeakyReLU(0.01), _conv(ndim, latent, cout, k=1))

        self.f1, self.f2 = head(2 * channels), head(latent + 2 * channels)
        self.g1, self.g2 = recon(2 * recon_channels), recon(2 * recon_channels)

    def _sample(self, stats: torch.Tensor, eps: torch.Tensor | None):
        """Reparameterisation z = μ + σ·ε in training (ε given, or drawn), z = μ in eval mode."""
        mu, logvar = stats.chunk(2, dim=1)
        logvar = logvar.clamp(-10.0, 10.0)
        if not self.training:
            return mu, mu, logvar
        eps = torch.randn_like(mu) if eps is None else eps
        return mu + torch.exp(0.5 * logvar) * eps, mu, logvar

    def forward(self, xs: torch.Tensor, targets: torch.Tensor, m: torch.Tensor,
                noise: torch.Tensor | None = None) -> dict:
        """``xs (B, 4, C, *s)`` re-ordered, masked features; ``targets (B, 4, R, *s)`` or None; ``m (B, 4)``
        the re-ordered mask; ``noise (B, 2, C_z, *s)`` the training ε of both stages (None: drawn here).

        Returns a dict with ``z1, z2`` ``(B, C_z, *s)``, ``kl`` (scalar, per-element mean, both stages)
        and ``recon_1, recon_2`` (masked reconstruction errors of stage I and II, unweighted; absent
        when ``targets`` is None).
        """
        eps1, eps2 = (None, None) if noise is None else noise.unbind(1)
        z1, mu1, lv1 = self._sample(self.f1(torch.cat([xs[:, 0], xs[:, 1]], dim=1)), eps1)
        z2, mu2, lv2 = self._sample(self.f2(torch.cat([z1, xs[:, 2], xs[:, 3]], dim=1)), eps2)
        out = {"z1": z1, "z2": z2, "kl": kl_standard_normal(mu1, lv1) + kl_standard_normal(mu2, lv2)}
        if targets is None:
            return out
        shape = (xs.shape[0], 2, targets.shape[2], *targets.shape[3:])
        rec1 = self.g1(z1).reshape(shape)
        rec2 = self.g2(z2).reshape(shape)
        tgt = targets.detach()
        out["recon_1"] = masked_recon_loss(rec1, tgt[:, :2], m[:, :2])
        out["recon_2"] = masked_recon_loss(rec2, tgt[:, 2:], m[:, 2:])
        return out


    def position_terms(self, x: torch.Tensor) -> torch.Tensor:
        """The first convolutions of f1 and f2 split by input (they are linear): the contribution (no bias) of every
        modality's features ``x (B, M, C, *s)`` at each of the four positions -> ``(4, B, M, *s, C_z)``, computed
        once for all subsets and orders (``eval_z2``)."""
        c, latent = x.shape[2], self.latent
        w1, w2 = self.f1[0].weight, self.f2[0].weight
        weight = torch.cat([w1[:, :c], w1[:, c:], w2[:, latent:latent + c], w2[:, latent + c:]])
        out = conv(channels_last(x.flatten(0, 1)), weight, None, self.f1[0].padding)
        return out.movedim(1, -1).reshape(*x.shape[:2], *x.shape[3:], 4, latent).movedim(-2, 0).contiguous()

    def _mu(self, head: nn.Sequential, pre: torch.Tensor) -> torch.Tensor:
        """Eval-mode μ half of ``head`` (f1 or f2) from its first convolution's output ``pre (B, C_z, *s)``."""
        last = head[-1]
        return conv(run_layers(head[1:-1], pre), last.weight[: self.latent], last.bias[: self.latent], 0)

    def eval_z2(self, terms: torch.Tensor, order: torch.Tensor, m: torch.Tensor,
                memo: dict | None = None) -> torch.Tensor:
        """Eval-mode ``forward(...)["z2"]`` (z = μ) from ``terms = position_terms(x)`` of the unordered features,
        ``order (B, 4)`` and the re-ordered mask ``m (B, 4)``; equal up to float rounding. Returns channels-last
        ``(B, C_z, *s)``. Stage I and its part of stage II's first convolution depend only on positions 1–2; when
        ``order`` and ``m`` are the same for the whole batch they are kept in ``memo`` (one dict per ``terms``) for
        the subsets that share those positions (10 distinct among the 15 test-time orders)."""
        n_mod = terms.shape[2]
        first = torch.arange(len(order), device=order.device) * n_mod  # row of sample i's first modality

        def at(p: int) -> torch.Tensor:  # (B, *s, C_z): the contribution at position p (0 for a missing modality)
            t = terms[p].flatten(0, 1).index_select(0, first + order[:, p])
            return t.mul_(m[:, p].to(t.dtype).reshape(-1, *([1] * (t.ndim - 1))))

        key = None
        if memo is not None and bool((order == order[0]).all()) and bool((m == m[0]).all()):
            key = (*order[0, :2].tolist(), *m[0, :2].tolist())
        stage1 = None if key is None else memo.get(key)
        if stage1 is None:
            conv1, conv2 = self.f1[0], self.f2[0]
            mu1 = self._mu(self.f1, (at(0) + at(1) + conv1.bias).movedim(-1, 1))
            stage1 = conv(mu1, conv2.weight[:, : self.latent], conv2.bias, conv2.padding)
            if key is not None:
                memo[key] = stage1
        return self._mu(self.f2, stage1 + (at(2) + at(3)).movedim(-1, 1))


class SpecificExtractor(nn.Module):
    """One pre-LN Transformer block over the tokens of every modality and of z2.

    Input ``xs (B, M, C, *s)``, ``z2 (B, C, *s)``, ``mask (B, M)``; output ``x_s (B, M, C, *s)``.
    Tokens of missing modalities are excluded as keys (key-padding mask).
    """

    def __init__(self, channels: int, heads: int = 4):
        super().__init__()
        if channels % heads:
            raise ValueError(f"transformer_heads: {heads} must divide the bottleneck width {channels}")
        self.block = nn.TransformerEncoderLayer(channels, heads, dim_feedforward=2 * channels, dropout=0.0,
                                                activation="gelu", batch_first=True, norm_first=True)

    def forward(self, xs: torch.Tensor, z2: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, m, c = xs.shape[:3]
        spatial = xs.shape[3:]
        n = spatial.numel()
        tokens = torch.cat([xs.flatten(3).transpose(2, 3).reshape(b, m * n, c), z2.flatten(2).transpose(1, 2)], 1)
        pad = torch.cat([(~mask).repeat_interleave(n, dim=1), mask.new_zeros(b, n)], dim=1)
        out = self.block(tokens, src_key_padding_mask=pad)
        return out[:, : m * n].reshape(b, m, n, c).transpose(2, 3).reshape(b, m, c, *spatial)

    def modality_cache(self, xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """What ``fused_subset`` needs of the full features ``xs (B, M, C, *s)``, independent of the subset: the tokens
        ``(M, B, n, C)`` and their pre-LN query, key and value projections ``(M, B, heads, n, C / heads)`` each."""
        b, m, c = xs.shape[:3]
        tokens = xs.movedim(2, -1).reshape(b, m, -1, c).transpose(0, 1).contiguous()
        attn = self.block.self_attn
        qkv = F.linear(self.block.norm1(tokens), attn.in_proj_weight, attn.in_proj_bias)
        h = attn.num_heads
        return tokens, *qkv.reshape(m, b, -1, 3, h, c // h).permute(3, 0, 1, 4, 2, 5).contiguous().unbind(0)

    def fused_subset(self, cache: tuple[torch.Tensor, ...], z2: torch.Tensor, avail: torch.Tensor) -> torch.Tensor:
        """SMSN's eval-mode fused map, the mean over the available modalities of ``forward(...) + z2``, computing
        only what it uses: tokens of the available modalities ``avail (M,)`` as queries, those and the tokens of
        ``z2 (B, C, *s)`` as keys (``forward`` gives masked keys weight 0). ``cache = modality_cache(xs)``.
        Returns channels-last ``(B, C, *s)``, equal up to float rounding."""
        layer, attn = self.block, self.block.self_attn
        idx = avail.nonzero().flatten()
        tokens, q, kx, vx = (a.index_select(0, idx) for a in cache)  # (k, B, ...) for the k available modalities
        k, b, n, c = tokens.shape
        h = attn.num_heads
        zt = z2.movedim(1, -1).reshape(b, n, c)
        kz, vz = F.linear(layer.norm1(zt), attn.in_proj_weight[c:], attn.in_proj_bias[c:]).reshape(
            b, n, 2, h, c // h).permute(2, 0, 3, 1, 4).unbind(0)  # (B, heads, n, C / heads) each

        def keys(a: torch.Tensor, z: torch.Tensor) -> torch.Tensor:  # (k, B, heads, n, d) + z -> (B, heads, (k+1)n, d)
            return torch.cat([*a.unbind(0), z], dim=2)

        out = F.scaled_dot_product_attention(torch.cat(q.unbind(0), dim=2), keys(kx, kz), keys(vx, vz))
        y = tokens + attn.out_proj(out.reshape(b, h, k, n, c // h).permute(2, 0, 3, 1, 4).reshape(k, b, n, c))
        y = y + layer.linear2(layer.activation(layer.linear1(layer.norm2(y))))
        return y.mean(0).add_(zt).reshape(b, *z2.shape[2:], c).movedim(-1, 1)


class SMSN(_Backbone):
    """Sequential Multi-modal Segmentation Network.

    Args:
        in_modalities: number of modalities M (4 for BraTS).
        n_classes: output classes (4: background, NCR, ED, ET).
        ndim: 2 or 3.
        widths: encoder widths per level; the input size must be divisible by 2^(len(widths)-1).
        latent_channels: C_z (default: the bottleneck width C).
        transformer_heads: heads of the specific-feature Transformer block.
        recon_target: ``"feature"`` (reconstruct encoder features) or ``"image"`` (down-sampled images).
        beta, gamma: weights of the stage-I and stage-II reconstruction terms.
        random_order: re-order modalities randomly in training (False: the test-time order always).
    """

    def __init__(self, in_modalities: int = 4, n_classes: int = 4, ndim: int = 2,
                 widths: tuple[int, ...] = (16, 32, 64, 128), latent_channels: int | None = None,
                 transformer_heads: int = 4, recon_target: str = "feature", beta: float = 1.0, gamma: float = 1.0,
                 random_order: bool = True):
        super().__init__(in_modalities, n_classes, ndim, widths)
        if in_modalities != 4:
            raise ValueError(f"in_modalities: SMSN's two-stage IBFM fuses exactly 4 modalities, got {in_modalities}")
        if recon_target not in ("feature", "image"):
            raise ValueError(f"recon_target: expected 'feature' or 'image', got {recon_target!r}")
        if beta < 0 or gamma < 0:
            raise ValueError(f"beta, gamma: expected >= 0, got {beta}, {gamma}")
        c = self.widths[-1]
        self.latent = int(latent_channels or c)
        self.recon_target, self.beta, self.gamma, self.random_order = recon_target, beta, gamma, random_order
        self.ibfm = IBFM(ndim, c, self.latent, c if recon_target == "feature" else 1)
        self.z_proj = nn.Identity() if self.latent == c else _conv(ndim, self.latent, c, k=1)
        self.extractor = SpecificExtractor(c, transformer_heads)
        self._images: torch.Tensor | None = None
        self._noise: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mask, *, order: torch.Tensor | None = None,
                noise: torch.Tensor | None = None) -> SegOutput:
        """See ``_Backbone.forward``; ``order (B, 4)`` overrides the modality re-ordering, ``noise
        (B, 2, C_z, *s)`` the reparameterisation ε of the two IBFM stages in training (see ``training_draws``)."""
        mask = self.check_input(x, mask)
        x = x * _expand(mask, x)
        self._images, self._noise = x, noise
        try:
            return self.decode(self.encode(x), mask, order)
        finally:
            self._images = self._noise = None

    def training_draws(self, mask: torch.Tensor, spatial: tuple[int, ...], generator: torch.Generator) -> dict:
        """``order (B, 4)`` (random re-ordering, unless ``random_order=False``) and ``noise (B, 2, C_z, *s)``
        for a batch of ``mask (B, 4)`` on ``spatial`` inputs, drawn with ``generator``."""
        factor = 2 ** (len(self.widths) - 1)
        noise = torch.randn(len(mask), 2, self.latent, *(s // factor for s in spatial), generator=generator)
        draws = {"noise": noise}
        if self.random_order:
            draws["order"] = reorder_modalities(mask, generator)
        return draws

    def _ordered(self, x: torch.Tensor, mask: torch.Tensor, order: torch.Tensor | None):
        """Masked features ``(B, 4, C, *s)``, their re-ordering ``xs``, the re-ordered mask ``(B, 4)`` and ``order``."""
        if order is None:
            order = reorder_modalities(mask, random=self.training and self.random_order)
        x = x * _expand(mask, x)
        idx = order.reshape(*order.shape, *([1] * (x.ndim - 2)))
        return x, torch.gather(x, 1, idx.expand(-1, -1, *x.shape[2:])), torch.gather(mask, 1, order), order

    def _fusion_cache(self, x: torch.Tensor):
        return self.extractor.modality_cache(x), self.ibfm.position_terms(x), {}

    def fuse_subset(self, x: torch.Tensor, avail: torch.Tensor, cache, order: torch.Tensor | None) -> torch.Tensor:
        """Eval-mode ``fuse`` of one subset without the loss terms (no reconstruction, no orthogonality): the IBFM
        from its per-position first-convolution terms (``IBFM.eval_z2``), the specific-feature block on the
        available tokens only (``SpecificExtractor.fused_subset``)."""
        mask = avail.expand(len(x), -1)
        order = reorder_modalities(mask, random=False) if order is None else order
        z2 = self.z_proj(self.ibfm.eval_z2(cache[1], order, torch.gather(mask, 1, order), cache[2]))
        return self.extractor.fused_subset(cache[0], z2, avail)

    def fuse(self, x: torch.Tensor, mask: torch.Tensor, order: torch.Tensor | None):
        """``x (B, 4, C, *s)`` -> fused ``(B, C, *s)`` and aux (kl, recon, orth, z1, z2, order)."""
        x, xs, m, order = self._ordered(x, mask, order)
        if self.recon_target == "feature":
            targets = x
        elif self._images is not None:
            pooled = F.adaptive_avg_pool2d if self.ndim == 2 else F.adaptive_avg_pool3d
            targets = pooled(self._images, x.shape[3:]).unsqueeze(2)
        else:  # decode() on cached features: the images are unknown, so no image reconstruction term
            targets = None
        idx = order.reshape(*order.shape, *([1] * (x.ndim - 2)))
        tg = None if targets is None else torch.gather(targets, 1, idx.expand(-1, -1, *targets.shape[2:]))
        ib = self.ibfm(xs, tg, m, self._noise)
        z2 = self.z_proj(ib["z2"])
        specific = self.extractor(x, z2, mask)
        fused = masked_mean(specific + z2.unsqueeze(1), mask)
        recon = None if tg is None else self.beta * ib["recon_1"] + self.gamma * ib["recon_2"]
        aux = {"kl": ib["kl"], "recon": recon,
               "orth": orthogonality_loss(z2, specific, mask), "z1": ib["z1"], "z2": ib["z2"], "order": order}
        return fused, aux


class ParallelFusionNet(_Backbone):
    """Parallel-fusion baseline sharing SMSN's encoders and decoder.

    ``fusion``: ``"mean"`` (HeMIS: concat(mean, var) over available -> 1×1 conv), ``"concat"``
    (conv over the zero-filled concatenation), ``"max"`` (element-wise max over available),
    ``"attention"`` (one inter-modal Transformer block over available tokens, then mean).
    """

    FUSIONS = ("mean", "concat", "max", "attention")

    def __init__(self, fusion: str = "mean", in_modalities: int = 4, n_classes: int = 4, ndim: int = 2,
                 widths: tuple[int, ...] = (16, 32, 64, 128), transformer_heads: int = 4):
        super().__init__(in_modalities, n_classes, ndim, widths)
        if fusion not in self.FUSIONS:
            raise ValueError(f"fusion: expected one of {self.FUSIONS}, got {fusion!r}")
        self.fusion = fusion
        c = self.widths[-1]
        if fusion == "mean":
            self.mix = _conv(ndim, 2 * c, c, k=1)
        elif fusion == "concat":
            self.mix = nn.Sequential(_conv(ndim, in_modalities * c, c), _norm(ndim, c), nn.LeakyReLU(0.01))
        elif fusion == "attention":
            if c % transformer_heads:
                raise ValueError(f"transformer_heads: {transformer_heads} must divide the bottleneck width {c}")
            self.mix = nn.TransformerEncoderLayer(c, transformer_heads, dim_feedforward=2 * c, dropout=0.0,
                                                  activation="gelu", batch_first=True, norm_first=True)

    def fuse(self, x: torch.Tensor, mask: torch.Tensor, order: torch.Tensor | None):
        """``x (B, M, C, *s)`` -> fused ``(B, C, *s)`` and an empty aux dict."""
        m = _expand(mask, x)
        if self.fusion == "mean":
            mean = masked_mean(x, mask)
            var = masked_mean((x - mean.unsqueeze(1)) ** 2, mask)
            return self.mix(torch.cat([mean, var], dim=1)), {}
        if self.fusion == "concat":
            return self.mix((x * m).flatten(1, 2)), {}
        if self.fusion == "max":
            return torch.where(m.bool(), x, torch.finfo(x.dtype).min).amax(dim=1), {}
        b, k, c = x.shape[:3]
        n = x.shape[3:].numel()
        tokens = (x * m).flatten(3).transpose(2, 3).reshape(b, k * n, c)
        out = self.mix(tokens, src_key_padding_mask=(~mask).repeat_interleave(n, dim=1))
        return masked_mean(out.reshape(b, k, n, c).transpose(2, 3).reshape(x.shape), mask), {}


def build_model(name: str, **kwargs) -> _Backbone:
    """``"smsn"`` -> ``SMSN(**kwargs)``; ``"mean"|"concat"|"max"|"attention"`` -> ``ParallelFusionNet``.

    Raises:
        ValueError: unknown name.
    """
    if name == "smsn":
        return SMSN(**kwargs)
    if name in ParallelFusionNet.FUSIONS:
        kwargs = {k: v for k, v in kwargs.items() if k in ("in_modalities", "n_classes", "ndim", "widths",
                                                            "transformer_heads")}
        return ParallelFusionNet(fusion=name, **kwargs)
    raise ValueError(f"model: expected 'smsn' or one of {ParallelFusionNet.FUSIONS}, got {name!r}")
