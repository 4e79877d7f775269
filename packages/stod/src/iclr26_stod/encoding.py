"""Input encoders of a spiking network: image ``x [B, C, H, W]`` in [0, 1] -> sequence ``X [T, B, C, H, W]``.

- ``DirectEncoder``: X[t] = x (the analog image repeated; gradients sum over t).
- ``RateEncoder``: X[t] ~ Bernoulli(x), with a straight-through gradient for attacks.
- ``NoisyDirectEncoder``: X[t] = x + N(0, σ²) i.i.d. over t (a reviewer's decorrelation baseline).
- ``PFD`` (Patchwise Feature Diversification, paper Eq. 6): X'[t] = P⁻¹(P(x) O[t]) with one orthogonal
  d×d kernel O[t] per time step, d = C·p², shared over the non-overlapping p×p patches.
- ``STODEncoder``: PFD while training plus the GOR regulariser (paper Eq. 8); at evaluation the
  kernels are removed (``keep_kernels=False``, plain direct encoding) or kept.
"""
from __future__ import annotations

import warnings
from typing import Literal

import torch
from torch import Tensor, nn

from .optim import orthogonality_error

INITS = ("householder", "householder_random", "identity")
BACKENDS = ("riemannian", "parametrization")


def check_image(x: Tensor, name: str = "x") -> None:
    """Raises ``ValueError``/``TypeError`` unless ``x`` is a finite ``[B, C, H, W]`` tensor with values in [0, 1]."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor [B, C, H, W], got {type(x).__name__}")
    if x.dim() != 4:
        raise ValueError(f"{name}: expected an image batch [B, C, H, W], got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    lo, hi = float(x.detach().min()), float(x.detach().max())
    if lo < 0.0 or hi > 1.0:
        raise ValueError(f"{name}: expected pixel values in [0, 1], got range [{lo:.4g}, {hi:.4g}]; "
                         "normalisation belongs inside EncodedSNN(normalize=(mean, std))")


def _check_T(T: int) -> int:
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T: expected a positive integer number of time steps, got {T!r}")
    return T


class Encoder(nn.Module):
    """Base class: ``forward(x [B,C,H,W]) -> [T,B,C,H,W]``; ``regularizer()`` is 0 unless overridden."""

    lambda_gor: float = 0.0

    def __init__(self, T: int):
        super().__init__()
        self.T = _check_T(T)

    def regularizer(self, x_seq: Tensor | None = None) -> Tensor:
        """The encoder's training penalty (0 here); a scalar tensor."""
        return torch.zeros(())


class DirectEncoder(Encoder):
    """Direct encoding: X[t] = x for t = 1..T (an expand, so gradients w.r.t. x sum over t)."""

    def forward(self, x: Tensor) -> Tensor:
        return x.unsqueeze(0).expand(self.T, *x.shape)


class RateEncoder(Encoder):
    """Rate (Bernoulli) encoding: X[t] ~ Bernoulli(x) i.i.d. over t, fresh draws at every call.

    Args:
        T: time steps.
        gradient: ``"ste"`` makes X[t] = x + stopgrad(b_t − x), so ∂L/∂x = Σ_t ∂L/∂X[t]
            (the "rate gradient approximation" attack); ``"none"`` gives no gradient to x.
        generator: a ``torch.Generator`` on the input's device for reproducible draws (default: global RNG).

    Raises:
        ValueError: unknown ``gradient``; at call time, ``x`` outside [0, 1].
    """

    def __init__(self, T: int, gradient: Literal["ste", "none"] = "ste", generator: torch.Generator | None = None):
        super().__init__(T)
        if gradient not in ("ste", "none"):
            raise ValueError(f"gradient: expected 'ste' or 'none', got {gradient!r}")
        self.gradient = gradient
        self.generator = generator

    def forward(self, x: Tensor) -> Tensor:
        check_image(x)
        probs = x.detach().unsqueeze(0).expand(self.T, *x.shape)
        b = torch.bernoulli(probs, generator=self.generator)
        if self.gradient == "none":
            return b
        return x.unsqueeze(0) + (b - x.unsqueeze(0)).detach()


class NoisyDirectEncoder(Encoder):
    """Direct encoding with i.i.d. Gaussian noise per step, X[t] = x + σ ε_t (baseline; noise also at eval)."""

    def __init__(self, T: int, sigma: float = 0.1):
        super().__init__(T)
        if not sigma >= 0:
            raise ValueError(f"sigma: expected a noise level >= 0, got {sigma}")
        self.sigma = float(sigma)

    def forward(self, x: Tensor) -> Tensor:
        seq = x.unsqueeze(0).expand(self.T, *x.shape)
        return seq + self.sigma * torch.randn_like(seq)


