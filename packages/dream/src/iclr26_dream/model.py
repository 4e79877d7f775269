"""``DREAM``: the scikit-learn-style estimator that builds the per-view graphs, pretrains the two
branches (L_Encode), initialises the centres with k-means and trains L_Total."""
from __future__ import annotations

import numbers
import time

import numpy as np
import torch
from iclr26_shared.device import resolve_device
from iclr26_shared.metrics import clustering_accuracy
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score
from torch.nn import functional as F

from .data import PREPROCESS, preprocess_view
from .graph import check_graphs, knn_graph, normalize_adjacency
from .losses import (
    GRAPH_WEIGHTINGS,
    cluster_loss,
    dec_target,
    distill_loss,
    graph_recon_loss,
    inter_cluster_triplet,
    intra_sample_infonce,
    vae_loss,
)
from .nn import GatedFusion, StudentTClusterHead, ViewGCN, ViewVAE, first_hop

FUSIONS = ("gate", "average")
KL_SCALES = ("variance", "none")


def check_views(Xs, allow_single_view: bool = False) -> list[np.ndarray]:
    """Validates a list of views ``(N, d_v)``: same N, finite, at least two views (or one if allowed).

    Raises:
        TypeError: ``Xs`` is not a list/tuple of arrays.
        ValueError: fewer than 2 views, different N, non-2-D view, NaN/inf.
    """
    if isinstance(Xs, np.ndarray) or not isinstance(Xs, (list, tuple)):
        raise TypeError(f"Xs: expected a list of V arrays (N, d_v), got {type(Xs).__name__}")
    views = [np.asarray(X, dtype=np.float64) for X in Xs]
    if len(views) < (1 if allow_single_view else 2):
        raise ValueError(f"Xs: expected at least 2 views (or allow_single_view=True), got {len(views)}")
    for v, X in enumerate(views):
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"Xs[{v}]: expected a non-empty 2-D array (N, d), got shape {X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError(f"Xs[{v}]: contains NaN or inf; DREAM needs complete views "
                             "(for missing views see iclr26-camel)")
    sizes = [X.shape[0] for X in views]
    if len(set(sizes)) != 1:
        raise ValueError(f"Xs: all views must have the same number of rows N, got {sizes}")
    return views


def _bar(epochs: range, progress, desc: str):
    return epochs if progress is None else progress(epochs, desc=desc)


