"""Neuron compression of every hidden layer of a deep MLP, and its compressed dynamics.

An MLP ``x -> Linear_1 -> act_1 -> ... -> Linear_L`` with hidden widths ``d_1 .. d_{L-1}`` is, for each hidden
layer l, a symmetric function of that layer's neurons: permuting rows ``j`` of ``(W_l, b_l)`` together with columns
``j`` of ``W_{l+1}`` leaves the function unchanged. Neuron j of layer l is therefore an object

    theta_j = (W_{l+1}[:, j], W_l[j, :] * c_{l-1}, b_l[j])  in R^(d_{l+1} + d_{l-1} + 1),

(outgoing weights, effective incoming weights, bias: the two-layer object ``(v, w, b)`` of ``compress_two_layer``),
and the next pre-activation ``z_{l+1} = sum_j c_{l,j} W_{l+1}[:, j] act(W_l[j] . (c_{l-1} h_{l-1}) + b_l[j])`` is a
sum over these objects. ``compress_mlp`` applies the paper's construction (Algorithm B on the objects) to the hidden
layers one after another, from the first: layer l's objects are built on the already compressed layer l-1 (whose
weights ``c_{l-1}`` scale the incoming weights, i.e. are folded into them) and its kept neurons carry weights
``c_{l,j}`` that scale their outgoing weights. For an activation that is a polynomial of degree p, matching the
moments of order ``k >= p + 1`` of layer l keeps ``z_{l+1}`` exactly, hence the whole net (tested).

Inferred beyond the paper (which compresses one layer of objects at a time, never a stack):

- **Order and coordinates.** Compression runs from the first hidden layer up; a layer's objects use the
  effective incoming weights ``W_l[j, i] c_{l-1, i}`` (the same moments as the raw ones, which are a linear map
  of them, but the clustering geometry the function sees).
- **Where it applies.** The object dimension of layer l is ``m_l = d_{l+1} + d'_{l-1} + 1``, so moment matching
  needs ``d'_l >= C(m_l + k, k) > m_l``: a layer can only be compressed when both of its neighbours are narrow.
  For a stack of equally wide layers no order k >= 1 fits and ``compress_mlp`` refuses with the bound. The
  construction therefore compresses the wide layers of a net whose wide layers are separated by narrow
  (bottleneck) layers, which are kept (``target_widths[l] >= d_l``); the paper's small-m regime (two-layer nets
  on 2-D inputs, m = 4) is the one-hidden-layer case.
- **Compressed dynamics.** Weight ``W_{l+1}[i, j]`` is shared by neuron j of layer l and neuron i of layer l+1; in
  the net where every kept neuron is repeated ``c`` times it stands for ``c_{l+1,i} c_{l,j}`` identical edges.
  ``attach_compressed_dynamics`` therefore divides its gradient by ``c_{l+1,i} c_{l,j}`` (bias ``b_l[j]``: by
  ``c_{l,j}``; the input and output layers have weight 1). For integer ``c`` this is exactly the expanded net's
  trajectory under any element-wise optimiser (tested against an expanded net with SGD and Adam); it reduces to the
  paper's ``1/c_j`` rule for one hidden layer.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from ._checks import check_order, check_positive_int
from .compressor import MomentCompressor
from .moments import tchakaloff_bound
from .networks import default_init_


class WeightedMLP(nn.Module):
    """``h_0 = x``, ``h_l = c_l * act_l(W_l h_{l-1} + b_l)`` for hidden layers, ``f(x) = W_L h_{L-1} + b_L``.

    Attributes:
        linears: ``nn.ModuleList`` of the L ``nn.Linear`` layers (``linears[l]`` maps ``d_l -> d_{l+1}``).
        activations: ``nn.ModuleList`` of the L - 1 parameter-free activations.
        weights(l): the buffer ``c_l`` of hidden layer l (0-based), shape ``(d_{l+1},)``.
    """

    def __init__(self, linears: Sequence[nn.Linear], activations: Sequence[nn.Module],
                 weights: Sequence[torch.Tensor] | None = None):
        super().__init__()
        if len(linears) < 2 or len(activations) != len(linears) - 1:
            raise ValueError(f"linears, activations: expected L >= 2 Linear layers and L - 1 activations, got "
                             f"{len(linears)} and {len(activations)}")
        for a, b in zip(linears[:-1], linears[1:]):
            if a.out_features != b.in_features:
                raise ValueError(f"linears: widths do not chain ({a.out_features} -> {b.in_features})")
        self.linears = nn.ModuleList(linears)
        self.activations = nn.ModuleList(activations)
        widths = [lin.out_features for lin in linears[:-1]]
        weights = [torch.ones(w) for w in widths] if weights is None else list(weights)
        if len(weights) != len(widths):
            raise ValueError(f"weights: expected {len(widths)} vectors (one per hidden layer), got {len(weights)}")
        ref = linears[0].weight
        for layer, (w, c) in enumerate(zip(widths, weights)):
            c = torch.as_tensor(c).detach().to(device=ref.device, dtype=ref.dtype).clone()
            if c.shape != (w,) or not torch.isfinite(c).all() or (c < 0).any():
                raise ValueError(f"weights[{layer}]: expected {w} finite non-negative values, "
                                 f"got shape {tuple(c.shape)}")
            self.register_buffer(f"c{layer}", c)

    @property
    def hidden_widths(self) -> list[int]:
        """``[d_1, ..., d_{L-1}]``."""
        return [lin.out_features for lin in self.linears[:-1]]

    def weights(self, layer: int) -> torch.Tensor:
        """The buffer ``c`` of hidden layer ``layer`` (0-based), shape ``(d_{layer+1},)``."""
        return getattr(self, f"c{layer}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: ``(batch, d_0)`` -> ``(batch, d_L)``."""
        for layer, (lin, act) in enumerate(zip(self.linears[:-1], self.activations)):
            x = act(lin(x)) * self.weights(layer)
        return self.linears[-1](x)

    def neuron_objects(self, layer: int) -> np.ndarray:
        """Neurons of hidden layer ``layer`` as objects ``(outgoing, effective incoming, bias)``.

        Returns:
            float64 array ``(d_{layer+1}, d_{layer+2} + d_layer + 1)``; incoming weights are multiplied by the
            previous layer's ``c`` (the input has weight 1).
        """
        lin, nxt = self.linears[layer], self.linears[layer + 1]
        with torch.no_grad():
            incoming = lin.weight * self.weights(layer - 1) if layer > 0 else lin.weight
            return torch.cat([nxt.weight.T, incoming, lin.bias[:, None]], dim=1).double().cpu().numpy()

    def select(self, layer: int, support, weights) -> WeightedMLP:
        """A copy keeping neurons ``support`` ``(d',)`` of hidden layer ``layer`` with ``c = weights * c_old``."""
        width = self.hidden_widths[layer]
        idx = torch.as_tensor(np.asarray(support), dtype=torch.long)
        if idx.ndim != 1 or idx.numel() == 0 or idx.min() < 0 or idx.max() >= width:
            raise ValueError(f"support: expected a non-empty 1-D array of indices in [0, {width}), "
                             f"got shape {tuple(idx.shape)}")
        w = torch.as_tensor(np.asarray(weights, dtype=np.float64))
        if w.shape != idx.shape:
            raise ValueError(f"weights: expected shape {tuple(idx.shape)} like support, got {tuple(w.shape)}")
        ref = self.linears[0].weight
        idx = idx.to(ref.device)
        linears = []
        for i, lin in enumerate(self.linears):
            W, b = lin.weight.detach(), lin.bias.detach()
            if i == layer:
                W, b = W[idx], b[idx]
            elif i == layer + 1:
                W = W[:, idx]
            new = nn.Linear(W.shape[1], W.shape[0]).to(W)
            with torch.no_grad():
                new.weight.copy_(W)
                new.bias.copy_(b)
            linears.append(new)
        cs = [self.weights(i).detach().clone() for i in range(len(self.activations))]
        cs[layer] = w.to(ref) * cs[layer][idx]
        return WeightedMLP(linears, list(self.activations), cs)

    def fold(self) -> nn.Sequential:
        """A plain ``Linear, act, ..., Linear`` net, each ``c_l`` folded into ``W_{l+1}``'s columns (same outputs)."""
        mods: list[nn.Module] = []
        for i, lin in enumerate(self.linears):
            new = nn.Linear(lin.in_features, lin.out_features).to(lin.weight)
            with torch.no_grad():
                new.weight.copy_(lin.weight * self.weights(i - 1) if i > 0 else lin.weight)
                new.bias.copy_(lin.bias)
            mods.append(new)
            if i < len(self.activations):
                mods.append(self.activations[i])
        return nn.Sequential(*mods)

    def gradient_divisors(self) -> list[tuple[nn.Parameter, torch.Tensor]]:
        """Each parameter with the tensor its gradient is divided by under the compressed dynamics.

        ``W_{l+1}[i, j]`` by ``c_{l+1, i} c_{l, j}`` and ``b_l[i]`` by ``c_{l, i}``, the input and output units having
        weight 1 (see the module docstring).
        """
        n_hidden = len(self.activations)
        ones = lambda n: torch.ones(n, device=self.linears[0].weight.device,  # noqa: E731
                                    dtype=self.linears[0].weight.dtype)
        out = []
        for i, lin in enumerate(self.linears):
            c_out = self.weights(i) if i < n_hidden else ones(lin.out_features)
            c_in = self.weights(i - 1) if i > 0 else ones(lin.in_features)
            out += [(lin.weight, torch.outer(c_out, c_in)), (lin.bias, c_out)]
        return out

    @classmethod
    def from_sequential(cls, net: nn.Module) -> WeightedMLP:
        """The ``WeightedMLP`` (all ``c = 1``, parameters copied) of ``nn.Sequential(Linear, act, ..., Linear)``.

        A ``WeightedMLP`` is returned as a copy.

        Raises:
            TypeError: not an alternating ``Linear`` / parameter-free activation stack with biases.
        """
        if isinstance(net, WeightedMLP):
            return net.select(0, np.arange(net.hidden_widths[0]), np.ones(net.hidden_widths[0]))
        mods = list(net.children()) if isinstance(net, nn.Sequential) else []
        linears, acts = mods[0::2], mods[1::2]
        if (len(mods) < 3 or len(mods) % 2 == 0 or not all(isinstance(m, nn.Linear) and m.bias is not None
                                                            for m in linears)
                or any(isinstance(m, nn.Linear) or any(True for _ in m.parameters()) for m in acts)):
            raise TypeError("net: expected nn.Sequential(Linear, activation, Linear, ..., activation, Linear) with "
                            f"biases and parameter-free activations, or a WeightedMLP; got {type(net).__name__} "
                            f"with children {[type(m).__name__ for m in mods]}")
        copies = []
        for lin in linears:
            new = nn.Linear(lin.in_features, lin.out_features).to(lin.weight)
            new.load_state_dict(lin.state_dict())
            copies.append(new)
        return cls(copies, acts)


