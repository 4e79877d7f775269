"""Choosing ``(T_energy, beta)`` honestly: on a tuning split disjoint from calibration and test.

The objective is the mean set size (or SSCV) over ``n_repeats`` random half/half cal/eval splits
of the tuning data. Every grid point sees the same splits and the same ``u`` draws (common random
numbers from one ``default_rng(random_state)``: per repeat, the permutation, then ``u`` for the
calibration half, then ``u`` for the evaluation half), so differences between grid points are not
sampling noise.

Selection (``select``): "one-se" (default) takes, among the grid points whose objective is within one
standard error (over the repeats) of the best, the one with the largest spread of the weight
(coefficient of variation ``sd(w) / mean(w)`` on the tuning logits); "min" takes the best objective.
A flat objective otherwise picks near-constant weights (the energy score then equals its base score,
so sets on unfamiliar inputs do not grow); the one-SE rule prefers the weight that does the most
reweighting at a set size that is statistically as good. Ties go to the first grid point in
(T_energy, beta) row-major order.

Every repeat also scores the constant weight (the base score itself, the ``beta -> 0`` end of the
family), so each grid point carries its paired gain in mean set size over the base score and the
gain's spread over the repeats. ``TuneResult.shows_gain()`` asks whether the chosen point beats the
base score by more than ``z`` times that spread. The spread is the standard deviation over the repeats,
not their standard error: the repeats re-split the same rows, and the spread of a statistic over random
halves of a sample is about its sampling spread at the full sample size, which is what decides whether
the gain carries over to new rows (the standard error would shrink with the number of repeats).
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
from .scores import BASE_SCORES, _base, apply_weight, sample_weight, user_score

OBJECTIVES = ("size", "sscv", "size+sscv")
SELECTIONS = ("one-se", "min")
T_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
BETA_GRID = (0.01, 0.1, 1.0, 10.0)


@dataclass
class TuneResult:
    """The selected ``T_energy`` and ``beta``, and one row per grid point (``T_energy, beta, size, sscv,
    objective, objective_se, spread, gain, gain_sd``) in row-major grid order. ``gain`` is the base score's
    mean set size minus the grid point's (positive: smaller sets), ``gain_sd`` its spread over the repeats;
    ``base_size`` is the base score's (constant weight) mean set size on the same repeats."""

    T_energy: float
    beta: float
    table: list[dict[str, float]] = field(default_factory=list)
    base_size: float = float("nan")

    def shows_gain(self, z: float = 1.645) -> bool:
        """Whether the selected point's sets are smaller than the base score's by more than ``z`` times
        the gain's spread over the repeats (1.645: one-sided 95% under a normal approximation)."""
        row = next(r for r in self.table if (r["T_energy"], r["beta"]) == (self.T_energy, self.beta))
        return row["gain"] > max(z * row["gain_sd"], 0.0)


def _grid(values: Any, name: str) -> tuple[float, ...]:
    vals = tuple(values) if not np.isscalar(values) else (values,)
    if not vals:
        raise ValueError(f"{name}: expected a non-empty sequence of numbers > 0, got {values!r}")
    return tuple(check_positive(v, name) for v in vals)


