"""Score-based density-ratio estimation with a (MinPV-)learned interpolation path.

``TimeScoreDRE`` trains a time-score network ``s_θ(x, t)`` on the conditional target of a
Gaussian-anchored path and integrates it over ``t`` to get ``log r(x) = log p(x)/q(x)``. With
``path="minpv"`` the Kumaraswamy-mixture path is trained jointly by minimising its closed-form
path variance (the MinPV principle); fixed paths are the ablations.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from iclr26_shared.device import resolve_device
from torch import Tensor, nn

from .network import ARCHITECTURES, TimeScoreNet
from .paths import InterpolantPath, check_eps, make_path
from .quadrature import integrate_time_score
from .validation import check_positive_int, check_samples
from .variance import (
    VARIANCE_FLOOR,
    fit_path_variance,
    path_variance_objective,
    target_from_coefficients,
    time_score_variance,
    variance_from_coefficients,
)

PATH_MODES = ("joint", "pretrain")
WEIGHTINGS = ("inverse_variance", "uniform")
PRETRAIN_STEPS = 2000
HISTORY_EVERY = 100
PROBE_SIZE = 256
Sampler = Callable[[int, np.random.Generator], np.ndarray]


def minpv_loss(net: nn.Module, path: InterpolantPath, x0: Tensor, x1: Tensor, t: Tensor, t_path: Tensor | None,
               weighting: str = "inverse_variance", second_moment: float | None = None
               ) -> tuple[Tensor, dict[str, Tensor]]:
    """One batch of the MinPV training objective.

    ``L = mean(ℓ_score) + mean(V_φ(t'; x₁)) / mean(V(t; x₁))`` with ``ℓ_score = λ_t (s_θ(x_t, t) − s_cond)²``
    and ``λ_t = 1/V̄(t)``, ``V̄(t) = (2d α̇² + β̇² m₂)/α²`` (``weighting="inverse_variance"``) or 1
    (``"uniform"``). ``λ_t`` depends on ``t`` only: a weight depending on ``x₁`` (e.g. ``1/V(t; x₁)``)
    would make the minimiser a weighted conditional mean of ``s_cond`` instead of the time score, and
    the conditional objective would no longer equal the ideal one plus the path variance. The
    detached normaliser ``mean V(t; x₁)`` makes the path term dimensionless; the score term is already
    dimensionless through ``λ_t``, so it is not rescaled (a per-batch scalar there only makes the
    network's step size jump from batch to batch, since ``V`` is heavy-tailed near ``t = 1``).
    Targets, ``x_t`` and ``λ_t`` are computed without gradient, so ``θ`` learns only from ``ℓ_score``
    and the path only from the variance term, the official unclamped ``V_φ(t'; x₁)`` with denominator
    ``α² + 1e-5`` (a clamp at ``1e6`` would let the path postpone its drop of ``α`` to ``t → 1``).
    ``t_path=None`` drops the variance term (fixed paths).

    Args:
        net: ``s_θ``, ``(B, d), (B, 1) -> (B, 1)``.
        path: the interpolation.
        x0: anchor samples, ``(B, d)``; x1: data, ``(B, d)``; t, t_path: times, ``(B, 1)``.
        weighting: ``"inverse_variance"`` or ``"uniform"``.
        second_moment: ``m₂ = E‖x₁‖²`` for ``λ_t``; ``None`` uses the batch mean of ``‖x₁‖²``.

    Returns:
        ``(loss, parts)`` with ``parts = {"score": mean ℓ_score, "path_variance": mean V_φ, "norm": mean V}``.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting: expected one of {WEIGHTINGS}, got {weighting!r}")
    with torch.no_grad():
        coefficients = path.coefficients(t)
        xt = coefficients[0] * x0 + coefficients[1] * x1
        target = target_from_coefficients(coefficients, x0, x1)
        sqnorm = (x1 * x1).sum(dim=1, keepdim=True)
        norm = variance_from_coefficients(coefficients, x1.shape[1], sqnorm).mean()
        m2 = sqnorm.mean() if second_moment is None else float(second_moment)
        weight = 1.0 / variance_from_coefficients(coefficients, x1.shape[1], m2)
    score_term = (net(xt, t) - target) ** 2
    if weighting == "inverse_variance":
        score_term = score_term * weight
    if t_path is None:
        path_term = torch.zeros((), dtype=score_term.dtype, device=score_term.device)
    else:
        path_term = time_score_variance(path, t_path, x1, floor=VARIANCE_FLOOR).mean()
    loss = score_term.mean() + path_term / norm
    return loss, {"score": score_term.mean().detach(), "path_variance": path_term.detach(), "norm": norm}


def _ema_update(average: nn.Module, net: nn.Module, decay: float) -> None:
    """``θ̄ ← decay · θ̄ + (1 − decay) · θ`` in place, parameter by parameter."""
    with torch.no_grad():
        for mean, current in zip(average.parameters(), net.parameters()):
            mean.lerp_(current, 1.0 - decay)


class _ArraySampler:
    """Draws minibatches (with replacement) from a fixed array of samples."""

    def __init__(self, X: np.ndarray):
        self.X = X

    def __call__(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.X[rng.integers(0, self.X.shape[0], size=n)]


class TimeScoreDRE:
    """Density-ratio estimator ``log r(x) = ∫_ε^{1−ε} s_θ(x, t) dt`` (scikit-learn style).

    Args:
        path: ``"minpv"`` (learned Kumaraswamy-mixture path), ``"linear"``, ``"trig"``, ``"vp"``,
            ``"cosine"``, or an ``InterpolantPath`` instance (copied).
        hidden: hidden widths of the time-score network.
        architecture: ``"concat_squash"`` (OpenDRE's time-gated layers, LeakyReLU) or ``"concat"`` (SiLU MLP
            on ``[x, t]``); see ``TimeScoreNet``.
        steps, batch_size, lr: Adam training budget (gradient norm clipped to ``grad_clip``).
        path_mode: ``"joint"`` (path trained with the network) or ``"pretrain"`` (path fitted first on the
            closed-form ``V̄`` for 2,000 steps from ``d`` and ``m₂``, then frozen). Only for learnable paths.
        weighting: ``"inverse_variance"`` (``λ_t = 1/V``) or ``"uniform"``.
        quad_points, eps: trapezoid points and interval ``[ε, 1 − ε]`` of the time integral.
        standardize: fit on ``(x − mean)/std``; then, without ``X_den``, ``q`` is ``N(mean, diag std²)``.
        seed: seeds the network initialisation, the batches and the anchor noise.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
        grad_clip: maximum gradient norm.
        ema_decay: the fitted network is the exponential moving average of the iterates, with decay
            ``min(ema_decay, (1 + k)/(10 + k))`` at step ``k`` (the usual warm-up); ``0`` keeps the last
            iterate. The time integral sums the network's error over ``t``, so the step-to-step noise of
            the last iterate (about ±0.5 nats of MI at lr 1e-3) goes straight into ``log r``.

    Attributes (after ``fit``):
        mode_: ``"gaussian_anchor"`` (no ``X_den``: ``q`` is the standard Gaussian) or ``"two_model"``
            (``log p/q = log p/N − log q/N``, one network and path per side).
        path_: the numerator model's path; paths_, nets_: one per model.
        history_: ``{"step", "loss", "path_variance", "kl"}`` every 100 steps (numerator model; the path
            variance is the closed-form objective with the data's ``d`` and ``m₂``; ``kl`` is the model's
            ``mean log p/N(0, I)`` on a fixed probe of 256 standardised training samples, the
            learning curve a convergence check reads; evaluated with the averaged network).
        n_features_in_, mean_, scale_.
    """

    def __init__(self, path: str | InterpolantPath = "minpv", hidden: Sequence[int] = (256, 256, 256, 256),
                 steps: int = 5000, batch_size: int = 1024, lr: float = 1e-3, path_mode: str = "joint",
                 weighting: str = "inverse_variance", quad_points: int = 100, eps: float = 1e-5,
                 standardize: bool = True, seed: int = 0, device: str = "cpu", grad_clip: float = 1.0,
                 ema_decay: float = 0.999, architecture: str = "concat_squash"):
        self.path = path
        self.hidden = hidden
        self.steps = steps
        self.batch_size = batch_size
        self.lr = lr
        self.path_mode = path_mode
        self.weighting = weighting
        self.quad_points = quad_points
        self.eps = eps
        self.standardize = standardize
        self.seed = seed
        self.device = device
        self.grad_clip = grad_clip
        self.ema_decay = ema_decay
        self.architecture = architecture

    def _check_params(self) -> None:
        check_positive_int("steps", self.steps)
        check_positive_int("batch_size", self.batch_size)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed: expected an int >= 0, got {self.seed!r}")
        if check_positive_int("quad_points", self.quad_points) < 2:
            raise ValueError(f"quad_points: expected an int >= 2, got {self.quad_points}")
        check_eps(self.eps)
        if self.path_mode not in PATH_MODES:
            raise ValueError(f"path_mode: expected one of {PATH_MODES}, got {self.path_mode!r}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting: expected one of {WEIGHTINGS}, got {self.weighting!r}")
        if not (self.lr > 0 and self.grad_clip > 0):
            raise ValueError(f"lr, grad_clip: expected positive numbers, got {self.lr}, {self.grad_clip}")
        if not 0.0 <= self.ema_decay < 1.0:
            raise ValueError(f"ema_decay: expected a number in [0, 1), got {self.ema_decay!r}")
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture: expected one of {ARCHITECTURES}, got {self.architecture!r}")

    def _new_path(self) -> InterpolantPath:
        if isinstance(self.path, InterpolantPath):
            return copy.deepcopy(self.path)
        if isinstance(self.path, str):
            return make_path(self.path, eps=self.eps)
        raise TypeError(f"path: expected a path name or an InterpolantPath, got {type(self.path).__name__}")

    def fit(self, X_num: np.ndarray | Sampler, X_den: np.ndarray | None = None,
            progress: Callable | None = None) -> TimeScoreDRE:
        """Trains the time-score model(s).

        Args:
            X_num: numerator samples ``(n, d)``, or a sampler ``sampler(n, rng) -> (n, d)`` drawing fresh
                batches each step (the numerator is then an endless stream).
            X_den: denominator samples ``(m, d)``; ``None`` means ``q`` is the standard Gaussian (after
                standardisation). Given, the two-model route is used (``mode_ = "two_model"``).
            progress: wraps each model's range of training steps (a progress-bar function such as
                ``functools.partial(iclr26_shared.cli.progress, desc="steps")``); ``None`` shows nothing.

        Returns:
            ``self``.

        Raises:
            ValueError: fewer than 2 samples, NaN/Inf, feature dimensions that differ, bad hyperparameters.
        """
        self._check_params()
        device = resolve_device(self.device)
        sampler_num, probe = self._as_sampler("X_num", X_num)
        self.n_features_in_ = probe.shape[1]
        samplers = [sampler_num]
        reference = probe
        if X_den is not None:
            den = check_samples("X_den", X_den)
            if den.shape[1] != self.n_features_in_:
                raise ValueError(f"X_num, X_den: expected the same number of features, got "
                                 f"{self.n_features_in_} and {den.shape[1]}")
            samplers.append(_ArraySampler(den))
            reference = np.concatenate([probe, den])
        self.mode_ = "gaussian_anchor" if X_den is None else "two_model"
        if self.standardize:
            self.mean_ = reference.mean(axis=0)
            self.scale_ = np.where(reference.std(axis=0) > 0, reference.std(axis=0), 1.0)
        else:
            self.mean_ = np.zeros(self.n_features_in_)
            self.scale_ = np.ones(self.n_features_in_)
        self.nets_, self.paths_ = [], []
        for k, sampler in enumerate(samplers):
            net, path, history = self._train(sampler, device, seed=self.seed + 7919 * k, progress=progress)
            self.nets_.append(net)
            self.paths_.append(path)
            if k == 0:
                self.history_ = history
        self.path_ = self.paths_[0]
        return self

    def _as_sampler(self, name: str, X) -> tuple[Sampler, np.ndarray]:
        """(sampler, a probe array used for shapes and standardisation)."""
        if callable(X):
            probe = check_samples(name, X(10_000, np.random.default_rng(self.seed + 104_729)))
            return (lambda n, rng: np.asarray(X(n, rng), dtype=float)), probe
        arr = check_samples(name, X)
        return _ArraySampler(arr), arr

    def _train(self, sampler: Sampler, device: torch.device, seed: int, progress: Callable | None = None):
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        gen = torch.Generator(device=device).manual_seed(seed)
        d = self.n_features_in_
        net = TimeScoreNet(d, self.hidden, self.architecture).to(device)
        path = self._new_path().to(device)
        learn_path = any(p.requires_grad for p in path.parameters())
        mean = torch.as_tensor(self.mean_, dtype=torch.float32, device=device)
        scale = torch.as_tensor(self.scale_, dtype=torch.float32, device=device)
        m2 = float(np.mean(np.sum(((sampler(10_000, rng) - self.mean_) / self.scale_) ** 2, axis=1)))
        if learn_path and self.path_mode == "pretrain":
            fit_path_variance(path, d, m2, steps=PRETRAIN_STEPS, lr=1e-2, generator=None)
            path.requires_grad_(False)
            learn_path = False
        params = list(net.parameters()) + [p for p in path.parameters() if p.requires_grad]
        # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
        opt = torch.optim.Adam(params, lr=self.lr, foreach=True)
        history = {"step": [], "loss": [], "path_variance": [], "kl": []}
        probe = (torch.as_tensor(sampler(PROBE_SIZE, rng), dtype=torch.float32, device=device) - mean) / scale
        eps = path.eps
        average = copy.deepcopy(net).requires_grad_(False)
        steps = range(1, self.steps + 1)
        for step in steps if progress is None else progress(steps):
            x1 = (torch.as_tensor(sampler(self.batch_size, rng), dtype=torch.float32, device=device) - mean) / scale
            x0 = torch.randn(x1.shape, generator=gen, device=device)
            t = eps + (1 - 2 * eps) * torch.rand(self.batch_size, 1, generator=gen, device=device)
            t_path = eps + (1 - 2 * eps) * torch.rand(self.batch_size, 1, generator=gen, device=device)
            loss, _ = minpv_loss(net, path, x0, x1, t, t_path if learn_path else None, self.weighting, m2)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training diverged at step {step} (loss {float(loss)}); lower lr")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(params, self.grad_clip)
            opt.step()
            _ema_update(average, net, min(self.ema_decay, (1.0 + step) / (10.0 + step)))
            if step % HISTORY_EVERY == 0 or step == self.steps:
                history["step"].append(step)
                history["loss"].append(float(loss.detach()))
                with torch.no_grad():
                    history["path_variance"].append(float(path_variance_objective(path, d, m2)))
                    kl = integrate_time_score(average, probe, n_points=self.quad_points, eps=self.eps).mean()
                    history["kl"].append(float(kl))
        path.requires_grad_(False)
        return average.eval(), path, history

    def _check_fitted_input(self, X) -> Tensor:
        if not hasattr(self, "nets_"):
            raise RuntimeError("this TimeScoreDRE is not fitted yet; call fit(X_num, X_den=None) first")
        arr = check_samples("X", X, min_samples=1)
        if arr.shape[1] != self.n_features_in_:
            raise ValueError(f"X: expected {self.n_features_in_} features (as in fit), got {arr.shape[1]}")
        device = next(self.nets_[0].parameters()).device
        z = (arr - self.mean_) / self.scale_
        return torch.as_tensor(z, dtype=torch.float32, device=device)

    def _log_ratio_z(self, z: Tensor, k: int) -> Tensor:
        with torch.no_grad():
            return integrate_time_score(self.nets_[k], z, n_points=self.quad_points, eps=self.eps)

    def log_ratio(self, X) -> np.ndarray:
        """``log p(x)/q(x)`` for ``X`` of shape ``(n, d)``; returns shape ``(n,)``.

        In ``gaussian_anchor`` mode ``q`` is the standardisation's Gaussian, and no log-det term
        is added (it cancels in the ratio).
        """
        z = self._check_fitted_input(X)
        out = self._log_ratio_z(z, 0)
        if self.mode_ == "two_model":
            out = out - self._log_ratio_z(z, 1)
        return out.cpu().numpy().astype(float)

    def log_density(self, X) -> np.ndarray:
        """``log p(x) = log r(x) + log N(z; 0, I) − Σ log std`` with ``z = (x − mean)/std``; shape ``(n,)``.

        Raises:
            ValueError: the model was fitted with ``X_den`` (the denominator density is then unknown).
        """
        z = self._check_fitted_input(X)
        if self.mode_ != "gaussian_anchor":
            raise ValueError("log_density: only defined when fit was called without X_den (Gaussian denominator)")
        d = z.shape[1]
        log_normal = -0.5 * (z.double() ** 2).sum(dim=1) - 0.5 * d * math.log(2 * math.pi)
        log_det = float(np.sum(np.log(self.scale_)))
        return self._log_ratio_z(z, 0).double().cpu().numpy() + log_normal.cpu().numpy() - log_det

    def kl_divergence(self, X_num) -> float:
        """``KL(p ‖ q) ≈ mean log r(x)`` over numerator samples ``X_num`` of shape ``(n, d)``."""
        return float(np.mean(self.log_ratio(X_num)))


def estimate_mi(X, Y, seed: int = 0, **dre_kw) -> float:
    """Mutual information ``I(X; Y) = KL(p_{XY} ‖ p_X p_Y)`` in nats.

    The joint sample is ``[X, Y]``; the product of marginals is ``[X[π₁], Y[π₂]]`` with two
    independent permutations; a two-model ``TimeScoreDRE(seed=seed, **dre_kw)`` estimates the ratio.

    Args:
        X: ``(n, dx)`` (or ``(n,)``); Y: ``(n, dy)`` (or ``(n,)``).

    Raises:
        ValueError: different numbers of samples, NaN/Inf, fewer than 2 samples.
    """
    X = check_samples("X", X)
    Y = check_samples("Y", Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X, Y: expected the same number of samples, got {X.shape[0]} and {Y.shape[0]}")
    rng = np.random.default_rng(seed)
    joint = np.concatenate([X, Y], axis=1)
    product = np.concatenate([X[rng.permutation(len(X))], Y[rng.permutation(len(Y))]], axis=1)
    model = TimeScoreDRE(seed=seed, **dre_kw).fit(joint, product)
    return model.kl_divergence(joint)
