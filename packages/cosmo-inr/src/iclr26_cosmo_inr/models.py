"""Coordinate networks: COSMO-INR and the baselines, with one constructor signature.

Every network maps coordinates ``(N, in_features)`` to values ``(N, out_features)``.
Complex networks (COSMO-RC, WIRE) carry complex activations as pairs of real tensors
(see ``activations``); their parameters are stored as real and imaginary tensors, so
``n_real_parameters`` counts a complex parameter twice.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import torch
from torch import Tensor, nn

from . import activations as act
from . import kernel as fused
from .activations import Pair
from .prior import PriorEmbedder

NORM_EPS = fused.NORM_EPS
KERNELS = ("fused", "compiled", "reference")


def check_coords(coords: Tensor, in_features: int) -> Tensor:
    """Returns ``coords`` if it is a finite ``(N, in_features)`` tensor; raises otherwise."""
    if not isinstance(coords, Tensor):
        raise TypeError(f"coords: expected a torch.Tensor of shape (N, {in_features}), got {type(coords).__name__}")
    if coords.ndim != 2 or coords.shape[1] != in_features:
        raise ValueError(f"coords: expected shape (N, {in_features}), got {tuple(coords.shape)}")
    if not torch.isfinite(coords).all():
        raise ValueError("coords: contains NaN or Inf; expected finite coordinates (normalised to [-1, 1])")
    return coords


class ComplexLinear(nn.Module):
    """Complex affine map W z + b on pairs; W and b stored as real and imaginary parts.

    Args:
        weight_bound: real and imaginary weights ~ U(−bound, bound) independently.
        bias_bound: the same for the bias.
    """

    def __init__(self, in_features: int, out_features: int, weight_bound: float, bias_bound: float):
        super().__init__()
        self.weight_re = nn.Parameter(torch.empty(out_features, in_features).uniform_(-weight_bound, weight_bound))
        self.weight_im = nn.Parameter(torch.empty(out_features, in_features).uniform_(-weight_bound, weight_bound))
        self.bias_re = nn.Parameter(torch.empty(out_features).uniform_(-bias_bound, bias_bound))
        self.bias_im = nn.Parameter(torch.empty(out_features).uniform_(-bias_bound, bias_bound))

    def forward(self, re: Tensor, im: Tensor | None) -> tuple[Tensor, Tensor]:
        """``(N, in)`` pair -> ``(N, out)`` pair.

        A complex input uses three real matrix products instead of four (Gauss):
        t1 = W_r a, t2 = W_i b, t3 = (W_r + W_i)(a + b); Re = t1 − t2, Im = t3 − t1 − t2.
        """
        if im is None:
            return (nn.functional.linear(re, self.weight_re, self.bias_re),
                    nn.functional.linear(re, self.weight_im, self.bias_im))
        t1 = nn.functional.linear(re, self.weight_re)
        t2 = nn.functional.linear(im, self.weight_im)
        t3 = nn.functional.linear(re + im, self.weight_re + self.weight_im)
        return t1 - t2 + self.bias_re, t3 - t1 - t2 + self.bias_im

    def real_part(self, re: Tensor, im: Tensor) -> Tensor:
        """Re(W z + b) only, ``(N, out)``."""
        return nn.functional.linear(re, self.weight_re, self.bias_re) - nn.functional.linear(im, self.weight_im)


def phase_normalise(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    """z / sqrt(|z|² + ε²) (unit modulus wherever |z| >> ε = 1e-8).

    The official code divides by |z + ε|, which leaves |output| − 1 ≈ ε/|z| (about 1e-3 for the
    heavily damped |ψ| ≈ 1e-5 that the modulation e^{−2πC Im z} produces); this form keeps the
    same guard against 0/0 but is unit-modulus to float precision, with finite gradients at z = 0.
    """
    mod = torch.sqrt(re.square() + im.square() + NORM_EPS**2)
    return re / mod, im / mod


def _uniform_linear(in_features: int, out_features: int, bound: float | None) -> nn.Linear:
    layer = nn.Linear(in_features, out_features)
    if bound is not None:
        with torch.no_grad():
            layer.weight.uniform_(-bound, bound)
    return layer


class INR(nn.Module):
    """Base class: ``forward(coords) -> (N, out_features)``; ``layer_outputs(coords)`` for spectral analysis."""

    in_features: int

    def _layers(self, coords: Tensor) -> Iterator[Pair]:
        raise TypeError(f"{type(self).__name__} must define _layers")

    def _head(self, pair: Pair) -> Tensor:
        raise TypeError(f"{type(self).__name__} must define _head")

    def forward(self, coords: Tensor) -> Tensor:
        check_coords(coords, self.in_features)
        *_, last = self._layers(coords)
        return self._head(last)

    @torch.no_grad()
    def layer_outputs(self, coords: Tensor) -> list[Tensor]:
        """Each activation layer's output, ``(N, width)`` (complex for complex networks)."""
        check_coords(coords, self.in_features)
        return [re if im is None else torch.complex(re, im) for re, im in self._layers(coords)]

    def regularisation_loss(self) -> Tensor | None:
        """An extra training loss (INCODE's hinge penalties); ``None`` for most networks."""
        return None


