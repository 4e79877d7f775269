"""Linear probes on frozen final-norm features: [CLS] classification and per-patch segmentation, and mIoU."""
from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from torch.nn import functional as F

from .data import N_SEG_CLASSES, ShapesSeg
from .model import SpecViT
from .pretrain import init_linear_, to_tensor


@torch.no_grad()
def extract_features(model: SpecViT, images: np.ndarray, batch_size: int = 256) -> dict[str, np.ndarray]:
    """Frozen final-norm features of uint8 ``images`` ``(n, H, W, 3)``.

    Returns ``cls`` ``(n, D)`` and ``patches`` ``(n, P, D)`` as float32 numpy arrays.
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    cls, patches = [], []
    for start in range(0, len(images), batch_size):
        f = model.forward_features(to_tensor(images[start:start + batch_size], device))
        cls.append(f["cls"].float().cpu().numpy())
        patches.append(f["patches"].float().cpu().numpy())
    model.train(was_training)
    return {"cls": np.concatenate(cls), "patches": np.concatenate(patches)}


def linear_probe_cls(model: SpecViT, train: ShapesSeg, test: ShapesSeg, seed: int = 0, folds: int = 5) -> float:
    """Accuracy of a logistic regression on standardised frozen [CLS] features, ``C`` chosen from
    {0.1, 1, 10} by ``folds``-fold stratified cross-validation on ``train`` (the spec's 5 by default)."""
    f_train = extract_features(model, train.images)["cls"]
    f_test = extract_features(model, test.images)["cls"]
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    search = GridSearchCV(pipe, {"logisticregression__C": [0.1, 1.0, 10.0]}, cv=cv)
    with warnings.catch_warnings():  # C=10 on random-init features may stop at max_iter; the score is still valid
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(f_train, train.labels)
    return float(search.score(f_test, test.labels))


def mask_patches(masks: np.ndarray, patch_size: int) -> np.ndarray:
    """Dense labels ``(n, H, W)`` -> ``(n, P, p * p)``, patches in raster order, pixels row-major inside a patch."""
    n, H, W = masks.shape
    p = patch_size
    return masks.reshape(n, H // p, p, W // p, p).transpose(0, 1, 3, 2, 4).reshape(n, (H // p) * (W // p), p * p)


def confusion(pred: np.ndarray, target: np.ndarray, n_classes: int) -> np.ndarray:
    """Confusion matrix ``(n_classes, n_classes)``, rows ground truth, columns prediction."""
    pred, target = np.asarray(pred).ravel(), np.asarray(target).ravel()
    return np.bincount(target * n_classes + pred, minlength=n_classes**2).reshape(n_classes, n_classes)


def mean_iou(pred: np.ndarray, target: np.ndarray, n_classes: int = N_SEG_CLASSES,
             ignore_index: int | None = None) -> dict[str, float]:
    """mIoU and pixel accuracy of integer label maps of any equal shape.

    ``IoU_c = TP_c / (TP_c + FP_c + FN_c)``; a class absent from both prediction and ground truth is
    excluded from the mean; pixels whose target is ``ignore_index`` are left out of both.

    Raises:
        ValueError: shapes differ, or labels outside ``[0, n_classes)`` (other than ``ignore_index``).
    """
    pred, target = np.asarray(pred), np.asarray(target)
    if pred.shape != target.shape:
        raise ValueError(f"pred, target: expected equal shapes, got {pred.shape} and {target.shape}")
    if ignore_index is not None:
        keep = target != ignore_index
        pred, target = pred[keep], target[keep]
    for name, a in (("pred", pred), ("target", target)):
        if a.size and (a.min() < 0 or a.max() >= n_classes):
            raise ValueError(f"{name}: expected labels in [0, {n_classes}), got range [{a.min()}, {a.max()}]")
    cm = confusion(pred.astype(np.int64), target.astype(np.int64), n_classes)
    tp = np.diag(cm).astype(np.float64)
    union = cm.sum(0) + cm.sum(1) - tp
    present = union > 0
    return {"miou": float((tp[present] / union[present]).mean()), "pixel_acc": float(tp.sum() / max(cm.sum(), 1))}


def linear_probe_seg(model: SpecViT, train: ShapesSeg, test: ShapesSeg, epochs: int = 30, lr: float = 1e-2,
                     batch_size: int = 4096, seed: int = 0, n_classes: int = N_SEG_CLASSES,
                     ignore_index: int | None = None) -> dict[str, float]:
    """Per-patch linear segmentation probe on frozen, standardised patch features.

    Each patch token gets a linear map ``D -> p * p * n_classes`` giving class logits for its ``p x p`` pixels,
    trained with per-pixel cross-entropy (Adam, ``epochs`` over precomputed features). ``train`` and ``test``
    need ``images`` ``(n, H, W, 3)`` uint8 and integer ``masks`` ``(n, H, W)`` in ``[0, n_classes)`` or
    ``ignore_index`` (left out of the loss and the scores; e.g. 255, or 0 for ADE20k's "other"). Returns
    ``{"miou", "pixel_acc"}`` on ``test`` (see ``mean_iou``).

    Raises:
        ValueError: ``n_classes`` < 2, or a mask label outside ``[0, n_classes)`` other than ``ignore_index``.
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f"n_classes: expected an integer >= 2, got {n_classes!r}")
    for name, part in (("train", train), ("test", test)):
        labels = np.unique(part.masks)
        bad = labels[((labels < 0) | (labels >= n_classes)) & (labels != ignore_index)]
        if bad.size:
            raise ValueError(f"{name}.masks: expected labels in [0, {n_classes}) or ignore_index={ignore_index}, "
                             f"got {bad[:5].tolist()}")
    p = model.patch_size
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    f_train = torch.as_tensor(extract_features(model, train.images)["patches"])
    f_test = torch.as_tensor(extract_features(model, test.images)["patches"])
    D = f_train.shape[-1]
    mu, sd = f_train.reshape(-1, D).mean(0), f_train.reshape(-1, D).std(0) + 1e-6
    x_train = ((f_train.reshape(-1, D) - mu) / sd).to(device)
    y_train = torch.as_tensor(mask_patches(train.masks, p).reshape(-1, p * p).astype(np.int64), device=device)
    head = init_linear_(torch.nn.Linear(D, p * p * n_classes), gen).to(device)
    ignore = -100 if ignore_index is None else ignore_index
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    opt = torch.optim.Adam(head.parameters(), lr=lr, foreach=True)
    for _ in range(epochs):
        order = torch.randperm(len(x_train), generator=gen).to(device)
        for start in range(0, len(order), batch_size):
            i = order[start:start + batch_size]
            logits = head(x_train[i]).reshape(len(i) * p * p, n_classes)
            loss = F.cross_entropy(logits, y_train[i].reshape(-1), ignore_index=ignore)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    with torch.no_grad():
        x_test = ((f_test.reshape(-1, D) - mu) / sd).to(device)
        pred = head(x_test).reshape(-1, p * p, n_classes).argmax(-1).cpu().numpy()
    return mean_iou(pred.reshape(-1), mask_patches(test.masks, p).reshape(-1), n_classes, ignore_index)
