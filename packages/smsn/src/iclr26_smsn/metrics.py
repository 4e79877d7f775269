"""BraTS region Dice and the 15-subset evaluation (encode once, fuse 15 times)."""
from __future__ import annotations

import numpy as np
import torch

from .data import BRATS_LABELS, subset_masks, subset_name

REGIONS = ("WT", "TC", "ET")
_REGION_LABELS = {"WT": (1, 2, 4), "TC": (1, 4), "ET": (4,)}


def _check_labels(arr: np.ndarray, name: str) -> None:
    bad = np.setdiff1d(np.unique(arr), BRATS_LABELS)
    if bad.size:
        raise ValueError(f"{name}: expected values in {BRATS_LABELS}, got also {bad.tolist()}")


def _check_pair(pred, gt) -> tuple[np.ndarray, np.ndarray]:
    pred, gt = np.asarray(pred), np.asarray(gt)
    if pred.shape != gt.shape:
        raise ValueError(f"pred_labels: expected the shape of gt_labels {gt.shape}, got {pred.shape}")
    _check_labels(pred, "pred_labels")
    _check_labels(gt, "gt_labels")
    return pred, gt


def region_dice_per_sample(pred_labels, gt_labels) -> np.ndarray:
    """Dice of WT, TC, ET per sample: ``(B, *spatial)`` label maps -> ``(B, 3)``.

    Empty prediction and empty ground truth give 1.0; empty ground truth with false positives 0.0.
    """
    pred, gt = _check_pair(pred_labels, gt_labels)
    pred, gt = pred.reshape(len(pred), -1), gt.reshape(len(gt), -1)
    out = np.empty((len(pred), 3))
    for j, region in enumerate(REGIONS):
        p, g = np.isin(pred, _REGION_LABELS[region]), np.isin(gt, _REGION_LABELS[region])
        inter, total = (p & g).sum(1), p.sum(1) + g.sum(1)
        out[:, j] = np.where(total == 0, 1.0, 2 * inter / np.maximum(total, 1))
    return out


def region_dice(pred_labels, gt_labels) -> dict[str, float]:
    """Dice of the BraTS regions WT = {1,2,4}, TC = {1,4}, ET = {4} over the whole arrays.

    Args:
        pred_labels, gt_labels: label maps of the same shape with values in {0, 1, 2, 4}.

    Returns:
        ``{"WT": d, "TC": d, "ET": d}``; empty-empty = 1.0, never NaN.

    Raises:
        ValueError: shape mismatch or labels outside {0, 1, 2, 4}.
    """
    pred, gt = _check_pair(pred_labels, gt_labels)
    d = region_dice_per_sample(pred.reshape(1, -1), gt.reshape(1, -1))[0]
    return dict(zip(REGIONS, map(float, d)))


def _predicted_regions(logits: torch.Tensor) -> torch.Tensor:
    """WT, TC, ET masks ``(B, 3, P)`` bool of the arg-max class of ``logits (B, 4, *S)`` over classes 0..3 (BraTS
    labels 0, 1, 2, 4): WT = {1, 2, 3}, TC = {1, 3}, ET = {3}. The arg-max is a running strict comparison over
    the classes (ties go to the lower class, as ``torch.argmax``), several times faster than ``argmax(1)``."""
    best, cls = logits[:, 0], torch.zeros(logits[:, 0].shape, dtype=torch.uint8, device=logits.device)
    for k in range(1, logits.shape[1]):
        better = logits[:, k] > best
        best = torch.where(better, logits[:, k], best)
        cls.masked_fill_(better, k)
    et = cls == 3
    return torch.stack([cls != 0, (cls == 1) | et, et], 1).flatten(2)


def _dice_from_regions(pred: torch.Tensor, gt: torch.Tensor) -> np.ndarray:
    """Per-sample Dice of region masks ``pred, gt (B, 3, P)`` bool -> ``(B, 3)`` (empty-empty = 1.0)."""
    inter = (pred & gt).sum(2).double()
    total = (pred.sum(2) + gt.sum(2)).double()
    return torch.where(total == 0, 1.0, 2 * inter / total.clamp_min(1)).numpy()