class COSMOINR(INR):
    """COSMO-INR with the COSMO-RC activation ψ(x) = h_RC(x; T_ℓ, β) e^{j2πC_ℓ x} (official architecture).

    Layer 0: real Linear(in, W), weights U(−1/in, 1/in), ψ of the real pre-activation.
    Layers 1..L: complex Linear(W, W), weights U(−1/W, 1/W) (real and imaginary parts),
    then ``hidden_norm="phase"``: z ← z/|z + ε|, ψ(z), ψ ← ψ/|ψ + ε|. Output: Re(complex
    Linear(W, out)), then ``sigmoid`` (``output_activation="none"`` for unbounded targets).
    (T_ℓ, C_ℓ) for ℓ = 0..L come from a ``PriorEmbedder`` (``prior``), projected into
    ``T_range`` and ``C_range``; the effective T is clamped to >= 1e-4.

    Args:
        modulate: ``False`` sets C ≡ 0 (the unmodulated RC ablation).
        kernel: ``"fused"`` (default: ``kernel.cosmo_rc_layer``, one autograd Function per layer with the
            analytic derivative, saving only its input), ``"compiled"`` (the same under ``torch.compile``;
            the first step compiles, about a minute on CPU) or ``"reference"`` (the activation as plain
            autograd operations, ``activations.cosmo_rc_pair``; kept to check the fused one).

    Raises:
        ValueError: bad ranges, β outside [0, 1], unknown ``hidden_norm``/``output_activation``/``prior``/``kernel``.
    """

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 256, hidden_layers: int = 3,
                 beta: float = 0.5, T_range: tuple[float, float] = (0.0, 10.0),
                 C_range: tuple[float, float] = (0.0, 3.0), hidden_norm: str = "phase", prior: str = "resnet_stem",
                 prior_signal=None, output_activation: str = "sigmoid", modulate: bool = True, task: str = "image",
                 kernel: str = "fused"):
        super().__init__()
        _check_sizes(in_features, out_features, hidden_features, hidden_layers)
        t_lo, t_hi = (float(v) for v in T_range)
        if t_lo < 0 or t_hi <= t_lo:
            raise ValueError(f"T_range: expected 0 <= T_min < T_max, got {tuple(T_range)}")
        c_lo, c_hi = (float(v) for v in C_range)
        if c_hi < c_lo:
            raise ValueError(f"C_range: expected C_min <= C_max, got {tuple(C_range)}")
        if hidden_norm not in ("phase", "none"):
            raise ValueError(f"hidden_norm: expected 'phase' or 'none', got {hidden_norm!r}")
        if kernel not in KERNELS:
            raise ValueError(f"kernel: expected one of {KERNELS}, got {kernel!r}")
        self.kernel = kernel
        self.output_activation = _check_output(output_activation)
        self.in_features, self.beta, self.hidden_norm, self.modulate = in_features, act.check_beta(beta), \
            hidden_norm, bool(modulate)
        width = hidden_features
        self.first = _uniform_linear(in_features, width, 1.0 / in_features)
        self.hidden = nn.ModuleList(ComplexLinear(width, width, 1.0 / width, 1.0 / math.sqrt(width))
                                    for _ in range(hidden_layers))
        self.final = ComplexLinear(width, out_features, 1.0 / math.sqrt(width), 1.0 / math.sqrt(width))
        self.prior = PriorEmbedder(prior, hidden_layers + 1, 2, ((t_lo, t_hi), (c_lo, c_hi)), task=task,
                                   signal=prior_signal)

    def activation_parameters(self) -> Tensor:
        """(T_ℓ, C_ℓ) per layer, ``(L + 1, 2)``; C is 0 when ``modulate=False``."""
        params = self.prior()
        return params if self.modulate else torch.stack([params[:, 0], torch.zeros_like(params[:, 1])], dim=1)

    def _psi(self, re: Tensor, im: Tensor | None, T: Tensor, C: Tensor) -> Pair:
        if self.modulate:
            return act.cosmo_rc_pair(re, im, T, C, self.beta)
        return act.raised_cosine_pair(re, im, T, self.beta)

    def _reference_layer(self, re: Tensor, im: Tensor | None, T: Tensor, C: Tensor) -> Pair:
        """ψ as plain autograd operations, normalised around it for hidden layers (complex input)."""
        normalise = im is not None and self.hidden_norm == "phase"
        if normalise:
            re, im = phase_normalise(re, im)
        re, im = self._psi(re, im, T, C)
        return phase_normalise(re, im) if normalise else (re, im)

    def _layer(self, re: Tensor, im: Tensor | None, T: Tensor, C: Tensor) -> Pair:
        if self.kernel == "reference":
            return self._reference_layer(re, im, T, C)
        normalise = im is not None and self.hidden_norm == "phase"
        return fused.cosmo_rc_layer(re, im, T.clamp_min(act.T_FLOOR), C, self.beta, normalise,
                                    compiled=self.kernel == "compiled")

    def _layers(self, coords: Tensor) -> Iterator[Pair]:
        params = self.activation_parameters().to(coords.dtype)
        pair = self._layer(self.first(coords), None, params[0, 0], params[0, 1])
        yield pair
        for layer, (T, C) in zip(self.hidden, params[1:], strict=True):
            pair = self._layer(*layer(*pair), T, C)
            yield pair

    def _head(self, pair: Pair) -> Tensor:
        re, im = pair
        out = self.final.real_part(re, im) if im is not None else self.final(re, None)[0]
        return torch.sigmoid(out) if self.output_activation == "sigmoid" else out


