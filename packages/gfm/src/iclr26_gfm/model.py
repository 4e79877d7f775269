"""Velocity network, the shared flow-matching trainer/sampler, and the ``GaugeFlowMatching`` estimator.

Flow matching (Lipman et al. 2023) with the linear path ``z_t = (1 − t)z₀ + t z₁`` and target
velocity ``z₁ − z₀``. GFM runs it inside the unit ball: data are mapped with the gauge map
``T``, the source is uniform on the ball, every Euler step is followed by the ball's boundary
operator, and samples are mapped back with ``T⁻¹``, so they lie in ``C`` by construction.
"""
from __future__ import annotations

import copy
import math
import pathlib
import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn

from .gauge import SET_BOUNDARY_MODES, GaugeMap, boundary_step_counted, uniform_ball
from .sets import ConvexSet, Polytope, set_from_spec, uniform_in_set
from .sphere import SphericalCap

Tensor = torch.Tensor
SOLVERS = ("euler", "midpoint", "heun")
SOURCES = ("uniform_ball", "gaussian", "uniform_set")
COUPLINGS = ("independent", "ot")
TIME_FEATURES = 16
"""Default number of Fourier features of ``t`` (frequencies ``π·2^k``, ``k < TIME_FEATURES/2``), shared by GFM
and every baseline."""


