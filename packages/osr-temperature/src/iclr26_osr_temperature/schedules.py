"""Epoch-dependent logit temperatures ``tau(t)``: the negative cosine schedule (NegCosSch) and its ablations.

Every schedule is a callable ``tau(t) -> float`` for an epoch ``t >= 0`` (``t`` may be
fractional, which is how per-step updates are expressed) with ``.as_array(N)`` giving the
``N + 1`` values ``tau(0), ..., tau(N)``. The schedules themselves do not decide whether
epochs are 0- or 1-based: the reference code evaluates ``t = 1..N`` (so its first epoch
already has ``tau > tau_min``); :class:`~iclr26_osr_temperature.losses.TemperatureScheduledLoss`
and :func:`~iclr26_osr_temperature.train.fit_ce` take ``start=0|1`` to choose.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

__all__ = [
    "Schedule", "Constant", "NegativeCosine", "GeneralizedCosine", "LinearIncrease", "LinearDecrease",
    "ExponentialIncrease", "LogarithmicIncrease", "RandomUniform", "get", "NAMES",
]


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
    return float(value)


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name}: expected an integer > 0, got {value!r}")
    return int(value)


def _range(tau_min, tau_max) -> tuple[float, float]:
    lo, hi = _positive("tau_min", tau_min), _positive("tau_max", tau_max)
    if lo > hi:
        raise ValueError(f"tau_min, tau_max: expected tau_min <= tau_max, got {lo} > {hi}")
    return lo, hi


class Schedule:
    """Base class: ``tau(t)`` for epoch ``t >= 0``; subclasses implement ``_value(t)``."""

    def __call__(self, t) -> float:
        """The temperature at epoch ``t`` (a real number >= 0).

        Raises:
            ValueError: ``t`` is negative, not finite or not a number.
        """
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t) or t < 0:
            raise ValueError(f"t: expected an epoch >= 0, got {t!r}")
        return float(self._value(float(t)))

    def _value(self, t: float) -> float:
        raise TypeError(f"{type(self).__name__} does not define _value(t)")

    def as_array(self, n: int) -> np.ndarray:
        """``(n + 1,)`` float64 array ``[tau(0), tau(1), ..., tau(n)]``.

        Raises:
            ValueError: ``n`` is not an integer >= 0.
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"n: expected an integer >= 0, got {n!r}")
        return np.array([self(t) for t in range(int(n) + 1)], dtype=np.float64)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"


class Constant(Schedule):
    """``tau(t) = tau``: the constant-temperature baseline."""

    def __init__(self, tau: float = 1.0):
        self.tau = _positive("tau", tau)

    def _value(self, t: float) -> float:
        return self.tau


class NegativeCosine(Schedule):
    """Negative cosine schedule (``M_NegCosineTemperatureScheduler``), the paper's NegCosSch.

    - ``period=None, wrap=False`` (one rise, the README's ``T = 2N``):
      ``tau(t) = tau_min + (tau_max - tau_min)/2 * (1 - cos(pi * min(t, N) / N))``;
      rises from ``tau_min`` at ``t=0`` to ``tau_max`` at ``t=N`` and holds ``tau_max`` after.
    - ``period=None, wrap=True``: the reference exactly, ``T = 2N`` with ``c = t mod N``, so
      ``t = N`` wraps back to ``tau_min``.
    - ``period=T``: the reference's periodic form with ``c = t mod (T/2)``:
      ``tau(t) = tau_min + (tau_max - tau_min)/2 * (1 - cos(2 pi c / T))``, a saw-tooth of
      cosine rises. A ``T < 2N`` wraps within training; this is intended and warned once.
    """

    def __init__(self, tau_min: float = 0.5, tau_max: float = 2.0, n_epochs: int = 600,
                 period: float | None = None, wrap: bool = False):
        self.tau_min, self.tau_max = _range(tau_min, tau_max)
        self.n_epochs = _positive_int("n_epochs", n_epochs)
        self.period = None if period is None else _positive("period", period)
        self.wrap = bool(wrap)
        if self.period is not None and self.period < 2 * self.n_epochs:
            warnings.warn(f"NegativeCosine: period={self.period:g} < 2*n_epochs={2 * self.n_epochs}, so tau "
                          f"jumps back to tau_min every period/2 = {self.period / 2:g} epochs (periodic schedule)",
                          UserWarning, stacklevel=2)

    def _value(self, t: float) -> float:
        if self.period is not None:
            half = self.period / 2
            phase = math.pi * (t % half) / half
        elif self.wrap:
            phase = math.pi * (t % self.n_epochs) / self.n_epochs
        else:
            phase = math.pi * min(t, self.n_epochs) / self.n_epochs
        return self.tau_min + 0.5 * (self.tau_max - self.tau_min) * (1.0 - math.cos(phase))


