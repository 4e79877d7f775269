"""How a trained network memorises: the tangent kernel's leave-one-out self-influence of each training label.

Linearised around the trained parameters θ, GD on ``L = s·mean((f − y)²)`` moves the fitted values by
``f ← f − (2sη/n)·Θ (f − y)`` with the tangent kernel ``Θ = J Jᵀ`` (J = ∂f(X)/∂θ, ``(n, P)``). Run as a gradient
flow for ``T`` steps from the fit ``f = 0`` this is a linear smoother ``f = S y`` with
``S = I − exp(−(2sη/n)·T·Θ)``; its diagonal ``S_ii = ∂f(x_i)/∂y_i`` is the self-influence of label i: how much
of its own (noisy) label point i's fitted value copies, in [0, 1]. ``1 − S_ii`` is the factor relating the
training residual to the leave-one-out residual of a linear smoother. Neurons that isolate a point make ``Θ``
close to diagonal there and ``S_ii`` close to 1; neurons shared by many points make ``Θ`` smooth and low-rank,
and ``S_ii`` small. The mean of ``S_ii`` is the smoother's effective degrees of freedom over n.
"""
from __future__ import annotations

import numpy as np
import torch

from ._checks import matrix, positive_int, real
from .model import TwoLayerReLU


def tangent_kernel(model: TwoLayerReLU, X) -> np.ndarray:
    """The empirical tangent kernel ``Θ_ij = ∇_θ f(x_i) · ∇_θ f(x_j)`` of ``f = Σ_k v_k relu(w_kᵀx − b_k) + β``.

    Closed form: ``Θ_ij = Σ_k φ_ik φ_jk + (x_iᵀx_j + 1)·Σ_k v_k² a_ik a_jk + 1`` with ``φ_ik = relu(w_kᵀx_i − b_k)``
    and ``a_ik = 1[w_kᵀx_i > b_k]`` (the autograd convention relu'(0) = 0).

    Args:
        X: ``(n, d)`` inputs (numpy or torch).

    Returns:
        ``(n, n)`` float64 symmetric positive semi-definite matrix.
    """
    if not isinstance(model, TwoLayerReLU):
        raise TypeError(f"model: expected a TwoLayerReLU, got {type(model).__name__}")
    X = matrix("X", X, model.d)
    with torch.no_grad():
        W, b, v = (t.detach().cpu().double().numpy() for t in (model.W, model.b, model.v))
    pre = X @ W.T - b  # (n, K)
    phi, active = np.maximum(pre, 0.0), (pre > 0).astype(np.float64)
    weighted = active * np.abs(v)  # (n, K): a_ik |v_k|
    return phi @ phi.T + (X @ X.T + 1.0) * (weighted @ weighted.T) + 1.0


def kernel_self_influence(model: TwoLayerReLU, X, eta: float, steps: int, loss_scale: float = 0.5) -> np.ndarray:
    """``S_ii``, the diagonal of ``S = I − exp(−(2·loss_scale·η/n)·steps·Θ)`` (see the module docstring).

    Args:
        X: ``(n, d)`` training inputs; eta: the GD step η > 0; steps: T >= 1, the number of GD steps trained.

    Returns:
        ``(n,)`` self-influences in [0, 1].
    """
    eta = real("eta", eta, positive=True)
    steps = positive_int("steps", steps)
    loss_scale = real("loss_scale", loss_scale, positive=True)
    theta = tangent_kernel(model, X)
    mu, U = np.linalg.eigh(theta)
    rate = 2.0 * loss_scale * eta * steps / theta.shape[0]
    filtered = -np.expm1(-rate * np.clip(mu, 0.0, None))  # 1 − exp(−rate·μ), exact for small μ
    return np.clip((U**2) @ filtered, 0.0, 1.0)