def dense_mlp(sizes: Sequence[int], activation: type[nn.Module] = nn.Tanh,
              generator: torch.Generator | None = None) -> WeightedMLP:
    """An MLP with layer sizes ``sizes = (d_0, d_1, ..., d_L)``, PyTorch's default ``nn.Linear`` init and ``c = 1``.

    With ``generator`` the initialisation ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` is drawn from it.
    """
    sizes = [check_positive_int(s, "sizes") for s in sizes]
    if len(sizes) < 3:
        raise ValueError(f"sizes: expected (d_0, d_1, ..., d_L) with at least one hidden layer, got {sizes}")
    linears = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
    if generator is not None:
        default_init_(linears, generator)
    return WeightedMLP(linears, [activation() for _ in sizes[2:]])


def _per_layer(value, n: int, name: str) -> list:
    """``value`` repeated for ``n`` hidden layers, or the given sequence of length ``n``."""
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) != n:
            raise ValueError(f"{name}: expected one value per hidden layer ({n}), got {len(value)}")
        return list(value)
    return [value] * n


def compress_mlp(model: nn.Module, target_widths, k=3, random_state=None, **compressor_options) -> WeightedMLP:
    """Compresses every hidden layer of an MLP by moment matching, from the first hidden layer up.

    Args:
        model: ``nn.Sequential(Linear, act, ..., Linear)`` (biases, parameter-free activations) or a ``WeightedMLP``.
        target_widths: one width per hidden layer (``None`` or ``>= d_l``: the layer is kept as it is). A
            compressed layer needs ``target >= C(m_l + k_l, k_l)`` with ``m_l = d_{l+1} + d'_{l-1} + 1``.
        k: moment order, one for all layers or one per hidden layer.
        random_state: seed of the k-means phases; compressor_options: further ``MomentCompressor`` parameters.

    Returns:
        A ``WeightedMLP`` with hidden widths ``<= target_widths``; every compressed layer's weights sum to its
        original mass. ``.fold()`` gives a plain ``nn.Sequential`` with the same outputs.

    Raises:
        TypeError: ``model`` is not such an MLP. ValueError: wrong number of widths or orders, a width < 1, or a
            target below the layer's Tchakaloff bound (the message names the layer, m, k and the bound).
    """
    net = WeightedMLP.from_sequential(model)
    n_hidden = len(net.hidden_widths)
    targets = _per_layer(target_widths, n_hidden, "target_widths")
    orders = [check_order(o) for o in _per_layer(k, n_hidden, "k")]
    for layer, (target, order) in enumerate(zip(targets, orders)):
        width = net.hidden_widths[layer]
        if target is None or check_positive_int(target, f"target_widths[{layer}]") >= width:
            continue
        objects = net.neuron_objects(layer)
        bound = tchakaloff_bound(objects.shape[1], order)
        if target < bound:
            raise ValueError(f"target_widths[{layer}]: expected >= C(m + k, k) = {bound} for m = {objects.shape[1]} "
                             f"(outgoing + incoming + 1) and k = {order}, got {target}; compress layers whose "
                             "neighbours are narrow, or lower k")
        c = net.weights(layer).detach().double().cpu().numpy()
        mc = MomentCompressor(k=order, target_size=target, random_state=random_state, **compressor_options)
        mc.fit(objects, sample_weight=c)
        net = net.select(layer, mc.support_, mc.weights_ / c[mc.support_])
    return net