def _check_sizes(in_features, out_features, hidden_features, hidden_layers) -> None:
    for name, value, low in (("in_features", in_features, 1), ("out_features", out_features, 1),
                             ("hidden_features", hidden_features, 1), ("hidden_layers", hidden_layers, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")


def _check_output(output_activation: str) -> str:
    if output_activation not in ("sigmoid", "none"):
        raise ValueError(f"output_activation: expected 'sigmoid' or 'none', got {output_activation!r}")
    return output_activation


class _RealINR(INR):
    """A real MLP: first layer, ``hidden_layers`` hidden layers (same activation), linear output."""

    def __init__(self, in_features, out_features, hidden_features, hidden_layers, activation: nn.Module,
                 first_bound: float | None, hidden_bound: float | None, output_activation: str = "none"):
        super().__init__()
        _check_sizes(in_features, out_features, hidden_features, hidden_layers)
        self.in_features, self.activation = in_features, activation
        self.output_activation = _check_output(output_activation)
        self.net = nn.ModuleList([_uniform_linear(self._encoded_features(in_features), hidden_features, first_bound)]
                                 + [_uniform_linear(hidden_features, hidden_features, hidden_bound)
                                    for _ in range(hidden_layers)])
        self.final = _uniform_linear(hidden_features, out_features, hidden_bound)

    def _encoded_features(self, in_features: int) -> int:
        return in_features

    def _encode(self, coords: Tensor) -> Tensor:
        return coords

    def _layers(self, coords: Tensor) -> Iterator[Pair]:
        x = self._encode(coords)
        for layer in self.net:
            x = self.activation(layer(x))
            yield x, None

    def _head(self, pair: Pair) -> Tensor:
        out = self.final(pair[0])
        return torch.sigmoid(out) if self.output_activation == "sigmoid" else out


class SIREN(_RealINR):
    """SIREN: sin(ω0 ·), first layer U(−1/in, 1/in), hidden and output U(±√(6/W)/ω0)."""

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 256, hidden_layers: int = 3,
                 omega0: float = 30.0, output_activation: str = "none"):
        _check_sizes(in_features, out_features, hidden_features, hidden_layers)  # before sqrt(6/W)
        super().__init__(in_features, out_features, hidden_features, hidden_layers, act.Sine(omega0),
                         1.0 / in_features, math.sqrt(6.0 / hidden_features) / omega0, output_activation)


class FINER(_RealINR):
    """FINER: sin(ω0 (|z| + 1) z) (scale detached), SIREN init, first-layer bias U(−k, k)."""

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 256, hidden_layers: int = 3,
                 omega0: float = 30.0, first_bias_scale: float = 1.0, output_activation: str = "none"):
        _check_sizes(in_features, out_features, hidden_features, hidden_layers)  # before sqrt(6/W)
        super().__init__(in_features, out_features, hidden_features, hidden_layers, act.Finer(omega0),
                         1.0 / in_features, math.sqrt(6.0 / hidden_features) / omega0, output_activation)
        with torch.no_grad():
            self.net[0].bias.uniform_(-first_bias_scale, first_bias_scale)


