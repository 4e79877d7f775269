"""Swap-based evaluation: judge classifiers trained on ground truth, swap accuracies, controls, probes.

A ``Judge`` holds one frame-level classifier per static factor (a sequence's class is the argmax
of the mean frame probabilities) and one sequence-level classifier per dynamic factor (on
sequence features: the flattened sequence by default); the classifiers are scikit-learn
``MLPClassifier``s (the package judge) or gradient-boosted trees (``classifier="boosting"``, with
``dynamic_features=pitch_track`` the independent tone judge), trained on ground-truth data only.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_curve
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .data import SeqSet
from .model import DiffSDA


def _as_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def flatten_sequence(x: np.ndarray) -> np.ndarray:
    """Sequence features of the package judge: (n, V, *elem) -> (n, V prod(elem))."""
    return x.reshape(len(x), -1)


def pitch_track(x: np.ndarray, max_bin: int = 6) -> np.ndarray:
    """Per-frame fundamental of tone log-spectrograms: (n, V, bins) -> f0 estimates (n, V), in bins.

    The fundamental has the largest harmonic amplitude and f0 < 5.25 bins, so it is the strongest of
    bins 1..``max_bin``; a Gaussian partial is a parabola in the log domain, so a parabola through
    the peak bin and its two neighbours gives its centre.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3 or x.shape[2] < max_bin + 2:
        raise ValueError(f"x: expected tone sequences (n, V, bins >= {max_bin + 2}), got shape {x.shape}")
    k = x[..., 1 : max_bin + 1].argmax(-1) + 1
    left, mid, right = (np.take_along_axis(x, (k + o)[..., None], -1)[..., 0] for o in (-1, 0, 1))
    curv = left - 2 * mid + right
    safe = np.where(curv < -1e-9, curv, -1.0)
    return k + np.clip(np.where(curv < -1e-9, 0.5 * (left - right) / safe, 0.0), -0.5, 0.5)


@dataclass
class Judge:
    """Ground-truth classifiers; ``heldout_accuracy`` maps each factor to its held-out accuracy.

    ``dynamic_features`` maps sequences (n, V, *elem) to the dynamic classifiers' inputs (n, F).
    """

    static_models: dict[str, object]
    dynamic_models: dict[str, object]
    heldout_accuracy: dict[str, float] = field(default_factory=dict)
    dynamic_features: Callable[[np.ndarray], np.ndarray] = flatten_sequence

    def predict_proba(self, x) -> dict[str, np.ndarray]:
        """Class probabilities per factor for sequences x (n, V, *elem): name -> (n, n_classes)."""
        x = _as_numpy(x).astype(np.float32)
        n, v = x.shape[:2]
        out = {}
        for name, clf in self.static_models.items():
            out[name] = clf.predict_proba(x.reshape(n * v, -1)).reshape(n, v, -1).mean(1)
        feats = self.dynamic_features(x) if self.dynamic_models else None
        for name, clf in self.dynamic_models.items():
            out[name] = clf.predict_proba(feats)
        return out

    def predict(self, x) -> dict[str, np.ndarray]:
        """Predicted class per factor: name -> int (n,)."""
        return {k: p.argmax(1) for k, p in self.predict_proba(x).items()}


