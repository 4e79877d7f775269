"""Evaluation: oracle metrics on labelled test rows, and PU-only proxies for model selection."""
from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, precision_recall_fscore_support, roc_auc_score


def oracle_metrics(y_true, score, pred) -> dict[str, float]:
    """Accuracy, precision, recall, F1 (positive class), ROC-AUC of ``score`` (NaN with one class),
    and ``degenerate`` (1.0 when every prediction is the same class). All inputs ``(n,)``."""
    y_true, score, pred = np.asarray(y_true), np.asarray(score, dtype=np.float64), np.asarray(pred)
    if not (y_true.shape == score.shape == pred.shape) or y_true.ndim != 1:
        raise ValueError(f"y_true, score, pred: expected three 1-D arrays of one length, got "
                         f"{y_true.shape}, {score.shape}, {pred.shape}")
    p, r, f, _ = precision_recall_fscore_support(y_true, pred, average="binary", zero_division=0)
    auc = float(roc_auc_score(y_true, score)) if len(np.unique(y_true)) == 2 else float("nan")
    return {"accuracy": float(accuracy_score(y_true, pred)), "precision": float(p), "recall": float(r),
            "f1": float(f), "auc": auc, "degenerate": float(len(np.unique(pred)) == 1)}


def _check_s(s) -> np.ndarray:
    s = np.asarray(s)
    if not set(np.unique(s).tolist()) <= {0, 1}:
        raise ValueError(f"s: expected PU labels in {{0, 1}}, got values {np.unique(s)[:10].tolist()}")
    if s.sum() == 0 or s.sum() == len(s):
        raise ValueError("s: expected at least one labeled (1) and one unlabeled (0) row")
    return s


def proxy_accuracy(s, pred, prior: float, scheme: str = "case-control") -> float:
    """Proxy accuracy PA (Wang et al. 2026) from PU labels only.

    With TPR_L the fraction of L predicted positive: case-control PA = 2 prior TPR_L + NEG_U
    (NEG_U = fraction of U predicted negative); single PA = 2 prior TPR_L + (#L predicted 1 +
    #U predicted 0)/(|L| + |U|). Under SCAR case-control E[PA] = accuracy + prior.
    """
    s, pred = _check_s(s), np.asarray(pred)
    lab = s == 1
    tpr = float(pred[lab].mean())
    if scheme == "case-control":
        return 2 * prior * tpr + float((pred[~lab] == 0).mean())
    if scheme == "single":
        correct = float((pred[lab] == 1).sum() + (pred[~lab] == 0).sum())
        return 2 * prior * tpr + correct / len(s)
    raise ValueError(f"scheme: expected 'case-control' or 'single', got {scheme!r}")


def lee_liu_score(s, pred) -> float:
    """Lee and Liu (ICML 2003) PU model-selection score r^2 / P(pred = 1), from PU labels only.

    r = fraction of the labeled rows predicted positive (under SCAR an unbiased estimate of the recall) and
    P(pred = 1) the fraction of all rows predicted positive; r^2 / P(pred = 1) = precision * recall / P(y = 1),
    so it ranks models as precision * recall does. ``s, pred`` ``(n,)``; 0.0 when nothing is predicted positive.
    """
    s, pred = _check_s(s), np.asarray(pred)
    rate = float(pred.mean())
    return float(pred[s == 1].mean()) ** 2 / rate if rate > 0 else 0.0


def pu_f1_score(s, pred, prior: float) -> float:
    """F1 estimated from PU labels and the class prior ``prior`` = P(y = 1) of the scored rows.

    recall r = fraction of the labeled rows predicted positive; precision p = prior * r / P(pred = 1)
    (Bayes' rule under SCAR), clipped to 1; F1 = 2 p r / (p + r). ``s, pred`` ``(n,)``.
    """
    s, pred = _check_s(s), np.asarray(pred)
    if not 0 < prior < 1:
        raise ValueError(f"prior: expected a number in (0, 1), got {prior!r}")
    r, rate = float(pred[s == 1].mean()), float(pred.mean())
    if r == 0 or rate == 0:
        return 0.0
    p = min(prior * r / rate, 1.0)
    return 2 * p * r / (p + r)


def proxy_auc(s, score) -> float:
    """Proxy AUC: ROC-AUC of labeled (1) versus unlabeled (0) rows by ``score``."""
    return float(roc_auc_score(_check_s(s), np.asarray(score, dtype=np.float64)))


def pu_risk(s, score, prior: float, loss: str = "sigmoid", nonneg: bool = True) -> float:
    """Empirical (non-negative) PU risk of real scores, numpy version of ``losses.nnpu_risk``'s value."""
    s, g = _check_s(s), np.asarray(score, dtype=np.float64)
    ell = {"sigmoid": lambda z: 1 / (1 + np.exp(z)), "logistic": lambda z: np.logaddexp(0, -z),
           "squared": lambda z: (z - 1) ** 2 / 2}
    if loss not in ell:
        raise ValueError(f"loss: expected one of {sorted(ell)}, got {loss!r}")
    f = ell[loss]
    lab = s == 1
    r_n = f(-g[~lab]).mean() - prior * f(-g[lab]).mean()
    return float(prior * f(g[lab]).mean() + (max(r_n, 0.0) if nonneg else r_n))


def prior_calibrated_predict(score, prior: float) -> np.ndarray:
    """Opt-in fallback: predicts the top ``prior`` share of ``score`` positive (never applied silently)."""
    score = np.asarray(score, dtype=np.float64)
    return (score > np.quantile(score, 1 - prior)).astype(np.int8)