def patchify(x: Tensor, p: int) -> Tensor:
    """𝒫: ``[B, C, H, W]`` -> ``[B, N, d]``, N = (H/p)(W/p) non-overlapping patches, d = C·p² (order C, row, col).

    Raises:
        ValueError: H or W not divisible by ``p`` (no silent cropping).
    """
    B, C, H, W = x.shape
    if H % p or W % p:
        raise ValueError(f"patch_size: image height and width must be divisible by p={p}, got H={H}, W={W}")
    patches = x.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


def unpatchify(patches: Tensor, p: int, C: int, H: int, W: int) -> Tensor:
    """𝒫⁻¹: ``[..., N, d]`` -> ``[..., C, H, W]``, the exact inverse of ``patchify``."""
    lead = patches.shape[:-2]
    x = patches.reshape(*lead, H // p, W // p, C, p, p)
    n = len(lead)
    order = (*range(n), n + 2, n, n + 3, n + 1, n + 4)
    return x.permute(order).reshape(*lead, C, H, W)


def householder_kernels(T: int, d: int, init: str = "householder", generator: torch.Generator | None = None) -> Tensor:
    """The initial kernels ``[T, d, d]`` (paper Eq. 7): O[t] = I − 2 k kᵀ / kᵀk.

    ``"householder"``: k_t = e_t (entry t of every patch is negated at step t; needs T <= d);
    ``"householder_random"``: k_t ~ N(0, I); ``"identity"``: O[t] = I (PFD = direct encoding).

    Raises:
        ValueError: unknown ``init``; T > d with ``"householder"``.
    """
    if init not in INITS:
        raise ValueError(f"init: expected one of {INITS}, got {init!r}")
    eye = torch.eye(d).expand(T, d, d).clone()
    if init == "identity":
        return eye
    if init == "householder":
        if T > d:
            raise ValueError(f"T: the Householder initialisation needs T <= C*p^2 = {d}, got T={T}; "
                             "lower T, raise p, or use init='householder_random'")
        k = torch.eye(d)[:T]
    else:
        k = torch.randn(T, d, generator=generator)
    k = k / k.norm(dim=1, keepdim=True)
    return eye - 2 * k.unsqueeze(2) * k.unsqueeze(1)


class PFD(nn.Module):
    """Patchwise Feature Diversification: X'[t] = 𝒫⁻¹(𝒫(x) · O[t]) with orthogonal O[t] ∈ R^{d×d}.

    Args:
        T: time steps.
        in_channels: C.
        patch_size: p; d = C·p².
        init: ``"householder"`` (k_t = e_t), ``"householder_random"`` or ``"identity"``.
        kernel_backend: ``"riemannian"`` (``kernels`` is a plain parameter to be optimised with
            ``iclr26_stod.optim.RiemannianSGD``) or ``"parametrization"`` (torch's orthogonal
            parametrisation, so any optimiser keeps it orthogonal).

    Attributes:
        kernels: ``[T, d, d]`` orthogonal matrices.

    Raises:
        ValueError: bad ``T``, ``patch_size``, ``init`` or ``kernel_backend``; T > d with ``"householder"``.
    """

    def __init__(self, T: int, in_channels: int, patch_size: int = 8, init: str = "householder",
                 kernel_backend: str = "riemannian"):
        super().__init__()
        _check_T(T)
        if isinstance(patch_size, bool) or not isinstance(patch_size, int) or patch_size < 1:
            raise ValueError(f"patch_size: expected a positive integer, got {patch_size!r}")
        if kernel_backend not in BACKENDS:
            raise ValueError(f"kernel_backend: expected one of {BACKENDS}, got {kernel_backend!r}")
        self.T, self.in_channels, self.patch_size = T, int(in_channels), patch_size
        self.d = self.in_channels * patch_size**2
        self.kernel_backend = kernel_backend
        self.kernels = nn.Parameter(householder_kernels(T, self.d, init))
        if kernel_backend == "parametrization":
            start = self.kernels.detach().clone()
            nn.utils.parametrizations.orthogonal(self, "kernels")
            self.kernels = start

    def forward(self, x: Tensor) -> Tensor:
        B, C, H, W = x.shape
        if C != self.in_channels:
            raise ValueError(f"x: expected {self.in_channels} channels, got {C}")
        patches = patchify(x, self.patch_size)  # [B, N, d]
        mixed = torch.einsum("bnd,tde->tbne", patches, self.kernels.to(x.dtype))
        return unpatchify(mixed, self.patch_size, C, H, W)

    def orthogonality_error(self) -> float:
        """max over t of ‖O[t]ᵀO[t] − I‖_max."""
        return orthogonality_error(self.kernels.detach())


def gor_loss(x_seq: Tensor, allow_single_step: bool = False) -> Tensor:
    """Global Orthogonal Regularisation (paper Eq. 8): Σ_{i<j} cos²(X[i], X[j]), averaged over the batch.

    Args:
        x_seq: ``[T, B, ...]``; each sample and step is flattened.
        allow_single_step: with T = 1 return 0 (and warn) instead of raising.

    Returns:
        A scalar tensor in [0, T(T−1)/2].

    Raises:
        ValueError: T < 2 (undefined) unless ``allow_single_step``.
    """
    T = x_seq.shape[0]
    if T < 2:
        if not allow_single_step:
            raise ValueError(f"x_seq: GOR needs T >= 2 time steps, got T={T}")
        warnings.warn("gor_loss: T=1, returning 0", stacklevel=2)
        return x_seq.new_zeros(())
    flat = x_seq.reshape(T, x_seq.shape[1], -1).transpose(0, 1)  # [B, T, D]
    unit = flat / flat.norm(dim=2, keepdim=True).clamp_min(1e-12)
    cos = unit @ unit.transpose(1, 2)  # [B, T, T]
    iu = torch.triu_indices(T, T, offset=1, device=x_seq.device)
    return (cos[:, iu[0], iu[1]] ** 2).sum(1).mean()


class STODEncoder(Encoder):
    """STOD input layer = PFD + GOR (paper Eqs. 6-9).

    In training mode the input passes through PFD and the last sequence is kept for ``regularizer()``,
    which hands it over once (so no autograd graph outlives its training step); switching to evaluation
    mode drops it too, so a fitted model holds no graph and can be deep-copied or pickled.
    In evaluation mode PFD is applied only when ``keep_kernels`` (else plain direct encoding,
    "STOD w.o. OK"). ``use_kernels`` overrides both (used to attack the training path).

    Args:
        T, in_channels, patch_size: as in ``PFD``.
        lambda_gor: λ_O, the weight of L_O in the training loss.
        keep_kernels: keep PFD at evaluation.
        **pfd_kw: ``init``, ``kernel_backend`` for ``PFD``.
    """

    def __init__(self, T: int, in_channels: int, patch_size: int = 8, lambda_gor: float = 0.05,
                 keep_kernels: bool = False, **pfd_kw):
        super().__init__(T)
        if not lambda_gor >= 0:
            raise ValueError(f"lambda_gor: expected a weight >= 0, got {lambda_gor}")
        self.pfd = PFD(T, in_channels, patch_size, **pfd_kw)
        self.lambda_gor = float(lambda_gor)
        self.keep_kernels = bool(keep_kernels)
        self.use_kernels: bool | None = None
        self._last: Tensor | None = None

    def kernels_active(self) -> bool:
        """Whether the next forward goes through PFD."""
        if self.use_kernels is not None:
            return self.use_kernels
        return self.training or self.keep_kernels

    def forward(self, x: Tensor) -> Tensor:
        if not self.kernels_active():
            self._last = None
            return x.unsqueeze(0).expand(self.T, *x.shape)
        seq = self.pfd(x)
        self._last = seq if self.training else None
        return seq

    def train(self, mode: bool = True) -> STODEncoder:
        if not mode:
            self._last = None
        return super().train(mode)

    def regularizer(self, x_seq: Tensor | None = None) -> Tensor:
        """L_O of ``x_seq``, or of the last training-mode forward's PFD output, which it then releases (0 when
        there is none)."""
        seq = x_seq
        if seq is None:
            seq, self._last = self._last, None
        if seq is None:
            return torch.zeros((), device=self.pfd.kernels.device)
        return gor_loss(seq)

    def orthogonality_error(self) -> float:
        """max over t of ‖O[t]ᵀO[t] − I‖_max."""
        return self.pfd.orthogonality_error()


ENCODINGS = ("direct", "rate", "stod", "noisy")


def make_encoder(encoding: str, T: int, in_channels: int = 1, patch_size: int = 4, lambda_gor: float = 0.05,
                 keep_kernels: bool = False, init: str = "householder", kernel_backend: str = "riemannian",
                 sigma: float = 0.1) -> Encoder:
    """An encoder by name: ``"direct"``, ``"rate"`` (STE), ``"stod"`` or ``"noisy"`` (direct + N(0, σ²)).

    Raises:
        ValueError: unknown ``encoding`` (or a bad option of the chosen encoder).
    """
    if encoding == "direct":
        return DirectEncoder(T)
    if encoding == "rate":
        return RateEncoder(T)
    if encoding == "stod":
        return STODEncoder(T, in_channels, patch_size, lambda_gor, keep_kernels, init=init,
                           kernel_backend=kernel_backend)
    if encoding == "noisy":
        return NoisyDirectEncoder(T, sigma)
    raise ValueError(f"encoding: expected one of {ENCODINGS}, got {encoding!r}")