class Gauss(_RealINR):
    """Gaussian-activation INR exp(−(s z)²), PyTorch's default Linear init."""

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 256, hidden_layers: int = 3,
                 scale: float = 10.0, output_activation: str = "none"):
        super().__init__(in_features, out_features, hidden_features, hidden_layers, act.Gauss(scale), None, None,
                         output_activation)


class ReLUPE(_RealINR):
    """ReLU MLP on a frequency encoding [x, sin(2^k π x), cos(2^k π x)], k = 0..n_frequencies−1."""

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 256, hidden_layers: int = 3,
                 n_frequencies: int = 10, output_activation: str = "none"):
        if int(n_frequencies) < 1:
            raise ValueError(f"n_frequencies: expected an integer >= 1, got {n_frequencies}")
        self.n_frequencies = int(n_frequencies)
        super().__init__(in_features, out_features, hidden_features, hidden_layers, nn.ReLU(), None, None,
                         output_activation)

    def _encoded_features(self, in_features: int) -> int:
        return in_features * (1 + 2 * self.n_frequencies)

    def _encode(self, coords: Tensor) -> Tensor:
        freqs = math.pi * 2.0 ** torch.arange(self.n_frequencies, dtype=coords.dtype, device=coords.device)
        angles = (coords[:, :, None] * freqs).flatten(1)
        return torch.cat([coords, torch.sin(angles), torch.cos(angles)], dim=1)


class WIRE(INR):
    """WIRE: complex Gabor exp(jω0 z − |s0 z|²); hidden width int(W/√2) complex; output Re(·)."""

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 256, hidden_layers: int = 3,
                 omega0: float = 20.0, s0: float = 10.0, output_activation: str = "none"):
        super().__init__()
        _check_sizes(in_features, out_features, hidden_features, hidden_layers)
        width = max(1, int(hidden_features / math.sqrt(2)))
        self.in_features, self.omega0, self.s0 = in_features, float(omega0), float(s0)
        self.output_activation = _check_output(output_activation)
        self.first = nn.Linear(in_features, width)
        bound = 1.0 / math.sqrt(width)
        self.hidden = nn.ModuleList(ComplexLinear(width, width, bound, bound) for _ in range(hidden_layers))
        self.final = ComplexLinear(width, out_features, bound, bound)

    def _layers(self, coords: Tensor) -> Iterator[Pair]:
        pair = act.gabor_pair(self.first(coords), None, self.omega0, self.s0)
        yield pair
        for layer in self.hidden:
            pair = act.gabor_pair(*layer(*pair), self.omega0, self.s0)
            yield pair

    def _head(self, pair: Pair) -> Tensor:
        out = self.final.real_part(*pair)
        return torch.sigmoid(out) if self.output_activation == "sigmoid" else out


INCODE_REG = (0.1993, 0.0196, 0.0588, 0.0269)


class INCODE(_RealINR):
    """INCODE: e^a sin(e^b ω0 z + c) + d with (a, b, c, d) from a prior embedder, plus hinge penalties.

    ``regularisation_loss()`` = Σ λ_i relu(−p_i) with λ = (0.1993, 0.0196, 0.0588, 0.0269).
    """

    def __init__(self, in_features: int, out_features: int, hidden_features: int = 256, hidden_layers: int = 3,
                 omega0: float = 30.0, prior: str = "resnet_stem", prior_signal=None, task: str = "image",
                 output_activation: str = "none"):
        _check_sizes(in_features, out_features, hidden_features, hidden_layers)  # before sqrt(6/W)
        super().__init__(in_features, out_features, hidden_features, hidden_layers, nn.Identity(),
                         1.0 / in_features, math.sqrt(6.0 / hidden_features) / omega0, output_activation)
        self.omega0 = float(omega0)
        self.prior = PriorEmbedder(prior, 1, 4, None, task=task, signal=prior_signal, init=0.0)

    def _layers(self, coords: Tensor) -> Iterator[Pair]:
        a, b, c, d = self.prior()[0]
        x = coords
        for layer in self.net:
            x = torch.exp(a) * torch.sin(torch.exp(b) * self.omega0 * layer(x) + c) + d
            yield x, None

    def regularisation_loss(self) -> Tensor:
        weights = torch.tensor(INCODE_REG, device=self.final.weight.device)
        return (weights * torch.relu(-self.prior()[0])).sum()