class VelocityMLP(nn.Module):
    """``v_θ(z, t)``: an MLP on ``[z, φ(t)]`` with SiLU, ``φ`` = ``time_features`` Fourier features of ``t``.

    Args:
        dim: ``d``. hidden: widths of the hidden layers. time_features: even number of sin/cos
            features of ``t`` (0: append ``t`` itself).
    """

    def __init__(self, dim: int, hidden: Sequence[int] = (256, 256, 256), time_features: int = TIME_FEATURES):
        super().__init__()
        if dim < 1 or not hidden or any(h < 1 for h in hidden):
            raise ValueError(f"dim, hidden: expected dim >= 1 and positive widths, got {dim}, {tuple(hidden)}")
        if time_features < 0 or time_features % 2:
            raise ValueError(f"time_features: expected an even number >= 0, got {time_features}")
        self.dim, self.time_features = dim, time_features
        self.register_buffer("freqs", math.pi * 2.0 ** torch.arange(time_features // 2, dtype=torch.float32))
        widths = [dim + max(time_features, 1), *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(a, b), nn.SiLU()]
        layers.append(nn.Linear(widths[-1], dim))
        self.net = nn.Sequential(*layers)

    def forward(self, z: Tensor, t: Tensor) -> Tensor:
        """``z`` ``(n, d)``, ``t`` ``(n,)`` in [0, 1] → velocity ``(n, d)``."""
        t = t.reshape(-1, 1).to(z.dtype)
        if self.time_features:
            arg = t * self.freqs.to(z.dtype)
            feats = torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)
        else:
            feats = t
        return self.net(torch.cat([z, feats], dim=1))


def ot_pairing(z0: Tensor, z1: Tensor, block: int | None = None) -> Tensor:
    """Rows of ``z1`` ``(n, k)`` reordered so that ``z0[i] ↔ z1[i]`` is an exact optimal transport plan for the
    squared Euclidean cost (mini-batch OT coupling, Tong et al. 2024), solved within consecutive blocks of
    ``block`` rows (``None``: the whole batch). The rows of a batch are i.i.d., so blocks are random
    sub-batches; the assignment problem costs ``O(block³)``, blocks cut it by ``(n/block)²``. The cost matrices
    of the full blocks come from one batched ``cdist`` (the same numbers as one call per block, a fifth of the
    time at 8 blocks of 64)."""
    n = z0.shape[0]
    block = n if block is None else block
    full = n - n % block
    costs = [*torch.cdist(z0[:full].reshape(-1, block, z0.shape[1]), z1[:full].reshape(-1, block, z1.shape[1]))
             .pow(2).detach().cpu().numpy()]
    if full < n:
        costs.append(torch.cdist(z0[full:], z1[full:]).pow(2).detach().cpu().numpy())
    cols = np.empty(n, dtype=np.int64)
    for i, cost in zip(range(0, n, block), costs):
        cols[i:i + block] = i + linear_sum_assignment(cost)[1]    # rows come back sorted: row j's partner
    return z1[torch.as_tensor(cols, device=z1.device)]


def _check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {tuple(choices)}, got {value!r}")
    return value


def check_data(X, dim: int | None = None, name: str = "X") -> Tensor:
    """``X`` as a finite float64 ``(n, d)`` CPU tensor. Raises ValueError/TypeError naming ``name``."""
    if not isinstance(X, (Tensor, np.ndarray)):
        raise TypeError(f"{name}: expected a torch.Tensor or numpy array of shape (n, d), got {type(X).__name__}")
    t = torch.as_tensor(X).detach().cpu().to(torch.float64)
    if t.ndim != 2 or t.shape[0] < 1:
        raise ValueError(f"{name}: expected a non-empty 2-D array (n, d), got shape {tuple(t.shape)}")
    if dim is not None and t.shape[1] != dim:
        raise ValueError(f"{name}: expected {dim} columns (the set's dimension), got {t.shape[1]}")
    if not torch.isfinite(t).all():
        bad = int(torch.nonzero(~torch.isfinite(t).all(dim=1))[0, 0])
        raise ValueError(f"{name}: expected finite values, row {bad} holds NaN or Inf")
    return t


class FlowEstimator:
    """Flow matching in a latent space given by ``_encode``/``_decode``, with a source and a boundary step.

    Subclasses set the latent map, the source and the per-step operator; training, sampling,
    determinism and persistence are shared so that every method uses the same net, budget and NFE.

    ``velocity_net``: a user-supplied ``nn.Module`` with ``forward(z (n, k), t (n,)) → (n, k)`` (``k`` the
    latent dimension) used instead of ``VelocityMLP(k, hidden, time_features)``; ``fit`` trains a deep
    copy, so the module passed in is left untouched and refitting starts from the same weights.

    ``coupling="ot"`` pairs each training batch by exact mini-batch OT (:func:`ot_pairing`), within blocks of
    ``ot_batch_size`` rows (``None``: the whole batch).

    ``ema_decay`` > 0: the fitted net is the exponential moving average of the Adam iterates (decay
    ``min(ema_decay, (1 + k)/(10 + k))`` at step ``k``); 0 keeps the last iterate.
    """

    def __init__(self, hidden: Sequence[int] = (256, 256, 256), lr: float = 1e-3, batch_size: int = 512,
                 n_steps_train: int = 5000, coupling: str = "independent", seed: int = 0, device: str = "cpu",
                 time_features: int = TIME_FEATURES, *, velocity_net: nn.Module | None = None,
                 ot_batch_size: int | None = None, ema_decay: float = 0.0):
        if velocity_net is not None and not isinstance(velocity_net, nn.Module):
            raise TypeError(f"velocity_net: expected a torch.nn.Module or None, got {type(velocity_net).__name__}")
        if ot_batch_size is not None and (not isinstance(ot_batch_size, int) or ot_batch_size < 1):
            raise ValueError(f"ot_batch_size: expected a positive integer or None, got {ot_batch_size!r}")
        if not 0.0 <= ema_decay < 1.0:
            raise ValueError(f"ema_decay: expected a number in [0, 1), got {ema_decay!r}")
        self.velocity_net, self.ot_batch_size, self.ema_decay = velocity_net, ot_batch_size, float(ema_decay)
        self.hidden = tuple(int(h) for h in hidden)
        self.lr, self.batch_size, self.n_steps_train = float(lr), int(batch_size), int(n_steps_train)
        self.coupling = _check_choice("coupling", coupling, COUPLINGS)
        self.seed, self.device, self.time_features = int(seed), str(device), int(time_features)
        if self.lr <= 0 or self.batch_size < 1 or self.n_steps_train < 0:
            raise ValueError(f"lr, batch_size, n_steps_train: expected > 0, >= 1, >= 0, got "
                             f"{self.lr}, {self.batch_size}, {self.n_steps_train}")

    # subclass hooks -------------------------------------------------------------------------
    def _encode(self, X: Tensor) -> Tensor:
        return X

    def _decode(self, z: Tensor, **opts) -> Tensor:
        return z

    def _source(self, n: int, generator: torch.Generator) -> Tensor:
        return torch.randn(n, self.dim_, generator=generator, device=generator.device)

    def _step_operator(self, z_prev: Tensor, z_new: Tensor, **opts) -> Tensor:
        """The iterate after the Euler step ``z_prev → z_new`` (``(n, k)``; ``z_new`` is a fresh tensor of the
        sampler's, which the operator may overwrite)."""
        return z_new

    def _data_dim(self) -> int:
        return self.dim_

    def _source_log_prob(self, z0: Tensor) -> Tensor:
        """``log p₀(z₀)`` ``(n,)`` float64 of the source at ``z₀`` ``(n, k)``: standard normal."""
        return -0.5 * (z0 * z0).sum(dim=1) - 0.5 * z0.shape[1] * math.log(2 * math.pi)

    def _log_abs_det_decode(self, z: Tensor) -> Tensor:
        """``log|det ∂decode/∂z|`` ``(n,)`` float64 at latent points ``z`` ``(n, k)``: 0 for the identity."""
        return torch.zeros(z.shape[0], dtype=torch.float64)

    # training ---------------------------------------------------------------------------------
    def _generator(self, offset: int) -> torch.Generator:
        g = torch.Generator(device=self.device)
        g.manual_seed(self.seed * 1_000_003 + offset)
        return g

    def _prepare(self, X: Tensor) -> Tensor:
        """Validates training data; returns it as float64. Subclasses add feasibility checks."""
        return check_data(X)

    def fit(self, X, progress: Callable | None = None, **kwargs) -> FlowEstimator:
        """Trains the velocity net on ``X`` ``(n, d)``; returns ``self``.

        ``progress`` wraps the range of training steps (a progress-bar function such as
        ``iclr26_shared.cli.progress``). Sets ``net_``, ``losses_`` and ``train_seconds_``.
        """
        X64 = self._prepare(X, **kwargs)
        z1_all = self._encode(X64).to(torch.float32).to(self.device)
        self.dim_ = z1_all.shape[1]
        self.net_ = self._new_net(self.device)
        if self.velocity_net is not None:
            out = self.net_(z1_all[:2], torch.zeros(z1_all[:2].shape[0], device=self.device))
            if not isinstance(out, Tensor) or tuple(out.shape) != tuple(z1_all[:2].shape):
                got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
                raise ValueError(f"velocity_net: expected an output of shape (n, {self.dim_}), got {got}")
        # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
        opt = torch.optim.Adam(self.net_.parameters(), lr=self.lr, foreach=True)
        params = list(self.net_.parameters())
        ema = [p.detach().clone() for p in params] if self.ema_decay > 0 else None
        gen = self._generator(1)
        losses = np.empty(self.n_steps_train)
        start = time.perf_counter()
        steps = range(self.n_steps_train)
        for step in steps if progress is None else progress(steps):
            idx = torch.randint(0, z1_all.shape[0], (self.batch_size,), generator=gen, device=self.device)
            z1 = z1_all[idx]
            z0 = self._source(self.batch_size, gen)
            if self.coupling == "ot":
                z1 = ot_pairing(z0, z1, self.ot_batch_size)
            t = torch.rand(self.batch_size, generator=gen, device=self.device)
            zt = (1 - t[:, None]) * z0 + t[:, None] * z1
            loss = (self.net_(zt, t) - (z1 - z0)).pow(2).sum(dim=1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if ema is not None:
                decay = min(self.ema_decay, (1 + step) / (10 + step))
                torch._foreach_lerp_(ema, [p.detach() for p in params], 1.0 - decay)
            losses[step] = loss.item()
        if ema is not None:
            with torch.no_grad():
                torch._foreach_copy_(params, ema)
        self.train_seconds_ = time.perf_counter() - start
        self.losses_ = losses
        self.sample_generator_ = self._generator(2)
        return self

    def _new_net(self, device: str) -> nn.Module:
        """The untrained velocity net (seeded): a deep copy of ``velocity_net`` or a ``VelocityMLP``."""
        if self.velocity_net is not None:
            return copy.deepcopy(self.velocity_net).to(device, torch.float32)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return VelocityMLP(self.dim_, self.hidden, self.time_features).to(device, torch.float32)

    # sampling ---------------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise RuntimeError(f"{type(self).__name__}: call fit() (or load()) before sampling")

    @torch.no_grad()
    def _integrate(self, z: Tensor, steps: int, solver: str, **opts) -> Tensor:
        h = 1.0 / steps
        for k in range(steps):
            t = torch.full((z.shape[0],), k * h, device=z.device)
            v = self.net_(z, t)
            if solver == "midpoint":
                v = self.net_(z + 0.5 * h * v, t + 0.5 * h)
            elif solver == "heun":
                v = 0.5 * (v + self.net_(z + h * v, t + h))
            z = self._step_operator(z, z + h * v, **opts)
        return z

    def sample(self, n: int, steps: int = 100, solver: str = "euler", return_latent: bool = False,
               generator: torch.Generator | None = None, **opts) -> Tensor:
        """``n`` samples ``(n, d)`` by integrating the learned ODE with ``steps`` steps of ``solver``.

        ``generator`` (on the estimator's device) draws the source; by default an internal one,
        seeded at fit time, so that equal seeds give equal samples. ``return_latent`` also returns
        the final latent points.
        """
        self._check_fitted()
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n: expected a positive integer, got {n!r}")
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps: expected a positive integer, got {steps!r}")
        _check_choice("solver", solver, SOLVERS)
        gen = generator if generator is not None else self.sample_generator_
        self.net_.eval()
        z = self._integrate(self._source(n, gen), steps, solver, **opts)
        x = self._decode(z, **opts)
        return (x, z) if return_latent else x

    # likelihood -------------------------------------------------------------------------------
    def log_prob(self, x, steps: int = 100, solver: str = "euler") -> Tensor:
        """Log-density of the model at ``x`` ``(n, d)`` → ``(n,)`` float64.

        ``log p(x) = log p₀(z₀) − ∫₀¹ div v(z_t, t) dt − log|det ∂decode/∂z|(z)`` with ``z`` the latent of
        ``x``: the instantaneous change of variables of the CNF (Chen et al. 2018), integrated backwards from
        ``t = 1`` with ``steps`` steps of ``solver`` and the exact divergence (``k`` autograd passes per
        velocity call, so about ``k + 1`` forward passes per step). The per-step operator of ``sample`` is not
        part of it.
        """
        self._check_fitted()
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps: expected a positive integer, got {steps!r}")
        _check_choice("solver", solver, SOLVERS)
        z = self._encode(check_data(x, self._data_dim(), "x"))
        self.net_.eval()
        z0, div_integral = cnf_backward(self.net_, z.to(self.device, torch.float32), steps, solver)
        return self._source_log_prob(z0.to(torch.float64).cpu()) - div_integral.cpu() - self._log_abs_det_decode(z)

    # persistence ------------------------------------------------------------------------------
    def _config(self) -> dict:
        return {"hidden": list(self.hidden), "lr": self.lr, "batch_size": self.batch_size,
                "n_steps_train": self.n_steps_train, "coupling": self.coupling, "seed": self.seed,
                "time_features": self.time_features, "ot_batch_size": self.ot_batch_size,
                "ema_decay": self.ema_decay}

    def save(self, path) -> pathlib.Path:
        """Writes the configuration, the set and the weights to ``path`` (torch format), atomically."""
        from iclr26_shared.bench import atomic_path

        self._check_fitted()
        state = {"class": type(self).__name__, "config": self._config(), "dim": self.dim_,
                 "custom_net": self.velocity_net is not None,
                 "state_dict": {k: v.cpu() for k, v in self.net_.state_dict().items()}, **self._extra_state()}
        with atomic_path(path) as tmp:
            torch.save(state, tmp)
        return pathlib.Path(path)

    def _extra_state(self) -> dict:
        return {}

    @classmethod
    def load(cls, path, device: str = "cpu", velocity_net: nn.Module | None = None) -> FlowEstimator:
        """Reads a model written by ``save``; ``velocity_net`` (an untrained module of the same architecture)
        is required when the model was trained with a user-supplied net, whose class the file cannot hold.

        Raises:
            ValueError: the file holds another estimator class, its set does not match the weights, or
                ``velocity_net`` is missing for a custom net.
        """
        state = torch.load(path, map_location="cpu", weights_only=True)
        if state.get("class") != cls.__name__:
            raise ValueError(f"path: expected a saved {cls.__name__}, got {state.get('class')!r}")
        if state.get("custom_net", False) and velocity_net is None:
            raise ValueError("velocity_net: expected the module the model was trained with "
                             "(the file holds a user-supplied net's weights), got None")
        est = cls._from_state(state, device)
        est.velocity_net = velocity_net if state.get("custom_net", False) else None
        est.dim_ = int(state["dim"])
        est.net_ = est._new_net(device)
        est.net_.load_state_dict(state["state_dict"])
        est.sample_generator_ = est._generator(2)
        return est

    @classmethod
    def _from_state(cls, state: dict, device: str) -> FlowEstimator:
        return cls(**state["config"], device=device)


def _velocity_divergence(net: nn.Module, z: Tensor, t: Tensor) -> tuple[Tensor, Tensor]:
    """``v(z, t)`` ``(n, k)`` and its exact divergence ``tr ∂v/∂z`` ``(n,)`` (float64), by ``k`` autograd passes."""
    with torch.enable_grad():
        zz = z.detach().requires_grad_(True)
        v = net(zz, t)
        div = torch.zeros(z.shape[0], dtype=torch.float64, device=z.device)
        for i in range(z.shape[1]):
            (g,) = torch.autograd.grad(v[:, i].sum(), zz, retain_graph=i < z.shape[1] - 1)
            div += g[:, i].to(torch.float64)
    return v.detach(), div


def cnf_backward(net: nn.Module, z1: Tensor, steps: int, solver: str = "euler") -> tuple[Tensor, Tensor]:
    """Integrates ``dz/dt = v(z, t)`` from ``t = 1`` back to ``t = 0`` with the reverse of ``solver``'s step.

    Returns ``z₀`` ``(n, k)`` and ``∫₀¹ div v(z_t, t) dt`` ``(n,)`` float64 along the same path, so that
    ``log p₁(z₁) = log p₀(z₀) − ∫₀¹ div v dt`` (instantaneous change of variables, Chen et al. 2018).
    """
    h = 1.0 / steps
    z, integral = z1, torch.zeros(z1.shape[0], dtype=torch.float64, device=z1.device)
    for k in range(steps, 0, -1):
        t = torch.full((z.shape[0],), k * h, device=z.device)
        v, div = _velocity_divergence(net, z, t)
        if solver == "midpoint":
            v, div = _velocity_divergence(net, z - 0.5 * h * v, t - 0.5 * h)
        elif solver == "heun":
            v2, div2 = _velocity_divergence(net, z - h * v, t - h)
            v, div = 0.5 * (v + v2), 0.5 * (div + div2)
        z = z - h * v
        integral += h * div
    return z, integral


def _warn_if_off_centre(C: ConvexSet) -> None:
    """Warns when the inscribed radius about ``x_c`` is below 5% of the outer radius (``T⁻¹`` then stretches a lot)."""
    if not isinstance(C, Polytope):
        return
    radius = float(((C.b - C.A @ C.center) / torch.linalg.norm(C.A, dim=1)).min())
    lo, hi = C.bounding_box()
    outer = float(torch.maximum((lo - C.center).abs(), (hi - C.center).abs()).norm())
    if radius < 0.05 * outer:
        warnings.warn(f"constraint: inscribed radius {radius:.3g} is below 5% of the outer radius {outer:.3g}; "
                      "the gauge map distorts the learned distribution strongly", stacklevel=3)


class GaugeFlowMatching(FlowEstimator):
    """Gauge flow matching: flow matching in the unit ball through the gauge map of ``constraint``.

    Args:
        constraint: the set ``C`` (any ``ConvexSet``, including star-shaped ``StarUnion``), or a
            ``SphericalCap`` on ``S^d`` (flow matching then runs in the ball ``Log_p(cap)`` of ``R^d``).
        source: ``"uniform_ball"`` (default), ``"gaussian"``, or ``"uniform_set"``: ``T#Uniform(C)`` (uniform on
            ``C`` by rejection from its bounding box, mapped into the ball; the same radial law as the uniform ball,
            directions weighted by ``ρ_C(u)^d``, so the directions of far vertices get their share of mass).
        boundary: operator after each step for iterates outside the ball (``reflect``, ``radial``,
            ``project``, ``none``, or ``specular``: reflection at ``∂C`` in ``C`` itself, see
            ``GaugeMap.specular_step``).
        final_rescale: rescale final iterates with ``‖z‖ > 1`` to the sphere (in float64) before
            ``T⁻¹``; this makes every sample feasible to rounding.
        velocity_net: optional user ``nn.Module`` ``(z (n, k), t (n,)) → (n, k)``, ``k`` = ``constraint.dim``
            (``d`` for a cap on ``S^d``); replaces the default MLP (``hidden``/``time_features`` are then unused).
        Other arguments: see ``FlowEstimator``.

    Attributes after ``fit``: ``net_``, ``losses_``, ``train_seconds_``; after ``sample``:
    ``sample_stats_`` (``outside_iterates``: number of iterates with ``‖z‖ > 1`` before the operator).
    """

    def __init__(self, constraint: ConvexSet, hidden: Sequence[int] = (256, 256, 256), source: str = "uniform_ball",
                 boundary: str = "reflect", coupling: str = "independent", lr: float = 1e-3, batch_size: int = 512,
                 n_steps_train: int = 5000, seed: int = 0, device: str = "cpu", final_rescale: bool = True,
                 time_features: int = TIME_FEATURES, *, velocity_net: nn.Module | None = None,
                 ot_batch_size: int | None = None, ema_decay: float = 0.0):
        if not isinstance(constraint, (ConvexSet, SphericalCap)):
            raise TypeError(f"constraint: expected a ConvexSet or SphericalCap, got {type(constraint).__name__}")
        super().__init__(hidden, lr, batch_size, n_steps_train, coupling, seed, device, time_features,
                         velocity_net=velocity_net, ot_batch_size=ot_batch_size, ema_decay=ema_decay)
        self.constraint = constraint
        self.cap = constraint if isinstance(constraint, SphericalCap) else None
        self.source = _check_choice("source", source, SOURCES)
        self.boundary = _check_choice("boundary", boundary, SET_BOUNDARY_MODES)
        self.final_rescale = bool(final_rescale)
        self.gauge_map = GaugeMap(constraint.chart if self.cap is not None else constraint)
        _warn_if_off_centre(self.gauge_map.C)

    def _prepare(self, X, check_feasible: bool = True) -> Tensor:
        X64 = check_data(X, self.constraint.dim)
        if check_feasible:
            viol = self.constraint.violation(X64)
            if (viol > 1e-9).any():
                i = int(torch.argmax(viol))
                raise ValueError(f"X: expected points inside the constraint set (tol 1e-9); row {i} violates it by "
                                 f"{float(viol[i]):.3g} ({int((viol > 1e-9).sum())} rows outside); "
                                 f"pass check_feasible=False to train anyway")
        return X64

    def _encode(self, X: Tensor) -> Tensor:
        z = self.gauge_map.to_ball(X if self.cap is None else self.cap.log(X))
        norm = torch.linalg.norm(z, dim=1, keepdim=True)
        return torch.where(norm > 1, z / norm, z)

    def _source(self, n: int, generator: torch.Generator) -> Tensor:
        if self.source == "gaussian":
            return torch.randn(n, self.dim_, generator=generator, device=generator.device)
        if self.source == "uniform_set":
            z = self.gauge_map.to_ball(uniform_in_set(self.gauge_map.C, n, generator).to(torch.float64))
            norm = torch.linalg.vector_norm(z, dim=1, keepdim=True)
            return torch.where(norm > 1, z / norm, z).to(torch.float32)
        return uniform_ball(n, self.dim_, generator)

    def _step_operator(self, z_prev: Tensor, z_new: Tensor, boundary: str | None = None, **_) -> Tensor:
        mode = boundary or self.boundary
        if mode == "specular":
            z, outside = self.gauge_map.specular_step(z_prev, z_new)
        else:
            z, outside = boundary_step_counted(z_prev, z_new, mode, inplace=True)
        self._outside += outside
        return z

    def _decode(self, z: Tensor, final_rescale: bool | None = None, **_) -> Tensor:
        z64 = z.to(torch.float64)
        if self.final_rescale if final_rescale is None else final_rescale:
            norm = torch.linalg.norm(z64, dim=1, keepdim=True)
            z64 = torch.where(norm > 1, z64 / norm, z64)
        x = self.gauge_map.from_ball(z64)
        return x if self.cap is None else self.cap.exp(x)

    def sample(self, n: int, steps: int = 100, solver: str = "euler", return_ball: bool = False,
               generator: torch.Generator | None = None, boundary: str | None = None,
               final_rescale: bool | None = None) -> Tensor:
        """``n`` samples ``(n, d)`` float64 in ``C``; ``boundary``/``final_rescale`` override the estimator's
        for this call (ablations). ``return_ball`` also returns the final ball iterates ``(n, d)``."""
        if boundary is not None:
            _check_choice("boundary", boundary, SET_BOUNDARY_MODES)
        self._outside = 0
        out = super().sample(n, steps, solver, return_ball, generator, boundary=boundary, final_rescale=final_rescale)
        self.sample_stats_ = {"outside_iterates": self._outside, "iterates": n * steps}
        return out

    def fit(self, X, check_feasible: bool = True, progress: Callable | None = None) -> GaugeFlowMatching:
        """Maps ``X`` ``(n, d)`` into the ball and trains; raises ValueError on infeasible rows unless
        ``check_feasible=False`` (those rows are then radially clipped to the sphere). ``progress`` as in
        :meth:`FlowEstimator.fit`."""
        return super().fit(X, progress=progress, check_feasible=check_feasible)

    def _data_dim(self) -> int:
        return self.constraint.dim

    def _source_log_prob(self, z0: Tensor) -> Tensor:
        if self.source == "gaussian":
            return super()._source_log_prob(z0)
        inside = torch.linalg.vector_norm(z0, dim=1) <= 1
        if self.source == "uniform_set":
            # T#Uniform(C): density ρ(u)^k / vol(C) at z = r·u (the change of variables of T⁻¹)
            C = self.gauge_map.C
            log_p = self.gauge_map.log_abs_det_from_ball(z0.to(torch.float64)) - C.log_volume()
            return torch.where(inside, log_p, -math.inf)
        log_vol = 0.5 * self.dim_ * math.log(math.pi) - math.lgamma(0.5 * self.dim_ + 1)
        return torch.where(inside, -log_vol, -math.inf).to(torch.float64)

    def _log_abs_det_decode(self, z: Tensor) -> Tensor:
        z64 = z.to(torch.float64)
        log_det = self.gauge_map.log_abs_det_from_ball(z64)
        return log_det if self.cap is None else log_det + self.cap.log_abs_det_exp(self.gauge_map.from_ball(z64))

    def log_prob(self, x, steps: int = 100, solver: str = "euler") -> Tensor:
        """Log-density of the model at ``x`` ``(n, d)`` → ``(n,)`` float64 (``−inf`` outside ``C``).

        The CNF's change of variables in the ball (see :meth:`FlowEstimator.log_prob`) minus the gauge map's
        ``log|det ∂T⁻¹/∂z| = −k·log γ(z/‖z‖)`` (and, on a cap, ``log|det d Exp_p|`` for the density w.r.t.
        surface area). The boundary operator is not part of it: under the uniform-ball source a backward
        endpoint ``z₀`` outside the unit ball gets ``log p₀ = −inf``. Undefined (NaN) at ``x = x_c`` for sets
        other than balls (the gauge map is not differentiable there).
        """
        x64 = check_data(x, self.constraint.dim, "x")
        return torch.where(self.constraint.contains(x64), super().log_prob(x64, steps, solver), -math.inf)

    def _config(self) -> dict:
        return {**super()._config(), "source": self.source, "boundary": self.boundary,
                "final_rescale": self.final_rescale}

    def _extra_state(self) -> dict:
        if not hasattr(self.constraint, "to_spec"):
            raise ValueError(f"constraint: a {type(self.constraint).__name__} holds callables and cannot be saved")
        return {"constraint": self.constraint.to_spec()}

    @classmethod
    def _from_state(cls, state: dict, device: str) -> GaugeFlowMatching:
        C = set_from_spec(state["constraint"])
        latent = C.dim - 1 if isinstance(C, SphericalCap) else C.dim
        if latent != int(state["dim"]):
            raise ValueError(f"path: the saved set has latent dimension {latent} but the weights expect {state['dim']}")
        return cls(C, **state["config"], device=device)
