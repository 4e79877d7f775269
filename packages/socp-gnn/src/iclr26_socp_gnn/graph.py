"""The graph of an SOCP: four node types (var, row, cone, lin) and weighted edges, plus WL colour refinement.

Nodes and features:
    var j       [c_j, l̃_j, ũ_j, 1[l_j > −∞], 1[u_j < ∞]]   (infinite bounds become 0 plus a flag)
    row (i, r)  [b_{i,r}]                                  (one per norm row of cone i; ordered by cone, then row)
    cone i      [g_i, 1/p]
    lin r       [h_r, onehot('<=', '==', '>=')]
Edges (stored once, messages flow both ways) with a scalar ``edge_weight``:
    ('var', 'in_row', 'row')    A_i[r, j]  (non-zeros)
    ('var', 'in_cone', 'cone')  f_i[j]     (non-zeros)
    ('row', 'member', 'cone')   1          (row (i, r) belongs to cone i: the norm part of the cone)
    ('var', 'in_lin', 'lin')    E[r, j]    (non-zeros)
Every simultaneous permutation of variables, cones, rows inside a cone and linear rows gives an
isomorphic graph. The norm order ``p`` enters only as the cone feature ``1/p``.
"""
from __future__ import annotations

import hashlib

import numpy as np
import torch
from torch_geometric.data import HeteroData

from .problem import SENSES, SOCP

NODE_DIMS = {"var": 5, "row": 1, "cone": 2, "lin": 4}
EDGE_TYPES = (("var", "in_row", "row"), ("var", "in_cone", "cone"), ("row", "member", "cone"), ("var", "in_lin", "lin"))


def _nonzero_edges(M: np.ndarray):
    """(src, dst, weight) for the non-zeros of M (columns = source var nodes, rows = destination nodes)."""
    r, j = np.nonzero(M)
    return j, r, M[r, j]


def to_heterodata(P: SOCP, dtype: torch.dtype = torch.float32) -> HeteroData:
    """The PyG ``HeteroData`` graph of ``P`` (see the module docstring).

    Node stores hold ``x`` (num_nodes, NODE_DIMS[type]); edge stores hold ``edge_index`` (2, E) and
    ``edge_weight`` (E,). The 'lin' type is always present (possibly with 0 nodes) so that batches of
    mixed instances share one schema.
    """
    if not isinstance(P, SOCP):
        raise TypeError(f"P: expected an SOCP, got {type(P).__name__}")
    P = P.validate()
    n, m, q = P.n, P.m, P.q
    lb, ub = P.bounds()
    has_l, has_u = np.isfinite(lb), np.isfinite(ub)
    var_x = np.stack([P.c, np.where(has_l, lb, 0.0), np.where(has_u, ub, 0.0), has_l, has_u], axis=1)
    row_b = np.concatenate(P.b) if m else np.zeros(0)
    row_x = row_b[:, None]
    cone_x = np.stack([P.g, np.full(m, 1.0 / P.p)], axis=1)
    lin_x = np.zeros((q, 4))
    if q:
        lin_x[:, 0] = P.h
        lin_x[np.arange(q), 1 + np.array([SENSES.index(s) for s in P.sense])] = 1.0
    A = np.vstack(P.A) if m else np.zeros((0, n))
    F = np.vstack(P.f) if m else np.zeros((0, n))
    cone_of_row = np.repeat(np.arange(m), P.cone_dims)
    edges = {
        EDGE_TYPES[0]: _nonzero_edges(A),
        EDGE_TYPES[1]: _nonzero_edges(F),
        EDGE_TYPES[2]: (np.arange(len(row_b)), cone_of_row, np.ones(len(row_b))),
        EDGE_TYPES[3]: _nonzero_edges(P.E if q else np.zeros((0, n))),
    }
    data = HeteroData()
    for name, x in (("var", var_x), ("row", row_x), ("cone", cone_x), ("lin", lin_x)):
        data[name].x = torch.as_tensor(np.asarray(x, float).reshape(-1, NODE_DIMS[name]), dtype=dtype)
    for et, (src, dst, w) in edges.items():
        data[et].edge_index = torch.as_tensor(np.stack([src, dst]).reshape(2, -1), dtype=torch.long)
        data[et].edge_weight = torch.as_tensor(np.asarray(w, float), dtype=dtype)
    return data


