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
    eta: float = 0.0

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)


def _mse(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float(torch.mean((model(X).reshape(-1) - y) ** 2))


def train_gd(model: nn.Module, X: torch.Tensor, y: torch.Tensor, eta: float, steps: int,
             X_test: torch.Tensor | None = None, y_test: torch.Tensor | None = None,
             y_test_clean: torch.Tensor | None = None, log_every: int = 100, sharpness_every: int = 0,
             sharpness_iters: int = 50, early_stop_loss: float | None = None, loss_scale: float = 0.5) -> History:
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

    Returns:
        ``History``; on divergence (non-finite loss or L > 1e6) training stops and ``diverged=True``.
    """
    X, y = tensor_xy(X, y)
    eta = real("eta", eta, positive=True)
    steps = positive_int("steps", steps, 0)
    log_every = positive_int("log_every", log_every)
    sharpness_every = positive_int("sharpness_every", sharpness_every, 0)
    loss_scale = real("loss_scale", loss_scale, positive=True)
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
        last = step == steps or (early_stop_loss is not None and value < early_stop_loss)
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
