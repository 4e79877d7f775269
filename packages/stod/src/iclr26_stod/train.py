"""Training: cross-entropy + λ_O·L_O (paper Eq. 9), optional adversarial training, Riemannian kernel steps."""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from iclr26_shared.device import resolve_device
from torch import Tensor

from .attacks import accuracy, fgsm, pgd
from .encoding import PFD, STODEncoder, check_image
from .gtc import gradient_temporal_collinearity
from .models import EncodedSNN
from .optim import RiemannianSGD


@dataclass
class History:
    """Per-epoch training curves (``gor`` is the unweighted L_O; 0 for encoders without it)."""

    loss: list[float] = field(default_factory=list)
    ce: list[float] = field(default_factory=list)
    gor: list[float] = field(default_factory=list)
    acc: list[float] = field(default_factory=list)
    val_acc: list[float] = field(default_factory=list)
    gtc: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[float]]:
        return asdict(self)


@contextlib.contextmanager
def kernel_path(model: EncodedSNN, use_kernels: bool | None) -> Iterator[EncodedSNN]:
    """Forces a STOD encoder's input path (True: through PFD, False: plain direct, None: by mode); no-op otherwise."""
    enc = model.encoder
    if not isinstance(enc, STODEncoder):
        yield model
        return
    before = enc.use_kernels
    enc.use_kernels = use_kernels
    try:
        yield model
    finally:
        enc.use_kernels = before


def riemannian_kernels(model: EncodedSNN) -> list[torch.nn.Parameter]:
    """The PFD kernels optimised by ``RiemannianSGD`` (those with ``kernel_backend="riemannian"``)."""
    return [m.kernels for m in model.modules() if isinstance(m, PFD) and m.kernel_backend == "riemannian"]


def craft(model: EncodedSNN, x: Tensor, y: Tensor, attack: str, eps: float, path: str, pgd_steps: int = 7) -> Tensor:
    """Adversarial training examples crafted on the current model (eval mode, see ``attacks``).

    ``path="deployed"`` attacks the model as it is evaluated (STOD without kernels unless
    ``keep_kernels``); ``path="train"`` attacks the training input path (kernels in place).
    """
    with kernel_path(model, True if path == "train" else None):
        return fgsm(model, x, y, eps) if attack == "fgsm" else pgd(model, x, y, eps, steps=pgd_steps)


def fit(model: EncodedSNN, train_loader: Iterable[tuple[Tensor, Tensor]], *, epochs: int, lr: float = 1e-3,
        weight_decay: float = 0.0, kernel_lr: float = 0.01, adv_train: Literal["fgsm", "pgd"] | None = None,
        eps_train: float | None = None, adv_mix: float = 1.0, adv_path: Literal["deployed", "train"] = "deployed",
        pgd_steps: int = 7, val_loader: Iterable[tuple[Tensor, Tensor]] | None = None, track_gtc: bool = False,
        optimizer: Literal["adam", "sgd"] = "adam", per_step_ce: bool = False, device: str = "auto",
        seed: int = 0) -> History:
    """Trains ``model`` in place with Adam or SGD (lr) and, for PFD kernels, ``RiemannianSGD`` (kernel_lr).

    The loss is CE + λ_O·L_O where λ_O is the encoder's ``lambda_gor`` (0 for non-STOD encoders); CE is
    taken on the time-averaged logits, or, with ``per_step_ce``, averaged over the T per-step logits (the
    SNN_DSD/SNN_MRL convention, together with ``optimizer="sgd"``: momentum 0.9, e.g. ``lr=0.1``).

    Args:
        model: an ``EncodedSNN``.
        train_loader: re-iterable of ``(x [B,C,H,W] in [0,1], y [B])`` batches.
        epochs: >= 1.
        adv_train: ``None``, ``"fgsm"`` or ``"pgd"`` adversarial training with radius ``eps_train``;
            ``adv_mix`` is the fraction of each batch replaced by adversarial examples (1.0: adversarial
            batches only); ``adv_path`` the input path the attack is crafted on (see ``craft``).
        val_loader: batches for the per-epoch validation accuracy (and GTC when ``track_gtc``).
        device: ``"auto"``, ``"cpu"``, ``"cuda"``...; seed: seeds torch's global RNG (rate draws, PGD starts).

    Returns:
        The ``History``.

    Raises:
        ValueError: bad ``epochs``, ``adv_train``, ``eps_train``, ``adv_mix``, ``adv_path`` or ``optimizer``.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs: expected an integer >= 1, got {epochs!r}")
    if adv_train not in (None, "fgsm", "pgd"):
        raise ValueError(f"adv_train: expected None, 'fgsm' or 'pgd', got {adv_train!r}")
    if adv_train is not None and (eps_train is None or not eps_train >= 0):
        raise ValueError(f"eps_train: expected a radius >= 0 with adv_train={adv_train!r}, got {eps_train!r}")
    if not 0 < adv_mix <= 1:
        raise ValueError(f"adv_mix: expected a fraction in (0, 1], got {adv_mix}")
    if adv_path not in ("deployed", "train"):
        raise ValueError(f"adv_path: expected 'deployed' or 'train', got {adv_path!r}")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer: expected 'adam' or 'sgd', got {optimizer!r}")
    dev = resolve_device(device)
    torch.manual_seed(seed)
    model.to(dev)
    kernels = riemannian_kernels(model)
    kernel_ids = {id(k) for k in kernels}
    others = [p for p in model.parameters() if id(p) not in kernel_ids and p.requires_grad]
    optimizers: list[torch.optim.Optimizer] = [
        torch.optim.Adam(others, lr=lr, weight_decay=weight_decay) if optimizer == "adam"
        else torch.optim.SGD(others, lr=lr, momentum=0.9, weight_decay=weight_decay)]
    if kernels:
        optimizers.append(RiemannianSGD(kernels, lr=kernel_lr))
    lam = float(getattr(model.encoder, "lambda_gor", 0.0))
    history = History()
    for _ in range(epochs):
        sums = {"loss": 0.0, "ce": 0.0, "gor": 0.0, "acc": 0.0}
        n = 0
        for x, y in train_loader:
            x, y = x.to(dev), y.to(dev)
            if adv_train is not None:
                k = max(1, round(adv_mix * len(y)))
                x_adv = craft(model, x[:k], y[:k], adv_train, eps_train, adv_path, pgd_steps)
                x = torch.cat([x_adv, x[k:]])
            model.train()
            if per_step_ce:
                check_image(x)
                steps = model.step_logits(model.encode(x))  # [T, B, K]
                logits = steps.mean(0)
                ce = F.cross_entropy(steps.flatten(0, 1), y.repeat(len(steps)))
            else:
                logits = model(x)
                ce = F.cross_entropy(logits, y)
            gor = model.encoder.regularizer().to(dev)
            loss = ce + lam * gor
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)
            loss.backward()
            for opt in optimizers:
                opt.step()
            b = len(y)
            sums["loss"] += float(loss.detach()) * b
            sums["ce"] += float(ce.detach()) * b
            sums["gor"] += float(gor.detach()) * b
            sums["acc"] += float((logits.argmax(1) == y).float().sum())
            n += b
        for key, total in sums.items():
            getattr(history, key).append(total / n)
        if val_loader is not None:
            xs, ys = zip(*[(xv.to(dev), yv.to(dev)) for xv, yv in val_loader], strict=True)
            xv, yv = torch.cat(xs), torch.cat(ys)
            history.val_acc.append(accuracy(model, xv, yv))
            if track_gtc:
                model.eval()
                history.gtc.append(gradient_temporal_collinearity(model, xv, yv))
    model.eval()
    return history
