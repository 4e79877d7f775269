"""SeqVAE: the DSVAE-style sequential VAE baseline with DiffSDA's encoder trunk.

q(s | x) and q(d^tau | x) are diagonal Gaussians read from the same ``SequentialEncoder``
(heads of twice the width: mean and log-variance); the prior on d is an LSTM
p(d^tau | d^{<tau}); the decoder is a per-element network of F_theta's width. The loss is a
proper negative ELBO per sequence with a fixed decoder scale sigma_x:
sum_{tau, pixels} (x - x_hat)^2 / (2 sigma_x^2) + beta_s KL(q(s) || N(0, I))
+ beta_d sum_tau KL(q(d^tau) || p(d^tau | d^{<tau})).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .model import SequentialEncoder, _check_dim, check_lengths, check_mask, check_sequences, evaluating
from .networks import ConcatMLP


def gaussian_kl(mu_q: torch.Tensor, logvar_q: torch.Tensor, mu_p: torch.Tensor,
                logvar_p: torch.Tensor) -> torch.Tensor:
    """KL(N(mu_q, e^logvar_q) || N(mu_p, e^logvar_p)) per dimension (elementwise, same shape as the inputs)."""
    return 0.5 * (logvar_p - logvar_q + (logvar_q.exp() + (mu_q - mu_p) ** 2) / logvar_p.exp() - 1)


class ConvDecoder(nn.Module):
    """Per-element image decoder: z (B, cond) -> (B, C, H, W), a linear map to (H/4, W/4), two upsamplings."""

    def __init__(self, cond_dim: int, elem_shape: tuple[int, int, int], ch: int = 64):
        super().__init__()
        c, h, w = elem_shape
        self.start = (ch, h // 4, w // 4)
        self.proj = nn.Linear(cond_dim, math.prod(self.start))
        self.body = nn.Sequential(
            nn.SiLU(), nn.Upsample(scale_factor=2), nn.Conv2d(ch, ch, 3, padding=1), nn.SiLU(),
            nn.Upsample(size=(h, w)), nn.Conv2d(ch, ch, 3, padding=1), nn.SiLU(), nn.Conv2d(ch, c, 3, padding=1))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.body(self.proj(z).reshape(-1, *self.start))


class MLPDecoder(nn.Module):
    """Per-element decoder for flat elements: z (B, cond) -> (B, *elem) through a ``ConcatMLP`` of F_theta's width."""

    def __init__(self, cond_dim: int, elem_shape: tuple[int, ...], width: int, dropout: float = 0.1):
        super().__init__()
        self.elem_shape = elem_shape
        self.body = ConcatMLP(cond_dim, width, dropout=dropout)
        self.out = nn.Linear(width, math.prod(elem_shape))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(z)).reshape(-1, *self.elem_shape)


