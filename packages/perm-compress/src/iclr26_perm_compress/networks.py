"""Neuron compression of a two-layer net and compressed training dynamics (dynamical LTH).

A two-layer net ``f(x) = sum_i v_i sigma(w_i^T x + b_i) + b2`` is a symmetric function of its
neurons, the objects ``theta_i = (v_i, w_i, b_i)`` in R^(out + in + 1). Compressing the neuron
set gives ``f'(x) = sum_j c_j v_j sigma(w_j^T x + b_j) + b2``. Training ``f'`` with the original
optimiser, but with every gradient of neuron j divided by ``c_j`` (``attach_compressed_dynamics``),
follows the trajectory of the original net up to the compression error.

Folding: ``fold()`` returns a plain ``Linear -> act -> Linear`` net with ``u_j = c_j v_j``. Its
outputs are the same, but the compressed training rule then reads, for SGD with step eta,
``u_j <- u_j - eta c_j dL/du_j`` and ``(w_j, b_j) <- (w_j, b_j) - (eta / c_j) dL/d(w_j, b_j)``;
for adaptive optimisers keep the weighted form.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ._checks import check_positive_int
from .compressor import MomentCompressor


class WeightedTwoLayerNet(nn.Module):
    """``f(x) = sum_j c_j v_j sigma(w_j^T x + b_j) + b2``; ``c`` is a buffer, not trained.

    Attributes:
        hidden: ``nn.Linear(in, width)`` holding ``w_j`` (rows of ``hidden.weight``) and ``b_j``.
        activation: the non-linearity sigma (a parameter-free module, default ReLU).
        output: ``nn.Linear(width, out)`` holding ``v_j`` (columns of ``output.weight``) and ``b2``.
        c: buffer of shape ``(width,)``.
    """

    def __init__(self, in_features: int, width: int, out_features: int = 1, activation: nn.Module | None = None,
                 weights: torch.Tensor | None = None):
        super().__init__()
        check_positive_int(in_features, "in_features")
        check_positive_int(width, "width")
        check_positive_int(out_features, "out_features")
        self.hidden = nn.Linear(in_features, width)
        self.activation = activation if activation is not None else nn.ReLU()
        self.output = nn.Linear(width, out_features)
        c = torch.ones(width) if weights is None else torch.as_tensor(weights).clone()
        if not c.is_floating_point():
            c = c.to(torch.get_default_dtype())
        if c.shape != (width,) or not torch.isfinite(c).all() or (c < 0).any():
            raise ValueError(f"weights: expected {width} finite non-negative values, got shape {tuple(c.shape)}")
        self.register_buffer("c", c)

    @property
    def width(self) -> int:
        """Number of neurons."""
        return self.hidden.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: ``(batch, in)`` -> ``(batch, out)``."""
        return self.output(self.activation(self.hidden(x)) * self.c)

    def object_parameters(self) -> list[tuple[nn.Parameter, tuple[int, ...]]]:
        """Each per-neuron parameter with the shape ``c`` takes to scale its gradient (the output bias is shared)."""
        return [(self.hidden.weight, (-1, 1)), (self.hidden.bias, (-1,)), (self.output.weight, (1, -1))]

    def neuron_objects(self) -> np.ndarray:
        """Neurons as objects ``(v_j, w_j, b_j)``: float64 array of shape ``(width, out + in + 1)``."""
        with torch.no_grad():
            parts = [self.output.weight.T, self.hidden.weight, self.hidden.bias[:, None]]
            return torch.cat(parts, dim=1).double().cpu().numpy()

    @classmethod
    def from_dense(cls, net: nn.Module, support, weights) -> WeightedTwoLayerNet:
        """The weighted sub-network of ``net`` keeping neurons ``support`` with weights ``weights``.

        Args:
            net: ``nn.Sequential(Linear, activation, Linear)`` or a ``WeightedTwoLayerNet``
                (whose own ``c`` is multiplied in).
            support: neuron indices, shape ``(d',)``.
            weights: non-negative weights, shape ``(d',)``.

        Raises:
            TypeError: ``net`` is not a two-layer net; ValueError: bad indices or weights.
        """
        hidden, act, output, c_old = _two_layer_parts(net)
        idx = torch.as_tensor(np.asarray(support), dtype=torch.long)
        if idx.ndim != 1 or idx.numel() == 0 or idx.min() < 0 or idx.max() >= hidden.out_features:
            raise ValueError(f"support: expected a non-empty 1-D array of indices in [0, {hidden.out_features}), "
                             f"got shape {tuple(idx.shape)}")
        w = torch.as_tensor(np.asarray(weights, dtype=np.float64)).to(c_old.dtype)
        if w.shape != idx.shape:
            raise ValueError(f"weights: expected shape {tuple(idx.shape)} like support, got {tuple(w.shape)}")
        device = hidden.weight.device
        idx, w = idx.to(device), w.to(device)
        out = cls(hidden.in_features, idx.numel(), output.out_features, activation=act, weights=w * c_old[idx])
        out = out.to(device=device, dtype=hidden.weight.dtype)
        with torch.no_grad():
            out.hidden.weight.copy_(hidden.weight[idx])
            out.hidden.bias.copy_(hidden.bias[idx])
            out.output.weight.copy_(output.weight[:, idx])
            out.output.bias.copy_(output.bias)
        return out

    def fold(self) -> nn.Sequential:
        """A plain ``Linear -> act -> Linear`` net with ``c`` folded into the outgoing weights (same outputs)."""
        hidden = nn.Linear(self.hidden.in_features, self.width).to(self.hidden.weight)
        output = nn.Linear(self.width, self.output.out_features).to(self.output.weight)
        with torch.no_grad():
            hidden.load_state_dict(self.hidden.state_dict())
            output.weight.copy_(self.output.weight * self.c)
            output.bias.copy_(self.output.bias)
        return nn.Sequential(hidden, self.activation, output)

    def prune(self) -> WeightedTwoLayerNet:
        """A copy without the neurons whose weight ``c_j`` is 0."""
        keep = torch.nonzero(self.c > 0).flatten()
        return WeightedTwoLayerNet.from_dense(self, keep.cpu().numpy(), np.ones(keep.numel()))


