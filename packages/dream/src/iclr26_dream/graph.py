"""Per-view kNN graphs and the symmetric GCN propagation matrix Â = D̃^{-1/2}(A + I)D̃^{-1/2}."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.neighbors import NearestNeighbors

SYMMETRIZE = ("max", "none")


def knn_graph(X, k: int = 10, metric: str = "cosine", symmetrize: str = "max",
              self_loops: bool = False) -> sp.csr_matrix:
    """Binary k-nearest-neighbour graph of the rows of ``X``.

    Each node keeps its ``k`` nearest other nodes (self excluded, brute-force search);
    ``symmetrize="max"`` returns A = max(A, Aᵀ), so every node has at least ``k`` edges.

    Args:
        X: ``(N, d)`` features.
        k: neighbours per node, ``1 <= k < N``.
        metric: any scikit-learn ``NearestNeighbors`` metric (default cosine).
        symmetrize: ``"max"`` or ``"none"`` (the directed kNN relation).
        self_loops: add the identity.

    Returns:
        ``(N, N)`` float64 CSR matrix with entries in {0, 1}.

    Raises:
        ValueError: ``X`` is not 2-D, ``k`` out of range, unknown ``symmetrize``.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D array (N, d), got shape {X.shape}")
    n = X.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < n:
        raise ValueError(f"k: expected an integer in [1, N-1] = [1, {n - 1}], got {k!r}")
    if symmetrize not in SYMMETRIZE:
        raise ValueError(f"symmetrize: expected one of {SYMMETRIZE}, got {symmetrize!r}")
    nn = NearestNeighbors(n_neighbors=k + 1, algorithm="brute", metric=metric).fit(X)
    idx = nn.kneighbors(X, return_distance=False)  # (N, k+1), normally self first
    rows = np.arange(n)[:, None]
    not_self = idx != rows
    # keep the first k non-self neighbours of each row (duplicates may push self out of column 0)
    keep = not_self & (np.cumsum(not_self, axis=1) <= k)
    r = np.broadcast_to(rows, idx.shape)[keep]
    c = idx[keep]
    A = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, n))
    if symmetrize == "max":
        A = A.maximum(A.T).tocsr()
    if self_loops:
        A = (A + sp.identity(n, format="csr")).tocsr()
    A.data[:] = 1.0
    A.sort_indices()
    return A


def normalize_adjacency(A, add_self_loops: bool = True, device=None,
                        dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Â = D̃^{-1/2} Ã D̃^{-1/2} with Ã = A + I, as a sparse COO torch tensor.

    Isolated nodes keep their self-loop, so no degree is zero when ``add_self_loops``.

    Args:
        A: ``(N, N)`` scipy sparse or dense non-negative symmetric adjacency.
        add_self_loops: add I before normalising (Kipf & Welling).
        device, dtype: of the returned tensor.

    Returns:
        ``(N, N)`` sparse COO tensor (coalesced).

    Raises:
        ValueError: ``A`` not square, negative entries, or a zero-degree node without self-loops.
    """
    A = sp.csr_matrix(A, dtype=np.float64)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A: expected a square matrix, got shape {A.shape}")
    if A.nnz and A.data.min() < 0:
        raise ValueError("A: expected non-negative entries")
    if add_self_loops:
        A = A + sp.identity(A.shape[0], format="csr")
    deg = np.asarray(A.sum(axis=1)).ravel()
    if np.any(deg <= 0):
        raise ValueError("A: a node has zero degree; pass add_self_loops=True")
    d = sp.diags(1.0 / np.sqrt(deg))
    coo = (d @ A @ d).tocoo()
    indices = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
    values = torch.as_tensor(coo.data, dtype=dtype)
    return torch.sparse_coo_tensor(indices, values, coo.shape, device=device, check_invariants=False).coalesce()


def edge_index(A, device=None) -> torch.Tensor:
    """The ``(2, E)`` long tensor of the non-zero positions of a scipy sparse ``A``."""
    coo = sp.coo_matrix(A)
    return torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long, device=device)


def check_graphs(graphs, n: int, n_views: int) -> list[sp.csr_matrix | None]:
    """Validates user-supplied graphs, one entry per view: ``None`` (build the kNN graph from that view's
    features) or an ``(N, N)`` symmetric non-negative adjacency (scipy sparse or array-like).

    Returns:
        ``n_views`` entries: ``None`` or the binary CSR adjacency (non-zero → 1, diagonal dropped).

    Raises:
        ValueError: ``graphs`` is not a list of ``n_views`` entries, or an entry has the wrong shape, NaN/inf,
        negative entries or is not symmetric.
    """
    if graphs is None:
        return [None] * n_views
    if not isinstance(graphs, (list, tuple)) or len(graphs) != n_views:
        raise ValueError(f"graphs: expected a list of {n_views} entries (None or an (N, N) adjacency), got "
                         f"{type(graphs).__name__} of length {len(graphs) if hasattr(graphs, '__len__') else '?'}")
    out: list[sp.csr_matrix | None] = []
    for v, G in enumerate(graphs):
        if G is None:
            out.append(None)
            continue
        A = sp.csr_matrix(G, dtype=np.float64)
        if A.shape != (n, n):
            raise ValueError(f"graphs[{v}]: expected shape ({n}, {n}), got {A.shape}")
        if A.nnz and (not np.all(np.isfinite(A.data)) or A.data.min() < 0):
            raise ValueError(f"graphs[{v}]: expected finite non-negative entries")
        if abs(A - A.T).sum() > 1e-9 * max(1.0, abs(A).sum()):
            raise ValueError(f"graphs[{v}]: expected a symmetric adjacency, got A != A.T")
        A = (A > 0).astype(np.float64).tocsr()
        A.setdiag(0.0)
        A.eliminate_zeros()
        A.sort_indices()
        out.append(A)
    return out
