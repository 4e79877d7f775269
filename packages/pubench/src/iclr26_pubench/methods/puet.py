"""PUET (Wilton et al., ICML 2022): PU extra trees whose splits decrease the empirical PU risk."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import PUEstimator, set_params_from

RISKS = ("nnpu", "upu")


def leaf_value(a, b, risk: str = "nnpu"):
    """Risk-minimising constant v* = 2a/b - 1 of the quadratic-loss uPU node risk -4 a v + b (v + 1)^2.

    ``a`` = prior * (#L in node)/|L|, ``b`` = (#U in node)/|U| (arrays broadcast). ``"nnpu"`` clips v* to
    [-1, 1]; a node without U rows (b = 0) gets v = 1.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    v = np.where(b > 0, 2 * a / np.where(b > 0, b, 1.0) - 1, 1.0)
    return np.clip(v, -1.0, 1.0) if risk == "nnpu" else v


def node_risk(a, b, risk: str = "nnpu"):
    """The node's PU risk at its leaf value v, with positive part a (v - 1)^2 and negative part (b - a)(v + 1)^2.

    ``"upu"``: -4 a v + b (v + 1)^2 (= 4a - 4a^2/b at v*). ``"nnpu"``: the negative part is clipped at 0 per
    node, so a node with a >= b has risk 0 at v = 1.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    v = leaf_value(a, b, risk)
    if risk == "nnpu":
        return a * (v - 1) ** 2 + np.maximum(b - a, 0.0) * (v + 1) ** 2
    return -4 * a * v + b * (v + 1) ** 2


@dataclass
class _Tree:
    feature: np.ndarray  # (n_nodes,) int, -1 at leaves
    threshold: np.ndarray  # (n_nodes,)
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray

    def predict(self, X: np.ndarray) -> np.ndarray:
        node = np.zeros(len(X), dtype=np.int64)
        rows = np.arange(len(X))
        while True:
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                return self.value[node]
            go_left = X[rows[inner], f[inner]] <= self.threshold[node[inner]]
            node[inner] = np.where(go_left, self.left[node[inner]], self.right[node[inner]])


def grow_tree(X: np.ndarray, w_l: np.ndarray, w_u: np.ndarray, rng: np.random.Generator, max_depth: int,
              max_features: int, min_samples_leaf: int, risk: str) -> _Tree:
    """One extra-tree: at each node, ``max_features`` random features with one uniform random threshold each;
    the split decreasing the node risk most is kept (none if no decrease).

    ``w_l``/``w_u`` ``(n,)``: each row's contribution to ``a`` and ``b`` (prior/|L| on L rows, 1/|U| on U rows).
    """
    feature, threshold, left, right, value = [], [], [], [], []

    def new_node(rows):
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        value.append(float(leaf_value(w_l[rows].sum(), w_u[rows].sum(), risk)))
        return len(feature) - 1

    stack = [(new_node(np.arange(len(X))), np.arange(len(X)), 0)]
    d = X.shape[1]
    while stack:
        node, rows, depth = stack.pop()
        if depth >= max_depth or len(rows) < 2 * min_samples_leaf:
            continue
        feats = rng.choice(d, size=min(max_features, d), replace=False)
        Xn = X[np.ix_(rows, feats)]  # (m, k)
        lo, hi = Xn.min(0), Xn.max(0)
        ok = hi > lo
        if not ok.any():
            continue
        thr = lo + rng.uniform(size=len(feats)) * (hi - lo)
        mask = Xn <= thr  # (m, k): left membership per candidate
        a_l, b_l = w_l[rows] @ mask, w_u[rows] @ mask
        a, b = w_l[rows].sum(), w_u[rows].sum()
        n_left = mask.sum(0)
        gain = node_risk(a, b, risk) - node_risk(a_l, b_l, risk) - node_risk(a - a_l, b - b_l, risk)
        valid = ok & (n_left >= min_samples_leaf) & (len(rows) - n_left >= min_samples_leaf)
        gain = np.where(valid, gain, -np.inf)
        j = int(np.argmax(gain))
        if not gain[j] > 1e-12:
            continue
        feature[node], threshold[node] = int(feats[j]), float(thr[j])
        go = mask[:, j]
        for side, sub in (("l", rows[go]), ("r", rows[~go])):
            child = new_node(sub)
            (left if side == "l" else right)[node] = child
            stack.append((child, sub, depth + 1))
    return _Tree(np.asarray(feature), np.asarray(threshold), np.asarray(left), np.asarray(right), np.asarray(value))


class PUET(PUEstimator):
    """Forest of PU extra-trees; the score is the mean leaf value, positive above 0. CPU-native (numpy).

    Args:
        n_estimators, max_depth, min_samples_leaf: forest size and tree limits.
        max_features: features tried per node (``"sqrt"`` or an int).
        risk: ``"nnpu"`` (leaf values clipped to [-1, 1]) or ``"upu"``.
        random_state: seed.
    """

    def __init__(self, *, n_estimators=30, max_depth=30, min_samples_leaf=1, max_features="sqrt", risk="nnpu",
                 random_state=None):
        set_params_from(self, locals())

    def _fit(self, X, s, prior, val) -> None:
        if self.risk not in RISKS:
            raise ValueError(f"risk: expected one of {list(RISKS)}, got {self.risk!r}")
        X = X.reshape(len(X), -1).astype(np.float64)
        d = X.shape[1]
        if self.max_features == "sqrt":
            k = max(1, int(np.sqrt(d)))
        elif isinstance(self.max_features, int) and self.max_features >= 1:
            k = self.max_features
        else:
            raise ValueError(f"max_features: expected 'sqrt' or a positive int, got {self.max_features!r}")
        lab = s == 1
        w_l = np.where(lab, prior / lab.sum(), 0.0)
        w_u = np.where(~lab, 1.0 / (~lab).sum(), 0.0)
        rng = np.random.default_rng(self.random_state)
        self.estimators_ = [grow_tree(X, w_l, w_u, rng, self.max_depth, k, self.min_samples_leaf, self.risk)
                            for _ in range(self.n_estimators)]

    def _scores(self, X: np.ndarray) -> np.ndarray:
        X = X.reshape(len(X), -1).astype(np.float64)
        return np.mean([t.predict(X) for t in self.estimators_], axis=0)
