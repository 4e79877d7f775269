"""BraTS region Dice and the 15-subset evaluation (encode once, fuse 15 times)."""
from __future__ import annotations

import numpy as np
import torch

from .data import BRATS_LABELS, classes_to_labels, subset_masks, subset_name

REGIONS = ("WT", "TC", "ET")
_REGION_LABELS = {"WT": (1, 2, 4), "TC": (1, 4), "ET": (4,)}


def _check_pair(pred, gt) -> tuple[np.ndarray, np.ndarray]:
    pred, gt = np.asarray(pred), np.asarray(gt)
    if pred.shape != gt.shape:
        raise ValueError(f"pred_labels: expected the shape of gt_labels {gt.shape}, got {pred.shape}")
    for name, arr in (("pred_labels", pred), ("gt_labels", gt)):
        bad = np.setdiff1d(np.unique(arr), BRATS_LABELS)
        if bad.size:
            raise ValueError(f"{name}: expected values in {BRATS_LABELS}, got also {bad.tolist()}")
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


@torch.no_grad()
def evaluate_subsets(model, dataset, *, tta_orders: int = 1, batch_size: int = 16, device=None,
                     generator: torch.Generator | None = None) -> dict:
    """Region Dice of ``model`` on ``dataset`` for each of the 15 modality subsets.

    Each batch is encoded once per modality (plus once with zeros); each subset's features are
    selected from these, which equals running the model on the zero-filled input.

    Args:
        model: ``SMSN`` or ``ParallelFusionNet``.
        dataset: anything indexable returning ``(image (4, ...), label (...))`` with BraTS labels
            (e.g. ``PhantomDataset``).
        tta_orders: 1 = the deterministic test-time order; K > 1 averages softmax over K random
            modality orders (SMSN only).
        batch_size: slices per forward pass.
        device: where to run (default: the model's device).

    Returns:
        dict with ``subsets`` (15 names), ``dice`` ``(15, 3)`` mean over samples, ``per_sample``
        ``(N, 15, 3)``, ``mean`` (per region), ``overall`` (mean of the 45 cells) and ``hard``
        (mean over the 10 subsets with <= 2 modalities).
    """
    from .models import SMSN, reorder_modalities

    if not isinstance(tta_orders, int) or tta_orders < 1:
        raise ValueError(f"tta_orders: expected a positive integer, got {tta_orders!r}")
    device = next(model.parameters()).device if device is None else torch.device(device)
    was_training = model.training
    model.eval()
    masks = torch.as_tensor(subset_masks(), device=device)
    per_sample = []
    try:
        for start in range(0, len(dataset), batch_size):
            items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
            x = torch.stack([it[0] for it in items]).to(device)
            y = torch.stack([torch.as_tensor(it[1]) for it in items]).cpu().numpy()
            model.check_input(x, torch.ones(x.shape[:2], dtype=torch.bool, device=device))
            full, zero = model.encode(x), model.encode(torch.zeros_like(x))
            rows = []
            for mask in masks:
                m = mask.expand(len(x), -1)
                sel = [torch.where(m.reshape(*m.shape, *([1] * (f.ndim - 2))), f, z) for f, z in zip(full, zero)]
                if tta_orders == 1 or not isinstance(model, SMSN):
                    probs = model.decode(sel, m).logits.softmax(1)
                else:
                    probs = sum(model.decode(sel, m, reorder_modalities(m, generator)).logits.softmax(1)
                                for _ in range(tta_orders)) / tta_orders
                pred = classes_to_labels(probs.argmax(1)).cpu().numpy()
                rows.append(region_dice_per_sample(pred, y))
            per_sample.append(np.stack(rows, axis=1))
    finally:
        model.train(was_training)
    per_sample = np.concatenate(per_sample)
    return summarize(per_sample)


def summarize(per_sample: np.ndarray) -> dict:
    """``(N, 15, 3)`` per-sample Dice -> the summary dict of ``evaluate_subsets``."""
    dice = per_sample.mean(0)
    sizes = subset_masks().sum(1)
    return {"subsets": [subset_name(m) for m in subset_masks()], "dice": dice, "per_sample": per_sample,
            "mean": dict(zip(REGIONS, dice.mean(0).tolist())), "overall": float(dice.mean()),
            "hard": float(dice[sizes <= 2].mean())}
