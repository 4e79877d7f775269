"""The PU data generator: labeling mechanisms (SCAR / SAR) x sampling schemes (single / case-control).

``make_pu_split(X, y, c, scheme=..., labeling=...)`` turns a fully labelled binary sample into
a ``PUSplit`` (rows of L and U, permuted), with the metadata every method and every audit needs.
All randomness comes from one ``numpy.random.Generator``; the global RNG is never touched.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from .datasets import BinaryDataset, load_dataset

SCHEMES = ("case-control", "single")
LABELINGS = ("scar", "sar_lbeA", "sar_lbeB", "sar_pusb")
CASE_CONTROL_MODES = ("full_u", "equal_n")
PUSB_RULES = ("topk", "accept_reject")


@dataclass(frozen=True)
class PUSplit:
    """A positive-unlabeled training sample.

    Attributes:
        X: rows of L and U after a random permutation, ``(m, ...)``.
        s: ``(m,)`` int8, 1 = labeled positive, 0 = unlabeled.
        y: ``(m,)`` int8 true labels, for evaluation only.
        source_index: ``(m,)`` int64 row index into the source arrays.
        role: ``(m,)`` ``"L"`` or ``"U"``.
        meta: n_total, n_labeled, n_unlabeled, n_pos_unlabeled, n_neg_unlabeled, pi_unlabeled,
            pi_train, pi_constructed_train, c, c_realized, scheme, labeling, mean p-hat of L and
            of all positives (SAR), ...
    """

    X: np.ndarray
    s: np.ndarray
    y: np.ndarray
    source_index: np.ndarray
    role: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def prior(self) -> float:
        """The risk prior pi_U: the fraction of true positives in U."""
        return float(self.meta["pi_unlabeled"])


@dataclass(frozen=True)
class TestSet:
    """Held-out rows with true labels: ``X (n, ...)``, ``y (n,)`` int8, and ``meta``."""

    X: np.ndarray
    y: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {list(choices)}, got {value!r}")
    return value


def check_binary_labels(y, name: str = "y") -> np.ndarray:
    """``y`` as an int8 array in {0, 1}; raises ``ValueError`` for other values or a non-1-D shape."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {y.shape}")
    values = set(np.unique(y).tolist())
    if not values <= {0, 1}:
        raise ValueError(f"{name}: expected binary labels in {{0, 1}}, got values {sorted(values)[:10]}")
    return y.astype(np.int8)


def _check_X(X, n: int) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim < 2 or len(X) != n:
        raise ValueError(f"X: expected an array of shape (n={n}, ...), got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or not np.all(np.isfinite(X)):
        raise ValueError("X: expected finite numbers (no NaN or inf)")
    return X


def _rng(random_state) -> np.random.Generator:
    return random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)