def graphs(items, task: str, dtype: torch.dtype = torch.float32) -> list:
    """One ``HeteroData`` per ``(SOCP, label)`` with the label attached: ``y`` (graph) or ``var.y`` (solution)."""
    out = []
    for P, label in items:
        d = to_heterodata(P, dtype=dtype)
        if task == "solution":
            y = np.asarray(label, float)
            if y.shape != (P.n,):
                raise ValueError(f"label: expected a solution of shape ({P.n},), got {y.shape}")
            d["var"].y = torch.as_tensor(y, dtype=dtype)
        else:
            d.y = torch.as_tensor([float(label)], dtype=dtype)
        out.append(d)
    return out


def from_heterodata(data: HeteroData) -> SOCP:
    """Reads the instance back from a graph made by ``to_heterodata`` (exact inverse)."""
    var, row, cone, lin = (data[t].x.double().cpu().numpy() for t in ("var", "row", "cone", "lin"))
    n, nr, m, q = len(var), len(row), len(cone), len(lin)

    def dense(et, rows, cols):
        M = np.zeros((rows, cols))
        ei = data[et].edge_index.cpu().numpy()
        M[ei[1], ei[0]] = data[et].edge_weight.double().cpu().numpy()
        return M

    A = dense(EDGE_TYPES[0], nr, n)
    F = dense(EDGE_TYPES[1], m, n)
    member = data[EDGE_TYPES[2]].edge_index.cpu().numpy()
    cone_of_row = np.empty(nr, dtype=int)
    cone_of_row[member[0]] = member[1]
    rows_of = [np.flatnonzero(cone_of_row == i) for i in range(m)]
    lb = np.where(var[:, 3] > 0, var[:, 1], -np.inf)
    ub = np.where(var[:, 4] > 0, var[:, 2], np.inf)
    inv_p = cone[0, 1] if m else 0.5
    kw = {}
    if q:
        kw = dict(E=dense(EDGE_TYPES[3], q, n), h=lin[:, 0], sense=[SENSES[int(np.argmax(r[1:]))] for r in lin])
    return SOCP(c=var[:, 0], A=[A[r] for r in rows_of], b=[row[r, 0] for r in rows_of], f=list(F), g=cone[:, 0],
                lb=lb, ub=ub, p=float(1.0 / inv_p), **kw)


def _digest(obj) -> int:
    return int.from_bytes(hashlib.blake2b(repr(obj).encode(), digest_size=8).digest(), "little")


def wl_colors(P: SOCP, iterations: int | None = None) -> dict[str, list[int]]:
    """Weisfeiler-Lehman colour refinement on the graph of ``P``: node type -> colour per node.

    Initial colours hash (type, features); each round hashes a node's colour with the sorted multiset of
    (edge type, weight, neighbour colour) over all its neighbours, weights rounded to 12 digits. Runs
    ``iterations`` rounds, or (``None``) until the number of colours stops growing. Colours are
    deterministic integers, so histograms of two instances can be compared.
    """
    data = to_heterodata(P, dtype=torch.float64)
    types = list(NODE_DIMS)
    colors = {t: [_digest((t, tuple(np.round(row, 12)))) for row in data[t].x.numpy()] for t in types}
    nbrs = {t: [[] for _ in colors[t]] for t in types}
    for et in EDGE_TYPES:
        s, rel, d = et
        ei = data[et].edge_index.numpy()
        w = np.round(data[et].edge_weight.numpy(), 12)
        for a, b_, ww in zip(ei[0], ei[1], w):
            nbrs[s][a].append((rel, float(ww), d, int(b_)))
            nbrs[d][b_].append((rel, float(ww), s, int(a)))
    count = len({c for t in types for c in colors[t]})
    rounds = 0
    while iterations is None or rounds < iterations:
        new = {t: [_digest((colors[t][v], tuple(sorted((rel, ww, colors[u_t][u]) for rel, ww, u_t, u in nbrs[t][v]))))
                   for v in range(len(colors[t]))] for t in types}
        rounds += 1
        new_count = len({c for t in types for c in new[t]})
        colors = new
        if iterations is None and new_count == count:
            break
        count = new_count
    return colors
