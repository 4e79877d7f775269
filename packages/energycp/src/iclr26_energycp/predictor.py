"""Split-conformal prediction sets from logits: ``EnergyConformalClassifier``.

Calibration: ``q_hat`` is the ``ceil((n + 1)(1 - alpha))``-th smallest calibration score
(``+inf``, with a warning, when that index exceeds ``n``). Prediction: ``C(x) = {y : S(x, y, u) <= q_hat}``
with fresh ``u``. The energy weight depends on ``x`` only, so the guarantee
``P(Y in C(X)) >= 1 - alpha`` holds under exchangeability exactly as for the base score.
"""
from __future__ import annotations

import math
import numbers
import warnings
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
    not_fitted_error,
    warn_if_probabilities,
)
from ._estimator import ParamsMixin
from .scores import BASE_SCORES, _base, _check_probs, apply_weight, sample_weight, user_score

INPUTS = ("logits", "probs")
AUTO = "auto"
# "auto" tunes only when each half of the tuning split, and the calibration part, expect at least this many rows
# beyond the conformal quantile (rows * alpha / 2); otherwise the base score on every row, with a warning
MIN_TUNE_TAIL = 10
GAIN_Z = 1.645  # "auto" keeps the tuned weight only when its gain over the base score exceeds GAIN_Z spreads


def quantile_index(n: int, alpha: float) -> int:
    """The 1-based rank ``ceil((n + 1)(1 - alpha))`` of the conformal quantile among ``n`` scores.

    A tolerance of 1e-9 absorbs floating-point error, so that n = 9, alpha = 0.1 gives 9, not 10.
    """
    return math.ceil((n + 1) * (1.0 - alpha) - 1e-9)


def conformal_quantile(scores: Any, alpha: float) -> float:
    """The split-conformal threshold: the ``ceil((n + 1)(1 - alpha))``-th smallest of ``scores`` (n,).

    Returns ``inf`` with a ``UserWarning`` when that rank exceeds ``n`` (too few calibration points
    for this ``alpha``): every set is then the full label set. The quantile is never clipped.

    Raises:
        ValueError: ``scores`` empty, not 1-D or not finite; ``alpha`` outside (0, 1).
    """
    alpha = check_alpha(alpha)
    s = np.asarray(ops_for(scores).to_numpy(scores), dtype=np.float64)
    if s.ndim != 1 or s.size == 0 or not np.isfinite(s).all():
        raise ValueError(f"scores: expected a non-empty finite 1-D array, got shape {s.shape}")
    k = quantile_index(s.size, alpha)
    if k > s.size:
        warnings.warn(f"conformal quantile: ceil((n+1)(1-alpha)) = {k} > n = {s.size} calibration scores "
                      f"at alpha = {alpha}; q_hat = inf, so every prediction set holds every label",
                      UserWarning, stacklevel=2)
        return math.inf
    return float(np.partition(s, k - 1)[k - 1])


