"""Nonconformity scores: the four base scores and their energy-weighted versions.

Conventions (TorchCP's): ``p = softmax(z / T_cal)``; ``pi_1 >= ... >= pi_K`` the sorted
probabilities (stable sort: ties keep the lower class index first); ``o(y)`` the 1-based rank
of label ``y``; ``u ~ U(0, 1)`` per (sample, label) when randomised, ``u = 0`` otherwise.

- LAC:  ``1 - p_y``
- APS:  ``sum_{j <= o(y)} pi_j - u pi_{o(y)}``
- RAPS: ``APS + penalty * max(0, o(y) - kreg)``
- SAPS: ``(1 - u) pi_1`` if ``o(y) = 1`` else ``pi_1 + weight * (o(y) - 1 - u)``

Energy versions (the paper's contribution) with ``w = softplus_beta(logsumexp(z / T_E))``:
``APS * w``, ``RAPS * w``, ``SAPS * w`` and ``-p_y / w`` for LAC. The same weight sign is used
for one label per sample (calibration) and for all labels (prediction); the official code's
EnergyLAC flips it on the all-label path, which this package does not.

Every function returns the (n,) scores of the given labels when ``labels`` is passed, else the
(n, K) matrix of all labels; ``score(p, labels) == score(p)[arange(n), labels]`` exactly when the
same ``u`` is used (pass ``u`` of shape (n, K) for the matrix and its gathered column for labels).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import NumpyOps
from ._checks import (
    as_generator,
    check_choice,
    check_labels,
    check_matrix,
    check_nonnegative,
    check_nonnegative_int,
    check_positive,
)
from .energy import energy_weight, entropy_weight

BASE_SCORES = ("lac", "aps", "raps", "saps")
WEIGHTS = ("energy", "entropy", "none")
_SMALLEST_ENTROPY = 1e-12


def _check_probs(probs: Any) -> tuple[Any, NumpyOps]:
    p, ops = check_matrix(probs, "probs")
    a = ops.to_numpy(p)
    if a.min() < 0.0 or a.max() > 1.0 or not np.allclose(a.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("probs: expected rows of probabilities (values in [0, 1] summing to 1); "
                         "for logits use energy_score(..., weight='none') or softmax them first")
    return p, ops


def _uniform(ops: NumpyOps, shape: tuple[int, ...], randomized: bool, rng: Any, u: Any):
    """The randomisation ``u`` of ``shape``: given, drawn from ``rng``, or zeros when not randomised."""
    if u is not None:
        arr = ops.float64(u)
        if tuple(arr.shape) != shape:
            raise ValueError(f"u: expected shape {shape}, got {tuple(arr.shape)}")
        a = ops.to_numpy(arr)
        if not (np.isfinite(a).all() and a.min() >= 0.0 and a.max() <= 1.0):
            raise ValueError("u: expected values in [0, 1]")
        return arr
    if not randomized:
        return ops.from_numpy(np.zeros(shape))
    return ops.from_numpy(as_generator(rng).random(shape))


def _at(matrix, ops: NumpyOps, labels):
    """``matrix`` itself (all labels) or its entries at ``labels`` (one per row)."""
    return matrix if labels is None else ops.take_labels(matrix, labels)


def _chunk_rows(n: int, K: int) -> int:
    """Rows per block of the all-label numpy path: at most about 2**17 entries (1 MiB of float64) and 1/16 of
    the rows per temporary, so that a block's few temporaries stay a small fraction of one (n, K) array."""
    return max(1, min(2**17 // K, -(-n // 16)))


def _label_rank(p, ops: NumpyOps, labels):
    """0-based rank of each row's label in the stable descending order: the number of classes with a
    larger probability, plus those with an equal one and a lower index. (n,) without sorting."""
    p_y = ops.take_labels(p, labels)[:, None]
    lower = ops.from_numpy(np.arange(p.shape[1]))[None, :] < labels[:, None]
    return (p > p_y).sum(1) + ((p == p_y) & lower).sum(1)


def _base(name: str, p, ops: NumpyOps, labels, randomized: bool, rng: Any, u: Any,
          penalty: float, kreg: int, weight: float):
    """One base score on checked probabilities ``p`` (n, K); (n,) with labels, else (n, K).

    Both paths read the same cumulative sums of the sorted probabilities, so the one-label
    scores equal the gathered all-label scores exactly. The one-label path only sorts values
    (no argsort); the all-label path computes the scores in sorted order and scatters them back.
    """
    if name == "lac":
        return 1.0 - _at(p, ops, labels)
    n, K = p.shape
    rows = _chunk_rows(n, K)
    if labels is None and u is None and ops.name == "numpy" and n > rows:
        # row blocks: the same numbers (u is drawn in the same order), one (n, K) output and small temporaries
        out, gen = np.empty_like(p), as_generator(rng) if randomized else None
        for a in range(0, n, rows):
            b = min(a + rows, n)
            out[a:b] = _sorted_score(name, p[a:b], ops, None, randomized, gen, None, penalty, kreg, weight)
        return out
    return _sorted_score(name, p, ops, labels, randomized, rng, u, penalty, kreg, weight)


def _sorted_score(name: str, p, ops: NumpyOps, labels, randomized: bool, rng: Any, u: Any,
                  penalty: float, kreg: int, weight: float):
    """APS/RAPS/SAPS of ``_base`` on one block of rows, computed in sorted order."""
    n, K = p.shape
    uu = _uniform(ops, (n,) if labels is not None else (n, K), randomized, rng, u)
    if labels is not None:
        sorted_p = ops.sort_values_desc(p)
        rank_int = _label_rank(p, ops, labels)
        rank = ops.float64(rank_int)
        p_at, u_at = ops.take_labels(p, labels), uu
        top = sorted_p[:, 0]
    else:
        sorted_p, order = ops.sort_desc(p)
        rank = ops.from_numpy(np.arange(K, dtype=np.float64))[None, :]
        # drawn u is i.i.d., so it is drawn in sorted order directly; a given u is in class order
        p_at, u_at = sorted_p, (uu if u is None else ops.take(uu, order))
        top = sorted_p[:, :1]
    if name == "saps":
        score = ops.where(rank == 0, (1.0 - u_at) * top, top + weight * (rank - u_at))
    else:
        cum = ops.cumsum(sorted_p)
        score = ops.take_labels(cum, rank_int) if labels is not None else cum
        score -= u_at * p_at  # in place on a fresh array: fewer (n, K) temporaries
        if name == "raps":
            score += penalty * ops.clamp_min(rank + (1.0 - kreg), 0.0)
    return score if labels is not None else ops.scatter(score, order)


def user_score(score: Any, p, ops, labels, rng: np.random.Generator):
    """A user score on numpy probabilities (n, K); checked to (n,) with labels, else (n, K), on ``p``'s backend."""
    p_np = ops.to_numpy(p)
    y_np = None if labels is None else ops.to_numpy(labels)
    out = np.asarray(score(p_np, y_np, rng=rng), dtype=np.float64)
    want = p_np.shape if labels is None else p_np.shape[:1]
    if out.shape != want or not np.isfinite(out).all():
        raise ValueError(f"score: expected the user score to return finite values of shape {want}, "
                         f"got shape {out.shape}")
    return ops.from_numpy(out)


def _prepare(probs: Any, labels: Any):
    p, ops = _check_probs(probs)
    y = None if labels is None else check_labels(labels, p.shape[0], p.shape[1], ops)
    return p, ops, y


def lac(probs: Any, labels: Any = None):
    """LAC/THR score ``1 - p_y`` (Sadinle et al., 2019).

    Args:
        probs: (n, K) probabilities (numpy or torch).
        labels: (n,) integer labels, or None for all labels.

    Returns:
        (n,) with labels, else (n, K); float64 on the input's backend and device.

    Raises:
        ValueError: ``probs`` not (n, K) probability rows, or bad ``labels``.
    """
    p, ops, y = _prepare(probs, labels)
    return _base("lac", p, ops, y, False, None, None, 0.0, 0, 0.0)


def aps(probs: Any, labels: Any = None, randomized: bool = True, rng: Any = None, u: Any = None):
    """APS score ``sum_{j <= o(y)} pi_j - u pi_{o(y)}`` (Romano et al., 2020).

    Args:
        probs: (n, K) probabilities.
        labels: (n,) integer labels, or None for the (n, K) matrix.
        randomized: draw ``u ~ U(0, 1)``; with False, ``u = 0``. Randomised is the default
            because the non-randomised APS gives much larger sets.
        rng: None, an int seed or a ``numpy.random.Generator`` for ``u``.
        u: explicit randomisation, (n,) with labels or (n, K) without; overrides ``rng``.

    Returns:
        (n,) with labels, else (n, K).

    Raises:
        ValueError: bad ``probs``, ``labels`` or ``u``.
    """
    p, ops, y = _prepare(probs, labels)
    return _base("aps", p, ops, y, randomized, rng, u, 0.0, 0, 0.0)


def raps(probs: Any, labels: Any = None, penalty: float = 0.2, kreg: int = 2, randomized: bool = True,
         rng: Any = None, u: Any = None):
    """RAPS score ``APS + penalty * max(0, o(y) - kreg)`` (Angelopoulos et al., 2021).

    Args:
        probs, labels, randomized, rng, u: as in ``aps``.
        penalty: ``lambda >= 0``.
        kreg: non-negative integer rank from which the penalty starts.

    Raises:
        ValueError: as in ``aps``; ``penalty < 0``; ``kreg`` negative or not an integer.
    """
    penalty = check_nonnegative(penalty, "penalty")
    kreg = check_nonnegative_int(kreg, "kreg")
    p, ops, y = _prepare(probs, labels)
    return _base("raps", p, ops, y, randomized, rng, u, penalty, kreg, 0.0)


def saps(probs: Any, labels: Any = None, weight: float = 0.2, randomized: bool = True, rng: Any = None,
         u: Any = None):
    """SAPS score (Huang et al., 2024): ``(1 - u) pi_1`` for the top label, else ``pi_1 + weight (o(y) - 1 - u)``.

    Args:
        probs, labels, randomized, rng, u: as in ``aps``.
        weight: ``lambda_s > 0``.

    Raises:
        ValueError: as in ``aps``; ``weight <= 0``.
    """
    weight = check_positive(weight, "weight")
    p, ops, y = _prepare(probs, labels)
    return _base("saps", p, ops, y, randomized, rng, u, 0.0, 0, weight)


def apply_weight(base: str, base_scores, w, weight: str = "energy", inplace: bool = False):
    """Combines base scores (n,) or (n, K) with a per-sample weight ``w`` (n,).

    ``weight="energy"``: APS/RAPS/SAPS times ``w``, LAC becomes ``-p_y / w`` (with ``p_y = 1 - score``).
    ``weight="entropy"``: APS/RAPS/SAPS divided by ``H``, LAC becomes ``-p_y * H``.
    ``weight="none"``: the base scores unchanged. ``inplace``: overwrite ``base_scores`` (same values).
    """
    if weight == "none":
        return base_scores
    wb = w if base_scores.ndim == 1 else w[:, None]
    s = base_scores if inplace else base_scores * 1.0
    if base == "lac":
        s -= 1.0
    if (weight == "energy") == (base == "lac"):
        s /= wb
    else:
        s *= wb
    return s


def sample_weight(logits: Any, weight: str = "energy", T_energy: float = 1.0, beta: float = 1.0,
                  T_cal: float = 1.0):
    """The per-sample weight of ``weight`` ("energy": ``energy_weight``; "entropy": ``H`` floored at 1e-12;
    "none": None) for (n, K) logits -> (n,)."""
    check_choice(weight, "weight", WEIGHTS)
    if weight == "energy":
        return energy_weight(logits, T_energy, beta)
    if weight == "entropy":
        _, ops = check_matrix(logits)
        return ops.clamp_min(entropy_weight(logits, T_cal), _SMALLEST_ENTROPY)
    return None


def energy_score(base: str, logits: Any, labels: Any = None, T_energy: float = 1.0, beta: float = 1.0,
                 T_cal: float = 1.0, weight: str = "energy", **base_kwargs):
    """A base score on ``softmax(logits / T_cal)``, reweighted per sample.

    Args:
        base: "lac", "aps", "raps" or "saps".
        logits: (n, K) raw logits (the energy uses them without ``T_cal``).
        labels: (n,) integer labels, or None for the (n, K) matrix.
        T_energy, beta: the energy weight's temperature and softplus sharpness (> 0).
        T_cal: softmax temperature (> 0).
        weight: "energy" (the method), "entropy" (ablation) or "none" (the base score).
        **base_kwargs: ``randomized``, ``rng``, ``u`` and the base's own parameters
            (``penalty``, ``kreg`` for RAPS; ``weight`` is spelled ``saps_weight`` here).

    Returns:
        (n,) with labels, else (n, K), on the backend and device of ``logits``.

    Raises:
        ValueError: unknown ``base``/``weight``, bad arrays or non-positive temperatures.
        TypeError: an unknown keyword in ``base_kwargs``.
    """
    check_choice(base, "base", BASE_SCORES)
    z, ops = check_matrix(logits)
    T_cal = check_positive(T_cal, "T_cal")
    w = sample_weight(z, weight, T_energy, beta, T_cal)
    probs = ops.softmax(z / T_cal)
    kwargs = dict(base_kwargs)
    if "saps_weight" in kwargs:
        kwargs["weight"] = kwargs.pop("saps_weight")
    if base == "lac":  # LAC has no randomisation
        for key in ("randomized", "rng", "u"):
            kwargs.pop(key, None)
    fn = {"lac": lac, "aps": aps, "raps": raps, "saps": saps}[base]
    return apply_weight(base, fn(probs, labels, **kwargs), w, weight)
