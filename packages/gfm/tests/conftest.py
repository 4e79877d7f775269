"""Shared test fixtures of iclr26-gfm."""
import pytest
import torch


class ZeroField(torch.nn.Module):
    """``v = 0``: the flow is the identity, so a model's density is its source pushed through its decoder."""

    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(()))

    def forward(self, z, t):
        return 0 * z + 0 * self.unused


@pytest.fixture
def zero_field() -> type[ZeroField]:
    """The ``ZeroField`` class: call it for a fresh velocity net."""
    return ZeroField