@torch.inference_mode()
def evaluate_subsets(model, dataset, *, tta_orders: int = 1, batch_size: int = 16, device=None,
                     generator: torch.Generator | None = None, with_hd95: bool = False) -> dict:
    """Region Dice of ``model`` on ``dataset`` for each of the 15 modality subsets.

    Each batch is encoded once (a modality's encoding does not depend on the others); what all subsets share
    (the skip half of the decoder's first convolutions, SMSN's modality tokens and their projections) is computed
    once (``prepare_subsets``), then each subset is fused and decoded channels-last (``decode_subset``), which
    equals running the model on the zero-filled input up to float rounding.

    Args:
        model: ``SMSN`` or ``ParallelFusionNet``.
        dataset: anything indexable returning ``(image (4, ...), label (...))`` with BraTS labels
            (e.g. ``PhantomDataset``).
        tta_orders: 1 = the deterministic test-time order; K > 1 averages softmax over K random
            modality orders (SMSN only).
        batch_size: slices per forward pass.
        device: where to run (default: the model's device).
        with_hd95: also compute ``hd95`` per slice, subset and region (about 2 ms per slice and subset at 32²).

    Returns:
        dict with ``subsets`` (15 names), ``dice`` ``(15, 3)`` mean over samples, ``per_sample``
        ``(N, 15, 3)``, ``mean`` (per region), ``overall`` (mean of the 45 cells) and ``hard``
        (mean over the 10 subsets with <= 2 modalities); with ``with_hd95``, also ``hd95`` ``(15, 3)`` mean
        over samples (pixels) and ``hd95_per_sample`` ``(N, 15, 3)``.
    """
    from .models import SMSN, reorder_modalities

    if not isinstance(tta_orders, int) or tta_orders < 1:
        raise ValueError(f"tta_orders: expected a positive integer, got {tta_orders!r}")
    device = next(model.parameters()).device if device is None else torch.device(device)
    was_training = model.training
    model.eval()
    masks = torch.as_tensor(subset_masks(), device=device)
    per_sample, per_sample_hd = [], []
    try:
        for start in range(0, len(dataset), batch_size):
            items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
            x = torch.stack([it[0] for it in items]).to(device)
            y = np.stack([np.asarray(it[1]) for it in items])
            _check_labels(y, "dataset labels")
            gt = torch.stack([torch.as_tensor(np.isin(y, _REGION_LABELS[r])) for r in REGIONS], 1).flatten(2)
            model.check_input(x, torch.ones(x.shape[:2], dtype=torch.bool, device=device))
            prepared = model.prepare_subsets(x)
            rows, hd_rows = [], []
            for avail in masks:
                if tta_orders == 1 or not isinstance(model, SMSN):
                    scores = model.decode_subset(prepared, avail)
                else:
                    m = avail.expand(len(x), -1)
                    scores = sum(model.decode_subset(prepared, avail, reorder_modalities(m, generator)).softmax(1)
                                 for _ in range(tta_orders))
                pred = _predicted_regions(scores).cpu()
                rows.append(_dice_from_regions(pred, gt))
                if with_hd95:
                    shape = y.shape[1:]
                    hd_rows.append([[hd95(p.reshape(shape), g.reshape(shape)) for p, g in zip(ps, gs)]
                                    for ps, gs in zip(pred.numpy(), gt.numpy())])
            per_sample.append(np.stack(rows, axis=1))
            if with_hd95:
                per_sample_hd.append(np.stack(hd_rows, axis=1))
    finally:
        model.train(was_training)
    out = summarize(np.concatenate(per_sample))
    if with_hd95:
        out["hd95_per_sample"] = np.concatenate(per_sample_hd)
        out["hd95"] = out["hd95_per_sample"].mean(0)
    return out


def summarize(per_sample: np.ndarray) -> dict:
    """``(N, 15, 3)`` per-sample Dice -> the summary dict of ``evaluate_subsets``."""
    dice = per_sample.mean(0)
    sizes = subset_masks().sum(1)
    return {"subsets": [subset_name(m) for m in subset_masks()], "dice": dice, "per_sample": per_sample,
            "mean": dict(zip(REGIONS, dice.mean(0).tolist())), "overall": float(dice.mean()),
            "hard": float(dice[sizes <= 2].mean())}


def _surface(mask: np.ndarray) -> np.ndarray:
    """Boundary voxels of a bool mask: the mask minus its erosion (face connectivity, outside counts as empty)."""
    from scipy import ndimage

    return mask & ~ndimage.binary_erosion(mask, ndimage.generate_binary_structure(mask.ndim, 1), border_value=0)


def hd95(pred_mask, gt_mask) -> float:
    """Symmetric 95th-percentile Hausdorff distance (pixels/voxels) between two bool masks of the same shape.

    The distances from every surface voxel of one mask to the nearest surface voxel of the other, both directions
    pooled, and their 95th percentile (linear interpolation), as ``medpy.metric.binary.hd95``. Empty rules
    (BraTS-style, finite): both empty -> 0.0; exactly one empty -> the image diagonal (the largest possible
    distance), so a missed or hallucinated region is penalised instead of dropped.

    Raises:
        ValueError: shape mismatch.
    """
    from scipy import ndimage

    p, g = np.asarray(pred_mask, dtype=bool), np.asarray(gt_mask, dtype=bool)
    if p.shape != g.shape:
        raise ValueError(f"pred_mask: expected the shape of gt_mask {g.shape}, got {p.shape}")
    if not p.any() and not g.any():
        return 0.0
    if not p.any() or not g.any():
        return float(np.sqrt(sum(s * s for s in p.shape)))
    sp, sg = _surface(p), _surface(g)
    d_to_g = ndimage.distance_transform_edt(~sg)[sp]
    d_to_p = ndimage.distance_transform_edt(~sp)[sg]
    return float(np.percentile(np.concatenate([d_to_g, d_to_p]), 95))


def region_hd95(pred_labels, gt_labels) -> dict[str, float]:
    """``hd95`` of the BraTS regions WT, TC, ET between two label maps (values in {0, 1, 2, 4}, one case)."""
    pred, gt = _check_pair(pred_labels, gt_labels)
    return {r: hd95(np.isin(pred, _REGION_LABELS[r]), np.isin(gt, _REGION_LABELS[r])) for r in REGIONS}