def tune_energy(tune_logits: Any, tune_labels: Any, score: Any = "aps", alpha: float = 0.1,
                T_grid=T_GRID, beta_grid=BETA_GRID, objective: str = "size", n_repeats: int = 20,
                random_state: int = 0, T_cal: float = 1.0, penalty: float = 0.2, kreg: int = 2,
                saps_weight: float = 0.2, randomized: bool = True, select: str = "one-se") -> TuneResult:
    """Grid search of the energy weight's ``(T_energy, beta)`` on a tuning split.

    Args:
        tune_logits: (n, K) logits of the tuning split (never the calibration or test data); n >= 4.
        tune_labels: (n,) integer labels.
        score: base score, "lac", "aps", "raps" or "saps", or a user score object (see
            ``EnergyConformalClassifier``), weighted multiplicatively.
        alpha: miscoverage level in (0, 1).
        T_grid, beta_grid: candidate values (> 0).
        objective: "size" (mean set size), "sscv", or "size+sscv" (their sum).
        n_repeats: random half/half splits per grid point (100 in the reproduction; 5 is too few).
        random_state: seed of the common random numbers.
        T_cal, penalty, kreg, saps_weight, randomized: the score's own settings.
        select: "one-se" (the largest weight spread within one SE of the best objective) or "min".

    Returns:
        ``TuneResult``. Tensors are accepted and tuned with numpy (the search is CPU-cheap).

    Raises:
        ValueError: bad arrays, grids or settings.
    """
    name = check_choice(score, "score", BASE_SCORES) if isinstance(score, str) else None
    if name is None and not callable(score):
        raise ValueError(f"score: expected one of {BASE_SCORES} or a callable score object, got {score!r}")
    check_choice(select, "select", SELECTIONS)
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

    grid = [(T, beta, sample_weight(z, "energy", T, beta)) for T in Ts for beta in betas]  # (n,) weights
    sizes, violations = np.empty((len(grid), n_repeats)), np.empty((len(grid), n_repeats))  # (grid, repeats)
    base_sizes = np.empty(n_repeats)
    params, kind = (penalty, kreg, saps_weight), name or "custom"
    rng = np.random.default_rng(random_state)
    for r in range(n_repeats):  # one repeat's (n / 2, K) score matrices alive at a time
        perm = rng.permutation(n)
        cal, ev = perm[: n // 2], perm[n // 2:]
        # u is drawn for every score (LAC ignores it) so that all scores see the same splits
        u_cal = rng.random(cal.size) if randomized else None
        u_ev = rng.random((ev.size, K)) if randomized else None
        if name is None:
            base_cal, base_ev = user_score(score, p[cal], ops, y[cal], rng), user_score(score, p[ev], ops, None, rng)
        else:
            base_cal = _base(name, p[cal], ops, y[cal], randomized, None, u_cal, *params)
            base_ev = _base(name, p[ev], ops, None, randomized, None, u_ev, *params)
        base_sizes[r] = (base_ev <= conformal_quantile(base_cal, alpha)).sum(1).mean()  # the constant weight
        for j, (_, _, w) in enumerate(grid):
            q = conformal_quantile(apply_weight(kind, base_cal, w[cal]), alpha)
            sets = apply_weight(kind, base_ev, w[ev]) <= q
            sizes[j, r] = sets.sum(1).mean()
            violations[j, r] = metrics.sscv(sets, y[ev], alpha)

    table = []
    for j, (T, beta, w) in enumerate(grid):
        per_repeat = {"size": sizes[j], "sscv": violations[j]}
        per_repeat["size+sscv"] = per_repeat["size"] + per_repeat["sscv"]
        value = per_repeat[objective]
        se = float(value.std(ddof=1) / np.sqrt(value.size)) if value.size > 1 else 0.0
        gain = base_sizes - per_repeat["size"]
        table.append({"T_energy": T, "beta": beta, "size": float(per_repeat["size"].mean()),
                      "sscv": float(per_repeat["sscv"].mean()), "objective": float(value.mean()),
                      "objective_se": se, "spread": float(w.std() / w.mean()), "gain": float(gain.mean()),
                      "gain_sd": float(gain.std(ddof=1)) if gain.size > 1 else 0.0})
    return TuneResult(*_select(table, select), table, float(base_sizes.mean()))


def _select(table: list[dict[str, float]], select: str) -> tuple[float, float]:
    """``(T_energy, beta)`` of the chosen row: the minimum objective ("min"), or the largest weight spread
    among the rows within one standard error of the minimum ("one-se"); first row on ties."""
    obj = np.array([row["objective"] for row in table])
    best = int(np.argmin(obj))
    if select == "one-se":
        near = np.flatnonzero(obj <= obj[best] + table[best]["objective_se"])
        best = int(near[np.argmax([table[i]["spread"] for i in near])])
    return table[best]["T_energy"], table[best]["beta"]
