"""The free energy of the logits and the weights built from it.

- Helmholtz free energy (Liu et al., 2020): ``E(x; T) = -T logsumexp_k(z_k / T)``.
- Negative energy over T: ``g(x) = logsumexp_k(z_k / T_E) = -E(x; T_E) / T_E``, from the raw logits.
- Energy weight: ``w(x) = softplus_beta(g) = log(1 + exp(beta g)) / beta`` (> 0, increasing in g):
  a confident, in-distribution input (low energy) gets a large weight.
- Entropy weight (the paper code's ablation): ``H(softmax(z / T_cal))``.
"""
from __future__ import annotations

from typing import Any

from ._checks import check_matrix, check_positive


def free_energy(logits: Any, T: float = 1.0):
    """Helmholtz free energy ``-T logsumexp(z / T)`` of each row.

    Args:
        logits: (n, K) raw logits (numpy or torch).
        T: temperature > 0.

    Returns:
        (n,) float64, on the backend and device of ``logits``.

    Raises:
        ValueError: bad ``logits`` or ``T <= 0``.
    """
    z, ops = check_matrix(logits)
    T = check_positive(T, "T")
    return -T * ops.logsumexp(z / T)


def negative_energy(logits: Any, T_energy: float = 1.0):
    """``g(x) = logsumexp(z / T_energy) = -E(x; T_energy) / T_energy``: (n, K) -> (n,)."""
    z, ops = check_matrix(logits)
    T_energy = check_positive(T_energy, "T_energy")
    return ops.logsumexp(z / T_energy)


def energy_weight(logits: Any, T_energy: float = 1.0, beta: float = 1.0):
    """The method's weight ``w = softplus_beta(logsumexp(z / T_energy))``.

    Computed stably (``logaddexp``; ``w = g`` where ``beta g > 20``), so logits of
    magnitude 1e4 do not overflow.

    Args:
        logits: (n, K) raw (pre-softmax) logits.
        T_energy: energy temperature > 0.
        beta: softplus sharpness > 0. ``beta -> 0`` makes ``w`` nearly constant
            (``log 2 / beta + g / 2``); ``beta -> inf`` gives ``max(g, 0)``.

    Returns:
        (n,) float64, strictly positive, on the backend and device of ``logits``.

    Raises:
        ValueError: bad ``logits``, ``T_energy <= 0`` or ``beta <= 0``.
    """
    z, ops = check_matrix(logits)
    T_energy = check_positive(T_energy, "T_energy")
    beta = check_positive(beta, "beta")
    return ops.softplus(ops.logsumexp(z / T_energy if T_energy != 1.0 else z), beta)


def entropy_weight(logits: Any, T_cal: float = 1.0):
    """Predictive entropy ``H(softmax(z / T_cal))`` in nats: (n, K) -> (n,). Used by the ablation."""
    z, ops = check_matrix(logits)
    T_cal = check_positive(T_cal, "T_cal")
    p = ops.softmax(z / T_cal)
    return -(p * ops.log(ops.clamp_min(p, 1e-300))).sum(1)
