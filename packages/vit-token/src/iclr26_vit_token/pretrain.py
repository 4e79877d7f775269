"""Pretraining with a global and a dense term (a small DINOv2 analogue), and image preprocessing.

Every objective trains a linear head on the final [CLS] with cross-entropy on the 8-way global label (the
stand-in for DINO's [CLS] loss). The dense term replaces a share of the patch tokens by a learned mask token:

- ``"cls+masked_patch"``: a linear head on the final patch tokens predicts the pixels of the masked patches
  (MSE, weight 1; per-patch-normalised or raw pixels, ``pixel_target``).
- ``"cls+ibot"``: iBOT's masked patch self-distillation (DINOv2's dense loss): an EMA teacher sees the
  unmasked image, its patch tokens go through a projection head to ``K`` prototype logits, centred and
  sharpened (temperature 0.04); the student, fed the masked image, predicts that distribution for every
  masked patch through its own head (temperature 0.1; cross-entropy, weight 1).
- ``"cls"``: the [CLS] term only (the no-dense-loss ablation).

The mask token and the heads live in ``PretrainHeads``, outside the backbone. No dense labels are used.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from iclr26_shared.distributed import DistributedContext
from torch import nn
from torch.nn import functional as F

from .data import N_GLOBAL_CLASSES, ShapesSeg
from .model import SpecViT

OBJECTIVES = ("cls+masked_patch", "cls+ibot", "cls")
PIXEL_TARGETS = ("raw", "patch_norm")
PIXEL_MEAN, PIXEL_STD = 0.5, 0.25


def to_tensor(images: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """uint8 ``(n, H, W, 3)`` -> normalised float ``(n, 3, H, W)`` on ``device`` (copied; input may be read-only).

    Raises:
        ValueError: ``images`` is not a uint8 array of shape ``(n, H, W, 3)`` (float images, which could
            hold NaN or values outside 0..255, are refused rather than cast).
    """
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise ValueError(f"images: expected a uint8 array of shape (n, H, W, 3), got {images.dtype} "
                         f"of shape {images.shape}")
    x = torch.as_tensor(np.array(images), device=device).permute(0, 3, 1, 2).float()
    return (x / 255.0 - PIXEL_MEAN) / PIXEL_STD


def patch_pixels(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """``(B, C, H, W)`` -> ``(B, P, C * p * p)``, patches in raster order (the order of the patch tokens)."""
    B, C, H, W = images.shape
    p = patch_size
    x = images.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // p) * (W // p), C * p * p)


def random_patch_mask(batch: int, n_patches: int, ratio: float, generator: torch.Generator,
                      device: torch.device | str = "cpu") -> torch.Tensor:
    """Boolean ``(batch, n_patches)`` with exactly ``round(ratio * n_patches)`` True per row, uniformly placed."""
    n_mask = int(round(ratio * n_patches))
    order = torch.rand(batch, n_patches, generator=generator).argsort(dim=1)
    return (order < n_mask).to(device)


def init_linear_(layer: nn.Linear, generator: torch.Generator | None) -> nn.Linear:
    """Redraws ``layer``'s weight and bias from nn.Linear's default U(-1/sqrt(in), 1/sqrt(in)) with ``generator``
    (the global RNG when None), so the draw does not depend on what else used the global RNG."""
    bound = 1.0 / math.sqrt(layer.in_features)
    with torch.no_grad():
        layer.weight.uniform_(-bound, bound, generator=generator)
        if layer.bias is not None:
            layer.bias.uniform_(-bound, bound, generator=generator)
    return layer


class PatchProjection(nn.Module):
    """iBOT's projection head, scaled down: ``(..., D)`` -> MLP (D -> hidden -> hidden -> bottleneck, GELU)
    -> L2-normalised -> ``K`` prototype logits ``(..., K)`` (cosine to weight-normalised prototypes)."""

    def __init__(self, dim: int, hidden: int = 256, bottleneck: int = 64, n_prototypes: int = 512,
                 generator: torch.Generator | None = None):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, bottleneck))
        self.prototypes = nn.Parameter(torch.empty(n_prototypes, bottleneck))
        for layer in self.mlp:
            if isinstance(layer, nn.Linear):
                init_linear_(layer, generator)
        with torch.no_grad():
            self.prototypes.normal_(generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.mlp(x), dim=-1) @ F.normalize(self.prototypes, dim=-1).T


class PretrainHeads(nn.Module):
    """Mask token ``(D,)``, [CLS] classifier ``D -> n_classes``, pixel head ``D -> C * p * p`` and the iBOT
    projection ``D -> K`` (``PatchProjection``).

    With ``seed`` the initial values are drawn from a private generator seeded with it (the global torch RNG
    is left alone), so two runs, or the base and the specialised model of one seed, start from identical heads.
    """

    def __init__(self, dim: int, n_classes: int, pixels_per_patch: int, seed: int | None = None):
        super().__init__()
        self.mask_token = nn.Parameter(torch.zeros(dim))
        self.cls_head = nn.Linear(dim, n_classes)
        self.pixel_head = nn.Linear(dim, pixels_per_patch)
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        with torch.no_grad():
            self.mask_token.normal_(std=0.02, generator=gen)
        init_linear_(self.cls_head, gen)
        init_linear_(self.pixel_head, gen)
        self.patch_proj = PatchProjection(dim, generator=gen)

    @classmethod
    def for_model(cls, model: SpecViT, seed: int | None = None) -> PretrainHeads:
        """Heads sized for ``model`` (its width and patch pixels), the 8-way global label, seeded by ``seed``."""
        return cls(model.dim, N_GLOBAL_CLASSES, model.patch_embed.proj.in_channels * model.patch_size ** 2, seed)


class PatchTeacher(nn.Module):
    """iBOT's teacher: EMA copies of the backbone and of the projection head, and the centre ``(K,)`` of its
    patch logits (an EMA of their batch mean), which with the low temperature keeps it from collapsing.

    Args:
        model, heads: the student, copied as the teacher's starting point (same weights).
        momentum: EMA momentum at the first step; it follows a cosine to 1 at the last (iBOT's schedule).
        temperature: teacher softmax temperature (student: ``STUDENT_TEMPERATURE``).
        center_momentum: EMA momentum of the centre.
    """

    def __init__(self, model: SpecViT, heads: PretrainHeads, momentum: float = 0.99, temperature: float = 0.04,
                 center_momentum: float = 0.9):
        super().__init__()
        self.model, self.proj = copy.deepcopy(model).eval(), copy.deepcopy(heads.patch_proj)
        self.requires_grad_(False)
        self.register_buffer("center", torch.zeros(heads.patch_proj.prototypes.shape[0],
                                                   device=heads.patch_proj.prototypes.device))
        self.momentum, self.temperature, self.center_momentum = momentum, temperature, center_momentum

    @torch.no_grad()
    def targets(self, images: torch.Tensor) -> torch.Tensor:
        """Centred, sharpened prototype distributions ``(B, P, K)`` of the unmasked ``images`` ``(B, C, H, W)``;
        updates the centre with this batch."""
        logits = self.proj(self.model.forward_features(images)["patches"])
        probs = F.softmax((logits - self.center) / self.temperature, dim=-1)
        total = torch.cat([logits.sum(dim=(0, 1)), logits.new_tensor([logits.shape[0] * logits.shape[1]])])
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(total)  # the centre of the global batch, not of this rank's shard
        self.center.mul_(self.center_momentum).add_(total[:-1] / total[-1], alpha=1 - self.center_momentum)
        return probs

    @torch.no_grad()
    def update(self, model: SpecViT, heads: PretrainHeads, step: int, total: int) -> None:
        """EMA step after optimiser step ``step`` of ``total``: ``teacher = m * teacher + (1 - m) * student``."""
        m = 1.0 - (1.0 - self.momentum) * 0.5 * (1.0 + math.cos(math.pi * step / max(1, total - 1)))
        pairs = [(self.model, model), (self.proj, heads.patch_proj)]
        teacher = [t for a, _ in pairs for t in a.parameters()]
        student = [s.detach() for _, b in pairs for s in b.parameters()]
        torch._foreach_mul_(teacher, m)
        torch._foreach_add_(teacher, student, alpha=1.0 - m)


STUDENT_TEMPERATURE = 0.1


def pretrain_loss(model: SpecViT, heads: PretrainHeads, images: torch.Tensor, labels: torch.Tensor,
                  mask: torch.Tensor | None, pixel_target: str = "raw",
                  teacher: PatchTeacher | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """The objective on one batch of ``images`` ``(B, C, H, W)``, ``labels`` ``(B,)``, ``mask`` ``(B, P)``:
    ``CE(cls_head(z_cls), y)`` plus, over the masked patches, ``MSE(pixel_head(z_patch), target pixels)`` or,
    with a ``teacher``, iBOT's ``CE(teacher distribution, softmax(patch_proj(z_patch) / 0.1))``; with
    ``mask=None`` only the [CLS] term. Returns the loss and its parts (``ce``, ``mse`` or ``ibot``).

    ``pixel_target="raw"`` regresses the input pixels as the network sees them (globally normalised, so a
    patch's colour and brightness are part of the target); ``"patch_norm"`` first standardises each patch
    (MAE's normalised-pixel target, which keeps only the texture inside a patch)."""
    feats = model.forward_features(images, mask=mask, mask_token=heads.mask_token if mask is not None else None)
    ce = F.cross_entropy(heads.cls_head(feats["cls"]), labels)
    parts = {"ce": float(ce.detach())}
    if mask is None:
        return ce, parts
    if teacher is not None:
        target = teacher.targets(images)[mask]  # (M, K) for the M masked patches
        log_pred = F.log_softmax(heads.patch_proj(feats["patches"][mask]) / STUDENT_TEMPERATURE, dim=-1)
        distill = -(target * log_pred).sum(-1).mean()
        parts["ibot"] = float(distill.detach())
        return ce + distill, parts
    target = patch_pixels(images, model.patch_size)
    if pixel_target == "patch_norm":
        target = (target - target.mean(-1, keepdim=True)) / (target.var(-1, keepdim=True) + 1e-6).sqrt()
    pred = heads.pixel_head(feats["patches"])
    mse = ((pred - target) ** 2).mean(-1)[mask].mean()
    parts["mse"] = float(mse.detach())
    return ce + mse, parts


def warmup_cosine(step: int, total: int, warmup_frac: float = 0.05) -> float:
    """Learning-rate multiplier: linear warm-up over ``warmup_frac`` of ``total`` steps, then cosine to 0."""
    warm = max(1, int(round(warmup_frac * total)))
    if step < warm:
        return (step + 1) / warm
    return 0.5 * (1.0 + math.cos(math.pi * (step - warm) / max(1, total - warm)))


class PretrainStep(nn.Module):
    """The backbone and the heads ``objective`` trains behind one forward (``pretrain_loss``), the call
    ``DistributedDataParallel`` wraps; only the heads ``objective`` uses are registered (the teacher is not
    trained by the optimiser, so it is held outside the module's parameters)."""

    def __init__(self, model: SpecViT, heads: PretrainHeads, objective: str, pixel_target: str,
                 teacher: PatchTeacher | None = None):
        super().__init__()
        self.model, self.cls_head = model, heads.cls_head
        if objective == "cls+masked_patch":
            self.pixel_head, self.mask_token = heads.pixel_head, heads.mask_token
        if objective == "cls+ibot":
            self.patch_proj, self.mask_token = heads.patch_proj, heads.mask_token
        # tuples: not registered twice (heads) or at all (teacher)
        self._heads, self._teacher, self.pixel_target = (heads,), (teacher,), pixel_target

    def forward(self, images: torch.Tensor, labels: torch.Tensor,
                mask: torch.Tensor | None) -> tuple[torch.Tensor, dict[str, float]]:
        return pretrain_loss(self.model, self._heads[0], images, labels, mask, self.pixel_target, self._teacher[0])


@dataclass
class PretrainResult:
    """What ``pretrain`` returns: the trained ``model`` and ``heads`` and the loss ``history`` (one dict per step)."""

    model: SpecViT
    heads: PretrainHeads
    history: list[dict[str, float]] = field(default_factory=list)


def pretrain(model: SpecViT, dataset: ShapesSeg, steps: int, objective: str = "cls+masked_patch",
             mask_ratio: float = 0.75, lr: float = 1e-3, batch_size: int = 128, seed: int = 0,
             weight_decay: float = 0.05, heads: PretrainHeads | None = None, pixel_target: str = "raw",
             teacher_momentum: float = 0.99,
             callback: Callable[[int, dict[str, float]], None] | None = None,
             dist: DistributedContext | None = None, progress: Callable | None = None) -> PretrainResult:
    """Trains ``model`` in place with AdamW and a warm-up + cosine schedule on ``dataset``.

    Batches, flips and masks are drawn from a ``torch.Generator`` seeded with ``seed`` only, so two models
    trained with the same seed see identical data. Weight decay applies to matrices only (not to norms,
    biases, tokens or position embeddings). Runs on the device of ``model``.

    Args:
        model: the backbone; ``dataset``: ShapesSeg with global labels; ``steps``, ``batch_size``: schedule.
        objective: ``"cls+masked_patch"``, ``"cls+ibot"`` or ``"cls"``.
        mask_ratio: share of masked patches. The defaults (raw pixels, 0.75, as MAE/SimMIM) replace the spec's
            per-patch-normalised target at 0.4, whose MSE stayed near that of predicting zero (0.90 vs 1.0)
            while the raw target at 0.75 reaches 0.55 vs 0.71; iBOT uses 0.1-0.5 (the benchmark gives it 0.4).
        heads: pretraining heads to start or continue from (when None, a fresh set seeded with ``seed``);
            they are trained in place.
        pixel_target: ``"raw"`` or ``"patch_norm"`` (see ``pretrain_loss``).
        teacher_momentum: ``"cls+ibot"``: the EMA teacher's momentum at the first step (cosine to 1 at the last;
            ``PatchTeacher``).
        callback: called as ``callback(step, losses)`` after every step (on every rank).
        progress: wraps the range of steps (a progress-bar function such as ``iclr26_shared.cli.progress``).
        dist: the process group of a ``torchrun`` launch (``None``: one process). With several ranks the
            backbone and heads train inside ``DistributedDataParallel`` on ``dist.device``: every rank draws
            the same global batch (indices, flips, masks) and computes on its contiguous shard, with the loss
            weighted by the shard's share, so a step equals the one-process step on the global batch and the
            history holds the global batch's losses. Nothing is written; rank 0 saves (``dist.save``).

    Raises:
        ValueError: unknown objective or pixel target, non-positive steps/batch size, ``mask_ratio`` outside (0, 1),
            a batch smaller than the number of ranks.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {OBJECTIVES}, got {objective!r}")
    if pixel_target not in PIXEL_TARGETS:
        raise ValueError(f"pixel_target: expected one of {PIXEL_TARGETS}, got {pixel_target!r}")
    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    if not 0.0 <= teacher_momentum < 1.0:
        raise ValueError(f"teacher_momentum: expected a value in [0, 1), got {teacher_momentum}")
    if not 0.0 < mask_ratio < 1.0:
        raise ValueError(f"mask_ratio: expected a value in (0, 1), got {mask_ratio}")
    world, rank = (dist.world_size, dist.rank) if dist is not None else (1, 0)
    if batch_size < world:
        raise ValueError(f"batch_size: expected at least one image per rank ({world}), got {batch_size}")
    if dist is not None:
        model.to(dist.device)
    device = next(model.parameters()).device
    p = model.patch_size
    heads = (heads if heads is not None else PretrainHeads.for_model(model, seed)).to(device)
    params = list(model.parameters()) + list(heads.parameters())
    decay = [q for q in params if q.dim() >= 2 and q.shape[0] != 1]
    no_decay = [q for q in params if not (q.dim() >= 2 and q.shape[0] != 1)]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    opt = torch.optim.AdamW(groups, lr=lr, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_cosine(s, steps))
    gen = torch.Generator().manual_seed(seed)
    images = to_tensor(dataset.images, device)
    labels = torch.as_tensor(dataset.labels, device=device)
    n = len(dataset)
    n_patches = (images.shape[-2] // p) * (images.shape[-1] // p)
    teacher = PatchTeacher(model, heads, teacher_momentum) if objective == "cls+ibot" else None
    step_loss = PretrainStep(model, heads, objective, pixel_target, teacher)
    if world > 1:
        step_loss = dist.wrap(step_loss)
    shard = slice(rank * batch_size // world, (rank + 1) * batch_size // world)  # this rank's part of a batch
    model.train()
    history: list[dict[str, float]] = []
    for step in range(steps) if progress is None else progress(range(steps)):
        idx = torch.randint(0, n, (batch_size,), generator=gen).to(device)
        flip = (torch.rand(batch_size, generator=gen) < 0.5).to(device)
        x = images[idx]
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        mask = (random_patch_mask(batch_size, n_patches, mask_ratio, gen, device)
                if objective != "cls" else None)
        y = labels[idx]
        if world > 1:
            x, y, mask = x[shard], y[shard], mask[shard] if mask is not None else None
        loss, parts = step_loss(x, y, mask)
        parts["loss"] = float(loss.detach())
        if world > 1:  # DDP averages the ranks' gradients: weighted by the shard's share they give the global mean's
            share = world * len(y) / batch_size
            loss = loss * share
            parts = {k: dist.mean(v * share) for k, v in parts.items()}
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if teacher is not None:
            teacher.update(model, heads, step, steps)
        history.append(parts)
        if callback is not None:
            callback(step, parts)
    model.eval()
    return PretrainResult(model=model, heads=heads, history=history)
