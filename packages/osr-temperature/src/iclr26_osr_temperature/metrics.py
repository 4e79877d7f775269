"""Open-set metrics: AUROC (known = positive) and OSCR, exact and as the reference loop computes it."""
from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

__all__ = ["auroc", "oscr", "osr_report"]


def _scores(name: str, values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of scores, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite scores, got {int((~np.isfinite(arr)).sum())} NaN/inf value(s)")
    return arr


def auroc(scores_known, scores_unknown) -> float:
    """Area under the ROC curve separating known (positive) from unknown samples; higher score = known.

    Ties count one half, exactly as ``sklearn.metrics.roc_auc_score``.

    Args:
        scores_known: ``(n_k,)`` scores of known-class test samples.
        scores_unknown: ``(n_u,)`` scores of unknown-class samples.

    Raises:
        ValueError: an array is empty, not 1-D, or holds NaN/inf.
    """
    k, u = _scores("scores_known", scores_known), _scores("scores_unknown", scores_unknown)
    target = np.concatenate([np.ones(k.size), np.zeros(u.size)])
    return float(roc_auc_score(target, np.concatenate([k, u])))


def _correct(scores_known: np.ndarray, preds_known, y_known) -> np.ndarray:
    preds, y = np.asarray(preds_known), np.asarray(y_known)
    if preds.shape != scores_known.shape or y.shape != scores_known.shape:
        raise ValueError(f"preds_known, y_known: expected shape {scores_known.shape} like scores_known, "
                         f"got {preds.shape} and {y.shape}")
    return (preds == y).astype(np.float64)


def oscr(scores_known, scores_unknown, preds_known, y_known, reference: bool = False) -> float:
    """Open-set classification rate (Dhamija et al. 2018): area under CCR versus FPR.

    For a threshold ``delta``: ``CCR = |known, correct, score > delta| / |known|`` and
    ``FPR = |unknown, score > delta| / |unknown|``. The exact version sweeps every distinct score (tied
    samples enter together), from ``(0, 0)`` to ``(1, accuracy)``, and integrates with the trapezoid rule,
    so ``OSCR <= accuracy``. ``reference=True`` reproduces the loop of ARPL's ``compute_oscr`` (used by the
    paper), which is off by ``O(1/n)`` and depends on the order of ties.

    Args:
        scores_known: ``(n_k,)`` scores of known samples (higher = known).
        scores_unknown: ``(n_u,)`` scores of unknown samples.
        preds_known: ``(n_k,)`` predicted classes of the known samples.
        y_known: ``(n_k,)`` their true classes.

    Raises:
        ValueError: empty, non-finite, or mismatched arrays.
    """
    k, u = _scores("scores_known", scores_known), _scores("scores_unknown", scores_unknown)
    correct = _correct(k, preds_known, y_known)
    if reference:
        return _oscr_reference(k, u, correct)
    scores = np.concatenate([k, u])
    is_correct = np.concatenate([correct, np.zeros(u.size)])
    is_unknown = np.concatenate([np.zeros(k.size), np.ones(u.size)])
    distinct, group = np.unique(-scores, return_inverse=True)  # groups in decreasing score
    cc = np.cumsum(np.bincount(group, weights=is_correct, minlength=distinct.size)) / k.size
    fp = np.cumsum(np.bincount(group, weights=is_unknown, minlength=distinct.size)) / u.size
    ccr, fpr = np.concatenate([[0.0], cc]), np.concatenate([[0.0], fp])
    return float(np.sum(np.diff(fpr) * (ccr[1:] + ccr[:-1]) / 2))


def _oscr_reference(k: np.ndarray, u: np.ndarray, correct: np.ndarray) -> float:
    """ARPL's loop: knowns counted from position ``j+1`` and unknowns from ``j`` of the ascending order."""
    scores = np.concatenate([k, u])
    n = scores.size
    order = np.argsort(scores, kind="stable")
    s_correct = np.concatenate([correct, np.zeros(u.size)])[order]
    s_unknown = np.concatenate([np.zeros(k.size), np.ones(u.size)])[order]
    tail_correct = np.cumsum(s_correct[::-1])[::-1]  # tail_correct[j] = sum(s_correct[j:])
    tail_unknown = np.cumsum(s_unknown[::-1])[::-1]
    ccr = np.zeros(n + 2)
    fpr = np.zeros(n + 2)
    j = np.arange(n - 1)
    ccr[j] = tail_correct[j + 1] / k.size
    fpr[j] = tail_unknown[j] / u.size
    ccr[n + 1] = fpr[n + 1] = 1.0
    order = np.lexsort((ccr, fpr))[::-1]  # descending by (FPR, CCR) as sorted(zip(FPR, CCR), reverse=True)
    f, c = fpr[order], ccr[order]
    return float(np.sum((f[:-1] - f[1:]) * (c[:-1] + c[1:]) / 2))


def osr_report(scores_known, scores_unknown, preds_known, y_known) -> dict[str, float]:
    """``{"accuracy", "auroc", "oscr"}`` of one open-set evaluation (closed-set accuracy on the knowns)."""
    k = _scores("scores_known", scores_known)
    correct = _correct(k, preds_known, y_known)
    return {"accuracy": float(correct.mean()), "auroc": auroc(k, scores_unknown),
            "oscr": oscr(k, scores_unknown, preds_known, y_known)}
