"""The CAMEL clusterer (scikit-learn style)."""
from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .admm import LAYOUTS, Penalties, State, degree_weights, run_admm, stack_embeddings
from .views import check_views, preprocess_views


def _positive(value, name: str, minimum: float = 0.0, inclusive: bool = False) -> None:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or (value < minimum if inclusive else value <= minimum):
        op = ">=" if inclusive else ">"
        raise ValueError(f"{name}: expected a finite number {op} {minimum:g}, got {value!r}")


def _row_normalize(F: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(F, axis=1, keepdims=True)
    return np.divide(F, norms, out=np.zeros_like(F), where=norms > 0)


class CAMEL(ClusterMixin, BaseEstimator):
    """Constant-degree incomplete multi-view clustering with connectivity-structure and embedding tensor learning.

    Solves, by ADMM,
    ``min ||𝓗||_{l_delta} + lambda1 sum_v ||E^v||^2 + lambda2 sum_v Tr(H^vT L^v H^v)``
    s.t. ``X^v = A^v Z^v + E^v`` (observed samples), ``Z^v >= 0``, ``A^vT A^v = I``, ``H^vT H^v = I``,
    with the constant-degree Laplacian ``L^v = I - Z^vT Z^v / beta``, then runs k-means on the
    row-normalised ``[H^1, ..., H^m]``.

    Parameters:
        n_clusters: number of clusters ``c >= 2``.
        n_anchors: anchors per view ``t`` (default ``3 c``); view ``v`` uses
            ``t_v = min(t, d_v, observed samples of v)`` (see ``n_anchors_``).
        lambda1, lambda2, beta, delta: objective weights (``lambda2 = 0``: no connectivity term).
        mu, eta, mu_max: ADMM penalty, its growth factor (``>= 1``) and cap.
        max_iter, tol: outer iterations and the primal-residual tolerance (max-abs).
        degree: ``"constant"`` (paper, ``D = beta I``) or ``"normalized"`` (true degree ``Z^T(Z 1)``).
        tensor_norm: ``"ldelta"`` (paper) or ``"tnn"`` (tensor nuclear norm).
        tensor_layout: ``"n_m_c"`` (FFT along clusters) or ``"n_c_m"`` (FFT along views).
        gpi_steps: generalized-power-iteration steps per H update.
        preprocess: ``"minmax_l2"`` or None.
        strict: with ``preprocess=None``, raise (instead of warn) on negative inputs.
        n_init_kmeans: k-means restarts for the final clustering.
        n_threads: BLAS threads during ``fit`` (None: no limit). One thread is fastest for the many
            small SVDs on small machines.
        random_state: seed or ``RandomState`` for the initial anchors, the H padding and k-means.
        verbose: print one line per iteration.

    Attributes:
        labels_: ``(n,)`` cluster labels.
        embedding_: ``(n, m c)`` row-normalised ``[H^1..H^m]``.
        view_embeddings_: list of ``H^v`` ``(n, c)``.
        anchors_: list of ``A^v`` ``(d_v, t_v)``; ``n_anchors_``: the ``t_v``.
        coefficients_: list of ``Z^v`` ``(t_v, n)``.
        mask_: ``(n, m)`` boolean observation mask used.
        n_iter_, converged_, history_: ADMM iterations, whether the residuals fell below ``tol``,
            per-iteration objective terms, residuals, ``mu`` and seconds per sub-step.
        fit_seconds_: wall time of ``fit``.
    """

    def __init__(self, n_clusters, n_anchors=None, lambda1=1e-3, lambda2=1.0, beta=100.0, delta=0.1, mu=1e-2,
                 eta=1.5, mu_max=1e8, max_iter=60, tol=1e-6, degree="constant", tensor_norm="ldelta",
                 tensor_layout="n_m_c", gpi_steps=1, preprocess="minmax_l2", strict=False, n_init_kmeans=10,
                 n_threads=1, random_state=None, verbose=False):
        self.n_clusters = n_clusters
        self.n_anchors = n_anchors
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.beta = beta
        self.delta = delta
        self.mu = mu
        self.eta = eta
        self.mu_max = mu_max
        self.max_iter = max_iter
        self.tol = tol
        self.degree = degree
        self.tensor_norm = tensor_norm
        self.tensor_layout = tensor_layout
        self.gpi_steps = gpi_steps
        self.preprocess = preprocess
        self.strict = strict
        self.n_init_kmeans = n_init_kmeans
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> None:
        for name in ("n_clusters", "max_iter", "gpi_steps", "n_init_kmeans"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name}: expected a positive integer, got {value!r}")
        if self.n_clusters < 2:
            raise ValueError(f"n_clusters: expected an integer >= 2, got {self.n_clusters!r}")
        if self.n_anchors is not None and (isinstance(self.n_anchors, bool)
                                           or not isinstance(self.n_anchors, (int, np.integer))
                                           or self.n_anchors < 1):
            raise ValueError(f"n_anchors: expected None or an integer >= 1, got {self.n_anchors!r}")
        for name in ("delta", "beta", "mu", "tol", "mu_max"):
            _positive(getattr(self, name), name)
        _positive(self.eta, "eta", 1.0, inclusive=True)
        _positive(self.lambda1, "lambda1", 0.0, inclusive=True)
        _positive(self.lambda2, "lambda2", 0.0, inclusive=True)
        if self.mu_max < self.mu:
            raise ValueError(f"mu_max: expected >= mu={self.mu}, got {self.mu_max!r}")
        if self.degree not in ("constant", "normalized"):
            raise ValueError(f"degree: expected 'constant' or 'normalized', got {self.degree!r}")
        if self.tensor_norm not in ("ldelta", "tnn"):
            raise ValueError(f"tensor_norm: expected 'ldelta' or 'tnn', got {self.tensor_norm!r}")
        if self.tensor_layout not in LAYOUTS:
            raise ValueError(f"tensor_layout: expected one of {LAYOUTS}, got {self.tensor_layout!r}")
        if self.n_threads is not None and (isinstance(self.n_threads, bool)
                                           or not isinstance(self.n_threads, (int, np.integer))
                                           or self.n_threads < 1):
            raise ValueError(f"n_threads: expected None or a positive integer, got {self.n_threads!r}")

    def penalties(self) -> Penalties:
        """The objective's weights and modes as a ``Penalties`` record."""
        return Penalties(float(self.lambda1), float(self.lambda2), float(self.beta), float(self.delta),
                         self.degree, self.tensor_norm, self.tensor_layout)

    def fit(self, Xs, mask=None, y=None):
        """Fits CAMEL on incomplete views.

        Args:
            Xs: list of ``m >= 2`` arrays ``(n, d_v)``; a missing sample is a row of NaN in that view,
                or is marked False in ``mask``.
            mask: optional boolean ``(n, m)``, True = observed (overrides NaN-row detection).
            y: ignored (scikit-learn convention).

        Returns:
            self.

        Raises:
            ValueError, TypeError: bad hyper-parameters or inputs (see ``check_views``).
        """
        self._check_params()
        start = time.perf_counter()
        views, mask = check_views(Xs, mask, n_clusters=self.n_clusters)
        views = preprocess_views(views, mask, self.preprocess, self.strict)
        limit = threadpool_limits(self.n_threads) if self.n_threads is not None else _no_limit()
        with limit:
            self._fit_views(views, mask)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def fit_predict(self, Xs, mask=None, y=None):
        """``fit(Xs, mask).labels_``."""
        return self.fit(Xs, mask).labels_

    def _fit_views(self, views: list[np.ndarray], mask: np.ndarray) -> None:
        c = int(self.n_clusters)
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        t = int(self.n_anchors) if self.n_anchors is not None else 3 * c
        state = _initial_state(views, mask, c, t, seed, self.penalties(), float(self.mu))
        callback = _print_iteration if self.verbose else None
        self.n_iter_, self.converged_, self.history_ = run_admm(
            state, self.penalties(), mu_max=float(self.mu_max), eta=float(self.eta), max_iter=int(self.max_iter),
            tol=float(self.tol), gpi_steps=int(self.gpi_steps), callback=callback)
        self.view_embeddings_ = state.H
        self.anchors_, self.coefficients_ = state.A, state.Z
        self.n_anchors_ = [A.shape[1] for A in state.A]
        self.mask_ = mask
        self.embedding_ = _row_normalize(np.concatenate(state.H, axis=1))
        km = KMeans(n_clusters=c, n_init=int(self.n_init_kmeans), random_state=seed)
        self.labels_ = km.fit_predict(self.embedding_)


class _no_limit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _print_iteration(it: int, history: dict[str, list[float]]) -> None:
    print(f"iter {it:3d}  objective {history['objective'][-1]:.6g}  res_x {history['residual_x'][-1]:.2e}  "
          f"res_h {history['residual_h'][-1]:.2e}  mu {history['mu'][-1]:.2e}")


def _initial_state(views: list[np.ndarray], mask: np.ndarray, c: int, t: int, seed: int, p: Penalties,
                   mu: float) -> State:
    """Initialisation: A^v from the QR of t_v k-means centroids of the observed samples, Z^v = max(0, A^T X),
    H^v from the top right singular vectors of Z^v (padded with random columns when t_v < c, then polar),
    𝓖 = 𝓗, 𝓦 = 0, Y = E = 0.

    Every view uses the same seed, so the result does not depend on the order of the views.
    """
    n = mask.shape[0]
    X, observed, A, Z, H = [], [], [], [], []
    for v, V in enumerate(views):
        obs = mask[:, v]
        Xv = np.ascontiguousarray(V.T)
        t_v = min(t, Xv.shape[0], int(obs.sum()))
        centroids = KMeans(n_clusters=t_v, n_init=1, random_state=seed).fit(V[obs]).cluster_centers_
        q, r = np.linalg.qr(centroids.T)
        Av = q * np.where(np.diag(r) < 0, -1.0, 1.0)
        Zv = np.maximum(Av.T @ Xv, 0.0)
        Zv[:, ~obs] = 0.0
        k = min(c, t_v)
        _, _, vh = np.linalg.svd(Zv, full_matrices=False)
        start = vh[:k].T
        if k < c:
            pad = np.random.default_rng(seed).standard_normal((n, c - k))
            start = np.concatenate([start, pad], axis=1)
        u, _, wh = np.linalg.svd(start, full_matrices=False)
        X.append(Xv)
        observed.append(obs.copy())
        A.append(Av)
        Z.append(Zv)
        H.append(u @ wh)
    G = stack_embeddings(H, p.tensor_layout)
    w = [degree_weights(Zv, p.degree, p.beta) for Zv in Z]
    return State(X=X, observed=observed, A=A, Z=Z, E=[np.zeros_like(x) for x in X], Y=[np.zeros_like(x) for x in X],
                 H=H, G=G.copy(), W=np.zeros_like(G), mu=mu, w=w)