def _two_layer_parts(net: nn.Module) -> tuple[nn.Linear, nn.Module, nn.Linear, torch.Tensor]:
    """``(hidden, activation, output, c)`` of a two-layer net, or ``TypeError``."""
    if isinstance(net, WeightedTwoLayerNet):
        return net.hidden, net.activation, net.output, net.c.detach()
    mods = list(net.children()) if isinstance(net, nn.Sequential) else []
    if (len(mods) != 3 or not isinstance(mods[0], nn.Linear) or not isinstance(mods[2], nn.Linear)
            or any(True for _ in mods[1].parameters()) or mods[0].out_features != mods[2].in_features
            or mods[0].bias is None or mods[2].bias is None):
        raise TypeError("net: expected nn.Sequential(Linear, activation, Linear) with biases and a parameter-free "
                        f"activation, or a WeightedTwoLayerNet; got {type(net).__name__} "
                        f"with children {[type(m).__name__ for m in mods]}")
    return mods[0], mods[1], mods[2], torch.ones(mods[0].out_features, device=mods[0].weight.device,
                                                  dtype=mods[0].weight.dtype)


def dense_two_layer(in_features: int, width: int, out_features: int = 1, activation: nn.Module | None = None,
                    generator: torch.Generator | None = None) -> WeightedTwoLayerNet:
    """A width-``width`` two-layer net with PyTorch's default ``nn.Linear`` initialisation and ``c = 1``.

    With ``generator`` the initialisation is drawn from it (reproducible without global seeding).
    """
    net = WeightedTwoLayerNet(in_features, width, out_features, activation)
    if generator is not None:
        default_init_((net.hidden, net.output), generator)
    return net


def default_init_(layers, generator: torch.Generator) -> None:
    """Redraws each ``nn.Linear``'s weight and bias from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (PyTorch's default)
    with ``generator``, in place."""
    with torch.no_grad():
        for layer in layers:
            bound = 1.0 / layer.in_features ** 0.5
            for p in (layer.weight, layer.bias):
                p.copy_(torch.rand(p.shape, generator=generator) * 2 * bound - bound)


