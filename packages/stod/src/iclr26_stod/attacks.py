"""White-box FGSM/PGD/APGD (ℓ∞, pixel space [0, 1]) through the surrogate gradients, transfer attacks, robust accuracy.

Every attack runs the model in ``eval()`` mode (batch norm frozen; LIF neurons keep their surrogate
gradients), adds the perturbation and only then clips to [0, 1]; the model's mode is restored.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .encoding import check_image


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """Puts ``model`` in eval mode for the block and restores its previous mode."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def _check_eps(eps: float) -> float:
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps >= 0:
        raise ValueError(f"eps: expected a perturbation radius >= 0, got {eps!r}")
    return float(eps)


def input_gradient(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """∂ CE(model(x), y) / ∂x, ``[B, C, H, W]`` (the model's current mode)."""
    x = x.detach().clone().requires_grad_(True)
    loss = F.cross_entropy(model(x), y)
    (g,) = torch.autograd.grad(loss, x)
    return g


def fgsm(model: nn.Module, x: Tensor, y: Tensor, eps: float) -> Tensor:
    """Fast gradient sign method: clip(x + ε·sign(∇_x CE), 0, 1).

    Raises:
        ValueError: ``eps < 0``; ``x`` outside [0, 1].
    """
    eps = _check_eps(eps)
    check_image(x)
    with evaluating(model):
        g = input_gradient(model, x, y)
    return (x.detach() + eps * g.sign()).clamp(0, 1)


def pgd(model: nn.Module, x: Tensor, y: Tensor, eps: float, steps: int = 7, alpha: float | None = None,
        random_start: bool = True, generator: torch.Generator | None = None) -> Tensor:
    """Projected gradient descent in the ℓ∞ ball of radius ε (Madry et al.), α = 2.5ε/steps by default.

    Args:
        model: maps ``[B, C, H, W]`` in [0, 1] to logits.
        x, y: images and labels.
        eps: radius ε >= 0; steps: K >= 1; alpha: step size.
        random_start: start from x + U(−ε, ε) (clipped to [0, 1]).
        generator: a ``torch.Generator`` on x's device for the random start.

    Raises:
        ValueError: ``eps < 0``, ``steps < 1``, ``alpha <= 0``; ``x`` outside [0, 1].
    """
    eps = _check_eps(eps)
    check_image(x)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps: expected an integer >= 1, got {steps!r}")
    alpha = 2.5 * eps / steps if alpha is None else alpha
    if not alpha > 0 and eps > 0:
        raise ValueError(f"alpha: expected a step size > 0, got {alpha!r}")
    x = x.detach()
    adv = x.clone()
    if random_start:
        noise = torch.rand(x.shape, generator=generator, device=x.device, dtype=x.dtype)
        adv = (adv + (2 * noise - 1) * eps).clamp(0, 1)
    with evaluating(model):
        for _ in range(steps):
            g = input_gradient(model, adv, y)
            adv = adv + alpha * g.sign()
            adv = torch.min(torch.max(adv, x - eps), x + eps).clamp(0, 1)
    return adv


def dlr_loss(logits: Tensor, y: Tensor) -> Tensor:
    """Difference-of-logits-ratio loss per sample (Croce & Hein, 2020), ``[B, K]`` -> ``[B]``, K >= 3.

    −(z_y − max_{i≠y} z_i) / (z_π1 − z_π3 + 1e-12) with z_π the logits sorted in decreasing order; scale-invariant.
    """
    if logits.shape[1] < 3:
        raise ValueError(f"logits: expected >= 3 classes for the DLR loss, got {logits.shape[1]}")
    top = logits.sort(1, descending=True).values
    z_y = logits.gather(1, y[:, None]).squeeze(1)
    others = logits.scatter(1, y[:, None], float("-inf")).amax(1)
    return -(z_y - others) / (top[:, 0] - top[:, 2] + 1e-12)


def _apgd_run(model: nn.Module, x: Tensor, y: Tensor, eps: float, steps: int,
              loss_fn: Callable[[Tensor, Tensor], Tensor], rho: float,
              generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """One APGD run from a random start (AutoAttack's ``attack_single_run``, ℓ∞), model already in eval mode.

    Returns:
        ``(fooled [B] bool, x_fooled [B, C, H, W])``: whether some iterate (the start included) was
        misclassified, and the last such iterate (the start where none was).
    """
    shape = (-1,) + (1,) * (x.dim() - 1)

    def project(v: Tensor) -> Tensor:
        return torch.clamp(torch.min(torch.max(v, x - eps), x + eps), 0.0, 1.0)

    def evaluate(v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        v = v.detach().requires_grad_(True)
        logits = model(v)
        per_sample = loss_fn(logits, y)
        (g,) = torch.autograd.grad(per_sample.sum(), v)
        return per_sample.detach(), g.detach(), logits.detach().argmax(1) == y

    # start on the surface of the ball: a uniform draw in [-1, 1]^d rescaled to sup-norm 1, times ε
    t = 2 * torch.rand(x.shape, generator=generator, device=x.device, dtype=x.dtype) - 1
    cur = (x + eps * t / t.flatten(1).abs().amax(1).view(shape)).clamp(0.0, 1.0)
    f, g, robust = evaluate(cur)
    x_fooled = cur.clone()
    best_f, best_x, best_g = f.clone(), cur.clone(), g.clone()
    step = torch.full((len(x),), 2 * eps, device=x.device, dtype=x.dtype).view(shape)
    prev = cur.clone()
    # checkpoint schedule: the first after int(0.22·K) steps, then windows shrinking by int(0.03·K) to int(0.06·K)
    window, window_min, shrink = (max(int(q * steps), 1) for q in (0.22, 0.06, 0.03))
    since, raised = 0, torch.zeros(len(x), device=x.device)
    last_f = torch.zeros_like(f)  # AutoAttack compares the first step's loss with a zero-filled buffer
    halved_last = torch.ones(len(x), dtype=torch.bool, device=x.device)
    best_at_last = best_f.clone()
    for i in range(steps):
        a = 0.75 if i > 0 else 1.0  # momentum from the second step on
        momentum = cur - prev
        prev = cur
        z = project(cur + step * g.sign())
        cur = project(cur + (z - cur) * a + momentum * (1 - a))
        f, g, correct = evaluate(cur)
        robust &= correct
        x_fooled[~correct] = cur[~correct]
        better = f > best_f
        best_x[better], best_g[better], best_f[better] = cur[better], g[better], f[better]
        raised += (f > last_f).float()
        last_f = f
        since += 1
        if since == window:
            halve = (raised <= window * rho) | (~halved_last & (best_at_last >= best_f))
            halved_last, best_at_last = halve, best_f.clone()
            if halve.any():
                step[halve] /= 2.0
                cur[halve], g[halve] = best_x[halve], best_g[halve]
            since, raised = 0, torch.zeros_like(raised)
            window = max(window - shrink, window_min)
    return ~robust, x_fooled


def apgd(model: nn.Module, x: Tensor, y: Tensor, eps: float, steps: int = 100, loss: str = "ce",
         restarts: int = 1, rho: float = 0.75, generator: torch.Generator | None = None) -> Tensor:
    """Auto-PGD in the ℓ∞ ball (Croce & Hein, 2020), as in AutoAttack's reference code (and torchattacks' ``APGD``).

    Only images the model classifies correctly are attacked. Each run starts on the ball's surface and takes
    momentum (0.75) sign steps of size η = 2ε; at each checkpoint (after int(0.22·K) steps, then windows
    shrinking by int(0.03·K) down to int(0.06·K)) a sample's η halves and its iterate returns to its best
    point when at most ``rho`` of the window's steps raised its loss, or when η was not halved at the last
    checkpoint and the best loss has not risen since. ``restarts`` runs attack the still-robust images again
    from fresh random starts.

    Args:
        model: maps ``[B, C, H, W]`` in [0, 1] to logits; x, y: images ``[B, C, H, W]`` and labels ``[B]``.
        eps: radius ε >= 0; steps: iterations K >= 1 per run; loss: ``"ce"`` or ``"dlr"`` (needs >= 3 classes).
        restarts: runs >= 1; rho: the checkpoint threshold (0.75 in the paper).
        generator: a ``torch.Generator`` on x's device for the random starts (default: the global RNG).

    Returns:
        ``[B, C, H, W]``: per image, the last misclassified iterate of the first run that fooled the model;
        images never fooled are returned unchanged (so ``accuracy`` of the result is the robust accuracy).

    Raises:
        ValueError: ``eps < 0``, ``steps < 1``, ``restarts < 1``, unknown ``loss``; ``x`` outside [0, 1].
    """
    eps = _check_eps(eps)
    check_image(x)
    for name, value in (("steps", steps), ("restarts", restarts)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
    if loss not in ("ce", "dlr"):
        raise ValueError(f"loss: expected 'ce' or 'dlr', got {loss!r}")
    loss_fn = dlr_loss if loss == "dlr" else (lambda z, t: F.cross_entropy(z, t, reduction="none"))
    x, y = x.detach(), y.detach()
    adv = x.clone()
    with evaluating(model):
        with torch.no_grad():
            robust = model(x).argmax(1) == y
        for _ in range(restarts):
            idx = robust.nonzero().flatten()
            if len(idx) == 0:
                break
            fooled, x_fooled = _apgd_run(model, x[idx], y[idx], eps, steps, loss_fn, rho, generator)
            robust[idx[fooled]] = False
            adv[idx[fooled]] = x_fooled[fooled]
    return adv


def apgd_ce(model: nn.Module, x: Tensor, y: Tensor, eps: float, steps: int = 100, **kw) -> Tensor:
    """``apgd(..., loss="ce")``."""
    return apgd(model, x, y, eps, steps=steps, loss="ce", **kw)


def apgd_dlr(model: nn.Module, x: Tensor, y: Tensor, eps: float, steps: int = 100, **kw) -> Tensor:
    """``apgd(..., loss="dlr")``."""
    return apgd(model, x, y, eps, steps=steps, loss="dlr", **kw)


ATTACKS: dict[str, Callable[..., Tensor]] = {"fgsm": fgsm, "pgd": pgd, "apgd-ce": apgd_ce, "apgd-dlr": apgd_dlr}


def transfer_attack(source_model: nn.Module, target_model: nn.Module, x: Tensor, y: Tensor, eps: float,
                    attack: str = "pgd", **kw) -> Tensor:
    """Black-box (transfer) attack: adversarial examples crafted on ``source_model``, for ``target_model``.

    ``target_model`` is never queried (that is what makes the attack black-box); it is named so that call
    sites read as source -> target. Returns the adversarial images (evaluate them with ``accuracy``).
    """
    if attack not in ATTACKS:
        raise ValueError(f"attack: expected one of {sorted(ATTACKS)}, got {attack!r}")
    return ATTACKS[attack](source_model, x, y, eps, **kw)


@torch.no_grad()
def accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    """Top-1 accuracy of ``model`` (in eval mode) on ``(x, y)``."""
    with evaluating(model):
        return float((model(x).argmax(1) == y).float().mean())


def robust_accuracy(model: nn.Module, loader: Iterable[tuple[Tensor, Tensor]], attack: str | Callable = "clean",
                    draws: int = 1, **kw) -> float:
    """Accuracy on adversarial examples, averaged over the batches of ``loader`` (weighted by size).

    Args:
        model: the attacked (and evaluated) model.
        loader: iterable of ``(x, y)`` batches.
        attack: ``"clean"``, ``"fgsm"``, ``"pgd"`` or a callable ``f(model, x, y, **kw) -> x_adv``.
        draws: repeat attack + evaluation this many times and average (expectation over the
            randomness of stochastic models such as rate encoding; use 5 for them).
        **kw: attack options (``eps``, ``steps``, ...).

    Raises:
        ValueError: unknown attack name or ``draws < 1``.
    """
    if isinstance(attack, str):
        if attack != "clean" and attack not in ATTACKS:
            raise ValueError(f"attack: expected 'clean', one of {sorted(ATTACKS)} or a callable, got {attack!r}")
        fn = None if attack == "clean" else ATTACKS[attack]
    else:
        fn = attack
    if draws < 1:
        raise ValueError(f"draws: expected >= 1, got {draws}")
    correct, total = 0.0, 0
    for _ in range(draws):
        for x, y in loader:
            x_adv = x if fn is None else fn(model, x, y, **kw)
            correct += accuracy(model, x_adv, y) * len(y)
            total += len(y)
    return correct / total
