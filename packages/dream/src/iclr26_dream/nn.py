"""DREAM's modules: the per-view semantic (VAE) and structural (GCN) branches, the gated fusion
with cross-view weights, and the Student-t clustering head."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

FUSION_MODES = ("gate", "average", "semantic_only", "structure_only")


def _mlp(dims: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class ViewVAE(nn.Module):
    """Semantic branch of one view: encoder d_v → hidden → (μ, log σ²) ∈ R^z, mirrored decoder.

    ``forward(x)`` returns ``(mu (N, z), logvar (N, z), x_hat (N, d_v))``; in training mode
    ``x_hat`` decodes a reparameterised sample z = μ + exp(S/2)⊙ε, in eval mode it decodes μ.
    """

    def __init__(self, in_dim: int, hidden=(256, 128), latent: int = 64):
        super().__init__()
        hidden = list(hidden)
        self.encoder = nn.Sequential(_mlp([in_dim, *hidden]), nn.ReLU())
        self.mu = nn.Linear(hidden[-1], latent)
        self.logvar = nn.Linear(hidden[-1], latent)
        self.decoder = _mlp([latent, *reversed(hidden), in_dim])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        e = self.encoder(x)
        mu, logvar = self.mu(e), self.logvar(e)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu) if self.training else mu
        return mu, logvar, self.decoder(z)


def first_hop(x: torch.Tensor, a_hat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight-free part of a GCN's first propagation: ``(Â X (N, d), Â 1 (N, 1))``, so that
    Â(X W₁ᵀ + 1 bᵀ) = (Â X) W₁ᵀ + (Â 1) bᵀ; computed once per graph instead of once per step."""
    ones = torch.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)
    return torch.sparse.mm(a_hat, x), torch.sparse.mm(a_hat, ones)


class ViewGCN(nn.Module):
    """Structural branch of one view: H = Â · ReLU(Â X W₁) W₂ (two propagation steps).

    ``forward(x (N, d_v), a_hat (N, N) sparse, hop=None)`` returns ``H (N, z)``; ``hop`` is
    ``first_hop(x, a_hat)`` when precomputed (the same H, one sparse product fewer per call).
    """

    def __init__(self, in_dim: int, hidden: int = 128, latent: int = 64):
        super().__init__()
        self.lin1 = nn.Linear(in_dim, hidden)
        self.lin2 = nn.Linear(hidden, latent)

    def forward(self, x: torch.Tensor, a_hat: torch.Tensor, hop=None) -> torch.Tensor:
        ax, a1 = first_hop(x, a_hat) if hop is None else hop
        h = F.relu(F.linear(ax, self.lin1.weight) + a1 * self.lin1.bias)
        return torch.sparse.mm(a_hat, self.lin2(h))


class GatedFusion(nn.Module):
    """Intra-view gate and cross-view weighting: l_i = Σ_v α̂_i^{(v)} g_i^{(v)}.

    - gate: s = sigmoid(W_gate[μ ‖ h] + b) ∈ (0,1)^z, g = s⊙μ + (1−s)⊙h;
    - cross-view weight: α = f_wt(h) (MLP z → weight_hidden → 1, ReLU), α̂ = softmax over views.

    ``mode`` selects an ablation: ``"average"`` (g = (μ+h)/2 and α̂ = 1/V: the plain mean),
    ``"semantic_only"`` (g = μ, α from μ since no h exists), ``"structure_only"`` (g = h).

    ``normalize`` (default True): μ and h are row-ℓ2-normalised before the gate, the mixing and the
    view weights, so neither branch outweighs the other by its scale (*inferred*; the VAE means were
    8x larger than the GCN outputs and swamped the fusion). ``False`` mixes the raw embeddings.

    ``forward(mus, hs)`` takes lists of V tensors ``(N, z)`` (``None`` for an absent branch) and
    returns ``(l (N, z), s (N, V, z), alpha_hat (N, V))``; s is 1 (semantic-only) or 0
    (structure-only) when a branch is absent and 0.5 under ``"average"``.
    """

    def __init__(self, n_views: int, latent: int, weight_hidden: int | None = None, mode: str = "gate",
                 normalize: bool = True):
        super().__init__()
        if mode not in FUSION_MODES:
            raise ValueError(f"mode: expected one of {FUSION_MODES}, got {mode!r}")
        self.mode, self.n_views, self.normalize = mode, n_views, normalize
        weight_hidden = weight_hidden or max(1, latent // 2)
        self.gates = nn.ModuleList(nn.Linear(2 * latent, latent) for _ in range(n_views))
        self.weights = nn.ModuleList(_mlp([latent, weight_hidden, 1]) for _ in range(n_views))

    def forward(self, mus, hs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ref = mus[0] if self.mode != "structure_only" else hs[0]
        if self.normalize:
            mus = None if mus is None else [F.normalize(m, dim=1) for m in mus]
            hs = None if hs is None else [F.normalize(h, dim=1) for h in hs]
        if self.mode == "average":
            g = torch.stack([(m + h) / 2 for m, h in zip(mus, hs)], dim=1)  # (N, V, z)
            alpha_hat = torch.full(g.shape[:2], 1.0 / self.n_views, dtype=g.dtype, device=g.device)
            return g.mean(dim=1), torch.full_like(g, 0.5), alpha_hat
        if self.mode == "gate":
            s = torch.stack([torch.sigmoid(gate(torch.cat([m, h], dim=1)))
                             for gate, m, h in zip(self.gates, mus, hs)], dim=1)
            g = s * torch.stack(mus, dim=1) + (1 - s) * torch.stack(hs, dim=1)
            source = hs
        else:
            source = mus if self.mode == "semantic_only" else hs
            g = torch.stack(source, dim=1)
            s = torch.full_like(g, 1.0 if self.mode == "semantic_only" else 0.0)
        alpha = torch.cat([f(x) for f, x in zip(self.weights, source)], dim=1)  # (N, V)
        alpha_hat = torch.softmax(alpha, dim=1)
        l = (alpha_hat.unsqueeze(-1) * g).sum(dim=1)
        return l.to(ref.dtype), s, alpha_hat


def student_t_assignment(l: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """q_ik ∝ (1 + ‖l̃_i − c̃_k‖²)^{-1} on ℓ2-normalised l and c (Student-t, one degree of freedom).

    Args:
        l: ``(N, z)`` embeddings; centres: ``(K, z)``.

    Returns:
        ``(N, K)`` soft assignments, rows summing to 1.
    """
    lt, ct = F.normalize(l, dim=1), F.normalize(centres, dim=1)
    sq_dist = (2.0 - 2.0 * lt @ ct.T).clamp_min(0.0)  # ‖l̃ − c̃‖² for unit vectors, smooth at 0
    kernel = 1.0 / (1.0 + sq_dist)
    return kernel / kernel.sum(dim=1, keepdim=True)


class StudentTClusterHead(nn.Module):
    """Trainable centres c (K, z); ``forward(l (N, z))`` returns q (N, K)."""

    def __init__(self, n_clusters: int, latent: int):
        super().__init__()
        self.centres = nn.Parameter(torch.randn(n_clusters, latent) * 0.1)

    def forward(self, l: torch.Tensor) -> torch.Tensor:
        return student_t_assignment(l, self.centres)
