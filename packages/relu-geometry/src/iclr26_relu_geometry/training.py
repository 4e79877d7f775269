"""Full-batch gradient descent with a constant step, with periodic sharpness tracking.

No momentum, no weight decay, no mini-batches: ``θ ← θ − η ∇L(θ)`` with ``L = loss_scale·mean((f − y)²)``.
Reported MSEs are plain means of squared errors (no ½); the ½ lives only in the training loss.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from ._checks import positive_int, real, tensor_xy
from .model import mse_loss
from .sharpness import top_eigenpair

DIVERGENCE_LOSS = 1e6


@dataclass
class History:
    """What ``train_gd`` recorded.

    Attributes:
        steps: logged step indices (0 = initialisation, the last one = the final step).
        train_mse: plain training MSE against the noisy targets, at each logged step.
        test_mse: plain test MSE against noisy test targets (empty without a test set).
        test_mse_clean: plain test MSE against clean test targets (empty without them).
        sharpness_steps, sharpness: steps and values of λ_max(∇²L) (power iteration).
        sharpness_converged: whether each of those power iterations converged.
        diverged: the loss became non-finite or exceeded 1e6; training stopped there.
        plateaued: the plateau criterion of ``train_gd`` stopped training before ``steps``.
        eta: the step size (so that ``2/eta`` is at hand).
    """

    steps: list[int] = field(default_factory=list)
    train_mse: list[float] = field(default_factory=list)
    test_mse: list[float] = field(default_factory=list)
    test_mse_clean: list[float] = field(default_factory=list)
    sharpness_steps: list[int] = field(default_factory=list)
    sharpness: list[float] = field(default_factory=list)
    sharpness_converged: list[bool] = field(default_factory=list)
    diverged: bool = False
    plateaued: bool = False
    eta: float = 0.0

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)


def stable_init(model: nn.Module, X: torch.Tensor, y: torch.Tensor, eta: float, fraction: float = 0.5,
                loss_scale: float = 0.5, iters: int = 100) -> float:
    """Scales every parameter of a freshly initialised ``model`` by one factor c <= 1 (in place) so that its
    sharpness ``λ_max(∇²L)`` is at most ``fraction · 2/η``; returns c (1.0 when it already was).

    A wide torch-default network starts far above 2/η (λ_max ≈ 42 at width 1024, n = 512, d = 5, against
    2/η = 10): the first GD steps then catapult and kill most neurons. For a two-layer ReLU net the Hessian's
    top eigenvalue scales about as c² under ``θ → cθ`` (the bias β's block does not scale), so c = sqrt(target/λ)
    is applied and λ re-measured, up to 5 times, until λ <= target. Progressive sharpening then carries λ_max up to
    2/η during training.

    Args:
        model: the network at initialisation; X ``(n, d)``, y ``(n,)``: the training data.
        eta: the step size η > 0; fraction: in (0, 1], the target as a fraction of 2/η.

    Raises:
        ValueError: ``eta <= 0`` or ``fraction`` outside (0, 1].
    """
    eta = real("eta", eta, positive=True)
    fraction = real("fraction", fraction, positive=True)
    if fraction > 1:
        raise ValueError(f"fraction: expected a number in (0, 1], got {fraction}")
    target, total = fraction * 2.0 / eta, 1.0
    for _ in range(5):
        lam = top_eigenpair(model, X, y, iters, 1e-4, loss_scale)[0]
        if lam <= target:
            break
        c = math.sqrt(target / lam)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(c)
        total *= c
    return total


def _mse(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float(torch.mean((model(X).reshape(-1) - y) ** 2))


def _plateaued(hist: History, step: int, window: int, tol: float, current: float) -> bool:
    """Whether, for each of the last two windows of ``window`` steps ending at ``step`` (``current`` logged there),
    the lowest train MSE logged over it is less than the fraction ``tol`` below the lowest over the window before.

    Minima, not means, because at the edge of stability the loss spikes now and then; two windows in a row, so that
    one flat stretch of the training curve does not end training.
    """
    if step < 3 * window:
        return False
    logged = list(zip(hist.steps, hist.train_mse)) + [(step, current)]
    lows = [min(v for s, v in logged if step - (k + 1) * window < s <= step - k * window) for k in range(3)]
    return all(older - newer < tol * older for newer, older in zip(lows, lows[1:]))


def train_gd(model: nn.Module, X: torch.Tensor, y: torch.Tensor, eta: float, steps: int,
             X_test: torch.Tensor | None = None, y_test: torch.Tensor | None = None,
             y_test_clean: torch.Tensor | None = None, log_every: int = 100, sharpness_every: int = 0,
             sharpness_iters: int = 50, early_stop_loss: float | None = None, loss_scale: float = 0.5,
             plateau_window: int = 0, plateau_tol: float = 0.01) -> History:
    """Full-batch GD on ``L(θ) = loss_scale · mean((f_θ(X) − y)²)``; updates ``model`` in place.

    Args:
        model: a torch module ``(n, d) -> (n,)``; its parameters are on the same device as ``X``.
        X, y: training inputs ``(n, d)`` and noisy targets ``(n,)``.
        eta: step size η > 0. The stability threshold is ``2/η``.
        steps: number of GD steps.
        X_test, y_test, y_test_clean: optional test inputs ``(m, d)``, noisy and clean targets ``(m,)``.
        log_every: log the MSEs every this many steps (and at the first and last step).
        sharpness_every: measure λ_max every this many steps (0: never during training).
        sharpness_iters: power iterations per sharpness measurement (warm-started from the previous vector).
        early_stop_loss: stop once the training loss L falls below this value.
        plateau_window, plateau_tol: with ``plateau_window > 0`` (a multiple of ``log_every``), stop at the end of
            a window of that many steps once, two windows in a row, the lowest logged train MSE over a window fell
            by less than the fraction ``plateau_tol`` from the lowest over the window before (``steps`` is a cap).

    Returns:
        ``History``; on divergence (non-finite loss or L > 1e6) training stops and ``diverged=True``.
    """
    X, y = tensor_xy(X, y)
    eta = real("eta", eta, positive=True)
    steps = positive_int("steps", steps, 0)
    log_every = positive_int("log_every", log_every)
    sharpness_every = positive_int("sharpness_every", sharpness_every, 0)
    loss_scale = real("loss_scale", loss_scale, positive=True)
    plateau_window = positive_int("plateau_window", plateau_window, 0)
    plateau_tol = real("plateau_tol", plateau_tol, positive=True)
    if plateau_window % log_every:
        raise ValueError(f"plateau_window: expected a multiple of log_every = {log_every}, got {plateau_window}")
    if X_test is not None:
        X_test, y_test = tensor_xy(X_test, y_test)
    hist = History(eta=eta)
    params = [p for p in model.parameters() if p.requires_grad]
    vec = None

    def log(step: int) -> None:
        hist.steps.append(step)
        hist.train_mse.append(_mse(model, X, y))
        if X_test is not None:
            hist.test_mse.append(_mse(model, X_test, y_test))
            if y_test_clean is not None:
                hist.test_mse_clean.append(_mse(model, X_test, y_test_clean))

    for step in range(steps + 1):
        loss = mse_loss(model, X, y, loss_scale)
        value = float(loss.detach())
        if not math.isfinite(value) or value > DIVERGENCE_LOSS:
            hist.diverged = True
            hist.steps.append(step)
            hist.train_mse.append(value / loss_scale if math.isfinite(value) else float("nan"))
            break
        if plateau_window and step > 0 and step % plateau_window == 0:
            hist.plateaued = _plateaued(hist, step, plateau_window, plateau_tol, _mse(model, X, y))
        last = step == steps or hist.plateaued or (early_stop_loss is not None and value < early_stop_loss)
        if sharpness_every and (last or (step > 0 and step % sharpness_every == 0)):
            lam, vec, ok = top_eigenpair(model, X, y, sharpness_iters, 1e-4, loss_scale, v0=vec)
            hist.sharpness_steps.append(step)
            hist.sharpness.append(lam)
            hist.sharpness_converged.append(ok)
        if last or step % log_every == 0:
            log(step)
        if last:
            break
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(eta * g)
    return hist
