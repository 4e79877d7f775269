"""LaGAM (Long et al., CVPR 2024): meta-learned reweighting of pseudo-labels plus latent-group contrast.

Experimental (Tier C): the details are inferred from the paper and the repository's module names.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.cluster import KMeans
from torch import nn
from torch.func import functional_call

from ..losses import nnpu_risk
from .base import TorchPUEstimator, minibatches, set_params_from


class LaGAM(TorchPUEstimator):
    """After ``warmup`` nnPU epochs, each epoch: pseudo-labels on U from the model; a meta set of L (label 1)
    and the most confident pseudo-negatives (as many as |L|); latent groups = k-means (``n_groups``) of the
    encoder features. Each step learns per-row weights by a one-step look-ahead whose gradient on the meta
    loss sets the weights (learning-to-reweight), and adds a prototype contrastive loss over latent groups
    (weight ``contrast``, temperature 0.5). Encoder d-100-100, linear head.
    """

    def __init__(self, *, warmup=10, n_groups=8, contrast=0.1, meta_lr=0.1, backbone="auto", epochs=40,
                 batch_size=256, lr=1e-3, weight_decay=1e-4, patience=None, device="auto", random_state=None,
                 selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _make_model(self, shape):
        d = int(np.prod(shape))
        encoder = nn.Sequential(nn.Flatten(), nn.Linear(d, 100), nn.ReLU(), nn.Linear(100, 100), nn.ReLU())
        return nn.Sequential(encoder, nn.Linear(100, 1))

    def _train(self, X, s, prior) -> None:
        model, opt = self.model_, self._optimizer(self.model_.parameters())
        seed = int(torch.randint(2**31, (1,), generator=self._gen))
        for epoch in range(self.epochs):
            if epoch >= self.warmup:
                g_all = self._logits(X)
                target = torch.where(s == 1, 1.0, (g_all > 0).float())
                u = torch.nonzero(s == 0).reshape(-1)
                n_meta = int((s == 1).sum())
                neg = u[torch.argsort(g_all[u])[:n_meta]]
                meta_rows = torch.cat([torch.nonzero(s == 1).reshape(-1), neg])
                meta_y = torch.cat([torch.ones(n_meta), torch.zeros(len(neg))]).to(X.device)
                with torch.no_grad():
                    feats = model[0](X).cpu().numpy()
                groups = torch.as_tensor(KMeans(self.n_groups, n_init=1, random_state=seed).fit_predict(feats),
                                         device=X.device)
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                if epoch < self.warmup:
                    loss = nnpu_risk(model(X[idx]).reshape(-1), s[idx], prior)
                else:
                    w = self._meta_weights(X[idx], target[idx], X[meta_rows], meta_y)
                    z = model[0](X[idx])
                    per_row = F.binary_cross_entropy_with_logits(model[1](z).reshape(-1), target[idx],
                                                                 reduction="none")
                    loss = (w * per_row).sum() + self.contrast * self._group_contrast(z, groups[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            self._end_epoch(epoch, X, s, prior)

    def _meta_weights(self, x, t, x_meta, y_meta) -> torch.Tensor:
        params = dict(self.model_.named_parameters())
        eps = torch.zeros(len(x), device=x.device, requires_grad=True)
        inner = (eps * F.binary_cross_entropy_with_logits(self.model_(x).reshape(-1), t, reduction="none")).sum()
        grads = torch.autograd.grad(inner, list(params.values()), create_graph=True)
        ahead = {k: v - self.meta_lr * g for (k, v), g in zip(params.items(), grads)}
        meta = F.binary_cross_entropy_with_logits(functional_call(self.model_, ahead, (x_meta,)).reshape(-1), y_meta)
        w = torch.clamp(-torch.autograd.grad(meta, eps)[0], min=0).detach()
        return w / w.sum() if w.sum() > 0 else torch.full_like(w, 1.0 / len(w))

    @staticmethod
    def _group_contrast(z, groups, tau: float = 0.5) -> torch.Tensor:
        z = F.normalize(z, dim=1)
        present = torch.unique(groups)
        protos = F.normalize(torch.stack([z[groups == k].mean(0) for k in present]), dim=1)
        label = torch.searchsorted(present, groups)
        return F.cross_entropy(z @ protos.T / tau, label)