def train_judge(seqset: SeqSet, *, seed: int = 0, hidden: int = 128, frames_per_sequence: int = 4,
                heldout: float = 0.2, min_accuracy: float = 0.99, max_iter: int = 200, classifier: str = "mlp",
                dynamic_features: Callable[[np.ndarray], np.ndarray] = flatten_sequence) -> Judge:
    """Trains the judge on ground-truth sequences and checks it on a held-out part.

    Static classifiers see ``frames_per_sequence`` random frames of each training sequence; dynamic
    classifiers see ``dynamic_features`` of whole sequences. ``classifier``: ``"mlp"`` (one hidden layer
    of ``hidden``) or ``"boosting"`` (histogram gradient boosting, ``max_iter`` rounds).

    Raises:
        ValueError: no factors, fewer than 10 sequences, or an unknown ``classifier``.
        RuntimeError: a factor's held-out accuracy is below ``min_accuracy`` (the judge must not be trusted).
    """
    if not seqset.static and not seqset.dynamic:
        raise ValueError("seqset: expected at least one static or dynamic factor to judge")
    if len(seqset) < 10:
        raise ValueError(f"seqset: expected at least 10 sequences to train and check a judge, got {len(seqset)}")
    if classifier not in ("mlp", "boosting"):
        raise ValueError(f"classifier: expected 'mlp' or 'boosting', got {classifier!r}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(seqset))
    cut = int(round(len(seqset) * (1 - heldout)))
    train, test = seqset.subset(order[:cut]), seqset.subset(order[cut:])
    n, v = train.x.shape[:2]
    frame_idx = rng.integers(0, v, (n, frames_per_sequence))
    frames = train.x[np.arange(n)[:, None], frame_idx].reshape(n * frames_per_sequence, -1)

    def make():
        if classifier == "boosting":
            return HistGradientBoostingClassifier(max_iter=max_iter, early_stopping=False, random_state=seed)
        return MLPClassifier((hidden,), max_iter=max_iter, early_stopping=True, n_iter_no_change=8,
                             random_state=seed)

    static = {k: make().fit(frames, np.repeat(lab, frames_per_sequence)) for k, lab in train.static.items()}
    feats = dynamic_features(train.x)
    dynamic = {k: make().fit(feats, lab) for k, lab in train.dynamic.items()}
    judge = Judge(static, dynamic, dynamic_features=dynamic_features)
    predicted = judge.predict(test.x)
    truth = {**test.static, **test.dynamic}
    judge.heldout_accuracy = {k: float(np.mean(predicted[k] == truth[k])) for k in truth}
    weak = {k: a for k, a in judge.heldout_accuracy.items() if a < min_accuracy}
    if weak:
        raise RuntimeError(f"judge: held-out accuracy {weak} below {min_accuracy}; its swap scores would mislead")
    return judge


def _decode_kwargs(model, steps: int, seed: int, shared_noise: bool) -> dict:
    """Sampler options for DiffSDA (steps, noise sharing, a seeded generator); the deterministic SeqVAE takes none."""
    if isinstance(model, DiffSDA):
        return {"steps": steps, "shared_noise": shared_noise,
                "generator": torch.Generator(model.device).manual_seed(int(seed))}
    return {}


def swap_pairs(seqset: SeqSet, n_pairs: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random index pairs (A, B) whose joint static identities differ and whose dynamic classes differ.

    Raises:
        ValueError: no such pair exists.
    """
    identity = np.stack(list(seqset.static.values()), 1)
    motion = np.stack(list(seqset.dynamic.values()), 1)
    rng = np.random.default_rng(seed)
    a, b = [], []
    for _ in range(200):
        cand_a = rng.integers(0, len(seqset), 4 * n_pairs)
        cand_b = rng.integers(0, len(seqset), 4 * n_pairs)
        ok = (identity[cand_a] != identity[cand_b]).any(1) & (motion[cand_a] != motion[cand_b]).all(1)
        a.extend(cand_a[ok].tolist())
        b.extend(cand_b[ok].tolist())
        if len(a) >= n_pairs:
            return np.array(a[:n_pairs]), np.array(b[:n_pairs])
    raise ValueError("seqset: no pair with different static and dynamic factors; need more varied sequences")


def _batched(fn, n: int, batch_size: int) -> np.ndarray:
    return np.concatenate([_as_numpy(fn(slice(i, i + batch_size))) for i in range(0, n, batch_size)])


def _accuracy(judge: Judge, x: np.ndarray, labels: dict[str, np.ndarray], names) -> float:
    """Fraction of sequences whose judged classes match ``labels`` on every factor in ``names``."""
    pred = judge.predict(x)
    return float(np.mean(np.all([pred[k] == labels[k] for k in names], axis=0)))


def _judges(judge: Judge | Mapping[str, Judge]) -> dict[str, Judge]:
    """One judge -> {"": judge}; a mapping of judges is kept (its names prefix the result keys)."""
    return {"": judge} if isinstance(judge, Judge) else dict(judge)


def swap_accuracy(model, judge: Judge | Mapping[str, Judge], test: SeqSet, *, n_pairs: int = 1000, steps: int = 18,
                  seed: int = 0, batch_size: int = 512, shared_noise: bool = False) -> dict[str, float]:
    """Judge accuracy of swaps x = decode(s_A, d_B) on random pairs with different factors.

    ``judge``: one ``Judge``, or a mapping name -> ``Judge`` scoring the same swaps (keys ``<name>_...``).
    ``steps`` and ``shared_noise`` (one x_T per sequence) are DiffSDA's sampler options.

    Returns:
        ``static_acc`` (the judge gives A's static factors, all of them), ``dynamic_acc`` (B's dynamic
        factors), and per-factor accuracies ``acc_<factor>``.
    """
    a, b = swap_pairs(test, n_pairs, seed=seed)
    kwargs = _decode_kwargs(model, steps, seed, shared_noise)
    x = _batched(lambda sl: model.swap(test.x[a[sl]], test.x[b[sl]], **kwargs), len(a), batch_size)
    labels = {**{k: v[a] for k, v in test.static.items()}, **{k: v[b] for k, v in test.dynamic.items()}}
    out = {}
    for name, j in _judges(judge).items():
        pre = f"{name}_" if name else ""
        pred = j.predict(x)
        out[f"{pre}static_acc"] = _accuracy(j, x, labels, test.static)
        out[f"{pre}dynamic_acc"] = _accuracy(j, x, labels, test.dynamic)
        out.update({f"{pre}acc_{k}": float(np.mean(pred[k] == labels[k])) for k in labels})
    return out


def control_accuracy(model, judge: Judge | Mapping[str, Judge], test: SeqSet, *, n: int = 500, steps: int = 18,
                     seed: int = 0, batch_size: int = 512, shared_noise: bool = False) -> dict[str, float]:
    """Controls of the swap protocol on n test sequences A (``judge``, ``steps``, ``shared_noise`` as in
    ``swap_accuracy``).

    ``self_static_acc`` / ``self_dynamic_acc``: decode(s_A, d_A) reproduces A's factors;
    ``random_s_static_acc``: decode(s_rand, d_A) with s_rand ~ N(mean(s), std(s)^2) per dimension
    should not reproduce A's static factors (chance level).
    """
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(test), min(n, len(test)), replace=False)
    kwargs = _decode_kwargs(model, steps, seed, shared_noise)
    s, d = model.encode(test.x[idx])
    s_rand = s.mean(0) + s.std(0) * torch.randn(s.shape, generator=torch.Generator().manual_seed(seed)).to(s.device)
    labels = {**{k: v[idx] for k, v in test.static.items()}, **{k: v[idx] for k, v in test.dynamic.items()}}
    own = _batched(lambda sl: model.decode(s[sl], d[sl], **kwargs), len(idx), batch_size)
    rand = _batched(lambda sl: model.decode(s_rand[sl], d[sl], **kwargs), len(idx), batch_size)
    out = {}
    for name, j in _judges(judge).items():
        pre = f"{name}_" if name else ""
        out[f"{pre}self_static_acc"] = _accuracy(j, own, labels, test.static)
        out[f"{pre}self_dynamic_acc"] = _accuracy(j, own, labels, test.dynamic)
        out[f"{pre}random_s_static_acc"] = _accuracy(j, rand, labels, test.static)
    return out


def probe_leakage(codes_s, codes_d, labels: dict[str, np.ndarray], *, folds: int = 5, seed: int = 0,
                  max_iter: int = 300) -> dict[str, float]:
    """Linear-probe accuracies (standardised codes, logistic regression, stratified k-fold CV).

    Args:
        codes_s: (N, s_dim) static codes, used as they are.
        codes_d: (N, V, d_dim) dynamic codes, flattened to V d_dim numbers (a time average would
            erase the direction of a trajectory).
        labels: factor name -> int (N,).

    Returns:
        ``"s->name"`` and ``"d->name"`` accuracies for every factor.
    """
    s = _as_numpy(codes_s).reshape(len(_as_numpy(codes_s)), -1)
    d = _as_numpy(codes_d)
    if d.ndim != 3 or len(d) != len(s):
        raise ValueError(f"codes_d: expected ({len(s)}, V, d_dim), got shape {d.shape}")
    d = d.reshape(len(d), -1)
    out = {}
    for name, y in labels.items():
        y = np.asarray(y)
        if len(y) != len(s):
            raise ValueError(f"labels[{name!r}]: expected {len(s)} labels, got {len(y)}")
        cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
        for code_name, codes in (("s", s), ("d", d)):
            probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
            with warnings.catch_warnings():  # separable codes stop at max_iter with a perfect fit already
                warnings.simplefilter("ignore", ConvergenceWarning)
                out[f"{code_name}->{name}"] = float(cross_val_score(probe, codes, y, cv=cv).mean())
    return out


def generation_scores(judge: Judge, x, factor: str) -> dict[str, float]:
    """Inception-style scores of generated sequences from the judge's probabilities for ``factor``:
    H(y|x) (mean entropy, low = confident), H(y) (entropy of the mean, high = diverse), IS = exp(H(y) - H(y|x))."""
    proba = judge.predict_proba(x)
    if factor not in proba:
        raise ValueError(f"factor: expected one of {sorted(proba)}, got {factor!r}")
    p = np.clip(proba[factor], 1e-12, 1.0)
    h_cond = float(-(p * np.log(p)).sum(1).mean())
    marginal = p.mean(0)
    h_marg = float(-(marginal * np.log(marginal)).sum())
    return {"IS": float(np.exp(h_marg - h_cond)), "H_y_given_x": h_cond, "H_y": h_marg}


def eer(scores, labels) -> float:
    """Equal error rate of verification scores (higher = same class) against 0/1 labels (1 = same)."""
    scores, labels = np.asarray(scores, float), np.asarray(labels)
    if scores.shape != labels.shape or scores.ndim != 1 or len(np.unique(labels)) != 2:
        raise ValueError(f"labels: expected 0/1 labels of both kinds, shape {scores.shape} like scores, "
                         f"got shape {labels.shape}")
    fpr, tpr, _ = roc_curve(labels, scores)
    fnr = 1 - tpr
    i = int(np.argmin(np.abs(fnr - fpr)))
    return float((fpr[i] + fnr[i]) / 2)


def unsupervised_swap_distances(judge: Judge, generated, static_donor, dynamic_donor) -> dict[str, float]:
    """AED/AKD analogues: mean L2 distance between judge probability embeddings of the generated sequences
    and their static donors (static factors, ``AED``) and dynamic donors (dynamic factors, ``AKD``); lower is better."""
    pg, ps, pd = (judge.predict_proba(v) for v in (generated, static_donor, dynamic_donor))

    def dist(p: dict, q: dict, names) -> float:
        return float(np.mean([np.linalg.norm(p[k] - q[k], axis=1).mean() for k in names]))

    return {"AED": dist(pg, ps, judge.static_models), "AKD": dist(pg, pd, judge.dynamic_models)}


def reconstruction_mse(model: DiffSDA, x, *, steps: int = 18, use_inversion: bool = True, seed: int = 0) -> float:
    """Mean squared error of ``reconstruct(x)`` (with x_T from ``invert``, or from fresh seeded noise)."""
    gen = torch.Generator(model.device).manual_seed(int(seed))
    rec = model.reconstruct(x, steps=steps, use_inversion=use_inversion, generator=gen)
    return float(((rec.cpu() - torch.as_tensor(np.asarray(x))) ** 2).mean())
