"""Activation patterns of a trained network: which neurons fire on which training points, and shattering."""
from __future__ import annotations

import numpy as np
import torch

from ._checks import matrix
from .model import TwoLayerReLU


def activation_report(model: TwoLayerReLU, X, max_points: int = 2, top_fraction: float = 0.1) -> dict:
    """Per-neuron activation counts on ``X`` ``(n, d)`` and the "shattering" neurons.

    A neuron is shattering when it is active on 1 to ``max_points`` training points and its output weight
    ``|v_k|·‖w_k‖`` is in the top ``top_fraction`` (top decile by default): a large, isolated bump that memorises.

    Returns:
        dict with ``counts`` (K,), ``n_neurons``, ``n_dead`` (active on no point), ``n_shattering``,
        ``n_patterns`` (distinct activation patterns over the points), ``sole_activator_fraction`` (fraction of
        points that are the only point activating some neuron), ``magnitude_threshold``.
    """
    if not isinstance(model, TwoLayerReLU):
        raise TypeError(f"model: expected a TwoLayerReLU, got {type(model).__name__}")
    X = matrix("X", X, model.d)
    if not 0 < top_fraction <= 1:
        raise ValueError(f"top_fraction: expected a fraction in (0, 1], got {top_fraction}")
    with torch.no_grad():
        Xt = torch.as_tensor(X, dtype=model.W.dtype, device=model.W.device)
        active = (model.preactivations(Xt) > 0).cpu().numpy()  # (n, K)
        magnitude = (model.v.abs() * model.W.norm(dim=1)).cpu().double().numpy()
    counts = active.sum(axis=0)
    threshold = float(np.quantile(magnitude, 1.0 - top_fraction))
    shattering = (counts >= 1) & (counts <= max_points) & (magnitude >= threshold)
    sole = np.unique(np.argmax(active[:, counts == 1], axis=0))
    return {
        "counts": counts.tolist(),
        "n_neurons": int(active.shape[1]),
        "n_dead": int(np.sum(counts == 0)),
        "n_shattering": int(shattering.sum()),
        "n_patterns": int(np.unique(active, axis=0).shape[0]),
        "sole_activator_fraction": float(sole.size / X.shape[0]),
        "magnitude_threshold": threshold,
    }
