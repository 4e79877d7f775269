"""The two-layer ReLU network of the paper: ``f_θ(x) = Σ_k v_k relu(w_kᵀx − b_k) + β``."""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import positive_int, real

INITS = ("torch_default", "small")


class TwoLayerReLU(nn.Module):
    """``f_θ(x) = Σ_{k=1}^K v_k relu(w_kᵀx − b_k) + β`` with ``θ = (W (K, d), b (K,), v (K,), β ())``.

    Args:
        d: input dimension.
        width: K, the number of hidden neurons (K >= n is allowed: over-parameterised).
        init: ``"torch_default"``: every parameter ~ U(±1/sqrt(fan_in)) as ``nn.Linear`` does
            (fan_in = d for (W, b), K for (v, β)); ``"small"``: the same hidden layer, output layer (v, β) scaled by
            1e-2 (a near-zero initial function).
        init_scale: multiplies every initial parameter.
        generator: a ``torch.Generator`` for a reproducible initialisation (CPU); the default uses torch's global state.

    Raises:
        ValueError: ``d < 1``, ``width < 1``, unknown ``init``, ``init_scale <= 0``.
    """

    def __init__(self, d: int, width: int, init: str = "torch_default", init_scale: float = 1.0,
                 generator: torch.Generator | None = None):
        super().__init__()
        self.d, self.width = positive_int("d", d), positive_int("width", width)
        if init not in INITS:
            raise ValueError(f"init: expected one of {INITS}, got {init!r}")
        init_scale = real("init_scale", init_scale, positive=True)
        bound_in, bound_out = init_scale / math.sqrt(self.d), init_scale / math.sqrt(self.width)
        if init == "small":
            bound_out *= 1e-2

        def uniform(shape, bound):
            return nn.Parameter((2.0 * torch.rand(shape, generator=generator) - 1.0) * bound)

        self.W = uniform((self.width, self.d), bound_in)
        self.b = uniform((self.width,), bound_in)
        self.v = uniform((self.width,), bound_out)
        self.beta = uniform((), bound_out)

    def preactivations(self, X: torch.Tensor) -> torch.Tensor:
        """``X W ᵀ − b``: ``(n, K)``."""
        return X @ self.W.T - self.b

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """``(n, d) -> (n,)``."""
        return torch.relu(self.preactivations(X)) @ self.v + self.beta


def mse_loss(model: nn.Module, X: torch.Tensor, y: torch.Tensor, loss_scale: float = 0.5) -> torch.Tensor:
    """The training loss ``L(θ) = loss_scale · mean((f_θ(x_i) − y_i)²)`` (the paper's ½ by default, inferred)."""
    return loss_scale * torch.mean((model(X).reshape(-1) - y) ** 2)