def posterior_estimate(X, y, random_state: int = 0) -> np.ndarray:
    """p-hat(x) = P(y=1|x) of an auxiliary logistic regression on the flattened PN rows; ``(n,)``."""
    flat = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    clf = LogisticRegression(solver="lbfgs", max_iter=100, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs may stop at max_iter, as in the benchmark
        clf.fit(flat, y)
    return clf.predict_proba(flat)[:, 1]


def _propensity_from_phat(p_hat: np.ndarray, labeling: str) -> np.ndarray:
    n_pos = len(p_hat)
    if labeling == "scar":
        return np.full(n_pos, 1.0 / n_pos)
    if labeling == "sar_lbeA":
        w = p_hat**10
        p = w / w.sum() if w.sum() > 0 else np.full(n_pos, 1.0 / n_pos)
        p = 0.9 * p + 0.1 / n_pos
        return p / p.sum()
    if labeling == "sar_lbeB":
        w = np.maximum(0.0, 2.5 - p_hat) ** 10
        return w / w.sum() if w.sum() > 0 else np.full(n_pos, 1.0 / n_pos)
    w = p_hat**20
    return w / w.sum() if w.sum() > 0 else np.full(n_pos, 1.0 / n_pos)


def labeling_propensity(X, y, labeling: str, random_state: int | None = 0) -> np.ndarray:
    """Per-positive selection probabilities of a labeling mechanism, in the order of ``flatnonzero(y)``.

    ``scar``: uniform; ``sar_lbeA``: p-hat^10 normalised, smoothed 0.9 p + 0.1/n_pos;
    ``sar_lbeB``: (2.5 - p-hat)^10 normalised; ``sar_pusb``: p-hat^20 normalised (top-k uses its order).
    Returns ``(n_pos,)`` non-negative, summing to 1.
    """
    _check_choice("labeling", labeling, LABELINGS)
    y = check_binary_labels(y)
    X = _check_X(X, len(y))
    pos = np.flatnonzero(y == 1)
    if len(pos) == 0:
        raise ValueError("y: expected at least one positive row, got none")
    p_hat = None if labeling == "scar" else posterior_estimate(X, y, 0 if random_state is None else random_state)[pos]
    return _propensity_from_phat(np.ones(len(pos)) if p_hat is None else p_hat, labeling)


def _select_labeled(X, y, pos, n_l, labeling, pusb_rule, rng, lr_seed):
    """Indices (into the source rows) of the labeled positives, the p-hat of the positives, and c_realized."""
    n_pos = len(pos)
    if labeling == "scar":
        return pos[rng.choice(n_pos, size=n_l, replace=False)], None
    p_hat = posterior_estimate(X, y, lr_seed)[pos]
    if labeling in ("sar_lbeA", "sar_lbeB"):
        return pos[rng.choice(n_pos, size=n_l, replace=False, p=_propensity_from_phat(p_hat, labeling))], p_hat
    if pusb_rule == "topk":
        perm = rng.permutation(n_pos)  # random tie-breaking
        order = perm[np.argsort(-(p_hat[perm] ** 20), kind="stable")]
        return pos[order[:n_l]], p_hat
    a = p_hat / p_hat.mean()
    a = a / a.max()
    accepted = np.flatnonzero(a > rng.uniform(size=n_pos))
    if len(accepted) == 0:
        raise ValueError("labeling: sar_pusb accept-reject accepted 0 positives; use pusb_rule='topk' or a larger c")
    return pos[rng.permutation(accepted)[:n_l]], p_hat


def make_pu_split(X, y, c: float, *, scheme: str = "case-control", labeling: str = "scar",
                  case_control_mode: str = "full_u", pusb_rule: str = "topk", with_replacement: bool = True,
                  random_state: int | np.random.Generator | None = None) -> PUSplit:
    """Builds a PU sample from a fully labelled binary sample.

    Args:
        X: source rows ``(n, ...)``, finite numbers.
        y: ``(n,)`` labels in {0, 1}.
        c: label frequency P(s=1|y=1) in (0, 1]; n_l = floor(c * n_pos) positives are labeled.
        scheme: ``"case-control"`` (two samples) or ``"single"`` (one sample).
        labeling: ``"scar"``, ``"sar_lbeA"``, ``"sar_lbeB"`` or ``"sar_pusb"``.
        case_control_mode: ``"full_u"`` (U = the whole sample, labeled rows included) or ``"equal_n"``.
        pusb_rule: ``"topk"`` (paper time) or ``"accept_reject"`` (current repository).
        with_replacement: ``equal_n`` draws with replacement (the convention) when True.
        random_state: seed or Generator; the SAR auxiliary regression uses it as ``random_state`` when an int.

    Returns:
        ``PUSplit`` whose ``prior`` is pi_U of the constructed U.

    Raises:
        ValueError: ``c`` outside (0, 1], c * n_pos < 1, non-binary ``y``, unknown option names,
            or PUSB accept-reject accepting no row.
    """
    _check_choice("scheme", scheme, SCHEMES)
    _check_choice("labeling", labeling, LABELINGS)
    _check_choice("case_control_mode", case_control_mode, CASE_CONTROL_MODES)
    _check_choice("pusb_rule", pusb_rule, PUSB_RULES)
    y = check_binary_labels(y)
    X = _check_X(X, len(y))
    if isinstance(c, bool) or not isinstance(c, (int, float, np.floating)) or not 0.0 < float(c) <= 1.0:
        raise ValueError(f"c: expected a label frequency in (0, 1], got {c!r}")
    c = float(c)
    rng = _rng(random_state)
    lr_seed = int(random_state) if isinstance(random_state, (int, np.integer)) else int(rng.integers(2**31))
    pos = np.flatnonzero(y == 1)
    n, n_pos = len(y), len(pos)
    n_l = min(int(math.floor(c * n_pos + 1e-9)), n_pos)
    if n_l < 1:
        raise ValueError(f"c: c * n_pos = {c} * {n_pos} < 1, so no positive would be labeled; raise c or add positives")
    if scheme == "case-control" and c >= 1.0:
        warnings.warn("c >= 1 in case-control: falling back to scheme='single' with every positive labeled",
                      stacklevel=2)
        scheme = "single"
    meta: dict[str, Any] = {"scheme": scheme, "labeling": labeling, "c": c, "n_source": n, "n_pos_source": n_pos,
                            "pi_train": n_pos / n,
                            "case_control_mode": case_control_mode if scheme == "case-control" else None,
                            "pusb_rule": pusb_rule if labeling == "sar_pusb" else None}
    if scheme == "case-control" and case_control_mode == "equal_n":
        A = 1.0 / (1.0 - c + c * n_pos / n)
        n_L = math.ceil(round(A * c * (n_pos / n) * n, 9))
        n_U = math.ceil(round(A * (1.0 - c) * n, 9))
        p_lab = _propensity_from_phat(posterior_estimate(X, y, lr_seed)[pos] if labeling != "scar"
                                      else np.ones(n_pos), labeling)
        L = pos[rng.choice(n_pos, size=n_L, replace=with_replacement or n_L > n_pos, p=p_lab)]
        U = rng.choice(n, size=n_U, replace=with_replacement or n_U > n)
        p_hat = None
        c_realized = len(np.unique(L)) / n_pos
    else:
        L, p_hat = _select_labeled(X, y, pos, n_l, labeling, pusb_rule, rng, lr_seed)
        c_realized = len(L) / n_pos
        U = np.arange(n) if scheme == "case-control" else np.setdiff1d(np.arange(n), L)
    if c_realized < c - 1.0 / n_pos:
        meta["warning"] = f"c_realized {c_realized:.4f} < requested c {c}"
    src = np.concatenate([L, U]).astype(np.int64)
    s = np.concatenate([np.ones(len(L), np.int8), np.zeros(len(U), np.int8)])
    perm = rng.permutation(len(src))
    src, s = src[perm], s[perm]
    yy = y[src]
    n_pos_u = int(yy[s == 0].sum())
    meta.update(n_total=len(src), n_labeled=int(len(L)), n_unlabeled=int(len(U)), n_pos_unlabeled=n_pos_u,
                n_neg_unlabeled=int(len(U) - n_pos_u), pi_unlabeled=n_pos_u / len(U),
                pi_constructed_train=float(yy.mean()), c_realized=c_realized)
    if p_hat is not None:
        lab_rows = np.isin(pos, L)
        meta.update(mean_phat_labeled=float(p_hat[lab_rows].mean()), mean_phat_positives=float(p_hat.mean()))
    return PUSplit(X=X[src], s=s, y=yy, source_index=src, role=np.where(s == 1, "L", "U"), meta=meta)


def standardisation(X_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and std (std 0 replaced by 1) of training rows ``(n, ...)``."""
    mu, sd = X_train.mean(0), X_train.std(0)
    return mu, np.where(sd > 0, sd, 1.0)


def resample_prevalence(X, y, target_prevalence: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Down-samples the majority class so that the fraction of positives is ``target_prevalence``."""
    if not isinstance(target_prevalence, (int, float)) or not 0.0 < target_prevalence < 1.0:
        raise ValueError(f"target_prevalence: expected a number in (0, 1), got {target_prevalence!r}")
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    want_neg = int(round(len(pos) * (1 - target_prevalence) / target_prevalence))
    if want_neg <= len(neg):
        keep = np.concatenate([pos, rng.choice(neg, want_neg, replace=False)])
    else:
        keep = np.concatenate([rng.choice(pos, int(round(len(neg) * target_prevalence / (1 - target_prevalence))),
                                          replace=False), neg])
    keep = np.sort(keep)
    return X[keep], y[keep]


def make_benchmark_splits(dataset: str | BinaryDataset, c: float, scheme: str = "case-control",
                          labeling: str = "scar", seed: int = 0, val_ratio: float = 0.01,
                          target_prevalence: float | None = None, standardize: bool = True,
                          data_dir=None, **kw) -> tuple[PUSplit, PUSplit, TestSet]:
    """The benchmark's order of operations for one run ``(dataset, seed, c, scheme, labeling)``.

    1. load the binary source (``load_dataset(name, random_state=seed)``); 2. split n_val = round(n * val_ratio)
    validation rows off the *source* training rows (stratified, ``random_state=seed``); 3. PU-sample train and
    validation separately with one ``default_rng(seed)``; 4. optionally resample the test prevalence.
    With ``standardize`` the features are standardised with the training part's statistics.
    A training or validation part too small to hold one labeled positive at ``c`` gets ``min_label_frequency``'s
    c = 1/n_pos (recorded as ``meta["c_train_adjusted"]`` / ``meta["c_val_adjusted"]``), so that a small dataset
    at c = 0.01 still yields a run instead of an error.

    Returns:
        ``(train, val, test)``.
    """
    ds = dataset if isinstance(dataset, BinaryDataset) else load_dataset(dataset, data_dir, random_state=seed)
    X, y = ds.X_train, ds.y_train
    n_val = int(round(len(y) * val_ratio))
    if n_val >= 2:
        strat = y if np.bincount(y, minlength=2).min() >= 2 else None
        tr, va = train_test_split(np.arange(len(y)), test_size=n_val, stratify=strat, random_state=seed)
    else:
        tr, va = np.arange(len(y)), np.arange(0)
    X_te, y_te = ds.X_test, ds.y_test
    if standardize and X.ndim == 2:
        mu, sd = standardisation(X[tr])
        X, X_te = (X - mu) / sd, (X_te - mu) / sd
    rng = np.random.default_rng(seed)
    opts = dict(scheme=scheme, labeling=labeling, **kw)
    c_train = min_label_frequency(c, int(y[tr].sum()))
    train = _with_source(make_pu_split(X[tr], y[tr], c_train, random_state=rng, **opts), tr, seed)
    train.meta["c_train_adjusted"] = c_train != c
    n_pos_val = int(y[va].sum())
    if len(va) == 0 or n_pos_val == 0:
        val = PUSplit(X[va], np.zeros(len(va), np.int8), y[va], va, np.full(len(va), "U"), {"pi_unlabeled": np.nan})
    else:
        c_val = min_label_frequency(c, n_pos_val)
        val = _with_source(make_pu_split(X[va], y[va], c_val, random_state=rng, **opts), va, seed)
        val.meta["c_val_adjusted"] = c_val != c
    test_meta = {"n": len(y_te), "prior": float(y_te.mean()), "dataset": ds.name, "stand_in_for": ds.stand_in_for}
    if target_prevalence is not None:
        X_te, y_te = resample_prevalence(X_te, y_te, target_prevalence, rng)
        test_meta.update(n=len(y_te), prior=float(y_te.mean()), target_prevalence=target_prevalence)
    return train, val, TestSet(X_te, y_te, test_meta)


def min_label_frequency(c: float, n_pos: int) -> float:
    """``max(c, 1 / n_pos)``: the smallest label frequency at which ``n_pos`` positives give one labeled row."""
    if n_pos < 1:
        raise ValueError(f"y: expected at least one positive row to label, got n_pos = {n_pos}")
    return max(float(c), 1.0 / n_pos)


def _with_source(split: PUSplit, rows: np.ndarray, seed: int) -> PUSplit:
    """Re-indexes ``source_index`` from the part's rows to the source training rows."""
    meta = dict(split.meta, seed=seed)
    return PUSplit(split.X, split.s, split.y, rows[split.source_index], split.role, meta)
