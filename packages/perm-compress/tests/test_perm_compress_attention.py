"""Head compression of multi-head attention: the layer against a per-head loop, exact moments, the 1/c rule."""
import math

import numpy as np
import pytest
import torch
from iclr26_perm_compress import attach_compressed_dynamics
from iclr26_perm_compress.attention import (
    InContextRegressor,
    WeightedMultiHeadAttention,
    compress_attention,
    piecewise_linear_episodes,
    random_heads,
)
from iclr26_perm_compress.moments import moments


def _layer(heads=40, d_in=2, d_head=2, d_out=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return WeightedMultiHeadAttention(d_in, heads, d_head, d_out, generator=gen).double()


def test_layer_equals_a_per_head_causal_loop():
    att = _layer()
    att.c.copy_(torch.rand(att.n_heads, dtype=torch.float64))
    x = torch.randn(3, 5, 2, dtype=torch.float64)
    out = att(x)
    ref = torch.zeros(3, 5, 3, dtype=torch.float64)
    for h in range(att.n_heads):
        q, k, v = x @ att.query[h].T, x @ att.key[h].T, x @ att.value[h].T
        for t in range(5):
            w = torch.softmax(q[:, t:t + 1] @ k[:, :t + 1].transpose(1, 2) / math.sqrt(2), dim=-1)  # (B, 1, t+1)
            ref[:, t] += att.c[h] * (w @ v[:, :t + 1])[:, 0] @ att.out[h].T
    assert torch.allclose(out, ref, atol=1e-12)
    assert torch.allclose(att(x, last_only=True)[:, 0], out[:, -1], atol=1e-12)


def test_compression_keeps_the_head_moments_and_the_output():
    att = WeightedMultiHeadAttention(1, 600, generator=torch.Generator().manual_seed(1)).double()
    small = compress_attention(att, k=2, target_heads=60, random_state=0)
    assert small.n_heads <= 60 and small.c.sum().item() == pytest.approx(600, rel=1e-7)
    full_m = moments(att.head_objects(), np.ones(600), 2)
    assert np.abs(moments(small.head_objects(), small.c.numpy(), 2) - full_m).max() <= 1e-8 * np.abs(full_m).max()
    X, _ = piecewise_linear_episodes(256, generator=torch.Generator().manual_seed(2))
    X = X.double()
    with torch.no_grad():
        ref = att(X, last_only=True)
        err = lambda layer: float(((layer(X, last_only=True) - ref) ** 2).mean().sqrt())  # noqa: E731
        rng = np.random.default_rng(0)
        random = np.mean([err(random_heads(att, small.n_heads, rng, rescale=True)) for _ in range(5)])
    assert err(small) < 0.5 * random


def test_head_gradients_are_divided_by_their_weight():
    att = _layer(heads=6)
    att.c.copy_(torch.tensor([0.5, 1.0, 2.0, 4.0, 1.5, 3.0], dtype=torch.float64))
    x = torch.randn(2, 4, 2, dtype=torch.float64)
    grads = []
    for hooked in (False, True):
        handles = attach_compressed_dynamics(att) if hooked else []
        att.zero_grad()
        att(x).square().sum().backward()
        grads.append([p.grad.clone() for p in (att.query, att.key, att.value, att.out)])
        for h in handles:
            h.remove()
    for plain, scaled in zip(*grads):
        assert torch.allclose(scaled, plain / att.c.view(-1, 1, 1))


def test_random_heads_have_the_requested_mass_and_refuse_too_many():
    att = _layer(heads=10)
    rng = np.random.default_rng(0)
    assert random_heads(att, 4, rng).c.sum().item() == 4
    assert random_heads(att, 4, rng, rescale=True).c.sum().item() == pytest.approx(10)
    with pytest.raises(ValueError, match="n_heads"):
        random_heads(att, 11, rng)


def test_episodes_with_one_piece_lie_on_one_line():
    X, y = piecewise_linear_episodes(200, n_ctx=4, segments=1, noise=0.0, generator=torch.Generator().manual_seed(0))
    assert X.shape == (200, 9, 1) and y.shape == (200,)
    x, v = X[:, :-1:2, 0].double(), X[:, 1::2, 0].double()
    slope = (v[:, 1] - v[:, 0]) / (x[:, 1] - x[:, 0])
    line = lambda t: v[:, 0] + slope * (t - x[:, 0])  # noqa: E731
    assert torch.allclose(line(x[:, 2]), v[:, 2], atol=1e-4) and torch.allclose(line(x[:, 3]), v[:, 3], atol=1e-4)
    assert torch.allclose(line(X[:, -1, 0].double()), y.double(), atol=1e-4)


def test_episodes_are_continuous_at_the_knots():
    X, _ = piecewise_linear_episodes(50, n_ctx=400, segments=2, noise=0.0, generator=torch.Generator().manual_seed(9))
    x, v = X[:, :-1:2, 0].double(), X[:, 1::2, 0].double()
    order = x.argsort(dim=1)
    xs, vs = x.gather(1, order), v.gather(1, order)
    quotients = (vs[:, 1:] - vs[:, :-1]).abs() / (xs[:, 1:] - xs[:, :-1]).clamp_min(1e-9)
    # slopes are N(0, 1): a jump at the knot 1/2 would give a difference quotient of order 1 / spacing (~400)
    assert quotients.max() < 6


def test_in_context_regressor_reads_the_query_token():
    att = _layer(d_in=1, d_out=1)
    X, _ = piecewise_linear_episodes(8, generator=torch.Generator().manual_seed(0))
    X = X.double()
    assert torch.allclose(InContextRegressor(att)(X), att(X)[:, -1, :])