MODELS = ("relu_pe", "siren", "finer", "gauss", "wire", "incode", "cosmo_rc", "cosmo_rc_nonorm", "rc_nomod")
COSMO_MODELS = ("cosmo_rc", "cosmo_rc_nonorm", "rc_nomod")


def make_model(name: str, in_features: int, out_features: int, *, hidden_features: int = 256,
               hidden_layers: int = 3, match_params_to: str | None = None, **kwargs) -> INR:
    """A network by name: ``relu_pe, siren, finer, gauss, wire, incode, cosmo_rc`` and the ablations
    ``cosmo_rc_nonorm`` (no hidden normalisation) and ``rc_nomod`` (C ≡ 0).

    ``match_params_to="siren"`` (or any name) rescales ``hidden_features`` so that the real-parameter
    count (complex counted twice, prior MLP/backbone excluded) is within ±3% of that model's.

    Raises:
        ValueError: unknown name, or no width matches within 3%.
    """
    if name not in MODELS:
        raise ValueError(f"model: expected one of {MODELS}, got {name!r}")
    if match_params_to is not None:
        if match_params_to not in MODELS:
            raise ValueError(f"match_params_to: expected one of {MODELS}, got {match_params_to!r}")
        reference = make_model(match_params_to, in_features, out_features, hidden_features=hidden_features,
                               hidden_layers=hidden_layers, **_shared_kwargs(match_params_to, kwargs))
        hidden_features = _matched_width(name, in_features, out_features, hidden_layers,
                                         n_real_parameters(reference), kwargs)
    factory = {
        "relu_pe": ReLUPE, "siren": SIREN, "finer": FINER, "gauss": Gauss, "wire": WIRE, "incode": INCODE,
        "cosmo_rc": COSMOINR,
        "cosmo_rc_nonorm": lambda *a, **k: COSMOINR(*a, hidden_norm="none", **k),
        "rc_nomod": lambda *a, **k: COSMOINR(*a, modulate=False, **k),
    }[name]
    return factory(in_features, out_features, hidden_features=hidden_features, hidden_layers=hidden_layers,
                   **kwargs)


def _shared_kwargs(name: str, kwargs: dict) -> dict:
    """The kwargs a reference model accepts (prior settings only for prior-using models)."""
    if name in (*COSMO_MODELS, "incode"):
        return {k: v for k, v in kwargs.items() if k in ("prior", "prior_signal", "task")}
    return {}


def _matched_width(name, in_features, out_features, hidden_layers, target: int, kwargs) -> int:
    def count(width: int) -> int:
        light = dict(kwargs, prior="none") if "prior" in kwargs or name in (*COSMO_MODELS, "incode") else kwargs
        light.pop("prior_signal", None)
        return n_real_parameters(make_model(name, in_features, out_features, hidden_features=width,
                                            hidden_layers=hidden_layers, **light))

    lo, hi = 1, 8
    while count(hi) < target and hi < 1 << 14:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if count(mid) < target else (lo, mid)
    best = min((w for w in (lo - 1, lo) if w >= 1), key=lambda w: abs(count(w) - target))
    if abs(count(best) - target) > 0.03 * target:
        raise ValueError(f"match_params_to: no width of {name!r} is within 3% of {target} parameters")
    return best


def n_real_parameters(model: nn.Module, include_prior_network: bool = False) -> int:
    """Real-valued parameter count (complex parameters are stored as two real tensors, so count twice).

    The prior embedder's backbone and MLP are excluded unless ``include_prior_network``;
    the free per-layer parameters of ``prior="none"`` are always counted.
    """
    total = 0
    for name, p in model.named_parameters():
        if not include_prior_network and (".backbone." in f".{name}" or ".mlp." in f".{name}"):
            continue
        total += p.numel() * (2 if p.is_complex() else 1)
    return total


def warn_if_unbounded(model: nn.Module, values: Tensor) -> None:
    """Disables a sigmoid output (with a warning) when targets leave [0, 1]."""
    if getattr(model, "output_activation", "none") == "sigmoid" and (values.min() < 0 or values.max() > 1):
        warnings.warn("values outside [0, 1]: the sigmoid output cannot reach them, so it is disabled "
                      "(output_activation='none'); scale the targets to [0, 1] to keep it", stacklevel=3)
        model.output_activation = "none"
