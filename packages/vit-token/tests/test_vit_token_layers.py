import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_vit_token import TokenSpecLayerNorm, TokenSpecLinear
from torch import nn


@settings(max_examples=10, deadline=None)
@given(n_prefix=st.integers(1, 3), n_patch=st.integers(0, 5), batch=st.integers(1, 3), seed=st.integers(0, 1000))
def test_linear_equals_two_linears_on_slices(n_prefix, n_patch, batch, seed):
    torch.manual_seed(seed)
    layer = TokenSpecLinear(6, 5, n_prefix=n_prefix).double()
    a, b = nn.Linear(6, 5).double(), nn.Linear(6, 5).double()
    a.load_state_dict(layer.prefix.state_dict())
    b.load_state_dict(layer.patch.state_dict())
    x = torch.randn(batch, n_prefix + n_patch, 6, dtype=torch.float64)
    expected = torch.cat([a(x[:, :n_prefix]), b(x[:, n_prefix:])], dim=1)
    assert torch.allclose(layer(x), expected, atol=1e-7, rtol=0)


def test_gradients_reach_only_the_copy_that_saw_the_token():
    torch.manual_seed(0)
    layer = TokenSpecLinear(4, 3, n_prefix=1)
    x = torch.randn(2, 5, 4)
    layer(x)[:, :1].sum().backward()  # only the [CLS] output carries gradient
    assert layer.patch.weight.grad.abs().max() == 0 and layer.patch.bias.grad.abs().max() == 0
    assert layer.prefix.weight.grad.abs().max() > 0
    layer.zero_grad()
    layer(x)[:, 1:].sum().backward()
    assert layer.prefix.weight.grad.abs().max() == 0 and layer.prefix.bias.grad.abs().max() == 0
    assert layer.patch.weight.grad.abs().max() > 0


def test_layernorm_prefix_copy_is_standardised_and_copies_are_independent():
    norm = TokenSpecLayerNorm(8, n_prefix=2)
    with torch.no_grad():
        norm.patch.weight.fill_(3.0)
        norm.patch.bias.fill_(-1.0)
    x = torch.randn(4, 7, 8) * 5 + 2
    y = norm(x)
    prefix = y[:, :2]
    assert torch.allclose(prefix.mean(-1), torch.zeros(4, 2), atol=1e-5)
    assert torch.allclose(prefix.var(-1, unbiased=False), torch.ones(4, 2), atol=1e-4)
    ref = nn.functional.layer_norm(x[:, 2:], (8,), eps=1e-6) * 3.0 - 1.0
    assert torch.allclose(y[:, 2:], ref, atol=1e-5)


@pytest.mark.parametrize("n_prefix", [0, -1, 1.5, True])
def test_bad_n_prefix_is_refused(n_prefix):
    with pytest.raises(ValueError, match="n_prefix"):
        TokenSpecLinear(4, 4, n_prefix=n_prefix)
    with pytest.raises(ValueError, match="n_prefix"):
        TokenSpecLayerNorm(4, n_prefix=n_prefix)


def test_wrong_width_is_refused():
    with pytest.raises(ValueError, match="x: expected"):
        TokenSpecLinear(4, 4)(torch.zeros(1, 3, 5))
