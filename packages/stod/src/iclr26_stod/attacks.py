"""White-box FGSM/PGD (ℓ∞, pixel space [0, 1]) through the surrogate gradients, transfer attacks, robust accuracy.

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


ATTACKS: dict[str, Callable[..., Tensor]] = {"fgsm": fgsm, "pgd": pgd}


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
