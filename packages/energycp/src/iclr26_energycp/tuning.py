"""Choosing ``(T_energy, beta)`` honestly: on a tuning split disjoint from calibration and test.

The objective is the mean set size (or SSCV) over ``n_repeats`` random half/half cal/eval splits
of the tuning data. Every grid point sees the same splits and the same ``u`` draws (common random
numbers from one ``default_rng(random_state)``: per repeat, the permutation, then ``u`` for the
calibration half, then ``u`` for the evaluation half), so differences between grid points are not
sampling noise. Ties go to the first grid point in (T_energy, beta) row-major order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import metrics
from ._backend import ops_for
from ._checks import (
    check_alpha,
    check_choice,
    check_labels,
    check_matrix,
    check_nonnegative,
    check_nonnegative_int,
    check_positive,
)
from .predictor import conformal_quantile
from .scores import BASE_SCORES, _base, apply_weight, sample_weight

OBJECTIVES = ("size", "sscv", "size+sscv")
T_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
BETA_GRID = (0.01, 0.1, 1.0, 10.0)


@dataclass
class TuneResult:
    """The selected ``T_energy`` and ``beta``, and one row per grid point
    (``T_energy, beta, size, sscv, objective``) in row-major grid order."""

    T_energy: float
    beta: float
    table: list[dict[str, float]] = field(default_factory=list)


def _grid(values: Any, name: str) -> tuple[float, ...]:
    vals = tuple(values) if not np.isscalar(values) else (values,)
    if not vals:
        raise ValueError(f"{name}: expected a non-empty sequence of numbers > 0, got {values!r}")
    return tuple(check_positive(v, name) for v in vals)


def tune_energy(tune_logits: Any, tune_labels: Any, score: str = "aps", alpha: float = 0.1,
                T_grid=T_GRID, beta_grid=BETA_GRID, objective: str = "size", n_repeats: int = 20,
                random_state: int = 0, T_cal: float = 1.0, penalty: float = 0.2, kreg: int = 2,
                saps_weight: float = 0.2, randomized: bool = True) -> TuneResult:
    """Grid search of the energy weight's ``(T_energy, beta)`` on a tuning split.

    Args:
        tune_logits: (n, K) logits of the tuning split (never the calibration or test data); n >= 4.
        tune_labels: (n,) integer labels.
        score: base score, "lac", "aps", "raps" or "saps".
        alpha: miscoverage level in (0, 1).
        T_grid, beta_grid: candidate values (> 0).
        objective: "size" (mean set size), "sscv", or "size+sscv" (their sum).
        n_repeats: random half/half splits per grid point (100 in the reproduction; 5 is too few).
        random_state: seed of the common random numbers.
        T_cal, penalty, kreg, saps_weight, randomized: the score's own settings.

    Returns:
        ``TuneResult``. Tensors are accepted and tuned with numpy (the search is CPU-cheap).

    Raises:
        ValueError: bad arrays, grids or settings.
    """
    check_choice(score, "score", BASE_SCORES)
    check_choice(objective, "objective", OBJECTIVES)
    alpha = check_alpha(alpha)
    n_repeats = check_nonnegative_int(n_repeats, "n_repeats")
    if n_repeats < 1:
        raise ValueError(f"n_repeats: expected an integer >= 1, got {n_repeats}")
    Ts, betas = _grid(T_grid, "T_grid"), _grid(beta_grid, "beta_grid")
    T_cal = check_positive(T_cal, "T_cal")
    penalty, kreg = check_nonnegative(penalty, "penalty"), check_nonnegative_int(kreg, "kreg")
    saps_weight = check_positive(saps_weight, "saps_weight")
    z = np.asarray(ops_for(tune_logits).to_numpy(check_matrix(tune_logits, "tune_logits")[0]))
    n, K = z.shape
    if n < 4:
        raise ValueError(f"tune_logits: expected at least 4 rows to split in halves, got {n}")
    ops = ops_for(z)
    y = check_labels(ops_for(tune_labels).to_numpy(tune_labels), n, K, ops, "tune_labels")
    p = ops.softmax(z / T_cal)

    rng = np.random.default_rng(random_state)
    splits = []
    for _ in range(n_repeats):
        perm = rng.permutation(n)
        cal, ev = perm[: n // 2], perm[n // 2:]
        # u is drawn for every score (LAC ignores it) so that all scores see the same splits
        u_cal = rng.random(cal.size) if randomized else None
        u_ev = rng.random((ev.size, K)) if randomized else None
        params = (penalty, kreg, saps_weight)
        base_cal = _base(score, p[cal], ops, y[cal], randomized, None, u_cal, *params)
        base_ev = _base(score, p[ev], ops, None, randomized, None, u_ev, *params)
        splits.append((cal, ev, base_cal, base_ev))

    table = []
    for T in Ts:
        for beta in betas:
            w = sample_weight(z, "energy", T, beta)
            sizes, violations = [], []
            for cal, ev, base_cal, base_ev in splits:
                q = conformal_quantile(apply_weight(score, base_cal, w[cal]), alpha)
                sets = apply_weight(score, base_ev, w[ev]) <= q
                sizes.append(sets.sum(1).mean())
                violations.append(metrics.sscv(sets, y[ev], alpha))
            size, viol = float(np.mean(sizes)), float(np.mean(violations))
            value = {"size": size, "sscv": viol, "size+sscv": size + viol}[objective]
            table.append({"T_energy": T, "beta": beta, "size": size, "sscv": viol, "objective": value})
    best = table[int(np.argmin([row["objective"] for row in table]))]
    return TuneResult(best["T_energy"], best["beta"], table)
