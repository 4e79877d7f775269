"""Baselines with the same net, training budget and NFE as GFM.

- ``PlainFM``: Gaussian source, flow matching in x-space, no constraint handling.
- ``ProjectedFM``: a fitted ``PlainFM`` whose final samples are projected exactly onto ``C``.
- ``RejectionFM``: a fitted ``PlainFM`` whose infeasible samples are redrawn (up to ``max_rounds``).
- ``ReflectedFM``: reflected flow matching (Xie et al. 2024): source uniform on ``C`` by rejection
  from the bounding box, Euler steps in x-space with specular reflection at the violated faces.
- ``MirrorFM``: boxes only; flow matching in ``y = logit((x − lo)/(hi − lo))``, mapped back with a sigmoid.

Densities (``log_prob``): PlainFM and MirrorFM (CNF change of variables), RejectionFM (PlainFM's density
truncated to ``C`` and renormalised by the measured acceptance). ProjectedFM has none (atoms on ``∂C``) and
ReflectedFM none (the reflected sampler is not inverted by the CNF's change of variables); both raise.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .model import FlowEstimator, check_data
from .projection import project
from .sets import Box, ConvexSet, Polytope, uniform_in_set

Tensor = torch.Tensor


class PlainFM(FlowEstimator):
    """Standard conditional flow matching with ``N(0, I)`` source in the data space (see ``FlowEstimator``)."""

    def sample(self, n: int, steps: int = 100, solver: str = "euler", generator: torch.Generator | None = None):
        """``n`` samples ``(n, d)`` float32 (unconstrained)."""
        return super().sample(n, steps, solver, generator=generator)


def _from_fitted(cls, plain: PlainFM, constraint: ConvexSet, **extra):
    if not isinstance(plain, PlainFM) or not hasattr(plain, "net_"):
        raise TypeError(f"plain: expected a fitted PlainFM, got {type(plain).__name__}")
    if not isinstance(constraint, ConvexSet) or constraint.dim != plain.dim_:
        raise ValueError(f"constraint: expected a ConvexSet of dimension {plain.dim_}")
    est = cls.__new__(cls)
    est.__dict__.update(plain.__dict__)
    est.constraint = constraint
    est.__dict__.update(extra)
    return est


class ProjectedFM(PlainFM):
    """``PlainFM`` plus the exact Euclidean projection of each final sample onto ``C``.

    Build with ``ProjectedFM(constraint, **plain_kwargs).fit(X)`` or reuse a trained net with
    ``ProjectedFM.from_fitted(plain, constraint)``.
    """

    def __init__(self, constraint: ConvexSet, **kwargs):
        super().__init__(**kwargs)
        self.constraint = constraint

    @classmethod
    def from_fitted(cls, plain: PlainFM, constraint: ConvexSet) -> ProjectedFM:
        """Shares ``plain``'s trained net (and its sampling generator state)."""
        return _from_fitted(cls, plain, constraint)

    def _decode(self, z: Tensor, **_) -> Tensor:
        return project(self.constraint, z).to(z.device)

    def log_prob(self, x, steps: int = 100, solver: str = "euler") -> Tensor:
        """Not defined: the projection puts the infeasible mass on ``∂C`` (atoms), so there is no density."""
        raise TypeError("ProjectedFM: no density, the projection puts atoms on the boundary of C")


def truncated_log_prob(log_p: Tensor, inside: Tensor, acceptance: float) -> Tensor:
    """``log p(x) − log a`` on ``C`` and ``−inf`` off it: the density of ``p`` conditioned on ``C``, with
    ``a = P_p(C)`` (``(n,)`` tensors; ``acceptance`` in (0, 1])."""
    if not 0 < acceptance <= 1:
        raise ValueError(f"acceptance: expected a share in (0, 1], got {acceptance!r}")
    return torch.where(inside, log_p - math.log(acceptance), -math.inf)


class RejectionFM(PlainFM):
    """``PlainFM`` with infeasible samples redrawn, up to ``max_rounds`` rounds.

    Attributes after ``sample``: ``acceptance_`` (feasible share of all draws), ``rounds_``.
    """

    def __init__(self, constraint: ConvexSet, max_rounds: int = 50, tol: float = 1e-9, **kwargs):
        super().__init__(**kwargs)
        self.constraint, self.max_rounds, self.tol = constraint, int(max_rounds), float(tol)

    @classmethod
    def from_fitted(cls, plain: PlainFM, constraint: ConvexSet, max_rounds: int = 50,
                    tol: float = 1e-9) -> RejectionFM:
        """Shares ``plain``'s trained net."""
        return _from_fitted(cls, plain, constraint, max_rounds=int(max_rounds), tol=float(tol))

    def sample(self, n: int, steps: int = 100, solver: str = "euler", generator: torch.Generator | None = None):
        """``n`` feasible samples ``(n, d)``.

        Raises:
            RuntimeError: fewer than ``n`` feasible draws after ``max_rounds`` rounds.
        """
        kept, drawn, need, accepted = [], 0, n, 0
        rounds = 0
        while need and rounds < self.max_rounds:
            rounds += 1
            # draw enough candidates for the acceptance seen so far (at least `need`, at least 64)
            k = max(need, 64, math.ceil(1.2 * need * drawn / max(accepted, 1)))
            x = super().sample(k, steps, solver, generator)
            drawn += k
            ok = x[self.constraint.violation(x.to(torch.float64)) <= self.tol]
            accepted += ok.shape[0]
            kept.append(ok[:need])
            need -= kept[-1].shape[0]
        self.rounds_, self.acceptance_ = rounds, accepted / drawn
        if need:
            raise RuntimeError(f"RejectionFM: only {n - need} of {n} feasible samples after {self.max_rounds} rounds")
        return torch.cat(kept)

    def log_prob(self, x, steps: int = 100, solver: str = "euler", acceptance: float | None = None) -> Tensor:
        """``log p(x)`` ``(n,)`` float64: PlainFM's CNF density truncated to ``C``, minus ``log acceptance``.

        ``acceptance`` (``P(C)`` under PlainFM) defaults to ``acceptance_`` measured by the last ``sample``.

        Raises:
            RuntimeError: no ``acceptance`` given and ``sample`` not called yet.
        """
        if acceptance is None:
            if not hasattr(self, "acceptance_"):
                raise RuntimeError("RejectionFM: call sample() first (its acceptance normalises the density) "
                                   "or pass acceptance=")
            acceptance = self.acceptance_
        x64 = check_data(x, self.constraint.dim, "x")
        inside = self.constraint.violation(x64) <= self.tol
        return truncated_log_prob(super().log_prob(x64, steps, solver), inside, acceptance)


