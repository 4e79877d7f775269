"""DiffSDA: the semantic sequence encoder, the EDM-preconditioned per-element decoder, and the model.

Shapes: a batch of sequences x is (B, V, *elem_shape); the static code s is (B, s_dim), the
dynamic codes d are (B, V, d_dim); the decoder conditions element tau on z^tau = (d^tau, s).
"""
from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from . import edm
from .networks import ConcatMLP, ConvFeatures, MLPDenoiser, UNetDenoiser

BACKBONES = ("mlp", "conv")


def _check_dim(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
    return int(value)


def _check_elem_shape(elem_shape, backbone: str) -> tuple[int, ...]:
    if backbone not in BACKBONES:
        raise ValueError(f"backbone: expected one of {BACKBONES}, got {backbone!r}")
    shape = (elem_shape,) if isinstance(elem_shape, (int, np.integer)) else tuple(int(s) for s in elem_shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"elem_shape: expected positive sizes, got {elem_shape!r}")
    if backbone == "conv" and len(shape) != 3:
        raise ValueError(f"elem_shape: the conv backbone expects (C, H, W), got {shape}")
    return shape


def check_sequences(x, elem_shape: tuple[int, ...] | None = None, *, name: str = "x") -> torch.Tensor:
    """Returns ``x`` as a floating tensor (N, V, *elem) after checking V >= 2, the element shape and finiteness.

    Raises:
        TypeError: x is not an array or tensor.
        ValueError: fewer than 3 dimensions, V < 2, a wrong element shape, or NaN/Inf.
    """
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a numpy array or torch tensor (N, V, ...), got {type(x).__name__}")
    if not x.is_floating_point():
        x = x.float()
    if x.dim() < 3:
        raise ValueError(f"{name}: expected sequences (N, V, *elem_shape), got shape {tuple(x.shape)}")
    if x.shape[1] < 2:
        raise ValueError(f"{name}: expected V >= 2 elements per sequence (static/dynamic split), got V = {x.shape[1]}")
    if elem_shape is not None and tuple(x.shape[2:]) != tuple(elem_shape):
        raise ValueError(f"{name}: expected elements of shape {tuple(elem_shape)}, got {tuple(x.shape[2:])}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: contains NaN or Inf; pass a mask marking those entries 0")
    return x


def check_mask(mask, x: torch.Tensor) -> torch.Tensor | None:
    """Returns the observation mask as a float tensor on x's device, or None; raises ValueError on a shape mismatch."""
    if mask is None:
        return None
    mask = torch.as_tensor(np.asarray(mask) if isinstance(mask, np.ndarray) else mask)
    if tuple(mask.shape) != tuple(x.shape):
        raise ValueError(f"mask: expected the shape of x {tuple(x.shape)}, got {tuple(mask.shape)}")
    return mask.to(device=x.device, dtype=x.dtype)


def check_lengths(lengths, x: torch.Tensor) -> torch.Tensor | None:
    """Returns the true lengths as an int64 CPU tensor (N,), or None; each must be in [2, V]."""
    if lengths is None:
        return None
    lengths = torch.as_tensor(lengths, dtype=torch.int64).cpu()
    if lengths.shape != (x.shape[0],) or (lengths < 2).any() or (lengths > x.shape[1]).any():
        raise ValueError(f"lengths: expected {x.shape[0]} integers in [2, {x.shape[1]}], got {lengths.tolist()}")
    return lengths


class SequentialEncoder(nn.Module):
    """Semantic encoder: per-element features -> BiLSTM -> static head and RNN dynamic head.

    s = W_s concat(h_fwd at the true last element, h_bwd at the first) + b_s, shape (B, s_dim);
    d^tau = W_d RNN(h)^tau + b_d, shape (B, V, d_dim). With ``causal=True`` the dynamic branch
    reads a forward-only LSTM, so d^tau depends on x^{<=tau} only (the paper's posterior); the
    default follows the official code (d may depend on future elements through the BiLSTM).
    """

    def __init__(self, elem_shape, s_dim: int = 16, d_dim: int = 4, hidden_dim: int = 256, backbone: str = "mlp",
                 mlp_hidden: int = 128, causal: bool = False, dropout: float = 0.1):
        super().__init__()
        self.elem_shape = _check_elem_shape(elem_shape, backbone)
        self.s_dim, self.d_dim = _check_dim("s_dim", s_dim), _check_dim("d_dim", d_dim)
        hidden = _check_dim("hidden_dim", hidden_dim)
        width = 4 * _check_dim("mlp_hidden", mlp_hidden)
        self.causal, self.backbone = bool(causal), backbone
        if backbone == "mlp":
            self.features = ConcatMLP(math.prod(self.elem_shape), width, dropout=dropout, linear_last=True)
        else:
            self.features = ConvFeatures(self.elem_shape, width)
        self.lstm = nn.LSTM(width, hidden, batch_first=True, bidirectional=True)
        self.static_head = nn.Linear(2 * hidden, self.s_dim)
        self.causal_lstm = nn.LSTM(width, 2 * hidden, batch_first=True) if self.causal else None
        self.rnn = nn.RNN(2 * hidden, hidden, batch_first=True, nonlinearity="tanh")
        self.dynamic_head = nn.Linear(hidden, self.d_dim)

    def _run(self, rnn: nn.Module, seq: torch.Tensor, lengths: torch.Tensor | None):
        if lengths is None:
            return rnn(seq)
        packed = pack_padded_sequence(seq, lengths, batch_first=True, enforce_sorted=False)
        out, state = rnn(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=seq.shape[1])[0], state

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, V, *elem) -> (s (B, s_dim), d (B, V, d_dim)); ``lengths`` (B,) excludes padding from s and d."""
        b, v = x.shape[:2]
        frames = x.reshape(b * v, *self.elem_shape)
        feats = self.features(frames.reshape(b * v, -1) if self.backbone == "mlp" else frames).reshape(b, v, -1)
        h, (h_n, _) = self._run(self.lstm, feats, lengths)
        s = self.static_head(torch.cat([h_n[0], h_n[1]], dim=1))
        if self.causal_lstm is not None:
            h = self._run(self.causal_lstm, feats, lengths)[0]
        g = self._run(self.rnn, h, lengths)[0]
        return s, self.dynamic_head(g)


class EDMPrecond(nn.Module):
    """D_theta(x; sigma, z) = c_skip(sigma) x + c_out(sigma) F_theta(c_in(sigma) x, c_noise(sigma), z).

    ``net(x_in (B, *elem), c_noise (B,), z (B, cond)) -> (B, *elem)``; sigma is (B,).
    """

    def __init__(self, net: nn.Module, sigma_data: float = 0.5):
        super().__init__()
        if not sigma_data > 0:
            raise ValueError(f"sigma_data: expected a value > 0, got {sigma_data!r}")
        self.net, self.sigma_data = net, float(sigma_data)

    def forward(self, x: torch.Tensor, sigma: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        shape = (-1,) + (1,) * (x.dim() - 1)
        s = sigma.reshape(shape)
        out = self.net(edm.c_in(s, self.sigma_data) * x, edm.c_noise(sigma), z)
        return edm.c_skip(s, self.sigma_data) * x + edm.c_out(s, self.sigma_data) * out


@contextlib.contextmanager
def evaluating(module: nn.Module) -> Iterator[None]:
    """Eval mode and no gradients inside the block; the previous training mode is restored after."""
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        module.train(was_training)


class DiffSDA(nn.Module):
    """Diffusion sequential disentanglement autoencoder.

    The encoder maps x^{1:V} to (s, d^{1:V}); the EDM decoder denoises each element x^tau
    independently, conditioned on z^tau = (d^tau, s). One loss, trained end to end:
    L = E[lambda(sigma) ||D_theta(x^tau + sigma eps; sigma, z^tau) - x^tau||^2], ln sigma ~ N(P_mean, P_std^2).
    ``noise_repeats`` R: each element enters the denoising loss R times with fresh (sigma, eps) per copy and
    one encoder pass (the official audio/time-series training repeats each batch 10 times).

    Data far from [-1, 1] are rescaled by a stored affine map (``set_data_scale``) that ``decode`` undoes.
    """

    def __init__(self, elem_shape, s_dim: int = 16, d_dim: int = 4, hidden_dim: int = 256, backbone: str = "mlp",
                 mlp_hidden: int = 256, P_mean: float = -0.4, P_std: float = 1.0, sigma_data: float = 0.5,
                 causal: bool = False, unet_channels: int = 64, dropout: float = 0.1, noise_repeats: int = 1):
        super().__init__()
        self.encoder = SequentialEncoder(elem_shape, s_dim, d_dim, hidden_dim, backbone, mlp_hidden, causal, dropout)
        self.noise_repeats = _check_dim("noise_repeats", noise_repeats)
        self.elem_shape, self.s_dim, self.d_dim = self.encoder.elem_shape, self.encoder.s_dim, self.encoder.d_dim
        if not P_std > 0:
            raise ValueError(f"P_std: expected a value > 0, got {P_std!r}")
        self.P_mean, self.P_std, self.sigma_data = float(P_mean), float(P_std), float(sigma_data)
        cond = self.s_dim + self.d_dim
        if backbone == "mlp":
            net = MLPDenoiser(math.prod(self.elem_shape), cond, 4 * mlp_hidden, dropout=dropout)
        else:
            net = UNetDenoiser(self.elem_shape[0], cond, ch=unet_channels, dropout=dropout)
        self.denoiser = EDMPrecond(net, sigma_data)
        self.register_buffer("data_shift", torch.zeros(()))
        self.register_buffer("data_scale", torch.ones(()))

    @property
    def device(self) -> torch.device:
        return self.data_scale.device

    def set_data_scale(self, x, mask=None) -> tuple[float, float]:
        """Fits the stored affine map so that observed data lie in [-1, 1] when they are far outside it.

        Data already within [-1.5, 1.5] keep the identity map. Otherwise a ``UserWarning`` gives the fitted
        (shift, scale); ``loss``/``encode`` apply (x - shift) / scale and ``decode`` undoes it.
        Masked entries (mask 0) do not enter the statistics. Returns (shift, scale).
        """
        x = check_sequences(x, self.elem_shape)
        mask = check_mask(mask, x)
        values = x[mask > 0] if mask is not None else x.reshape(-1)
        lo, hi = float(values.min()), float(values.max())
        shift, scale = 0.0, 1.0
        if lo < -1.5 or hi > 1.5:
            shift, scale = (hi + lo) / 2, max((hi - lo) / 2, 1e-12)
            warnings.warn(f"x: data span [{lo:.3g}, {hi:.3g}], not roughly [-1, 1] as EDM (sigma_data = "
                          f"{self.sigma_data}) assumes; rescaling by shift {shift:.4g}, scale {scale:.4g} "
                          "(stored in the model and undone on decode)", UserWarning, stacklevel=2)
        self.data_shift.fill_(shift)
        self.data_scale.fill_(scale)
        return shift, scale

    def _prepare(self, x, name: str = "x") -> torch.Tensor:
        x = check_sequences(x, self.elem_shape, name=name).to(self.device)
        return (x - self.data_shift) / self.data_scale

    def _encode_scaled(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                       lengths: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return self.encoder(x if mask is None else x * mask, lengths)

    def _condition(self, s: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """z^tau = concat(d^tau, s), flattened over (B, V): (B V, d_dim + s_dim)."""
        b, v = d.shape[:2]
        return torch.cat([d, s[:, None, :].expand(b, v, s.shape[1])], dim=2).reshape(b * v, -1)

    def loss(self, x, mask=None, *, lengths=None) -> torch.Tensor:
        """The DiffSDA training loss (scalar), one sigma per (sequence, element).

        Args:
            x: (B, V, *elem) sequences.
            mask: optional 0/1 observation mask of x's shape; masked entries are zeroed at the
                encoder input and excluded from the mean.
            lengths: optional (B,) true lengths; elements at positions >= length are padding.
        """
        x = self._prepare(x)
        mask = check_mask(mask, x)
        lengths = check_lengths(lengths, x)
        weight = torch.ones_like(x) if mask is None else mask
        if lengths is not None:
            valid = torch.arange(x.shape[1])[None, :] < lengths[:, None]
            weight = weight * valid.to(x.device, x.dtype).reshape(*valid.shape, *([1] * (x.dim() - 2)))
        x = x * weight  # unobserved values must not reach the encoder or the denoiser input
        s, d = self._encode_scaled(x, None, lengths)
        b, v, r = x.shape[0], x.shape[1], self.noise_repeats
        x0 = x.reshape(b * v, *self.elem_shape).repeat(r, *([1] * len(self.elem_shape)))
        sigma = torch.exp(self.P_mean + self.P_std * torch.randn(r * b * v, device=x.device, dtype=x.dtype))
        noisy = x0 + sigma.reshape(-1, *([1] * len(self.elem_shape))) * torch.randn_like(x0)
        denoised = self.denoiser(noisy, sigma, self._condition(s, d).repeat(r, 1))
        lam = edm.loss_weight(sigma, self.sigma_data).reshape(-1, *([1] * len(self.elem_shape)))
        w = weight.reshape(b * v, *self.elem_shape).repeat(r, *([1] * len(self.elem_shape)))
        return (lam * w * (denoised - x0) ** 2).sum() / w.sum().clamp_min(1.0)

    def encode(self, x, *, mask=None, lengths=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Semantic codes: (N, V, *elem) -> (s (N, s_dim), d (N, V, d_dim)), in eval mode without gradients."""
        with evaluating(self):
            x = self._prepare(x)
            return self._encode_scaled(x, check_mask(mask, x), check_lengths(lengths, x))

    def _check_codes(self, s, d) -> tuple[torch.Tensor, torch.Tensor]:
        s = torch.as_tensor(s, dtype=torch.float32).to(self.device)
        d = torch.as_tensor(d, dtype=torch.float32).to(self.device)
        if s.dim() != 2 or s.shape[1] != self.s_dim:
            raise ValueError(f"s: expected (N, {self.s_dim}) static codes, got shape {tuple(s.shape)}")
        if d.dim() != 3 or d.shape[2] != self.d_dim or d.shape[0] != s.shape[0] or d.shape[1] < 2:
            raise ValueError(f"d: expected ({s.shape[0]}, V >= 2, {self.d_dim}) dynamic codes, "
                             f"got shape {tuple(d.shape)}")
        return s, d

    def noise(self, n: int, v: int, *, shared_noise: bool = False, generator: torch.Generator | None = None
              ) -> torch.Tensor:
        """Unit-variance x_T (n, v, *elem); with ``shared_noise`` one draw per sequence for all elements."""
        shape = (n, 1 if shared_noise else v, *self.elem_shape)
        device = generator.device if generator is not None else self.device
        return torch.randn(shape, generator=generator, device=device).to(self.device).expand(n, v, *self.elem_shape)

    def decode(self, s, d, *, steps: int = 18, x_T=None, shared_noise: bool = False,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Generates x (N, V, *elem) from codes with the deterministic Heun sampler (NFE = 2 steps - 1).

        x_T (N, V, *elem) defaults to fresh noise from ``generator`` (fixed generator -> identical output).
        """
        s, d = self._check_codes(s, d)
        n, v = d.shape[:2]
        if x_T is None:
            x_T = self.noise(n, v, shared_noise=shared_noise, generator=generator)
        x_T = torch.as_tensor(x_T, dtype=torch.float32).to(self.device)
        if tuple(x_T.shape) != (n, v, *self.elem_shape):
            raise ValueError(f"x_T: expected shape {(n, v, *self.elem_shape)}, got {tuple(x_T.shape)}")
        with evaluating(self):
            flat = x_T.reshape(n * v, *self.elem_shape)
            x0 = edm.heun_sample(self.denoiser, flat, self._condition(s, d), steps=steps)
        return x0.reshape(n, v, *self.elem_shape) * self.data_scale + self.data_shift

    def invert(self, x, s=None, d=None, *, steps: int = 18) -> torch.Tensor:
        """Stochastic encoder: x_T (N, V, *elem) such that ``decode(s, d, x_T=x_T)`` returns x.

        s and d default to ``encode(x)``.
        """
        x = self._prepare(x)
        if s is None or d is None:
            s, d = self.encode(x * self.data_scale + self.data_shift)
        s, d = self._check_codes(s, d)
        if d.shape[:2] != x.shape[:2]:
            raise ValueError(f"d: expected {tuple(x.shape[:2])} leading dims to match x, got {tuple(d.shape[:2])}")
        n, v = x.shape[:2]
        with evaluating(self):
            x_T = edm.heun_invert(self.denoiser, x.reshape(n * v, *self.elem_shape), self._condition(s, d), steps=steps)
        return x_T.reshape(n, v, *self.elem_shape)

    def reconstruct(self, x, *, steps: int = 18, use_inversion: bool = True,
                    generator: torch.Generator | None = None) -> torch.Tensor:
        """decode(encode(x)) from x_T = invert(x) (``use_inversion``) or from fresh noise."""
        s, d = self.encode(x)
        x_T = self.invert(x, s, d, steps=steps) if use_inversion else None
        return self.decode(s, d, steps=steps, x_T=x_T, generator=generator)

    def swap(self, x_static, x_dynamic, *, steps: int = 18, noise: str = "fresh", shared_noise: bool = False,
             generator: torch.Generator | None = None) -> torch.Tensor:
        """Decodes z^tau = (d_B^tau, s_A): A's static content with B's dynamics, (N, V, *elem).

        ``noise="dynamic_donor"`` starts from B's inverted x_T instead of fresh noise; with fresh noise,
        ``shared_noise`` draws one x_T per sequence for all its elements (see ``decode``).

        Raises:
            ValueError: A and B differ in shape, or ``noise`` is unknown.
        """
        if noise not in ("fresh", "dynamic_donor"):
            raise ValueError(f"noise: expected 'fresh' or 'dynamic_donor', got {noise!r}")
        xa = check_sequences(x_static, self.elem_shape, name="x_static")
        xb = check_sequences(x_dynamic, self.elem_shape, name="x_dynamic")
        if xa.shape != xb.shape:
            raise ValueError(f"x_dynamic: expected the shape of x_static {tuple(xa.shape)}, got {tuple(xb.shape)}")
        s_a, _ = self.encode(xa)
        s_b, d_b = self.encode(xb)
        x_T = self.invert(xb, s_b, d_b, steps=steps) if noise == "dynamic_donor" else None
        return self.decode(s_a, d_b, steps=steps, x_T=x_T, shared_noise=shared_noise, generator=generator)
