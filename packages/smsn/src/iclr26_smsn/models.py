"""SMSN (sequential information-bottleneck fusion) and the parallel-fusion baselines.

Both share ``_Backbone``: one convolutional encoder per modality (no weight sharing), a
U-Net decoder, skip features fused by the available-modality mean. They differ only in how
the deepest features ``x_i (B, C, h, w[, d])`` are fused into one bottleneck map.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

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
        """The skip half of each block's first convolution, per modality (no bias).

        ``feats`` per level ``(B, M, w_l, *S_l)`` -> per block (deepest first) ``(B, M, w_l, *S_l)``. The
        convolution is linear, so the available-modality mean of these equals the skip half applied to the
        mean skip: computed once for all 15 subsets (``forward_terms``).
        """
        conv_fn = F.conv2d if self.ndim == 2 else F.conv3d
        terms = []
        for block, f in zip(self.blocks, reversed(feats[:-1])):
            conv = block[0]
            out = conv_fn(f.flatten(0, 1), conv.weight[:, -f.shape[2]:], None, padding=conv.padding)
            terms.append(out.reshape(*f.shape[:2], *out.shape[1:]))
        return terms

    def forward_terms(self, bottleneck: torch.Tensor, terms: list[torch.Tensor]) -> torch.Tensor:
        """``forward`` with the skips given as their fused first-convolution terms ``(B, w_l, *S_l)`` (overwritten);
        each term's size must be twice the coarser level's (``check_input`` ensures it)."""
        x = bottleneck
        for block, term in zip(self.blocks, terms):
            conv = block[0]
            x = block[1:](_upsampled_conv(x, conv.weight[:, : x.shape[1]], conv.bias, term))
        return self.head(x)


# Per axis, the two taps of a 3-tap kernel seen by output phase 0 (even) / 1 (odd) after 2× nearest up-sampling:
# phase 0 reads the coarse voxels (i-1, i) with weights (w0, w1 + w2); phase 1 reads (i, i+1) with (w0 + w1, w2).
_PHASE_TAPS = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]], [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])


def _upsampled_conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, add: torch.Tensor) -> torch.Tensor:
    """``conv(nearest_upsample_2x(x), weight, bias, padding=1) + add`` without up-sampling: ``x (B, C, *s)``,
    ``weight (O, C, 3, ...)``, ``bias (O,)``, ``add (B, O, *2s)`` (overwritten: the result) -> ``(B, O, *2s)``. Each
    output phase (even/odd index per axis) is a 2-tap convolution of the coarse ``x`` with summed weights:
    2^ndim·2^ndim instead of 3^ndim·2^ndim multiply-adds per coarse voxel (equal up to float rounding)."""
    ndim = x.ndim - 2
    taps = _PHASE_TAPS.to(weight)
    phases = list(itertools.product((0, 1), repeat=ndim))
    kernels = []
    for phase in phases:
        k = weight
        for axis, a in enumerate(phase):  # contract the 3 taps of this axis to its 2 phase taps
            k = torch.movedim(torch.movedim(k, 2 + axis, -1) @ taps[a].T, -1, 2 + axis)
        kernels.append(k)
    conv_fn = F.conv2d if ndim == 2 else F.conv3d
    out = conv_fn(x, torch.cat(kernels), None, padding=1)  # (B, P·O, *(s + 1)); phase a starts at index a
    o, size = weight.shape[0], x.shape[2:]
    y = add.add_(bias.reshape(-1, *([1] * ndim)))
    for p, phase in enumerate(phases):
        y[(slice(None), slice(None), *(slice(a, None, 2) for a in phase))] += \
            out[(slice(None), slice(p * o, (p + 1) * o), *(slice(a, a + n) for a, n in zip(phase, size)))]
    return y


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

    def prepare_subsets(self, feats: list[torch.Tensor]) -> dict:
        """What every subset's evaluation shares, from ``encode`` of the full input (see ``decode_subset``)."""
        return {"feats": feats, "terms": self.decoder.skip_terms(feats), "fusion": self._fusion_cache(feats[-1])}

    def _fusion_cache(self, x: torch.Tensor):
        return None

    def fuse_subset(self, x: torch.Tensor, avail: torch.Tensor, cache, order: torch.Tensor | None) -> torch.Tensor:
        """Fused bottleneck ``(B, C, *s)`` for one subset ``avail (M,)`` from the full features ``x (B, M, C, *s)``."""
        return self.fuse(x, avail.expand(len(x), -1), order)[0]

    def decode_subset(self, prepared: dict, avail: torch.Tensor, order: torch.Tensor | None = None) -> torch.Tensor:
        """Eval-mode logits ``(B, n_classes, *S)`` for the subset ``avail (M,)`` bool (same for the whole batch).

        Equals ``forward(x, mask)`` (up to float rounding) with ``prepared = prepare_subsets(encode(x))``:
        a modality's encoding does not depend on the others, and masked modalities never reach the output.
        """
        idx = avail.nonzero().flatten().tolist()
        terms = []
        for t in prepared["terms"]:  # the mean over the available modalities, into a new tensor
            mean = t[:, idx[0]].clone()
            for i in idx[1:]:
                mean += t[:, i]
            terms.append(mean.div_(len(idx)))
        return self.decoder.forward_terms(self.fuse_subset(prepared["feats"][-1], avail, prepared["fusion"], order),
                                          terms)

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
        modality's features ``x (B, M, C, *s)`` at each of the four positions -> ``(B, 4, M, C_z, *s)``, computed
        once for all subsets and orders (``eval_z2``)."""
        c, latent = x.shape[2], self.latent
        w1, w2 = self.f1[0].weight, self.f2[0].weight
        weight = torch.cat([w1[:, :c], w1[:, c:], w2[:, latent:latent + c], w2[:, latent + c:]])
        conv_fn = F.conv2d if x.ndim == 5 else F.conv3d
        out = conv_fn(x.flatten(0, 1), weight, None, padding=self.f1[0].padding)
        return out.reshape(*x.shape[:2], 4, latent, *x.shape[3:]).transpose(1, 2)

    def eval_z2(self, terms: torch.Tensor, order: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """Eval-mode ``forward(...)["z2"]`` (z = μ) from ``terms = position_terms(x)`` of the unordered features,
        ``order (B, 4)`` and the re-ordered mask ``m (B, 4)``; equal up to float rounding. Returns ``(B, C_z, *s)``."""
        b = terms.shape[0]
        idx = order.reshape(b, 4, 1, *([1] * (terms.ndim - 3))).expand(-1, -1, 1, *terms.shape[3:])
        at = torch.gather(terms, 2, idx).squeeze(2)  # (B, 4, C_z, *s): position p holds modality order[:, p]
        at = at * _expand(m, at)  # a missing modality contributes 0
        conv1, conv2 = self.f1[0], self.f2[0]
        mu1 = self.f1[1:](at[:, 0] + at[:, 1] + conv1.bias.reshape(-1, *([1] * (at.ndim - 3)))).chunk(2, dim=1)[0]
        conv_fn = F.conv2d if mu1.ndim == 4 else F.conv3d
        pre2 = conv_fn(mu1, conv2.weight[:, : self.latent], conv2.bias, padding=conv2.padding) + at[:, 2] + at[:, 3]
        return self.f2[1:](pre2).chunk(2, dim=1)[0]


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

    def modality_cache(self, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens ``(B, M, n, C)`` and their pre-LN query/key/value projections ``(B, M, n, 3C)`` of the full
        features ``xs (B, M, C, *s)``: they do not depend on the subset (``forward_subset``)."""
        tokens = xs.flatten(3).transpose(2, 3)
        attn = self.block.self_attn
        return tokens, F.linear(self.block.norm1(tokens), attn.in_proj_weight, attn.in_proj_bias)

    def forward_subset(self, cache: tuple[torch.Tensor, torch.Tensor], z2: torch.Tensor,
                       avail: torch.Tensor) -> torch.Tensor:
        """``forward`` restricted to the outputs that are used: tokens of the available modalities ``avail (M,)``
        as queries, those and the tokens of ``z2 (B, C, *s)`` as keys. Returns ``(B, k, C, *s)`` for the k
        available modalities. Equal (up to rounding) to ``forward`` in eval mode, where masked keys get weight 0."""
        tokens, qkv = cache
        layer, attn = self.block, self.block.self_attn
        b, _, n, c = tokens.shape
        idx = avail.nonzero().flatten()
        k, h = len(idx), attn.num_heads
        t = tokens[:, idx].reshape(b, k * n, c)
        q, kx, vx = qkv[:, idx].reshape(b, k * n, 3 * c).chunk(3, dim=-1)
        zt = z2.flatten(2).transpose(1, 2)
        kz, vz = F.linear(layer.norm1(zt), attn.in_proj_weight[c:], attn.in_proj_bias[c:]).chunk(2, dim=-1)

        def heads(a: torch.Tensor) -> torch.Tensor:
            return a.reshape(b, -1, h, c // h).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(q), heads(torch.cat([kx, kz], 1)), heads(torch.cat([vx, vz], 1)))
        y = t + attn.out_proj(out.transpose(1, 2).reshape(b, k * n, c))
        y = y + layer.linear2(layer.activation(layer.linear1(layer.norm2(y))))
        return y.reshape(b, k, n, c).transpose(2, 3).reshape(b, k, c, *z2.shape[2:])


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
        return self.extractor.modality_cache(x), self.ibfm.position_terms(x)

    def fuse_subset(self, x: torch.Tensor, avail: torch.Tensor, cache, order: torch.Tensor | None) -> torch.Tensor:
        """Eval-mode ``fuse`` of one subset without the loss terms (no reconstruction, no orthogonality): the IBFM
        from its per-position first-convolution terms (``IBFM.eval_z2``), the specific-feature block on the
        available tokens only (``SpecificExtractor.forward_subset``)."""
        mask = avail.expand(len(x), -1)
        order = reorder_modalities(mask, random=False) if order is None else order
        z2 = self.z_proj(self.ibfm.eval_z2(cache[1], order, torch.gather(mask, 1, order)))
        return (self.extractor.forward_subset(cache[0], z2, avail) + z2.unsqueeze(1)).mean(1)

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
