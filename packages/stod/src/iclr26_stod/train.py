"""Training: cross-entropy + λ_O·L_O (paper Eq. 9), optional adversarial training, Riemannian kernel steps."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from iclr26_shared.device import resolve_device
from iclr26_shared.distributed import DistributedContext
from torch import Tensor, nn

from .attacks import accuracy, fgsm, pgd
from .batchnorm import global_batch_norm
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


class TrainingLoss(nn.Module):
    """One forward giving ``(loss, ce, gor, logits [B, K])`` of a batch, the call ``DistributedDataParallel`` wraps.

    ``loss = ce + λ_O·gor``; CE on the time-averaged logits, or with ``per_step_ce`` averaged over the T
    per-step logits; ``gor`` is the encoder's regulariser of this forward's encoded sequence.
    """

    def __init__(self, model: EncodedSNN, per_step_ce: bool = False):
        super().__init__()
        self.model, self.per_step_ce = model, per_step_ce
        self.lam = float(getattr(model.encoder, "lambda_gor", 0.0))

    def forward(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        if self.per_step_ce:
            check_image(x)
            steps = self.model.step_logits(self.model.encode(x))  # [T, B, K]
            logits = steps.mean(0)
            ce = F.cross_entropy(steps.flatten(0, 1), y.repeat(len(steps)))
        else:
            logits = self.model(x)
            ce = F.cross_entropy(logits, y)
        gor = self.model.encoder.regularizer().to(x.device)
        return ce + self.lam * gor, ce, gor, logits


def fit(model: EncodedSNN, train_loader: Iterable[tuple[Tensor, Tensor]], *, epochs: int, lr: float = 1e-3,
        weight_decay: float = 0.0, kernel_lr: float = 0.01, adv_train: Literal["fgsm", "pgd"] | None = None,
        eps_train: float | None = None, adv_mix: float = 1.0, adv_path: Literal["deployed", "train"] = "deployed",
        pgd_steps: int = 7, val_loader: Iterable[tuple[Tensor, Tensor]] | None = None, track_gtc: bool = False,
        optimizer: Literal["adam", "sgd"] = "adam", per_step_ce: bool = False, device: str = "auto",
        seed: int = 0, dist: DistributedContext | None = None, progress: Callable | None = None) -> History:
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
        dist: the process group of a ``torchrun`` launch (``None``: one process). With several ranks the
            model trains inside ``DistributedDataParallel`` on ``dist.device`` (``device`` is not used): every
            rank iterates the same global batches (``train_loader`` seeded alike) and computes on its
            contiguous shard, batch norm uses the global batch's statistics (``global_batch_norm``), and
            the loss is weighted by the shard's share, so a step equals the one-process step on the global
            batch (exactly for deterministic encoders and FGSM; rate draws and PGD starts differ) and the
            history holds the global means. Nothing is written; rank 0 saves (``dist.save``).
        progress: wraps the range of epochs (a progress-bar function such as ``iclr26_shared.cli.progress``;
            ``None``: no bar).

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
    world, rank = (dist.world_size, dist.rank) if dist is not None else (1, 0)
    dev = dist.device if dist is not None else resolve_device(device)
    torch.manual_seed(seed)
    model.to(dev)
    step = TrainingLoss(model, per_step_ce)
    if world > 1:
        step = dist.wrap(step)
    kernels = riemannian_kernels(model)
    kernel_ids = {id(k) for k in kernels}
    others = [p for p in model.parameters() if id(p) not in kernel_ids and p.requires_grad]
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    optimizers: list[torch.optim.Optimizer] = [
        torch.optim.Adam(others, lr=lr, weight_decay=weight_decay, foreach=True) if optimizer == "adam"
        else torch.optim.SGD(others, lr=lr, momentum=0.9, weight_decay=weight_decay, foreach=True)]
    if kernels:
        optimizers.append(RiemannianSGD(kernels, lr=kernel_lr))
    history = History()
    with global_batch_norm(model) if world > 1 else contextlib.nullcontext():
        for _ in range(epochs) if progress is None else progress(range(epochs)):
            sums = {"loss": 0.0, "ce": 0.0, "gor": 0.0, "acc": 0.0}
            n = 0
            for x, y in train_loader:
                x, y = x.to(dev), y.to(dev)
                B = len(y)
                k = max(1, round(adv_mix * B))  # the global batch's first k images are attacked
                if world > 1:  # this rank's contiguous shard of the global batch
                    lo, hi = rank * B // world, (rank + 1) * B // world
                    x, y, k = x[lo:hi], y[lo:hi], min(max(k - lo, 0), hi - lo)
                if adv_train is not None and k > 0:
                    x_adv = craft(model, x[:k], y[:k], adv_train, eps_train, adv_path, pgd_steps)
                    x = torch.cat([x_adv, x[k:]])
                model.train()
                loss, ce, gor, logits = step(x, y)
                for opt in optimizers:
                    opt.zero_grad(set_to_none=True)
                # DDP averages the ranks' gradients: weighting by the shard's share gives the global mean's
                (loss * (world * len(y) / B) if world > 1 else loss).backward()
                for opt in optimizers:
                    opt.step()
                b = len(y)
                sums["loss"] += float(loss.detach()) * b
                sums["ce"] += float(ce.detach()) * b
                sums["gor"] += float(gor.detach()) * b
                sums["acc"] += float((logits.argmax(1) == y).float().sum())
                n += b
            if world > 1:  # sums over all ranks' shards
                sums = {key: dist.mean(total) * world for key, total in sums.items()}
                n = round(dist.mean(n) * world)
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