def random_mlp_subnetwork(model: nn.Module, target_widths, rng: np.random.Generator,
                          same_mass: bool = True) -> WeightedMLP:
    """Baseline: ``target_widths[l]`` uniformly random neurons per hidden layer, unchanged parameters.

    With ``same_mass`` every kept neuron of layer l gets ``c = d_l / d'_l`` (the layer's total weight is kept, as
    for a compressed layer); otherwise ``c = 1``. Layers with target ``None`` or ``>= d_l`` are kept.
    """
    net = WeightedMLP.from_sequential(model)
    targets = _per_layer(target_widths, len(net.hidden_widths), "target_widths")
    for layer, target in enumerate(targets):
        width = net.hidden_widths[layer]
        if target is None or check_positive_int(target, f"target_widths[{layer}]") >= width:
            continue
        idx = np.sort(rng.choice(width, size=target, replace=False))
        c = net.weights(layer).detach().double().cpu().numpy()[idx]
        net = net.select(layer, idx, np.full(target, width / target if same_mass else 1.0) / c)
    return net


def magnitude_prune_mlp(model: nn.Module, target_widths) -> WeightedMLP:
    """Baseline from ``torch-pruning``: L1-magnitude structured pruning of hidden neurons to ``target_widths``.

    Each hidden layer's neurons are scored by ``torch_pruning.importance.MagnitudeImportance(p=1)`` over their
    dependency group (L1 of the incoming row plus the outgoing column, biases not counted) and the lowest are
    removed with the dependency graph, one layer at a time from the first. The result has ``c = 1`` (the ``c`` of
    a weighted input is folded first).

    Raises:
        ImportError: ``torch_pruning`` is not installed (the ``pruning`` extra).
    """
    try:
        import torch_pruning as tp
    except ImportError as err:
        raise ImportError("magnitude_prune_mlp needs torch-pruning: "
                          "pip install 'iclr26-perm-compress[pruning]'") from err
    plain = WeightedMLP.from_sequential(model).fold()
    targets = _per_layer(target_widths, len(plain) // 2, "target_widths")
    linears = list(plain)[0::2]
    example = torch.zeros(2, linears[0].in_features, device=linears[0].weight.device, dtype=linears[0].weight.dtype)
    importance = tp.importance.MagnitudeImportance(p=1, group_reduction="sum", normalizer=None)
    with torch.enable_grad():  # the dependency graph is traced with autograd
        graph = tp.DependencyGraph().build_dependency(plain, example_inputs=example)
        for layer, target in enumerate(targets):
            lin = linears[layer]
            if target is None or check_positive_int(target, f"target_widths[{layer}]") >= lin.out_features:
                continue
            group = graph.get_pruning_group(lin, tp.prune_linear_out_channels, idxs=list(range(lin.out_features)))
            drop = torch.argsort(importance(group))[: lin.out_features - target].tolist()
            graph.get_pruning_group(lin, tp.prune_linear_out_channels, idxs=drop).prune()
    return WeightedMLP.from_sequential(plain)