class SeqVAE(nn.Module):
    """DSVAE-style sequential VAE (baseline) with the interface of ``DiffSDA`` (``loss``, ``encode``, ``decode``,
    ``swap``, ``reconstruct``); swaps and reconstructions use posterior means and the decoder mean."""

    def __init__(self, elem_shape, s_dim: int = 16, d_dim: int = 4, hidden_dim: int = 256, backbone: str = "mlp",
                 mlp_hidden: int = 256, beta_s: float = 1.0, beta_d: float = 1.0, sigma_x: float = 0.1,
                 dropout: float = 0.1):
        super().__init__()
        s_dim, d_dim = _check_dim("s_dim", s_dim), _check_dim("d_dim", d_dim)
        self.encoder = SequentialEncoder(elem_shape, 2 * s_dim, 2 * d_dim, hidden_dim, backbone, mlp_hidden,
                                         dropout=dropout)
        self.elem_shape, self.s_dim, self.d_dim = self.encoder.elem_shape, s_dim, d_dim
        if not sigma_x > 0 or beta_s < 0 or beta_d < 0:
            raise ValueError(f"sigma_x > 0, beta_s >= 0, beta_d >= 0 expected, got {sigma_x!r}, {beta_s!r}, {beta_d!r}")
        self.beta_s, self.beta_d, self.sigma_x = float(beta_s), float(beta_d), float(sigma_x)
        self.prior_lstm = nn.LSTMCell(d_dim, hidden_dim)
        self.prior_head = nn.Linear(hidden_dim, 2 * d_dim)
        cond = s_dim + d_dim
        if backbone == "mlp":
            self.decoder = MLPDecoder(cond, self.elem_shape, 4 * mlp_hidden, dropout)
        else:
            self.decoder = ConvDecoder(cond, self.elem_shape)

    @property
    def device(self) -> torch.device:
        return self.prior_head.weight.device

    def _posterior(self, x: torch.Tensor, lengths=None):
        s, d = self.encoder(x, lengths)
        return (*s.chunk(2, dim=1), *d.chunk(2, dim=2))

    def d_prior(self, d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """p(d^tau | d^{<tau}): (B, V, d_dim) samples -> prior (mean, logvar), each (B, V, d_dim)."""
        b, v, _ = d.shape
        h = d.new_zeros(b, self.prior_lstm.hidden_size)
        c = torch.zeros_like(h)
        inp = d.new_zeros(b, self.d_dim)
        out = []
        for t in range(v):
            h, c = self.prior_lstm(inp, (h, c))
            out.append(self.prior_head(h))
            inp = d[:, t]
        return torch.stack(out, 1).chunk(2, dim=2)

    def _decode(self, s: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        b, v = d.shape[:2]
        z = torch.cat([d, s[:, None, :].expand(b, v, s.shape[1])], dim=2).reshape(b * v, -1)
        return self.decoder(z).reshape(b, v, *self.elem_shape)

    def loss(self, x, mask=None, *, lengths=None) -> torch.Tensor:
        """Negative ELBO per sequence, averaged over the batch (masked / padded entries excluded)."""
        x = check_sequences(x, self.elem_shape).to(self.device)
        mask = check_mask(mask, x)
        lengths = check_lengths(lengths, x)
        weight = torch.ones_like(x) if mask is None else mask
        step_valid = torch.ones(x.shape[:2], device=x.device, dtype=x.dtype)
        if lengths is not None:
            step_valid = (torch.arange(x.shape[1])[None, :] < lengths[:, None]).to(x.device, x.dtype)
            weight = weight * step_valid.reshape(*step_valid.shape, *([1] * (x.dim() - 2)))
        mu_s, lv_s, mu_d, lv_d = self._posterior(x if mask is None else x * mask, lengths)
        s = mu_s + torch.randn_like(mu_s) * (0.5 * lv_s).exp()
        d = mu_d + torch.randn_like(mu_d) * (0.5 * lv_d).exp()
        x_hat = self._decode(s, d)
        rec = (weight * (x - x_hat) ** 2).flatten(1).sum(1) / (2 * self.sigma_x**2)
        kl_s = gaussian_kl(mu_s, lv_s, torch.zeros_like(mu_s), torch.zeros_like(lv_s)).sum(1)
        mu_p, lv_p = self.d_prior(d)
        kl_d = (gaussian_kl(mu_d, lv_d, mu_p, lv_p).sum(2) * step_valid).sum(1)
        return (rec + self.beta_s * kl_s + self.beta_d * kl_d).mean()

    def encode(self, x, *, lengths=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior means: (N, V, *elem) -> (s (N, s_dim), d (N, V, d_dim))."""
        with evaluating(self):
            x = check_sequences(x, self.elem_shape).to(self.device)
            mu_s, _, mu_d, _ = self._posterior(x, check_lengths(lengths, x))
        return mu_s, mu_d

    def decode(self, s, d) -> torch.Tensor:
        """Decoder mean (N, V, *elem) of the codes s (N, s_dim), d (N, V, d_dim)."""
        s = torch.as_tensor(s, dtype=torch.float32).to(self.device)
        d = torch.as_tensor(d, dtype=torch.float32).to(self.device)
        if s.dim() != 2 or s.shape[1] != self.s_dim:
            raise ValueError(f"s: expected (N, {self.s_dim}) static codes, got shape {tuple(s.shape)}")
        if d.dim() != 3 or d.shape[2] != self.d_dim or d.shape[0] != s.shape[0]:
            raise ValueError(f"d: expected ({s.shape[0]}, V, {self.d_dim}) dynamic codes, got shape {tuple(d.shape)}")
        with evaluating(self):
            return self._decode(s, d)

    def reconstruct(self, x) -> torch.Tensor:
        """Decoder mean at the posterior means of x."""
        return self.decode(*self.encode(x))

    def swap(self, x_static, x_dynamic) -> torch.Tensor:
        """Decodes (s_A, d_B^{1:V}): A's static content with B's dynamics."""
        xa = check_sequences(x_static, self.elem_shape, name="x_static")
        xb = check_sequences(x_dynamic, self.elem_shape, name="x_dynamic")
        if xa.shape != xb.shape:
            raise ValueError(f"x_dynamic: expected the shape of x_static {tuple(xa.shape)}, got {tuple(xb.shape)}")
        return self.decode(self.encode(xa)[0], self.encode(xb)[1])