class ReflectedFM(FlowEstimator):
    """Reflected flow matching on a polytope: source ``Uniform(C)``, reflection at the faces during sampling.

    A step ``x → x'`` that leaves ``C`` is cut at the first face it crosses (smallest crossing
    time) and reflected specularly across that face's hyperplane; repeated up to
    ``max_reflections`` times, then the crossing point is kept. Every step checks all ``m`` faces.
    """

    def __init__(self, constraint: ConvexSet, hidden: Sequence[int] = (256, 256, 256), lr: float = 1e-3,
                 batch_size: int = 512, n_steps_train: int = 5000, seed: int = 0, device: str = "cpu",
                 max_reflections: int = 8, time_features: int = 16, ema_decay: float = 0.0):
        if not isinstance(constraint, Polytope):
            raise TypeError(f"constraint: ReflectedFM needs a Polytope (faces to reflect at), "
                            f"got {type(constraint).__name__}")
        super().__init__(hidden, lr, batch_size, n_steps_train, "independent", seed, device, time_features,
                         ema_decay=ema_decay)
        self.constraint, self.max_reflections = constraint, int(max_reflections)

    def _prepare(self, X) -> Tensor:
        X64 = check_data(X, self.constraint.dim)
        viol = self.constraint.violation(X64)
        if (viol > 1e-9).any():
            raise ValueError(f"X: row {int(torch.argmax(viol))} violates the constraints by {float(viol.max()):.3g}")
        return X64

    def log_prob(self, x, steps: int = 100, solver: str = "euler") -> Tensor:
        """Not provided: the reflected sampler's density is not given by the CNF's change of variables."""
        raise TypeError("ReflectedFM: no log_prob, the reflected flow is not inverted by the CNF's "
                                  "change of variables")

    def _source(self, n: int, generator: torch.Generator) -> Tensor:
        return uniform_in_set(self.constraint, n, generator)

    def _step_operator(self, z_prev: Tensor, z_new: Tensor, **_) -> Tensor:
        return self.constraint.reflect(z_prev, z_new, self.max_reflections)


class MirrorFM(FlowEstimator):
    """Flow matching in the mirror space ``y = logit((x − lo)/(hi − lo))`` of a box; samples map back by sigmoid."""

    def __init__(self, constraint: ConvexSet, eps: float = 1e-6, **kwargs):
        if not isinstance(constraint, Box):
            raise TypeError(f"constraint: MirrorFM is defined on a Box, got {type(constraint).__name__}")
        super().__init__(**kwargs)
        self.constraint, self.eps = constraint, float(eps)

    def _prepare(self, X) -> Tensor:
        X64 = check_data(X, self.constraint.dim)
        if (self.constraint.violation(X64) > 1e-9).any():
            raise ValueError("X: expected points inside the box")
        return X64

    def _encode(self, X: Tensor) -> Tensor:
        lo, hi = self.constraint.lo, self.constraint.hi
        return torch.logit(((X - lo) / (hi - lo)).clamp(self.eps, 1 - self.eps))

    def _decode(self, z: Tensor, **_) -> Tensor:
        lo, hi = (v.to(z.device) for v in (self.constraint.lo, self.constraint.hi))
        return lo + (hi - lo) * torch.sigmoid(z.to(torch.float64))

    def _log_abs_det_decode(self, z: Tensor) -> Tensor:
        """``Σ log((hi − lo)·σ(z)(1 − σ(z)))`` per row, with ``log σ(z) = −softplus(−z)``."""
        z64, softplus = z.to(torch.float64), torch.nn.functional.softplus
        width = torch.log(self.constraint.hi - self.constraint.lo).sum()
        return width - (softplus(-z64) + softplus(z64)).sum(dim=1)

    def log_prob(self, x, steps: int = 100, solver: str = "euler") -> Tensor:
        """CNF density in the mirror space minus the sigmoid's log-Jacobian ``(n,)`` float64; ``−inf`` off the box."""
        x64 = check_data(x, self.constraint.dim, "x")
        return torch.where(self.constraint.contains(x64), super().log_prob(x64, steps, solver), -math.inf)