class DREAM(ClusterMixin, BaseEstimator):
    """Deep multi-view clustering with dual-branch representations, gated fusion and triple alignment.

    Per view a VAE (semantic, μ^{(v)}) and a GCN on a cosine kNN graph (structural, h^{(v)}); a gate
    mixes them, learned cross-view weights combine the views into l, a Student-t head clusters l.
    Training: pretrain L_Encode for ``pretrain_epochs``, k-means-initialise the centres on l, then
    minimise L_Total = L_Encode + α L_Align + β L_Cluster for ``epochs`` (Adam, mini-batches of
    ``batch_size`` rows; the GCN always propagates over the whole graph). Pseudo-labels and the DEC
    target P are refreshed from a full forward pass every ``pseudo_update_every`` epochs.

    ``preprocess`` (``"zscore_l2"``: z-score then row ℓ2, the paper's setting; ``"zscore"``) and
    ``graph_metric`` (``"cosine"``, the paper's; ``"euclidean"``) choose the input normalisation and the
    kNN metric; the row-ℓ2/cosine pair discards row norms, which carry the class in ring-like data.

    ``lambda1`` (default 0.1; *inferred*, the paper gives none) and ``kl_scale``: with ``"variance"``
    (default) view v's KL weight is λ₁ · 2σ̄_v², σ̄_v² the mean per-feature variance of its
    preprocessed input; λ₁ = 1 would be the ELBO of a Gaussian decoder with that variance written on the
    (1/N)‖X̂ − X‖² scale (≈ 0.01-0.03 on mfeat), λ₁ = 0.1 a β-VAE with β = 0.1, because at λ₁ = 1 the
    posterior half-collapses in the 320 pretraining steps of the quick schedule (k-means on the means of
    each view's VAE trained alone: 0.38 / 0.64 / 0.46 on UCI3 against 0.56 / 0.85 / 0.78 at λ₁ = 0.1);
    ``"none"`` uses λ₁ itself. A weight of 1 on row-normalised inputs (‖x‖ = 1) collapses the posterior
    completely: the VAE reconstructs nothing.
    ``normalize_fusion`` (default True): the gate mixes row-ℓ2-normalised μ and h (see ``GatedFusion``).
    ``fusion_lr`` (default 1e-2; ``None`` = ``lr``): Adam learning rate of the gate and view-weight nets in
    the joint phase (*inferred*; the paper gives one lr per dataset in [5e-5, 0.1]). At ``lr`` = 1e-3 the
    few joint steps move the gate from 0.5 by only ≈ 0.02.
    ``graph_weighting`` (``"uniform"``, the spec's (1/N²)‖σ(HHᵀ) − A‖²;
    ``"balanced"``: edges and non-edges weighted equally).

    ``pretrain_batch_size`` (default 128) and ``batch_size`` (default 256; ``None`` = full batch): the
    VAEs pretrain in mini-batches of ``pretrain_batch_size`` rows, the GCNs' graph term in mini-batches of
    ``batch_size`` rows, and the joint phase uses ``batch_size`` (*inferred*, as MFLVC and GCFAggMVC train;
    full batch gives one Adam step per epoch and leaves the networks under-trained; the VAE's smaller
    batches double its pretraining steps for a few percent more time). In a joint step the VAE terms,
    the fusion, the clustering loss, the distillation, the InfoNCE (within the batch) and the triplets
    use the batch's rows, the graph term the batch's rows of sigmoid(HHᵀ) against A. ``balance``
    (default 0, off): weight of the optional cluster-balance term log K − H(q̄) added to L_Cluster.

    Ablations: ``use_semantic=False`` (w/o VAE), ``use_structure=False`` (w/o GCN),
    ``fusion="average"`` (gate and view weights replaced by the plain mean), ``use_alignment=False``.

    Attributes (after ``fit``): ``labels_ (N,)``, ``embedding_ (N, z)``, ``proba_ (N, K)``,
    ``gate_values_ (N, V)`` (mean semantic share s̄ per sample and view), ``view_weights_ (N, V)``
    (α̂), ``history_`` (per-epoch losses: batch means weighted by batch size; ACC/NMI when y is given, of the
    full forward pass at the start of each joint epoch; refresh epochs; seconds),
    ``graphs_`` (list of V binary scipy CSR kNN graphs), ``semantic_means_`` (list of V ``(N, z)`` VAE
    means, empty without the semantic branch), ``kl_weights_`` (V effective KL weights), ``n_views_``.
    """

    def __init__(self, n_clusters: int, latent_dim: int = 64, hidden_dims=(256, 128), gcn_hidden: int = 128,
                 k_neighbors: int = 10, fusion: str = "gate", use_semantic: bool = True, use_structure: bool = True,
                 use_alignment: bool = True, alpha: float = 1.0, beta: float = 1.0, lambda1: float = 0.1,
                 lambda2: float = 10.0, lambda3: float = 1.0, tau: float = 0.5, margin: float = 1.0,
                 n_triplets: int = 2048, pseudo_update_every: int = 3, pretrain_epochs: int = 100,
                 epochs: int = 150, lr: float = 1e-3, batch_size: int | None = 256, device: str = "auto",
                 random_state=None, preprocess: str = "zscore_l2", graph_metric: str = "cosine",
                 balance: float = 0.0, graph_weighting: str = "uniform", pretrain_batch_size: int | None = 128,
                 kl_scale: str = "variance", normalize_fusion: bool = True, fusion_lr: float | None = 1e-2,
                 allow_single_view: bool = False, callback=None, verbose: bool = False):
        self.n_clusters = n_clusters
        self.latent_dim = latent_dim
        self.hidden_dims = hidden_dims
        self.gcn_hidden = gcn_hidden
        self.k_neighbors = k_neighbors
        self.fusion = fusion
        self.use_semantic = use_semantic
        self.use_structure = use_structure
        self.use_alignment = use_alignment
        self.alpha = alpha
        self.beta = beta
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.lambda3 = lambda3
        self.tau = tau
        self.margin = margin
        self.n_triplets = n_triplets
        self.pseudo_update_every = pseudo_update_every
        self.pretrain_epochs = pretrain_epochs
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state
        self.preprocess = preprocess
        self.graph_metric = graph_metric
        self.balance = balance
        self.graph_weighting = graph_weighting
        self.pretrain_batch_size = pretrain_batch_size
        self.kl_scale = kl_scale
        self.normalize_fusion = normalize_fusion
        self.fusion_lr = fusion_lr
        self.allow_single_view = allow_single_view
        self.callback = callback
        self.verbose = verbose

    # ------------------------------------------------------------------ checks
    def _check_params(self, n: int) -> None:
        def positive(name):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{name}: expected a positive number, got {value!r}")

        def integer(name, low, high=None):
            value = getattr(self, name)
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low
            if not ok or (high is not None and value > high):
                bound = f"[{low}, {high}]" if high is not None else f">= {low}"
                raise ValueError(f"{name}: expected an integer {bound}, got {value!r}")

        integer("n_clusters", 2, n - 1)
        integer("k_neighbors", 1, n - 1)
        integer("latent_dim", 1)
        integer("gcn_hidden", 1)
        integer("n_triplets", 1)
        integer("pseudo_update_every", 1)
        integer("pretrain_epochs", 0)
        integer("epochs", 0)
        for name in ("tau", "margin", "lr"):
            positive(name)
        if self.fusion_lr is not None:
            positive("fusion_lr")
        for name in ("alpha", "beta", "lambda1", "lambda2", "lambda3", "balance"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or not value >= 0:
                raise ValueError(f"{name}: expected a non-negative number, got {value!r}")
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion: expected one of {FUSIONS}, got {self.fusion!r}")
        if self.preprocess not in PREPROCESS:
            raise ValueError(f"preprocess: expected one of {PREPROCESS}, got {self.preprocess!r}")
        if self.graph_weighting not in GRAPH_WEIGHTINGS:
            raise ValueError(f"graph_weighting: expected one of {GRAPH_WEIGHTINGS}, got {self.graph_weighting!r}")
        if self.kl_scale not in KL_SCALES:
            raise ValueError(f"kl_scale: expected one of {KL_SCALES}, got {self.kl_scale!r}")
        if self.graph_metric not in ("cosine", "euclidean"):
            raise ValueError(f"graph_metric: expected 'cosine' or 'euclidean', got {self.graph_metric!r}")
        if not (self.use_semantic or self.use_structure):
            raise ValueError("use_semantic, use_structure: at least one branch must be used, got both False")
        if self.batch_size is not None:
            integer("batch_size", 1)
        if self.pretrain_batch_size is not None:
            integer("pretrain_batch_size", 1)
        hidden = tuple(self.hidden_dims)
        if not hidden or not all(isinstance(h, numbers.Integral) and h >= 1 for h in hidden):
            raise ValueError(f"hidden_dims: expected a non-empty tuple of positive integers, got {self.hidden_dims!r}")

    def _fusion_mode(self) -> str:
        if not self.use_semantic:
            return "structure_only"
        if not self.use_structure:
            return "semantic_only"
        return self.fusion

    # ------------------------------------------------------------------ pieces
    def _prepare(self, Xs, graphs=None) -> tuple[list[torch.Tensor], list, list[torch.Tensor], list[torch.Tensor],
                                                 list[float]]:
        """Preprocessed views as tensors, the graphs (``graphs[v]`` when given, else the kNN graph of view v),
        the GCN inputs per view ``(Â, first_hop(x, Â))``, the dense/sparse A per view and the per-view KL
        weights (λ₁ · 2σ̄_v² with ``kl_scale="variance"``)."""
        views = [preprocess_view(X, self.preprocess) for X in Xs]
        kl_weights = [self.lambda1 * (2.0 * float(X.var(axis=0).mean()) if self.kl_scale == "variance" else 1.0)
                      for X in views]
        given = check_graphs(graphs, views[0].shape[0], len(views))
        graphs = ([knn_graph(X, k=self.k_neighbors, metric=self.graph_metric) if G is None else G
                   for X, G in zip(views, given)] if self.use_structure else [])
        xs = [torch.as_tensor(X, dtype=torch.float32, device=self.device_) for X in views]
        a_hats = [normalize_adjacency(A, device=self.device_) for A in graphs]
        a_hats = [(a, first_hop(x, a)) for x, a in zip(xs, a_hats)]
        adjs = []
        for A in graphs:
            coo = A.tocoo()
            idx = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
            adj = torch.sparse_coo_tensor(idx, torch.ones(coo.nnz), A.shape, check_invariants=False)
            adj = adj.coalesce().to(self.device_)
            adjs.append(adj.to_dense() if A.shape[0] <= 5000 else adj)
        return xs, graphs, a_hats, adjs, kl_weights

    def _branches(self, xs, a_hats, rows=None):
        """(mus, logvars, x_hats) of the VAEs on the rows ``rows`` (all when None) and the GCN outputs
        hs over the whole graph ``(N, z)`` (``a_hats``: the ``(Â, first_hop)`` pairs of ``_prepare``);
        ``None`` for an absent branch."""
        mus = logvars = x_hats = hs = None
        if self.use_semantic:
            mus, logvars, x_hats = self._semantic_outputs(xs, rows)
        if self.use_structure:
            hs = self._structure_outputs(xs, a_hats)
        return mus, logvars, x_hats, hs

    def _semantic_outputs(self, xs, rows=None):
        """(mus, logvars, x_hats) of every view's VAE on the rows ``rows`` (all when None), each a list."""
        outs = [vae(x if rows is None else x[rows]) for vae, x in zip(self.vaes_, xs)]
        return tuple(list(t) for t in zip(*outs))

    def _structure_outputs(self, xs, a_hats):
        """Every view's GCN output over the whole graph, a list of ``(N, z)``."""
        return [gcn(x, a, hop) for gcn, x, (a, hop) in zip(self.gcns_, xs, a_hats)]

    def _forward(self, xs, a_hats):
        """Branch outputs and the fused embedding of all rows: (mus, logvars, x_hats, hs, l, s, alpha_hat)."""
        mus, logvars, x_hats, hs = self._branches(xs, a_hats)
        l, s, alpha_hat = self.fusion_(mus, hs)
        return mus, logvars, x_hats, hs, l, s, alpha_hat

    def _semantic_loss(self, xs, mus, logvars, x_hats, rows=None) -> torch.Tensor:
        """The VAE terms of L_Encode on the rows ``rows`` (all when None) of every view."""
        loss = xs[0].new_zeros(())
        for x, xh, mu, lv, w in zip(xs, x_hats, mus, logvars, self.kl_weights_):
            loss = loss + vae_loss(x if rows is None else x[rows], xh, mu, lv, w)
        return loss

    def _structure_loss(self, adjs, hs, rows=None) -> torch.Tensor:
        """The graph terms of L_Encode: the rows ``rows`` of sigmoid(HHᵀ) against A (an unbiased estimate of
        the full-matrix mean; all rows when None or when A is sparse, i.e. sampled)."""
        loss = hs[0].new_zeros(())
        for h, adj in zip(hs, adjs):
            loss = loss + graph_recon_loss(h, adj, generator=self._torch_gen, weighting=self.graph_weighting,
                                           rows=None if adj.is_sparse else rows)
        return loss

    def _encode_loss(self, xs, adjs, mus, logvars, x_hats, hs, rows=None) -> torch.Tensor:
        """L_Encode of one joint step (the VAE terms on the rows ``rows``, the graph terms as in
        ``_structure_loss``)."""
        loss = xs[0].new_zeros(())
        if self.use_semantic:
            loss = loss + self._semantic_loss(xs, mus, logvars, x_hats, rows)
        if self.use_structure:
            loss = loss + self._structure_loss(adjs, hs, rows)
        return loss

    def _pretrain(self, xs, a_hats, adjs, progress) -> None:
        """Pretrains L_Encode with Adam. The VAEs and the GCNs share no parameters, so L_Encode splits into its
        VAE terms, trained in mini-batches of ``pretrain_batch_size`` rows, and its graph terms, trained in
        mini-batches of ``batch_size`` rows of sigmoid(HHᵀ) (the GCN propagates over the whole graph at every
        step); each part has its own Adam, which for every parameter is the same update as one Adam on the
        sum. ``None`` = full batch. A VAE step costs a batch of rows, a graph step the whole graph."""
        n = xs[0].shape[0]
        parts = []
        if self.use_semantic:
            def semantic(rows):
                return self._semantic_loss(xs, *self._semantic_outputs(xs, rows), rows)
            parts.append((self.vaes_, self.pretrain_batch_size, semantic))
        if self.use_structure:
            def structure(rows):
                return self._structure_loss(adjs, self._structure_outputs(xs, a_hats), rows)
            parts.append((self.gcns_, self.batch_size, structure))
        # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
        opts = [torch.optim.Adam(module.parameters(), lr=self.lr, foreach=True) for module, _, _ in parts]
        for epoch in _bar(range(self.pretrain_epochs), progress, "pretrain epochs"):
            order = torch.as_tensor(self._rng.permutation(n), device=self.device_)
            total = 0.0
            for (_, batch, loss_of), opt in zip(parts, opts):
                size = n if batch is None else min(batch, n)
                for start in range(0, n, size):
                    rows = None if size == n else order[start:start + size]
                    loss = loss_of(rows)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * (n if rows is None else rows.numel()) / n
            self._log(epoch, "pretrain", {"encode": total, "total": total}, None)

    def _align_loss(self, mus, hs, l, pseudo) -> torch.Tensor:
        """L_Align on one batch: ``mus``, ``hs`` and ``l`` hold the same rows, ``pseudo`` their labels."""
        loss = l.new_zeros(())
        if self.n_views_ > 1:
            if self.use_semantic:
                loss = loss + self.lambda2 * distill_loss(mus)
            if self.use_structure:
                loss = loss + self.lambda2 * distill_loss(hs)
        loss = loss + intra_sample_infonce(l, mus, hs, self.tau)
        if len(np.unique(pseudo)) < 2:
            self.history_["inter_skipped"] += 1
        return loss + inter_cluster_triplet(l, pseudo, self.n_triplets, self.margin, self._rng)

    def _log(self, epoch, phase, parts, y, q=None):
        self.history_["epoch"].append(epoch)
        self.history_["phase"].append(phase)
        for key, value in parts.items():
            self.history_.setdefault(key, []).append(float(value))
        if y is not None and q is not None:
            pred = q.argmax(dim=1).cpu().numpy()
            self.history_.setdefault("acc", []).append(clustering_accuracy(y, pred))
            self.history_.setdefault("nmi", []).append(float(normalized_mutual_info_score(y, pred)))
        if self.verbose:
            print(f"[DREAM] {phase} epoch {epoch}: " + ", ".join(f"{k}={float(v):.4f}" for k, v in parts.items()))

    # ------------------------------------------------------------------ API
    def fit(self, Xs, y=None, progress=None, graphs=None):
        """Fits DREAM on the views ``Xs`` (list of V arrays ``(N, d_v)``); ``y`` only feeds ``history_``.

        ``progress(iterable, desc=...)`` wraps the epoch loops of both phases (a progress-bar function such as
        ``iclr26_shared.cli.progress``); ``None`` shows nothing. ``graphs`` (optional, one entry per view):
        ``None`` builds view v's kNN graph from its features, an ``(N, N)`` symmetric adjacency is used as
        given (binarised, diagonal dropped; see ``check_graphs``), e.g. a citation or co-authorship graph.

        Raises:
            TypeError, ValueError: bad views or hyper-parameters (the message names the argument).
        """
        views = check_views(Xs, self.allow_single_view)
        n = views[0].shape[0]
        self._check_params(n)
        if y is not None:
            y = np.asarray(y).ravel()
            if y.shape[0] != n:
                raise ValueError(f"y: expected {n} labels, got {y.shape[0]}")
        start = time.perf_counter()
        self.device_ = resolve_device(self.device)
        seed = int(np.random.SeedSequence(self.random_state).generate_state(1)[0]) \
            if self.random_state is None else int(self.random_state)
        torch.manual_seed(seed)
        self._rng = np.random.default_rng(seed)
        self._torch_gen = torch.Generator().manual_seed(seed)
        self.n_views_ = len(views)
        xs, self.graphs_, a_hats, adjs, self.kl_weights_ = self._prepare(views, graphs)
        z = self.latent_dim
        self.vaes_ = torch.nn.ModuleList(ViewVAE(x.shape[1], tuple(self.hidden_dims), z) for x in xs)
        self.gcns_ = torch.nn.ModuleList(ViewGCN(x.shape[1], self.gcn_hidden, z) for x in xs)
        self.fusion_ = GatedFusion(self.n_views_, z, mode=self._fusion_mode(), normalize=self.normalize_fusion)
        self.head_ = StudentTClusterHead(self.n_clusters, z)
        for module in (self.vaes_, self.gcns_, self.fusion_, self.head_):
            module.to(self.device_).train()
        self.history_ = {"epoch": [], "phase": [], "refresh_epochs": [], "inter_skipped": 0}

        self._pretrain(xs, a_hats, adjs, progress)

        with torch.no_grad():
            l0 = F.normalize(self._forward(xs, a_hats)[4], dim=1).cpu().numpy()
        km = KMeans(self.n_clusters, n_init=10, random_state=seed % (2**31)).fit(l0)
        with torch.no_grad():
            self.head_.centres.copy_(torch.as_tensor(km.cluster_centers_, dtype=torch.float32))

        groups = [{"params": [*self.vaes_.parameters(), *self.gcns_.parameters(), *self.head_.parameters()]},
                  {"params": list(self.fusion_.parameters()),
                   "lr": self.lr if self.fusion_lr is None else self.fusion_lr}]
        # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
        opt = torch.optim.Adam(groups, lr=self.lr, foreach=True)
        size = n if self.batch_size is None else min(self.batch_size, n)
        p = pseudo = None
        for epoch in _bar(range(self.epochs), progress, "joint epochs"):
            with torch.no_grad():
                q_all = self.head_(self._forward(xs, a_hats)[4])
            if epoch % self.pseudo_update_every == 0:
                p = dec_target(q_all)
                pseudo = p.argmax(dim=1).cpu().numpy()
                self.history_["refresh_epochs"].append(epoch)
            order = torch.as_tensor(self._rng.permutation(n), device=self.device_)
            sums = dict.fromkeys(("encode", "align", "cluster", "total"), 0.0)
            for start in range(0, n, size):
                rows = None if size == n else order[start:start + size]
                parts = self._joint_step(opt, xs, adjs, a_hats, rows, p, pseudo, epoch)
                share = (n if rows is None else rows.numel()) / n
                for key, value in parts.items():
                    sums[key] += value * share
            self._log(epoch, "train", sums, y, q_all)
            if self.callback is not None:
                self.callback(self, epoch, {"p": p.clone(), "pseudo": pseudo.copy(), "q": q_all.clone()})

        for module in (self.vaes_, self.gcns_, self.fusion_, self.head_):
            module.eval()
        with torch.no_grad():
            mus, _, _, _, l, s, alpha_hat = self._forward(xs, a_hats)
            q = self.head_(l)
        self._train_views = views
        self.semantic_means_ = [] if mus is None else [m.cpu().numpy() for m in mus]
        self.embedding_ = l.cpu().numpy()
        self.proba_ = q.cpu().numpy()
        self.labels_ = self.proba_.argmax(axis=1)
        self.gate_values_ = s.mean(dim=2).cpu().numpy()
        self.view_weights_ = alpha_hat.cpu().numpy()
        self.history_["seconds"] = time.perf_counter() - start
        return self

    def _joint_step(self, opt, xs, adjs, a_hats, rows, p, pseudo, epoch) -> dict[str, float]:
        """One Adam step of L_Total on the rows ``rows`` (all when None); returns the loss parts."""
        mus, logvars, x_hats, hs = self._branches(xs, a_hats, rows)
        hs_rows = None if hs is None or rows is None else [h[rows] for h in hs]
        l = self.fusion_(mus, hs if rows is None else hs_rows)[0]
        q = self.head_(l)
        encode = self._encode_loss(xs, adjs, mus, logvars, x_hats, hs, rows)
        clus = cluster_loss(q, p if rows is None else p[rows], self.lambda3, self.balance)
        if self.use_alignment:
            align = self._align_loss(mus, hs if rows is None else hs_rows, l,
                                     pseudo if rows is None else pseudo[rows.cpu().numpy()])
        else:
            align = l.new_zeros(())
        total = encode + self.alpha * align + self.beta * clus
        if not torch.isfinite(total):
            raise FloatingPointError(f"DREAM: the loss became {float(total)} at epoch {epoch}; lower lr")
        opt.zero_grad()
        total.backward()
        opt.step()
        return {"encode": float(encode.detach()), "align": float(align.detach()), "cluster": float(clus.detach()),
                "total": float(total.detach())}

    def _embed(self, Xs, graphs=None) -> tuple[torch.Tensor, torch.Tensor]:
        if not hasattr(self, "labels_"):
            raise RuntimeError("DREAM: call fit before transform/predict")
        views = check_views(Xs, self.allow_single_view)
        if len(views) != self.n_views_:
            raise ValueError(f"Xs: expected {self.n_views_} views as in fit, got {len(views)}")
        xs, _, a_hats, _, _ = self._prepare(views, graphs)
        with torch.no_grad():
            l = self._forward(xs, a_hats)[4]
            return l, self.head_(l)

    def transform(self, Xs, graphs=None) -> np.ndarray:
        """Fused embedding l ``(N, z)`` of ``Xs`` (kNN graphs are rebuilt on ``Xs`` for the views without an
        entry in ``graphs``, as in ``fit``; for the training views and graphs this equals ``embedding_``)."""
        return self._embed(Xs, graphs)[0].cpu().numpy()

    def predict_proba(self, Xs, graphs=None) -> np.ndarray:
        """Student-t soft assignments q ``(N, K)`` of ``Xs`` (``graphs`` as in ``fit``)."""
        return self._embed(Xs, graphs)[1].cpu().numpy()

    def predict(self, Xs, graphs=None) -> np.ndarray:
        """Cluster labels argmax_k q_ik ``(N,)`` of ``Xs`` (``graphs`` as in ``fit``)."""
        return self.predict_proba(Xs, graphs).argmax(axis=1)

    def fit_predict(self, Xs, y=None, **kwargs) -> np.ndarray:
        """``fit(Xs, y).labels_``."""
        return self.fit(Xs, y).labels_
