"""CGenPU (Papič et al.): a conditional GAN for PU data whose auxiliary classifier A is the PU classifier.

The benchmark's loop, per unlabeled batch: the discriminator D separates real rows (L and U) from generated
positives and negatives; A minimises ``losses.cgenpu_auxiliary_loss``; the generator G(z, one-hot class; index 0 =
positive, 1 = negative) fools D and minimises ``losses.cgenpu_generator_alignment``.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..losses import cgenpu_auxiliary_loss, cgenpu_generator_alignment
from .base import IndexStream, TorchPUEstimator, set_params_from


def cgenpu_hidden(d: int) -> list[int]:
    """The benchmark's hidden sizes for ``d`` flat features: b = 2^ceil(log2(max(128, d // 2))) clipped to
    [256, 1024], then [b, max(128, b/2), max(64, b/4)]."""
    b = max(256, min(1024, 2 ** math.ceil(math.log2(max(128, d // 2)))))
    return [b, max(128, b // 2), max(64, b // 4)]


def _mlp(d_in: int, hidden: list[int], d_out: int, out: nn.Module | None = None) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Flatten()]
    for h in hidden:
        layers += [nn.Linear(d_in, h), nn.ReLU()]
        d_in = h
    layers.append(nn.Linear(d_in, d_out))
    return nn.Sequential(*layers, *([out] if out is not None else []))


class CGenPU(TorchPUEstimator):
    """CGenPU; ``prior`` is not used by the objective. A = ``model_`` (a logit); ``discriminator_``, ``generator_``.

    D and A are MLPs with ``cgenpu_hidden(d)`` units (the benchmark's networks for vectors; images are
    flattened, where the benchmark uses convolutional D/G), G maps uniform z in [-1, 1]^latent_dim plus the
    class one-hot through the same widths to tanh outputs. Adam with betas (0.5, 0.999) for all three.
    Defaults are the benchmark's: latent_dim 256, aux_strength 1, lr 1e-4, batch 128, 200 epochs.
    """

    needs_prior = False

    def __init__(self, *, latent_dim=256, aux_strength=1.0, reduce_mean=True, epochs=200, batch_size=128, lr=1e-4,
                 patience=None, device="auto", random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _make_model(self, shape):
        self._d = int(np.prod(shape))
        return _mlp(self._d, cgenpu_hidden(self._d), 1)

    def _noise(self, n: int, label: int, device) -> torch.Tensor:
        z = torch.rand((n, self.latent_dim), generator=self._gen) * 2 - 1
        return torch.cat([z, F.one_hot(torch.full((n,), label), 2).float()], 1).to(device)

    def _train(self, X, s, prior) -> None:
        A, hidden, shape = self.model_, cgenpu_hidden(self._d), X.shape[1:]
        D = self.discriminator_ = _mlp(self._d, hidden, 1).to(X.device)
        G = self.generator_ = _mlp(self.latent_dim + 2, hidden, self._d, nn.Tanh()).to(X.device)
        opts = [torch.optim.Adam(m.parameters(), lr=self.lr, betas=(0.5, 0.999)) for m in (D, A, G)]
        opt_d, opt_a, opt_g = opts
        lab, unl = torch.nonzero(s == 1).reshape(-1), torch.nonzero(s == 0).reshape(-1)
        p_stream, u_stream = IndexStream(lab, self._gen), IndexStream(unl, self._gen)
        bs, w = int(self.batch_size), self.aux_strength
        bce = F.binary_cross_entropy_with_logits

        def fake(n_p, n_n):
            return (G(self._noise(n_p, 0, X.device)).reshape(n_p, *shape),
                    G(self._noise(n_n, 1, X.device)).reshape(n_n, *shape))

        def prob(model, x):
            return torch.sigmoid(model(x).reshape(-1))

        for epoch in range(self.epochs):
            for _ in range(max(1, len(unl) // bs)):  # one pass over U in full batches (at least one)
                xu, xp = X[u_stream.take(bs)], X[p_stream.take(bs)]
                with torch.no_grad():
                    gp, gn = fake(len(xp), len(xu))
                real, gen = [D(x).reshape(-1) for x in (xp, xu)], [D(x).reshape(-1) for x in (gp, gn)]
                loss_d = 0.5 * (sum(bce(r, torch.ones_like(r)) for r in real)
                                + sum(bce(g, torch.zeros_like(g)) for g in gen))
                opt_d.zero_grad()
                loss_d.backward()
                opt_d.step()
                loss_a = w * cgenpu_auxiliary_loss(prob(A, xp), prob(A, gp), prob(A, gn), self.reduce_mean)
                opt_a.zero_grad()
                loss_a.backward()
                opt_a.step()
                for m in (D, A):
                    m.requires_grad_(False)
                gp, gn = fake(len(xp), len(xu))
                with torch.no_grad():
                    a_xp = prob(A, xp)
                fooled = sum(bce(D(g).reshape(-1), torch.ones(len(g), device=X.device)) for g in (gp, gn))
                loss_g = fooled + w * cgenpu_generator_alignment(a_xp, prob(A, gp), prob(A, gn), self.reduce_mean)
                opt_g.zero_grad()
                loss_g.backward()
                opt_g.step()
                for m in (D, A):
                    m.requires_grad_(True)
            self._end_epoch(epoch, X, s, prior)