class GeneralizedCosine(Schedule):
    """Generalised cosine with shift and hold (``gcosm``, the default of the run scripts).

    With end of the cyclic phase ``e = floor(N - s*T/2)``:
    ``tau(t) = tau_min + (tau_max - tau_min)/2 * (1 + cos(2 pi (t - s*T/2) / T))`` for ``t < e``
    and ``tau_max`` for ``t >= e`` (when ``hold``). ``shift=1`` is a periodic negative cosine
    starting at ``tau_min`` that holds ``tau_max`` for the last ``T/2`` epochs; ``shift=0`` a
    cosine starting at ``tau_max``.
    """

    def __init__(self, tau_min: float = 0.5, tau_max: float = 2.0, n_epochs: int = 600,
                 period: float = 200, shift: float = 1.0, hold: bool = True):
        self.tau_min, self.tau_max = _range(tau_min, tau_max)
        self.n_epochs = _positive_int("n_epochs", n_epochs)
        self.period = _positive("period", period)
        if isinstance(shift, bool) or not isinstance(shift, numbers.Real) or not 0.0 <= shift <= 1.0:
            raise ValueError(f"shift: expected a number in [0, 1], got {shift!r}")
        self.shift = float(shift)
        self.hold = bool(hold)

    @property
    def hold_from(self) -> int:
        """``e = floor(N - shift * period / 2)``, the first epoch held at ``tau_max``."""
        return math.floor(self.n_epochs - 0.5 * self.shift * self.period)

    def _value(self, t: float) -> float:
        if self.hold and t >= self.hold_from:
            return self.tau_max
        angle = 2 * math.pi * (t - 0.5 * self.shift * self.period) / self.period
        return self.tau_min + 0.5 * (self.tau_max - self.tau_min) * (1.0 + math.cos(angle))


class LinearIncrease(Schedule):
    """``tau_min + (tau_max - tau_min) * min(t, N) / N``; with ``period=T`` the reference's wrapping
    ``tau_min + (tau_max - tau_min) * (t mod T) / N``."""

    def __init__(self, tau_min: float = 0.5, tau_max: float = 2.0, n_epochs: int = 600, period: float | None = None):
        self.tau_min, self.tau_max = _range(tau_min, tau_max)
        self.n_epochs = _positive_int("n_epochs", n_epochs)
        self.period = None if period is None else _positive("period", period)

    def _fraction(self, t: float) -> float:
        progress = min(t, self.n_epochs) if self.period is None else t % self.period
        return progress / self.n_epochs

    def _value(self, t: float) -> float:
        return self.tau_min + (self.tau_max - self.tau_min) * self._fraction(t)


class LinearDecrease(LinearIncrease):
    """``tau_max - (tau_max - tau_min) * min(t, N) / N`` (with ``period=T``: ``(t mod T) / N``).

    The two temperatures may be given in either order: the schedule always decreases from the
    larger to the smaller.
    """

    def __init__(self, tau_min: float = 0.5, tau_max: float = 2.0, n_epochs: int = 600, period: float | None = None):
        lo, hi = _positive("tau_min", tau_min), _positive("tau_max", tau_max)
        super().__init__(min(lo, hi), max(lo, hi), n_epochs, period)

    def _value(self, t: float) -> float:
        return self.tau_max - (self.tau_max - self.tau_min) * self._fraction(t)


class _RangeSchedule(Schedule):
    """A schedule over ``[tau_min, tau_max]`` and ``n_epochs`` epochs (parameters checked once here)."""

    def __init__(self, tau_min: float = 0.5, tau_max: float = 2.0, n_epochs: int = 600):
        self.tau_min, self.tau_max = _range(tau_min, tau_max)
        self.n_epochs = _positive_int("n_epochs", n_epochs)


class ExponentialIncrease(_RangeSchedule):
    """``tau_min * (tau_max / tau_min) ** (t / N)``, and ``tau_max`` for ``t >= N``."""

    def _value(self, t: float) -> float:
        if t >= self.n_epochs:
            return self.tau_max
        return self.tau_min * (self.tau_max / self.tau_min) ** (t / self.n_epochs)


class LogarithmicIncrease(_RangeSchedule):
    """``tau_min + (tau_max - tau_min) * ln t / ln(N + 1)`` for ``0 < t < N``; ``tau_min`` at
    ``t = 0`` and ``tau_max`` for ``t >= N`` (as the reference)."""

    def _value(self, t: float) -> float:
        if t >= self.n_epochs:
            return self.tau_max
        if t <= 0:
            return self.tau_min
        return self.tau_min + (self.tau_max - self.tau_min) * max(math.log(t), 0.0) / math.log(self.n_epochs + 1)


class RandomUniform(Schedule):
    """A temperature drawn uniformly in ``[tau_min, tau_max]`` for each whole epoch.

    The draw for epoch ``floor(t)`` is a function of ``(seed, floor(t))``, so asking twice gives the
    same value; ``seed=None`` picks a seed once, at construction.
    """

    def __init__(self, tau_min: float = 0.5, tau_max: float = 2.0, seed: int | None = None):
        self.tau_min, self.tau_max = _range(tau_min, tau_max)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
            raise ValueError(f"seed: expected None or an integer >= 0, got {seed!r}")
        self.seed = int(np.random.SeedSequence().entropy % 2**32) if seed is None else int(seed)

    def _value(self, t: float) -> float:
        rng = np.random.default_rng([self.seed, math.floor(t)])
        return float(rng.uniform(self.tau_min, self.tau_max))


_BY_NAME: dict[str, type[Schedule]] = {
    "constant": Constant, "negcos": NegativeCosine, "gcos": GeneralizedCosine, "gcosm": GeneralizedCosine,
    "linear": LinearIncrease, "lineardec": LinearDecrease, "exp": ExponentialIncrease,
    "log": LogarithmicIncrease, "random": RandomUniform,
}
NAMES = tuple(_BY_NAME)


def get(name: str, **kwargs) -> Schedule:
    """Builds a schedule by name: one of ``NAMES`` (``"gcosm"`` is an alias of ``"gcos"``).

    ``kwargs`` go to the class, e.g. ``get("negcos", tau_min=0.5, tau_max=2.0, n_epochs=60)``.

    Raises:
        ValueError: unknown ``name``, or invalid parameters.
        TypeError: a keyword the schedule does not take.
    """
    if name not in _BY_NAME:
        raise ValueError(f"name: expected one of {NAMES}, got {name!r}")
    return _BY_NAME[name](**kwargs)
