"""Head compression of multi-head attention and its compressed dynamics (the paper's attention appendix).

A multi-head attention layer is a symmetric function of its heads:

    f(X)_t = sum_h c_h O_h sum_s softmax_s((Q_h x_t) . (K_h x_s) / sqrt(d_head)) V_h x_s,

with head objects ``theta_h = (vec Q_h, vec K_h, vec V_h, vec O_h)`` in R^m, ``m = 3 d_head d_in + d_out d_head``
(m = 8 for the paper's scalar tokens with two-dimensional heads). Compressing the head set by moment
matching gives a weighted layer with far fewer heads; trained with every head gradient divided by ``c_h``
(``attach_compressed_dynamics``) it follows the full layer's trajectory. The task is the appendix's
in-context regression of random piecewise-linear functions (``piecewise_linear_episodes``).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ._checks import check_positive_int
from .compressor import MomentCompressor


class WeightedMultiHeadAttention(nn.Module):
    """Causal multi-head attention ``(B, T, d_in) -> (B, T, d_out)`` with per-head weights ``c`` (a buffer).

    Attributes:
        query, key, value: ``(n_heads, d_head, d_in)``; out: ``(n_heads, d_out, d_head)``; c: ``(n_heads,)``.

    The initialisation is PyTorch's ``nn.Linear`` default for the stacked projections (``d_in -> n_heads *
    d_head`` for Q, K, V and ``n_heads * d_head -> d_out`` for O, no biases), drawn from ``generator`` when given.
    """

    def __init__(self, d_in: int, n_heads: int, d_head: int = 2, d_out: int = 1, weights: torch.Tensor | None = None,
                 generator: torch.Generator | None = None):
        super().__init__()
        for name, value in (("d_in", d_in), ("n_heads", n_heads), ("d_head", d_head), ("d_out", d_out)):
            check_positive_int(value, name)
        in_bound, out_bound = 1.0 / math.sqrt(d_in), 1.0 / math.sqrt(n_heads * d_head)

        def uniform(shape: tuple[int, ...], bound: float) -> nn.Parameter:
            return nn.Parameter((torch.rand(shape, generator=generator) * 2 - 1) * bound)

        self.query = uniform((n_heads, d_head, d_in), in_bound)
        self.key = uniform((n_heads, d_head, d_in), in_bound)
        self.value = uniform((n_heads, d_head, d_in), in_bound)
        self.out = uniform((n_heads, d_out, d_head), out_bound)
        c = torch.ones(n_heads) if weights is None else torch.as_tensor(weights, dtype=torch.get_default_dtype())
        if c.shape != (n_heads,) or not torch.isfinite(c).all() or (c < 0).any():
            raise ValueError(f"weights: expected {n_heads} finite non-negative values, got shape {tuple(c.shape)}")
        self.register_buffer("c", c.clone())

    @property
    def n_heads(self) -> int:
        """Number of heads."""
        return self.query.shape[0]

    def forward(self, x: torch.Tensor, last_only: bool = False) -> torch.Tensor:
        """x: ``(B, T, d_in)`` -> ``(B, T, d_out)``; token t attends to tokens ``s <= t``.

        With ``last_only`` only the last token's output ``(B, 1, d_out)`` is computed (it attends to every token).
        """
        T = x.shape[1]
        q = torch.einsum("btd,hed->bhte", x[:, -1:] if last_only else x, self.query)
        k = torch.einsum("btd,hed->bhte", x, self.key)
        v = torch.einsum("btd,hed->bhte", x, self.value)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.query.shape[1])
        if not last_only:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        context = scores.softmax(-1) @ v  # (B, H, T or 1, d_head)
        return torch.einsum("bhte,hoe,h->bto", context, self.out, self.c)

    def object_parameters(self) -> list[tuple[nn.Parameter, tuple[int, ...]]]:
        """Each per-head parameter with the shape ``c`` takes to scale its gradient (head axis first)."""
        return [(p, (-1, 1, 1)) for p in (self.query, self.key, self.value, self.out)]

    def head_objects(self) -> np.ndarray:
        """Heads as objects ``(vec Q_h, vec K_h, vec V_h, vec O_h)``: float64 ``(n_heads, m)``."""
        with torch.no_grad():
            parts = [p.reshape(self.n_heads, -1) for p in (self.query, self.key, self.value, self.out)]
            return torch.cat(parts, dim=1).double().cpu().numpy()

    def select(self, support, weights) -> WeightedMultiHeadAttention:
        """The weighted layer keeping heads ``support`` ``(n',)`` with weights ``weights`` ``(n',)`` (times ``c``)."""
        idx = torch.as_tensor(np.asarray(support), dtype=torch.long)
        if idx.ndim != 1 or idx.numel() == 0 or idx.min() < 0 or idx.max() >= self.n_heads:
            raise ValueError(f"support: expected a non-empty 1-D array of head indices in [0, {self.n_heads}), "
                             f"got shape {tuple(idx.shape)}")
        w = torch.as_tensor(np.asarray(weights, dtype=np.float64))
        if w.shape != idx.shape:
            raise ValueError(f"weights: expected shape {tuple(idx.shape)} like support, got {tuple(w.shape)}")
        d_out, d_head, d_in = self.out.shape[1], self.query.shape[1], self.query.shape[2]
        new = WeightedMultiHeadAttention(d_in, idx.numel(), d_head, d_out,
                                         weights=w.to(self.c.dtype) * self.c.detach().cpu()[idx])
        new = new.to(device=self.query.device, dtype=self.query.dtype)
        with torch.no_grad():
            for mine, theirs in zip((new.query, new.key, new.value, new.out),
                                    (self.query, self.key, self.value, self.out)):
                mine.copy_(theirs[idx.to(theirs.device)])
        return new


class InContextRegressor(nn.Module):
    """Reads the prediction for the query token: ``(B, T, 1) -> (B, 1)`` = ``attention(X)[:, -1, :]``."""

    def __init__(self, attention: WeightedMultiHeadAttention):
        super().__init__()
        self.attention = attention

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x, last_only=True)[:, -1, :]


def compress_attention(attention: WeightedMultiHeadAttention, k: int = 3, target_heads: int = 800,
                       random_state=None, **compressor_options) -> WeightedMultiHeadAttention:
    """Compresses the heads by matching every moment of degree <= ``k`` of the head objects.

    Args:
        attention: the layer to compress (its own ``c`` are the starting weights).
        k: moment order; ``target_heads`` must be at least ``C(m + k, k)`` (165 for m = 8, k = 3).
        random_state: seed of the k-means phase; compressor_options: further ``MomentCompressor`` parameters.

    Returns:
        A ``WeightedMultiHeadAttention`` with at most ``target_heads`` heads and weights summing to the original mass.
    """
    c = attention.c.detach().double().cpu().numpy()
    mc = MomentCompressor(k=k, target_size=target_heads, random_state=random_state, **compressor_options)
    mc.fit(attention.head_objects(), sample_weight=c)
    return attention.select(mc.support_, mc.weights_ / c[mc.support_])


def random_heads(attention: WeightedMultiHeadAttention, n_heads: int, rng: np.random.Generator,
                 rescale: bool = False) -> WeightedMultiHeadAttention:
    """Baseline: ``n_heads`` uniformly random heads with ``c = 1`` (``rescale``: ``c = H / n_heads``, same mass)."""
    H = attention.n_heads
    n_heads = check_positive_int(n_heads, "n_heads")
    if n_heads > H:
        raise ValueError(f"n_heads: expected at most the layer's {H} heads, got {n_heads}")
    idx = np.sort(rng.choice(H, size=n_heads, replace=False))
    sub = attention.select(idx, np.ones(n_heads))
    sub.c.fill_(H / n_heads if rescale else 1.0)
    return sub


def piecewise_linear_episodes(n: int, n_ctx: int = 8, segments: int = 16, sigma_f0: float = 0.5,
                              sigma_slope: float = 1.0, noise: float = 0.3,
                              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """In-context regression episodes of random continuous piecewise-linear functions on [0, 1].

    Each function starts at ``f(0) ~ N(0, sigma_f0^2)`` and has ``segments`` equal pieces with slopes
    ``N(0, sigma_slope^2)``. An episode is the token sequence ``[x_1, y_1, ..., x_n, y_n, x_*]`` (scalar
    tokens, ``y_i = f(x_i) + N(0, noise^2)``) and the clean target ``f(x_*)``.

    Returns:
        ``X`` of shape ``(n, 2 n_ctx + 1, 1)`` and ``y`` of shape ``(n,)``.
    """
    n, n_ctx, segments = (check_positive_int(v, name) for v, name in
                          ((n, "n"), (n_ctx, "n_ctx"), (segments, "segments")))
    f0 = sigma_f0 * torch.randn(n, 1, generator=generator)
    slopes = sigma_slope * torch.randn(n, segments, generator=generator)
    knots = f0 + torch.cat([torch.zeros(n, 1), torch.cumsum(slopes / segments, dim=1)[:, :-1]], dim=1)

    def f(x: torch.Tensor) -> torch.Tensor:
        piece = (x * segments).long().clamp(max=segments - 1)
        return knots.gather(1, piece) + slopes.gather(1, piece) * (x - piece / segments)

    x_ctx = torch.rand(n, n_ctx, generator=generator)
    y_ctx = f(x_ctx) + noise * torch.randn(n, n_ctx, generator=generator)
    x_query = torch.rand(n, 1, generator=generator)
    tokens = torch.stack([x_ctx, y_ctx], dim=2).reshape(n, 2 * n_ctx)
    return torch.cat([tokens, x_query], dim=1)[:, :, None], f(x_query)[:, 0]
