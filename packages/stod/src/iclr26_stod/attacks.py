"""White-box FGSM/PGD/APGD (ℓ∞, pixel space [0, 1]) through the surrogate gradients, transfer attacks, robust accuracy.

Every attack runs the model in ``eval()`` mode (batch norm frozen; LIF neurons keep their surrogate
gradients), adds the perturbation and only then clips to [0, 1]; the model's mode is restored.
"""
from __future__ import annotations

import contextlib
import math
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


def _apgd_checkpoints(steps: int) -> list[int]:
    """Iterations w_j = ceil(p_j·steps) where APGD may halve its step, p_0 = 0, p_1 = 0.22,
    p_{j+1} = p_j + max(p_j − p_{j−1} − 0.03, 0.06)."""
    p = [0.0, 0.22]
    while p[-1] < 1:
        p.append(p[-1] + max(p[-1] - p[-2] - 0.03, 0.06))
    return sorted({math.ceil(round(q * steps, 9)) for q in p if q <= 1})  # round: 0.22·100 is 22.000…04


def apgd(model: nn.Module, x: Tensor, y: Tensor, eps: float, steps: int = 100, loss: str = "ce",
         rho: float = 0.75, momentum: float = 0.75, generator: torch.Generator | None = None) -> Tensor:
    """Auto-PGD in the ℓ∞ ball (Croce & Hein, 2020): a momentum step, halved at checkpoints when progress stalls.

    Step size η starts at 2ε; at every checkpoint (``_apgd_checkpoints``) η halves and the iterate restarts
    from the best point when fewer than ``rho`` of the steps since the last checkpoint raised a sample's loss,
    or when η was not halved at the last checkpoint and the best loss has not risen since (per sample).
    Starts from a uniform random point of the ball. Returns, per sample, the first misclassified iterate,
    else the highest-loss one.

    Args:
        model: maps ``[B, C, H, W]`` in [0, 1] to logits; x, y: images and labels.
        eps: radius ε >= 0; steps: iterations >= 1; loss: ``"ce"`` or ``"dlr"`` (needs >= 3 classes).
        rho, momentum: the paper's 0.75 and 0.75; generator: for the random start.

    Raises:
        ValueError: ``eps < 0``, ``steps < 1``, unknown ``loss``; ``x`` outside [0, 1].
    """
    eps = _check_eps(eps)
    check_image(x)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps: expected an integer >= 1, got {steps!r}")
    if loss not in ("ce", "dlr"):
        raise ValueError(f"loss: expected 'ce' or 'dlr', got {loss!r}")
    loss_fn = dlr_loss if loss == "dlr" else (lambda z, t: F.cross_entropy(z, t, reduction="none"))
    x = x.detach()
    shape = (-1,) + (1,) * (x.dim() - 1)

    def project(v: Tensor) -> Tensor:
        return torch.min(torch.max(v, x - eps), x + eps).clamp(0, 1)

    def evaluate(v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        v = v.detach().requires_grad_(True)
        logits = model(v)
        per_sample = loss_fn(logits, y)
        (g,) = torch.autograd.grad(per_sample.sum(), v)
        return per_sample.detach(), g, logits.detach().argmax(1) != y

    with evaluating(model):
        noise = torch.rand(x.shape, generator=generator, device=x.device, dtype=x.dtype)
        cur = project(x + (2 * noise - 1) * eps)
        f, g, fooled = evaluate(cur)
        best_f, best_x = f.clone(), cur.clone()
        adv = torch.where(fooled.view(shape), cur, best_x)
        done = fooled.clone()
        eta = torch.full((len(x),), 2 * eps, device=x.device, dtype=x.dtype)
        prev, checkpoints = cur, _apgd_checkpoints(steps)
        last_w, raised = 0, torch.zeros(len(x), device=x.device)
        halved_last, best_at_last = torch.zeros_like(done), best_f.clone()
        for k in range(steps):
            z = project(cur + eta.view(shape) * g.sign())
            nxt = z if k == 0 else project(cur + momentum * (z - cur) + (1 - momentum) * (cur - prev))
            f_new, g_new, fooled = evaluate(nxt)
            raised += (f_new > f).float()
            prev, cur, f, g = cur, nxt, f_new, g_new
            newly = fooled & ~done
            adv = torch.where(newly.view(shape), cur, adv)
            done |= fooled
            better = f > best_f
            best_f, best_x = torch.where(better, f, best_f), torch.where(better.view(shape), cur, best_x)
            adv = torch.where(done.view(shape), adv, best_x)
            if k + 1 in checkpoints and k + 1 > last_w:
                stalled = raised < rho * (k + 1 - last_w)
                stalled |= ~halved_last & (best_at_last >= best_f)
                eta = torch.where(stalled, eta / 2, eta)
                cur = torch.where(stalled.view(shape), best_x, cur)
                if stalled.any():
                    f_r, g_r, _ = evaluate(cur)
                    f, g = torch.where(stalled, f_r, f), torch.where(stalled.view(shape), g_r, g)
                last_w, raised = k + 1, torch.zeros_like(raised)
                halved_last, best_at_last = stalled, best_f.clone()
    return adv.detach()


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
