"""The SOCP GNN (message passing on the four-type graph) and the fixed-size MLP baseline.

Both take a PyG (batched) ``HeteroData`` from ``to_heterodata`` and return, per ``task``:
``feasibility`` -> logits (B,); ``objective`` -> values (B,); ``solution`` -> x̂ (total number of variables,).
Inputs are standardised and outputs returned in the data's units by the scaling buffers of ``_Scaled``
(set by ``train.fit``).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from torch import nn
from torch_geometric.nn import HeteroConv, MessagePassing, global_add_pool, global_mean_pool

from .graph import EDGE_TYPES, NODE_DIMS

TASKS = ("feasibility", "objective", "solution")
VR, VC, RC, VL = EDGE_TYPES
# model inputs per node type: the graph's features, plus (lin) the per-row load z-score of per-variable scaling
INPUT_DIMS = {**NODE_DIMS, "lin": NODE_DIMS["lin"] + 1}


def _check_task(task: str) -> str:
    if task not in TASKS:
        raise ValueError(f"task: expected one of {TASKS}, got {task!r}")
    return task


def mlp(d_in: int, hidden: int, d_out: int | None = None) -> nn.Sequential:
    """The 2-layer ReLU MLP used for every embedding, message, update and readout."""
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out or hidden))


class WeightedSum(MessagePassing):
    """Sum aggregation of weighted messages: ``out_v = Σ_{(u,v)} w_uv · φ(h_u)``, a bipartite PyG ``MessagePassing``.

    ``φ`` (``phi``, a module or function; identity by default) is applied to the source nodes once, then each edge
    carries ``w_uv · φ(h_u)`` and destinations add them up. Called as ``conv((h_src, h_dst), edge_index, edge_weight)``
    (the form ``HeteroConv`` uses; ``h_dst`` only fixes the number of destinations) or with ``size=(N_src, N_dst)``.
    """

    def __init__(self, phi: Callable[[torch.Tensor], torch.Tensor] | None = None):
        super().__init__(aggr="add")
        self.phi = phi

    def forward(self, x, edge_index: torch.Tensor, edge_weight: torch.Tensor,
                size: tuple[int, int] | None = None) -> torch.Tensor:
        """x: (h_src (N_src, d), h_dst (N_dst, ·)) or h_src; edge_index (2, E) source->destination; edge_weight (E,).

        Returns (N_dst, d'), d' the width of ``phi``'s output.
        """
        h_src, h_dst = x if isinstance(x, tuple) else (x, None)
        if size is None:
            if h_dst is None:
                raise ValueError("size: expected (N_src, N_dst) when no destination features are given, got None")
            size = (h_src.size(0), h_dst.size(0))
        msg = h_src if self.phi is None else self.phi(h_src)
        return self.propagate(edge_index, x=(msg, None), w=edge_weight, size=size)

    def message(self, x_j: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return w.unsqueeze(-1) * x_j


# the variables receive along every edge type in reverse
REVERSE = {(s, rel, d): (d, f"rev_{rel}", s) for s, rel, d in (VR, VC, VL)}


class SOCPLayer(nn.Module):
    """One round: rows, then cones, then linear rows, then variables (the four message phases).

    Messages are ``WeightedSum`` convolutions (``w · MLP(source)`` summed at the destination), grouped into PyG
    ``HeteroConv``s by phase: ``from_vars`` (var→row, var→cone, var→lin, from the current variable states),
    ``rows_to_cones`` (from the updated rows, so a cone sees its own norm rows of this round), ``to_vars``
    (row→var, cone→var, lin→var from the updated states, concatenated in that order). Each node type is then
    updated, ``h ← U(h, messages)`` (the spec), or with ``residual=True`` ``h ← LayerNorm(h + U(h, messages))``:
    the residual path and the per-node normalisation keep an input that moves little across instances (a bus
    load on a power grid) from fading through the stacked MLPs, and the LayerNorm acts node by node, so
    equivariance is kept. With ``membership=False`` (the cone-blind ablation) cones ignore their rows.
    """

    def __init__(self, hidden: int, membership: bool = True, residual: bool = False):
        super().__init__()
        H = hidden
        self.membership = membership
        with warnings.catch_warnings():
            # each HeteroConv is one phase: its source types are updated by the other phases, not by it, which is
            # what HeteroConv warns about
            warnings.filterwarnings("ignore", message="There exist node types", category=UserWarning)
            self.from_vars = HeteroConv({et: WeightedSum(mlp(H, H)) for et in (VR, VC, VL)}, aggr="sum")
            self.rows_to_cones = WeightedSum(mlp(H, H))  # one relation; a HeteroConv around it would add nothing
            self.to_vars = HeteroConv({REVERSE[et]: WeightedSum(mlp(H, H)) for et in (VR, VC, VL)}, aggr="cat")
        self.update = nn.ModuleDict({"row": mlp(2 * H, H), "cone": mlp(3 * H, H), "lin": mlp(2 * H, H),
                                     "var": mlp(4 * H, H)})
        self.norm = nn.ModuleDict({t: nn.LayerNorm(H) for t in NODE_DIMS}) if residual else None

    def _update(self, t: str, h: torch.Tensor, *messages: torch.Tensor) -> torch.Tensor:
        new = self.update[t](torch.cat([h, *messages], -1))
        return new if self.norm is None else self.norm[t](h + new)

    def forward(self, h: dict[str, torch.Tensor], edges: dict) -> dict[str, torch.Tensor]:
        """h: type -> (num_nodes, H); edges: edge type -> (edge_index (2, E), weight (E,)). Returns the new h."""
        index = {et: ei for et, (ei, _) in edges.items()}
        weight = {et: w for et, (_, w) in edges.items()}
        m = self.from_vars(h, index, edge_weight_dict=weight)
        h_row = self._update("row", h["row"], m["row"])
        ei_rc, w_rc = edges[RC]
        from_rows = self.rows_to_cones((h_row, h["cone"]), ei_rc, w_rc)
        if not self.membership:
            from_rows = torch.zeros_like(from_rows)
        h_cone = self._update("cone", h["cone"], m["cone"], from_rows)
        h_lin = self._update("lin", h["lin"], m["lin"])
        new = {"var": h["var"], "row": h_row, "cone": h_cone, "lin": h_lin}
        back = {REVERSE[et]: index[et].flip(0) for et in REVERSE}
        m_var = self.to_vars(new, back, edge_weight_dict={REVERSE[et]: weight[et] for et in REVERSE})
        new["var"] = self._update("var", h["var"], m_var["var"])
        return new


def _graph_index(batch, node_type: str) -> tuple[torch.Tensor, int]:
    """(graph id per node of ``node_type``, number of graphs) for a Batch or a single HeteroData."""
    store = batch[node_type]
    num_graphs = int(getattr(batch, "num_graphs", 1) or 1)
    idx = getattr(store, "batch", None)
    if idx is None:
        idx = torch.zeros(store.x.size(0), dtype=torch.long, device=store.x.device)
    return idx, num_graphs


def _positions(batch, node_type: str, size: int) -> torch.Tensor:
    """Index of every ``node_type`` node inside its own instance, shape ``(N,)``; every instance must have ``size``."""
    idx, B = _graph_index(batch, node_type)
    counts = torch.bincount(idx, minlength=B)
    if not bool(torch.all(counts == size)):
        raise ValueError(f"batch: the per-variable scaling was fitted on instances with {size} {node_type} nodes, got "
                         f"{sorted(set(counts.tolist()))} (fit with scaling='pooled' for instances of mixed sizes)")
    return torch.arange(idx.numel(), device=idx.device) % max(size, 1)


class _Scaled(nn.Module):
    """Holds the input and target scaling buffers shared by both models (their values are set by ``train.fit``).

    Inputs: every node feature column is standardised per node type (``x_mean_<type>``, ``x_std_<type>``, shape
    ``(NODE_DIMS[type],)``) and every edge weight divided by one scale per edge type (``w_scale_<relation>``, the
    RMS of that type's weights); both are pooled over nodes and instances, so the GNN stays permutation
    equivariant. Linear rows get one more input column: with per-variable scaling, the per-row z-score of the
    load, ``(h_r − h_mean[r]) / h_std[r]`` (``h_mean``, ``h_std`` of shape ``(q,)``), zero otherwise.
    Targets: ``y_mean`` and ``y_std`` are scalars (pooled) or ``(n,)`` vectors (one per variable position);
    ``y_std`` is the loss scale. ``out_std`` (``(n,)`` with per-variable scaling, else unused) is the output scale:
    the network predicts each variable's own z-score ``(x_j − y_mean[j]) / out_std[j]``, so one shared readout
    need not produce outputs whose spread differs by orders of magnitude across variables.
    Per-position buffers tie the model to one instance layout (a power grid's variables); pooled ones do not.
    """

    def __init__(self, task: str):
        super().__init__()
        self.task = _check_task(task)
        self.register_buffer("y_mean", torch.zeros(()))
        self.register_buffer("y_std", torch.ones(()))
        self.register_buffer("out_std", torch.ones(()))
        self.register_buffer("h_mean", torch.zeros(0))
        self.register_buffer("h_std", torch.ones(0))
        for t, d in NODE_DIMS.items():
            self.register_buffer(f"x_mean_{t}", torch.zeros(d))
            self.register_buffer(f"x_std_{t}", torch.ones(d))
        for et in EDGE_TYPES:
            self.register_buffer(f"w_scale_{et[1]}", torch.ones(()))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the target and load buffers change shape with the scaling mode: take the saved shapes
        for name in ("y_mean", "y_std", "out_std", "h_mean", "h_std"):
            saved = state_dict.get(prefix + name)
            if saved is not None and saved.shape != getattr(self, name).shape:
                setattr(self, name, torch.empty_like(saved))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def per_variable(self) -> bool:
        """True when the targets are scaled per variable position (``y_std`` of shape ``(n,)``)."""
        return self.y_std.dim() == 1

    def inputs(self, batch) -> tuple[dict[str, torch.Tensor], dict]:
        """Scaled node features (type -> (N_type, INPUT_DIMS[type])) and edges (type -> (edge_index, weight (E,)))."""
        x = {t: (batch[t].x - getattr(self, f"x_mean_{t}")) / getattr(self, f"x_std_{t}") for t in NODE_DIMS}
        lin = batch["lin"].x
        z = lin.new_zeros(lin.size(0))
        if self.h_mean.numel():
            pos = _positions(batch, "lin", self.h_mean.numel())
            z = (lin[:, 0] - self.h_mean[pos]) / self.h_std[pos]
        x["lin"] = torch.cat([x["lin"], z.unsqueeze(-1)], -1)
        edges = {et: (batch[et].edge_index, batch[et].edge_weight / getattr(self, f"w_scale_{et[1]}"))
                 for et in EDGE_TYPES}
        return x, edges

    def target_scale(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean, std) of the targets broadcastable to the model's output: scalars, or (N_var,) per variable."""
        if self.task == "solution" and self.per_variable:
            pos = _positions(batch, "var", self.y_std.numel())
            return self.y_mean[pos], self.y_std[pos]
        return self.y_mean, self.y_std

    def unscale(self, z: torch.Tensor, batch) -> torch.Tensor:
        """Model output in data units: ``z · std + mean`` (logits pass through), ``std = out_std`` per variable."""
        if self.task == "feasibility":
            return z
        mean, std = self.target_scale(batch)
        if self.task == "solution" and self.per_variable:
            std = self.out_std[_positions(batch, "var", self.out_std.numel())]
        return z * std + mean


class SOCPGNN(_Scaled):
    """Message-passing GNN on the SOCP graph; any instance size; equivariant to the instance's permutations.

    Args:
        hidden: width H of every embedding and MLP.
        layers: number of message-passing rounds L.
        task: 'feasibility' | 'objective' | 'solution'.
        membership: keep the row→cone membership messages (False = the cone-blind ablation).
        residual: residual LayerNorm updates with He-normal init (see ``SOCPLayer``, ``reset_parameters``) and
            readouts that pool by the mean instead of the sum, for instances of one fixed layout whose inputs move
            little (power grids); the spec's plain updates, sum readouts and PyTorch's default init otherwise
            (with them the random-SOCP feasibility error is 0.2, with ``residual=True`` 0.4 at quick).

    Readouts: the graph level reads the pooled states of the four node types; the solution reads each variable's
    state with the pooled var, cone and lin states of its instance. Why the mean with ``residual=True``: every
    LayerNorm'd state has unit scale, so a sum over a grid's 18-124 variables is 18-124 times the variable's own
    state and its instance-independent part swamps both the variable's identity and the load-dependent part; with
    sums the residual GNN could not fit 10 case9 instances (training rel. MSE 0.93 after 300 full-batch steps),
    with means it reached 0.017.
    """

    def __init__(self, hidden: int = 64, layers: int = 4, task: str = "feasibility", membership: bool = True,
                 residual: bool = False):
        super().__init__(task)
        if hidden < 1 or layers < 1:
            raise ValueError(f"hidden, layers: expected positive integers, got {hidden}, {layers}")
        self.config = dict(hidden=hidden, layers=layers, task=task, membership=membership, residual=residual)
        self.embed = nn.ModuleDict({t: mlp(d, hidden) for t, d in INPUT_DIMS.items()})
        self.layers = nn.ModuleList(SOCPLayer(hidden, membership, residual) for _ in range(layers))
        self.readout = mlp(4 * hidden, hidden, 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default init of every layer; with ``residual=True``, He-normal weights and zero biases in
        every MLP except the last readout layer (PyTorch's default, smaller init, zero bias), unit LayerNorms.

        With ``residual=True``, zero biases and ReLU-preserving weights keep the share of an instance-dependent
        input in the hidden states from shrinking layer after layer: with PyTorch's default init everywhere, a
        load perturbation of a power grid reached the readout ~1e-6 smaller than the constant part, and the GNN
        stayed at the mean predictor.
        """
        residual = self.config["residual"]
        for mod in self.modules():
            if isinstance(mod, (nn.Linear, nn.LayerNorm)):
                mod.reset_parameters()
            if residual and isinstance(mod, nn.Linear) and mod is not self.readout[-1]:
                nn.init.kaiming_normal_(mod.weight, nonlinearity="relu")
                nn.init.zeros_(mod.bias)
        if residual:
            nn.init.zeros_(self.readout[-1].bias)

    def forward(self, batch) -> torch.Tensor:
        x, edges = self.inputs(batch)
        h = {t: self.embed[t](x[t]) for t in NODE_DIMS}
        for layer in self.layers:
            h = layer(h, edges)
        pool = global_mean_pool if self.config["residual"] else global_add_pool
        pooled = {}
        for t in NODE_DIMS:
            idx, B = _graph_index(batch, t)
            pooled[t] = pool(h[t], idx, size=B)
        if self.task == "solution":
            idx, _ = _graph_index(batch, "var")
            z = self.readout(torch.cat([h["var"], pooled["var"][idx], pooled["cone"][idx], pooled["lin"][idx]], -1))
            z = z.squeeze(-1)
        else:
            z = self.readout(torch.cat([pooled[t] for t in NODE_DIMS], -1)).squeeze(-1)
        return self.unscale(z, batch)


class FlatMLP(_Scaled):
    """Fully connected baseline on the flattened instance of one fixed size ``(n, cone_dims, q)``.

    Input: ``[var features (n·5), A (K·n), b (K), f (m·n), g (m), E (q·n), lin inputs (q·5)]`` with
    ``K = Σ k_i``, read densely from the graph after the input scaling of ``_Scaled``. Refuses instances of any
    other size.
    """

    def __init__(self, n: int, cone_dims, q: int = 0, hidden=(512, 512, 512), task: str = "feasibility"):
        super().__init__(task)
        cone_dims = [int(k) for k in cone_dims]
        if n < 1 or not cone_dims or min(cone_dims) < 1 or q < 0:
            raise ValueError(f"n, cone_dims, q: expected n >= 1, non-empty positive cone_dims, q >= 0; "
                             f"got {n}, {cone_dims}, {q}")
        if not hidden or min(hidden) < 1:
            raise ValueError(f"hidden: expected one or more positive layer widths, got {tuple(hidden)}")
        self.n, self.cone_dims, self.q = n, cone_dims, q
        self.config = dict(n=n, cone_dims=cone_dims, q=q, hidden=tuple(hidden), task=task)
        K, m = sum(cone_dims), len(cone_dims)
        d_in = 5 * n + K * n + K + m * n + m + q * n + INPUT_DIMS["lin"] * q
        dims = [d_in, *hidden]
        mods = []
        for a, b in zip(dims[:-1], dims[1:]):
            mods += [nn.Linear(a, b), nn.ReLU()]
        mods.append(nn.Linear(dims[-1], n if task == "solution" else 1))
        self.net = nn.Sequential(*mods)

    def flatten(self, batch) -> torch.Tensor:
        """The (B, d_in) input matrix of a batch; raises ValueError if an instance has other sizes."""
        B = int(getattr(batch, "num_graphs", 1) or 1)
        n, K, m, q = self.n, sum(self.cone_dims), len(self.cone_dims), self.q
        sizes = {"var": n, "row": K, "cone": m, "lin": q}
        for t, size in sizes.items():
            if batch[t].x.size(0) != B * size:
                raise ValueError(f"batch: FlatMLP was built for {size} {t} nodes per instance, got "
                                 f"{batch[t].x.size(0)} over {B} instances (the GNN accepts any size)")
        feats, edges = self.inputs(batch)
        x = feats["var"]
        cone_idx = batch[RC].edge_index[1] % m
        expected = torch.repeat_interleave(torch.arange(m, device=x.device),
                                           torch.tensor(self.cone_dims, device=x.device)).repeat(B)
        if not torch.equal(cone_idx, expected):
            raise ValueError(f"batch: FlatMLP was built for cone sizes {self.cone_dims}; an instance differs")

        def dense(et, rows):
            ei, w = edges[et]
            M = x.new_zeros(B, rows, n)
            g_of = ei[0] // n
            M[g_of, ei[1] % max(rows, 1), ei[0] % n] = w
            return M.reshape(B, -1)

        parts = [x.reshape(B, -1), dense(VR, K), feats["row"].reshape(B, -1), dense(VC, m),
                 feats["cone"][:, 0].reshape(B, -1)]
        if q:
            parts += [dense(VL, q), feats["lin"].reshape(B, -1)]
        return torch.cat(parts, -1)

    def forward(self, batch) -> torch.Tensor:
        z = self.net(self.flatten(batch))
        return self.unscale(z.reshape(-1), batch)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def build_model(kind: str, task: str, hidden=None, layers: int = 4, example=None, residual: bool = False) -> nn.Module:
    """``'gnn'``, ``'gnn-coneblind'`` or ``'mlp'`` (sized from ``example``, an ``SOCP``); ``residual``: GNN only."""
    if kind in ("gnn", "gnn-coneblind"):
        return SOCPGNN(hidden=64 if hidden is None else hidden, layers=layers, task=task, membership=kind == "gnn",
                       residual=residual)
    if kind == "mlp":
        if example is None:
            raise ValueError("example: the MLP needs an example instance to fix its input size")
        widths = (512, 512, 512) if hidden is None else hidden
        return FlatMLP(example.n, example.cone_dims, example.q, hidden=widths, task=task)
    raise ValueError(f"kind: expected 'gnn', 'gnn-coneblind' or 'mlp', got {kind!r}")