def compress_two_layer(net: nn.Module, k: int = 5, target_width: int = 1000, random_state=None,
                       **compressor_options) -> WeightedTwoLayerNet:
    """Compresses the neurons of a two-layer net by moment matching (Algorithm B).

    Args:
        net: ``nn.Sequential(Linear, act, Linear)`` (multi-output allowed) or ``WeightedTwoLayerNet``.
        k: order of the matched moments of the neuron objects ``(v_j, w_j, b_j)``.
        target_width: ``d'``, at least ``C(out + in + 1 + k, k)``.
        random_state: seed of the k-means phase.
        compressor_options: further ``MomentCompressor`` parameters.

    Returns:
        A ``WeightedTwoLayerNet`` of width ``<= target_width`` whose weights sum to the original mass.

    Raises:
        TypeError: ``net`` is not a two-layer net. ValueError: ``target_width`` below the bound.
    """
    hidden, _, output, c = _two_layer_parts(net)
    objects = torch.cat([output.weight.T, hidden.weight, hidden.bias[:, None]], dim=1).detach().double().cpu().numpy()
    mc = MomentCompressor(k=k, target_size=target_width, random_state=random_state, **compressor_options)
    mc.fit(objects, sample_weight=c.double().cpu().numpy())
    return WeightedTwoLayerNet.from_dense(net, mc.support_, mc.weights_ / c.double().cpu().numpy()[mc.support_])


def random_subnetwork(net: nn.Module, width: int, rng: np.random.Generator | None = None,
                      rescale: bool = False) -> WeightedTwoLayerNet:
    """Baseline: ``width`` uniformly random neurons of ``net`` with unchanged weights and ``c = 1``.

    With ``rescale`` the outgoing weights are multiplied by ``d / width`` (so the output scale
    matches the full net), still with ``c = 1`` and the plain optimiser.
    """
    hidden, _, _, _ = _two_layer_parts(net)
    d = hidden.out_features
    width = check_positive_int(width, "width")
    if width > d:
        raise ValueError(f"width: expected at most the net's width {d}, got {width}")
    rng = rng if rng is not None else np.random.default_rng()
    idx = np.sort(rng.choice(d, size=width, replace=False))
    sub = WeightedTwoLayerNet.from_dense(net, idx, np.ones(width))
    sub.c.fill_(1.0)
    if rescale:
        with torch.no_grad():
            sub.output.weight.mul_(d / width)
    return sub


def attach_compressed_dynamics(weighted_net: nn.Module) -> list:
    """Registers gradient hooks that divide every gradient of object j (a neuron or a head) by ``c_j``.

    For a ``WeightedTwoLayerNet``: ``hidden.weight`` (row j), ``hidden.bias`` (entry j) and ``output.weight``
    (column j), the output bias left alone; for a ``WeightedMultiHeadAttention``: head j's Q, K, V and O; for a
    ``WeightedMLP``: each weight by the product of the weights of the two neurons it joins (``gradient_divisors``).
    Any optimiser then runs the compressed dynamics.

    Returns:
        The hook handles (``handle.remove()`` detaches them).

    Raises:
        TypeError: not a weighted net (no ``c`` buffer and ``object_parameters``). ValueError: some ``c_j <= 0``
            (call ``prune()`` first).
    """
    if hasattr(weighted_net, "gradient_divisors"):
        pairs = weighted_net.gradient_divisors()
    elif isinstance(getattr(weighted_net, "c", None), torch.Tensor) and hasattr(weighted_net, "object_parameters"):
        c = weighted_net.c
        pairs = [(param, c.view(shape)) for param, shape in weighted_net.object_parameters()]
    else:
        raise TypeError("weighted_net: expected a WeightedTwoLayerNet, WeightedMultiHeadAttention or WeightedMLP, "
                        f"got {type(weighted_net).__name__}")
    zero = sum(int((div <= 0).any()) for _, div in pairs)
    if zero:
        raise ValueError(f"weighted_net: {zero} parameters belong to objects with c_j = 0; drop those objects "
                         "first (prune())")
    return [param.register_hook(lambda g, div=div: g / div) for param, div in pairs]
