"""Gradient Temporal Collinearity (GTC, paper Eq. 3) and the Hessian bound it controls (paper Eq. 5).

C(G[i], G[j]) = ⟨G[i], G[j]⟩_F / (‖G[i]‖_F ‖G[j]‖_F) for the per-time-step gradient components G[t]
of the loss. Two readings of G[t] are offered (the paper leaves it open):

- ``wrt="input"``: G[t] = ∂L/∂X[t], the gradient w.r.t. the step-t input copy (whole batch, flattened);
- ``wrt="first_layer"``: G[t] = the contribution of step t to ∂L/∂W₁ of the first layer.
"""
from __future__ import annotations

import warnings
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .encoding import check_image


def collinearity_matrix(G: Tensor) -> Tensor:
    """The T×T matrix C(G[i], G[j]) for ``G [T, ...]``; rows/columns of a zero G[t] are NaN (with a warning)."""
    if G.dim() < 1 or G.shape[0] < 2:
        raise ValueError(f"G: GTC needs T >= 2 per-step gradients [T, ...], got shape {tuple(G.shape)}")
    flat = G.reshape(G.shape[0], -1).double()
    norms = flat.norm(dim=1)
    if (norms == 0).any():
        zero = torch.nonzero(norms == 0).flatten().tolist()
        warnings.warn(f"GTC: the gradient is exactly zero at time steps {zero}; their collinearity is NaN",
                      stacklevel=2)
    unit = flat / norms.unsqueeze(1)  # zero norm -> NaN, on purpose
    return unit @ unit.T


def reduce_collinearity(C: Tensor, reduce: str = "mean") -> float | Tensor:
    """``"mean"`` over pairs i < j, ``"max"`` over i ≠ j, or ``"matrix"`` (C itself)."""
    if reduce == "matrix":
        return C
    T = C.shape[0]
    iu = torch.triu_indices(T, T, offset=1)
    pairs = C[iu[0], iu[1]]
    if reduce == "mean":
        return float(pairs.mean())
    if reduce == "max":
        return float(pairs.max()) if not pairs.isnan().any() else float("nan")
    raise ValueError(f"reduce: expected 'mean', 'max' or 'matrix', got {reduce!r}")


def per_step_gradients(model: nn.Module, x: Tensor, y: Tensor, wrt: str = "input") -> Tensor:
    """G[t] for one batch with one forward and one backward pass.

    Args:
        model: an ``EncodedSNN``; evaluated in its current mode (call ``model.eval()`` first to measure
            the deployed path).
        x: images ``[B, C, H, W]`` in [0, 1]; y: labels ``[B]``.
        wrt: ``"input"`` -> ``[T, B, C, H, W]``; ``"first_layer"`` -> ``[T, *W₁.shape]``.

    Raises:
        ValueError: unknown ``wrt``, a backbone without ``first_layer``, or T < 2.
    """
    check_image(x)
    if wrt not in ("input", "first_layer"):
        raise ValueError(f"wrt: expected 'input' or 'first_layer', got {wrt!r}")
    with torch.no_grad():
        x_seq = model.encode(x).detach()
    if x_seq.shape[0] < 2:
        raise ValueError(f"model: GTC needs T >= 2 time steps, got T={x_seq.shape[0]}")
    x_seq = x_seq.clone().requires_grad_(wrt == "input")
    if wrt == "input":
        loss = F.cross_entropy(model.forward_sequence(x_seq), y)
        (G,) = torch.autograd.grad(loss, x_seq)
        return G
    layer = getattr(model.backbone, "first_layer", None)
    if not isinstance(layer, (nn.Conv2d, nn.Linear)):
        raise ValueError("model: wrt='first_layer' needs backbone.first_layer to be an nn.Conv2d or nn.Linear")
    captured: dict[str, Tensor] = {}

    def hook(module, inputs, output):
        captured["input"], captured["output"] = inputs[0].detach(), output

    handle = layer.register_forward_hook(hook)
    try:
        loss = F.cross_entropy(model.forward_sequence(x_seq), y)
    finally:
        handle.remove()
    (grad_out,) = torch.autograd.grad(loss, captured["output"])
    T = x_seq.shape[0]
    inp = captured["input"].reshape(T, -1, *captured["input"].shape[1:])
    gout = grad_out.reshape(T, -1, *grad_out.shape[1:])
    if isinstance(layer, nn.Linear):
        return torch.einsum("tbo,tbi->toi", gout.flatten(2), inp.flatten(2))
    return torch.stack([torch.nn.grad.conv2d_weight(inp[t], layer.weight.shape, gout[t], stride=layer.stride,
                                                    padding=layer.padding, dilation=layer.dilation,
                                                    groups=layer.groups) for t in range(T)])


def gradient_temporal_collinearity(model: nn.Module, x: Tensor, y: Tensor, *,
                                   wrt: Literal["input", "first_layer"] = "input",
                                   reduce: Literal["mean", "max", "matrix"] = "mean") -> float | Tensor:
    """GTC of ``model`` on the batch ``(x, y)``: mean over pairs i < j, max over i ≠ j, or the T×T matrix.

    A time step whose gradient is exactly zero makes its entries NaN (with a warning), never 0 or 1.

    Raises:
        ValueError: see ``per_step_gradients``; unknown ``reduce``.
    """
    if reduce not in ("mean", "max", "matrix"):
        raise ValueError(f"reduce: expected 'mean', 'max' or 'matrix', got {reduce!r}")
    return reduce_collinearity(collinearity_matrix(per_step_gradients(model, x, y, wrt)), reduce)


def gtc_hessian_bound(G: Tensor) -> float:
    """T · max_t ‖G[t]‖²_F · [1 + (T − 1) · max_{i≠j} C(G[i], G[j])] (paper Eq. 5's right-hand side).

    Since ‖Σ_t G[t]‖² = Σ_{i,j} ⟨G[i], G[j]⟩ ≤ T·max‖G‖²·[1 + (T−1)·max C], this bounds the spectral radius
    gᵀg of the outer-product (Gauss-Newton/empirical-Fisher) curvature Ĥ = g gᵀ, g = Σ_t G[t], with
    constant c = 1. For a model whose logits z depend on θ linearly through the step sum, z = θ Σ_t x_t,
    with G[t] = ∇_z ℓ x_tᵀ, the exact Hessian (∇²_z ℓ) ⊗ (s sᵀ), s = Σ_t x_t, obeys
    λ_max ≤ c · bound with c = λ_max(∇²_z ℓ) / ‖∇_z ℓ‖² (the output loss's curvature-to-gradient ratio).

    Args:
        G: ``[T, ...]`` per-step gradients, T >= 2.
    """
    C = collinearity_matrix(G)
    T = G.shape[0]
    off = C[~torch.eye(T, dtype=torch.bool)]
    sq = G.reshape(T, -1).double().pow(2).sum(1)
    return float(T * sq.max() * (1 + (T - 1) * off.max()))
