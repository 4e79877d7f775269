"""Riemannian SGD on the orthogonal group for the PFD kernels (tangent projection + QR retraction).

For O with OᵀO = I and Euclidean gradient E: R = E − O·sym(OᵀE), sym(A) = (A + Aᵀ)/2 (the
projection onto the tangent space {O Ω : Ω skew}), and O ← qf(O − η R), the Q factor of a QR
decomposition with column signs chosen so that diag(R-factor) > 0.
"""
from __future__ import annotations

import torch
from torch import Tensor


def _check_square(p: Tensor, name: str = "params") -> None:
    if p.dim() < 2 or p.shape[-1] != p.shape[-2]:
        raise ValueError(f"{name}: expected square matrices [..., d, d], got shape {tuple(p.shape)}")


def riemannian_gradient(O: Tensor, E: Tensor) -> Tensor:
    """Projection of the Euclidean gradient ``E [..., d, d]`` onto the tangent space at orthogonal ``O``."""
    OtE = O.transpose(-1, -2) @ E
    return E - O @ ((OtE + OtE.transpose(-1, -2)) / 2)


def qr_retraction(A: Tensor) -> Tensor:
    """qf(A): the orthogonal Q factor of ``A [..., d, d]`` with diag(R) > 0 (computed in float64)."""
    q, r = torch.linalg.qr(A.double())
    signs = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
    signs = torch.where(signs == 0, torch.ones_like(signs), signs)
    return (q * signs.unsqueeze(-2)).to(A.dtype)


def orthogonality_error(O: Tensor) -> float:
    """max over the batch of ‖OᵀO − I‖_max for ``O [..., d, d]``."""
    _check_square(O, "O")
    eye = torch.eye(O.shape[-1], dtype=torch.float64, device=O.device)
    gram = O.double().transpose(-1, -2) @ O.double()
    return float((gram - eye).abs().max())


class RiemannianSGD(torch.optim.Optimizer):
    """SGD on the orthogonal group for square parameters ``[..., d, d]`` (each matrix kept orthogonal).

    With momentum μ the buffer m ← μ·proj(m) + R lives in the tangent space (re-projected at the
    new point, i.e. vector transport by projection).

    Args:
        params: parameters holding orthogonal matrices.
        lr: η > 0.
        momentum: μ in [0, 1).

    Raises:
        ValueError: non-square parameters, ``lr <= 0`` or ``momentum`` outside [0, 1).
    """

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.0):
        if not lr > 0:
            raise ValueError(f"lr: expected a learning rate > 0, got {lr}")
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum: expected 0 <= momentum < 1, got {momentum}")
        super().__init__(params, {"lr": lr, "momentum": momentum})
        for group in self.param_groups:
            for p in group["params"]:
                _check_square(p)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                direction = riemannian_gradient(p, p.grad)
                if group["momentum"] > 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    buf = direction if buf is None else group["momentum"] * riemannian_gradient(p, buf) + direction
                    state["momentum_buffer"] = buf
                    direction = buf
                p.copy_(qr_retraction(p - group["lr"] * direction))
        return loss