class EnergyConformalClassifier(ParamsMixin):
    """Split-conformal classifier on logits with energy-reweighted LAC/APS/RAPS/SAPS scores.

    Follows scikit-learn's estimator contract without importing it: ``get_params(deep)``,
    ``set_params``, a repr of the non-default parameters, ``sklearn.base.clone``, and
    ``sklearn.exceptions.NotFittedError`` before ``fit``. ``fit(X, y)`` takes the calibration logits
    as ``X``.

    Safe defaults: ``T_energy="auto"`` and ``beta="auto"`` tune the energy weight in ``fit`` on a random
    ``tune_frac`` of the calibration rows (``tune_energy``: mean set size over 20 half/half splits, the
    smallest one) and calibrate ``q_hat_`` on the other rows, so tuning never sees the rows that set the
    threshold and the guarantee is unchanged. The tuned weight is kept only when its paired gain over the
    base score on the tuning rows exceeds 1.645 times the gain's spread over the repeats
    (``TuneResult.shows_gain``); otherwise the weight is the constant one (``weight_ = "none"``: the base
    score, the ``beta -> 0`` member of the family), since a gain the tuning rows cannot show with
    confidence did not carry over to new rows. Untuned weights (e.g. ``T_energy = beta = 1``) can make
    sets larger than the base score's. Pass numbers to skip tuning.

    Args:
        score: base score, "lac", "aps", "raps" or "saps", or a user score object: a callable
            ``score(probs, labels=None, rng=None)`` mapping (n, K) numpy probabilities to the (n,)
            nonconformity of ``labels`` (an (n,) int array), or to the (n, K) matrix of every label
            when ``labels`` is None (larger = less conforming; ``rng`` is the estimator's
            ``numpy.random.Generator``, for randomised scores). The energy weight multiplies it, as
            for APS, so a user score should be non-negative. Example (LAC's ``1 - p_y`` with the
            multiplicative weight): ``score=lambda p, labels=None, rng=None: 1 - (p if labels is None
            else p[np.arange(len(p)), labels])``.
        energy: True for the energy weight (the method), False for the base score, or
            "entropy" for the entropy-weight ablation of the official code.
        alpha: miscoverage level in (0, 1).
        T_energy: energy temperature > 0, or "auto" (tuned in ``fit``). beta: softplus sharpness > 0, or "auto".
        T_cal: softmax temperature > 0 (applied inside the softmax only; the energy uses raw logits).
        penalty, kreg: RAPS's lambda >= 0 and non-negative integer k_reg.
        saps_weight: SAPS's lambda_s > 0.
        randomized: draw ``u ~ U(0, 1)`` per (sample, label); False sets ``u = 0``.
        allow_empty: if False, an empty set receives the top-1 label (coverage can only go up).
        class_conditional: one threshold per class (Mondrian calibration) instead of one overall.
        input: "logits" (default) or "probs"; probabilities allow the base scores only.
        tune_frac: fraction of the calibration rows held out to tune an "auto" ``T_energy``/``beta``
            (in (0, 1); unused otherwise). Fewer than 50 rows on either side: no tuning, the base score
            calibrated on every row, with a warning.
        random_state: seed of the generator that draws the tuning split (when tuning), then ``u``,
            first for ``fit`` then for each ``predict_set``/``score_samples`` call in order.

    Attributes (after ``fit``):
        q_hat_: float threshold, or (K,) array of per-class thresholds when class-conditional.
        T_energy_, beta_: the weight's parameters (tuned, or the given numbers; unused when
            ``weight_`` is "none").
        weight_: the weight in use: "energy", "entropy", or "none" (the base score: ``energy=False``, or
            an "auto" tuning that showed no gain over it).
        n_classes_ (= n_features_in_): K. n_calibration_: rows that set ``q_hat_``.
        rng_: the generator, advanced past the calibration draws.
    """

    def __init__(self, score: Any = "aps", energy: bool | str = True, alpha: float = 0.1,
                 T_energy: float | str = AUTO, beta: float | str = AUTO, T_cal: float = 1.0, penalty: float = 0.2,
                 kreg: int = 2, saps_weight: float = 0.2, randomized: bool = True, allow_empty: bool = True,
                 class_conditional: bool = False, input: str = "logits", tune_frac: float = 0.3,
                 random_state: int | None = None):
        self.score = score
        self.energy = energy
        self.alpha = alpha
        self.T_energy = T_energy
        self.beta = beta
        self.T_cal = T_cal
        self.penalty = penalty
        self.kreg = kreg
        self.saps_weight = saps_weight
        self.randomized = randomized
        self.allow_empty = allow_empty
        self.class_conditional = class_conditional
        self.input = input
        self.tune_frac = tune_frac
        self.random_state = random_state

    def __sklearn_tags__(self):
        """scikit-learn's tags (imported only when sklearn asks): a classifier that needs no positive ``X``."""
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(), requires_fit=True)

    def _base_name(self) -> str | None:
        """The built-in score's name, or None for a user score object."""
        if isinstance(self.score, str):
            return check_choice(self.score, "score", BASE_SCORES)
        if callable(self.score):
            return None
        raise ValueError(f"score: expected one of {BASE_SCORES} or a callable score(probs, labels=None, rng=None), "
                         f"got {self.score!r}")

    def _weight_name(self) -> str:
        if self.energy is True:
            return "energy"
        if self.energy is False:
            return "none"
        if self.energy == "entropy":
            return "entropy"
        raise ValueError(f"energy: expected True, False or 'entropy', got {self.energy!r}")

    def _check_params(self) -> str:
        self._base_name()
        check_choice(self.input, "input", INPUTS)
        check_alpha(self.alpha)
        for name in ("T_energy", "beta", "T_cal", "saps_weight"):
            if getattr(self, name) != AUTO or name in ("T_cal", "saps_weight"):
                check_positive(getattr(self, name), name)
        if isinstance(self.tune_frac, bool) or not isinstance(self.tune_frac, numbers.Real) \
                or not 0.0 < self.tune_frac < 1.0:
            raise ValueError(f"tune_frac: expected a number in (0, 1), got {self.tune_frac!r}")
        check_nonnegative(self.penalty, "penalty")
        check_nonnegative_int(self.kreg, "kreg")
        if self.random_state is not None and not isinstance(self.random_state, numbers.Integral):
            raise ValueError(f"random_state: expected None or an int, got {self.random_state!r}")
        weight = self._weight_name()
        if self.input == "probs" and weight != "none":
            raise ValueError(f"energy: the {weight} weight needs logits; with input='probs' use energy=False")
        return weight

    def _weight_params(self) -> tuple[float, float]:
        """``(T_energy, beta)`` in use: the fitted ones, else the given numbers (``NotFittedError`` for "auto")."""
        if hasattr(self, "T_energy_"):
            return self.T_energy_, self.beta_
        if AUTO in (self.T_energy, self.beta) and self._weight_name() == "energy":
            raise not_fitted_error("This EnergyConformalClassifier instance is not fitted yet: T_energy/beta "
                                   "'auto' are tuned in fit(X, y)")
        return (1.0 if self.T_energy == AUTO else self.T_energy), (1.0 if self.beta == AUTO else self.beta)

    def _scores(self, x: Any, labels: Any):
        """``(scores, checked x, backend)`` for input ``x`` (n, K): scores (n,) with labels, else (n, K);
        draws from ``rng_``. Only the probabilities and the score matrix are (n, K) arrays of its own."""
        weight = getattr(self, "weight_", self._check_params())  # fitted: the weight in use
        T_energy, beta = self._weight_params()
        if self.input == "probs":
            z, ops = _check_probs(x)
            p, w = z, None
        else:
            z, ops = check_matrix(x, "logits")
            warn_if_probabilities(z, ops)
            w = sample_weight(z, weight, T_energy, beta, self.T_cal)
            p = ops.softmax(z / float(self.T_cal) if self.T_cal != 1.0 else z)
        y = None if labels is None else check_labels(labels, p.shape[0], p.shape[1], ops)
        if not hasattr(self, "rng_"):
            self.rng_ = np.random.default_rng(self.random_state)
        name = self._base_name()
        if name is None:
            base = user_score(self.score, p, ops, y, self.rng_)
        else:
            base = _base(name, p, ops, y, bool(self.randomized), self.rng_, None,
                         float(self.penalty), int(self.kreg), float(self.saps_weight))
        return apply_weight(name or "custom", base, w, weight, inplace=True), z, ops

    def fit(self, X: Any, y: Any = None) -> EnergyConformalClassifier:
        """Calibrates on (n, K) calibration logits ``X`` and their (n,) integer labels ``y``; returns ``self``.

        With ``T_energy``/``beta`` "auto" (and the energy weight), a random ``tune_frac`` of the rows
        tunes them first and ``q_hat_`` is calibrated on the remaining rows.

        Raises:
            ValueError: bad parameters or arrays (see the class docstring); ``y`` missing.
        """
        if y is None:
            raise ValueError("y: this estimator requires y to be passed, but the target y is None")
        weight = self._check_params()
        for attr in ("rng_", "q_hat_", "T_energy_", "beta_", "weight_"):
            self.__dict__.pop(attr, None)
        self.rng_ = np.random.default_rng(self.random_state)
        if weight == "energy" and AUTO in (self.T_energy, self.beta):
            X, y = self._tune(X, y)
        else:
            self.T_energy_, self.beta_ = self._weight_params()
            self.weight_ = weight
        s, p, ops = self._scores(X, y)
        s_np = ops.to_numpy(s)
        self.n_classes_ = self.n_features_in_ = int(p.shape[1])
        self.n_calibration_ = int(p.shape[0])
        if self.class_conditional:
            y = ops.to_numpy(check_labels(y, p.shape[0], p.shape[1], ops))
            q = np.full(self.n_classes_, math.inf)
            for k in range(self.n_classes_):
                if (y == k).any():
                    q[k] = conformal_quantile(s_np[y == k], self.alpha)
                else:
                    warnings.warn(f"class {k} has no calibration sample; its threshold is inf", UserWarning,
                                  stacklevel=2)
            self.q_hat_ = q
        else:
            self.q_hat_ = conformal_quantile(s_np, self.alpha)
        return self

    def _tune(self, X: Any, y: Any):
        """Tunes the "auto" ones of ``T_energy``/``beta`` on a random ``tune_frac`` of the rows and sets
        ``T_energy_``, ``beta_`` and ``weight_`` ("none" unless the tuning shows a gain over the base score);
        returns the other rows ``(X, y)`` for calibration."""
        from .tuning import BETA_GRID, T_GRID, tune_energy  # tuning imports this module

        z, ops = check_matrix(X, "logits")
        labels = check_labels(y, z.shape[0], z.shape[1], ops)
        n = int(z.shape[0])
        n_tune = int(round(self.tune_frac * n))
        if min(n_tune, n - n_tune) * self.alpha / 2 < MIN_TUNE_TAIL:
            need = math.ceil(2 * MIN_TUNE_TAIL / (self.alpha * min(self.tune_frac, 1 - self.tune_frac)))
            warnings.warn(f"T_energy/beta 'auto': at alpha = {self.alpha}, {n} calibration rows leave {n_tune} for "
                          f"tuning, whose halves hold about {n_tune * self.alpha / 2:.1f} rows beyond the conformal "
                          f"quantile (at least {MIN_TUNE_TAIL} needed, i.e. about {need} calibration rows), too few to "
                          "show a gain over the base score; the energy weight is left untuned and off: the base score "
                          "is calibrated on every row (pass T_energy and beta tuned with tune_energy on other data to "
                          "use the weight)", UserWarning, stacklevel=3)
            self.T_energy_, self.beta_ = (1.0 if v == AUTO else float(v) for v in (self.T_energy, self.beta))
            self.weight_ = "none"
            return z, labels
        perm = ops.from_numpy(self.rng_.permutation(n))
        tune, rest = perm[:n_tune], perm[n_tune:]
        res = tune_energy(z[tune], labels[tune], score=self.score, alpha=self.alpha,
                          T_grid=T_GRID if self.T_energy == AUTO else (self.T_energy,),
                          beta_grid=BETA_GRID if self.beta == AUTO else (self.beta,), n_repeats=20,
                          random_state=int(self.rng_.integers(2**31)), T_cal=self.T_cal, penalty=self.penalty,
                          kreg=self.kreg, saps_weight=self.saps_weight, randomized=bool(self.randomized),
                          select="min")
        self.T_energy_, self.beta_ = res.T_energy, res.beta
        self.weight_ = "energy" if res.shows_gain(GAIN_Z) else "none"
        return z[rest], labels[rest]

    def _check_fitted(self, logits: Any) -> None:
        if not hasattr(self, "q_hat_"):
            raise not_fitted_error("This EnergyConformalClassifier instance is not fitted yet; call fit(X, y) with "
                                   "calibration logits and labels (or from_dict) before predicting")
        k = ops_for(logits).float64(logits).shape
        if len(k) == 2 and k[1] != self.n_classes_:
            raise ValueError(f"logits: expected K = {self.n_classes_} columns as in calibration, got {k[1]}")

    def score_samples(self, logits: Any, labels: Any = None):
        """Nonconformity scores with this configuration: (n,) with labels, else (n, K). Draws ``u``."""
        return self._scores(logits, labels)[0]

    def predict_set(self, logits: Any):
        """Prediction sets as a boolean (n, K) mask, on the backend and device of ``logits``.

        Raises:
            ValueError: not fitted; K differs from calibration; bad ``logits``.
        """
        self._check_fitted(logits)
        s, z, ops = self._scores(logits, None)
        q = self.q_hat_
        if isinstance(q, np.ndarray):
            q = ops.from_numpy(q)[None, :]
        sets = s <= q
        if not self.allow_empty:
            top = ops.from_numpy(np.arange(sets.shape[1]))[None, :] == z.argmax(1)[:, None]  # the top label
            empty = ~sets.any(1)
            sets = sets | (top & empty[:, None])
        return sets

    def predict_set_list(self, logits: Any) -> list[list[int]]:
        """Prediction sets as lists of labels, one list per row."""
        sets = ops_for(logits).to_numpy(self.predict_set(logits))
        return [np.flatnonzero(row).tolist() for row in sets]

    def evaluate(self, logits: Any, labels: Any) -> dict[str, float]:
        """Predicts sets for (n, K) logits and returns every metric of ``iclr26_energycp.metrics``."""
        sets = self.predict_set(logits)
        ops = ops_for(logits)
        return metrics.all_metrics(ops.to_numpy(sets), ops.to_numpy(labels), self.alpha,
                                   logits=ops.to_numpy(logits))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: parameters, ``q_hat_`` (inf as the string "inf") and the generator state.

        Raises:
            ValueError: ``score`` is a user object (it cannot be written as JSON).
        """
        self._check_params()
        if self._base_name() is None:
            raise ValueError(f"score: a user score object cannot be saved with to_dict, got {self.score!r}")
        d: dict[str, Any] = {"params": self.get_params(deep=False)}
        if hasattr(self, "q_hat_"):
            q = np.atleast_1d(np.asarray(self.q_hat_, dtype=float))
            d["q_hat"] = [("inf" if math.isinf(v) else float(v)) for v in q]
            d["class_conditional_q"] = isinstance(self.q_hat_, np.ndarray)
            d["n_classes"] = self.n_classes_
            d["n_calibration"] = self.n_calibration_
            d["rng_state"] = self.rng_.bit_generator.state
            d["T_energy_"], d["beta_"], d["weight_"] = self.T_energy_, self.beta_, self.weight_
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EnergyConformalClassifier:
        """Inverse of ``to_dict``: the same configuration, threshold and random stream.

        Raises:
            ValueError: ``d`` lacks "params" or holds an unknown parameter.
        """
        if not isinstance(d, dict) or "params" not in d:
            raise ValueError("d: expected a dict from EnergyConformalClassifier.to_dict() with a 'params' key")
        unknown = set(d["params"]) - set(cls._param_defaults())
        if unknown:
            raise ValueError(f"d['params']: unknown parameters {sorted(unknown)}")
        model = cls(**d["params"])
        model._check_params()
        if "q_hat" in d:
            q = np.array([math.inf if v == "inf" else float(v) for v in d["q_hat"]])
            model.q_hat_ = q if d["class_conditional_q"] else float(q[0])
            model.n_classes_ = int(d["n_classes"])
            model.n_calibration_ = int(d["n_calibration"])
            model.n_features_in_ = model.n_classes_
            model.T_energy_, model.beta_ = float(d["T_energy_"]), float(d["beta_"])
            model.weight_ = d.get("weight_", model._weight_name())
            model.rng_ = np.random.default_rng()
            model.rng_.bit_generator.state = d["rng_state"]
        return model

