"""LaGAM (Long et al., CVPR 2024): latent group-aware meta disambiguation, as the benchmark trains it.

The benchmark's loop (PU-Bench ``train/lagam``, after the authors' code): a warm-up on targets L = 1, U = 0 with
``losses.lagam_bce``, MixUp (Beta(4, 4)) and the instance contrast between a weak and a strong view; then, every
epoch, k-means on the projected features of the training rows, and per batch a meta-label correction: a one-step
look-ahead of the classifier weights on the targets perturbed by eps, the look-ahead's loss on a validation batch
with true labels, and the corrected label argmax(-d loss / d eps) (labeled rows stay positive), blended into the
targets with a weight that falls from ``rho_start`` to ``rho_end``; the model trains on the corrected targets with
the BCE, MixUp and the cluster contrast (``losses.lagam_contrastive``).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.cluster import KMeans
from torch import nn
from torch.func import functional_call

from ..losses import lagam_bce, lagam_contrastive
from .base import TorchPUEstimator, cycled_batches, minibatches, set_params_from


class LaGAMNet(nn.Module):
    """The benchmark's LaGAM network for vectors: ``classifier_head`` d-h-h (ReLU), ``final_classifier`` h-1 and a
    ``projection_head`` h-h-``proj`` whose output is L2-normalised. ``forward(x)`` gives logits ``(n,)``;
    ``forward(x, features=True)`` gives (logits, projections ``(n, proj)``)."""

    def __init__(self, d: int, hidden: int, proj: int = 128):
        super().__init__()
        self.classifier_head = nn.Sequential(nn.Flatten(), nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                             nn.ReLU())
        self.final_classifier = nn.Linear(hidden, 1)
        self.projection_head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, proj))

    def forward(self, x: torch.Tensor, features: bool = False):
        h = self.classifier_head(x)
        logits = self.final_classifier(h).reshape(-1)
        if features:
            return logits, F.normalize(self.projection_head(h), dim=1)
        return logits


class LaGAM(TorchPUEstimator):
    """LaGAM with the benchmark's defaults (SGD lr 1e-3, momentum 0.9, weight decay 1e-4, batch 64, 50 epochs of
    which 15 warm-up, 50 clusters, temperature 0.07, cutoff and k-NN (10) positives, meta lr 1e-3, rho 0.95 to 0.8).

    The meta-label correction needs a small validation set with true labels, as in the benchmark and the authors'
    code: pass ``X_val`` and ``y_val`` to ``fit``.

    Args:
        warmup: warm-up epochs. n_clusters: k-means clusters of the projected features. temperature, cutoff,
            n_neighbors: of ``losses.lagam_contrastive``; the k-NN positives start after epoch ``knn_start``.
        meta_lr: step of the look-ahead on the classifier weights. rho_start, rho_end: weight of the current targets
            in the blend, linear in the epoch over ``epochs``. mix_weight, cont_weight: weights of MixUp and the
            contrast. weak_noise, strong_noise, strong_dropout, strong_flip: the benchmark's vector views (weak:
            Gaussian noise; strong: noise, input dropout without rescaling, sign flips). hidden: width of the network.
        epochs, batch_size, lr, weight_decay, patience, device, random_state, selection, verbose: see
            ``TorchPUEstimator`` (early stopping is suspended during the warm-up).
    """

    needs_prior = False

    def __init__(self, *, warmup=15, n_clusters=50, temperature=0.07, cutoff=True, n_neighbors=10, knn_start=50,
                 meta_lr=1e-3, rho_start=0.95, rho_end=0.8, mix_weight=1.0, cont_weight=1.0, weak_noise=0.02,
                 strong_noise=0.1, strong_dropout=0.1, strong_flip=0.05, hidden=300, epochs=50, batch_size=64,
                 lr=1e-3, momentum=0.9, weight_decay=1e-4, patience=None, device="auto", random_state=None,
                 selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _make_model(self, shape):
        return LaGAMNet(int(np.prod(shape)), int(self.hidden))

    def _views(self, x):
        """(weak, strong) augmented copies of ``x``."""
        noise = lambda: torch.randn(x.shape, generator=self._gen).to(x.device)  # noqa: E731
        uniform = lambda: torch.rand(x.shape, generator=self._gen).to(x.device)  # noqa: E731
        weak = x + self.weak_noise * noise()
        strong = (x + self.strong_noise * noise()) * (uniform() > self.strong_dropout)
        return weak, torch.where(uniform() < self.strong_flip, -strong, strong)

    def _mixup_loss(self, model, x, target):
        lam = float(np.random.default_rng(int(torch.randint(2**31, (1,), generator=self._gen))).beta(4.0, 4.0))
        perm = torch.randperm(len(x), generator=self._gen).to(x.device)
        g = model(lam * x + (1 - lam) * x[perm])
        return lam * lagam_bce(g, target) + (1 - lam) * lagam_bce(g, target[perm])

    def _train(self, X, s, prior) -> None:
        if self._val is None or self._val[2] is None:
            raise ValueError("y_val: LaGAM's meta-label correction needs a validation set with true labels "
                             "(X_val, s_val, y_val), as the benchmark gives it; got none")
        model = self.model_
        opt = torch.optim.SGD(model.parameters(), lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        xv = self._val[0]
        yv = F.one_hot(torch.as_tensor(self._val[2], dtype=torch.long, device=X.device), 2).to(X.dtype)
        val_batches = cycled_batches(torch.arange(len(xv), device=X.device), self.batch_size, self._gen)
        target = (s == 1).to(X.dtype)
        meta_names = [k for k, v in model.named_parameters() if "classifier" in k and v.dim() > 1]
        for epoch in range(self.epochs):
            model.train()
            meta = epoch >= self.warmup
            if meta:
                clusters = self._clusters(X)
                rho = epoch / self.epochs * (self.rho_end - self.rho_start) + self.rho_start
                if epoch == self.warmup:
                    self._stale = 0  # the benchmark resets early stopping for the meta stage
            new_target = target.clone()
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                if target[idx].sum() == 0:
                    continue
                xw, xs = self._views(X[idx])
                labels = torch.stack([1 - target[idx], target[idx]], dim=1)
                if meta:
                    corrected = self._meta_labels(xw, labels, s[idx] == 1, xv, yv, next(val_batches), meta_names)
                    labels = labels * rho + corrected * (1 - rho)
                    new_target[idx] = labels[:, 1]
                g, zw = model(xw, features=True)
                _, zs = model(xs, features=True)
                if meta:
                    knn = self.n_neighbors if epoch > self.knn_start else 0
                    cont = lagam_contrastive(zw, zs, clusters[idx], g, self.temperature, self.cutoff, knn)
                else:
                    cont = lagam_contrastive(zw, zs, temperature=self.temperature)
                loss = (lagam_bce(g, labels) + self.mix_weight * self._mixup_loss(model, xw, labels)
                        + self.cont_weight * cont)
                opt.zero_grad()
                loss.backward()
                opt.step()
            target = new_target
            self._end_epoch(epoch, X, s, prior, stop=meta)

    @torch.no_grad()
    def _clusters(self, X) -> torch.Tensor:
        """k-means cluster ``(n,)`` of each training row's projected features (no augmentation)."""
        self.model_.eval()
        z = torch.cat([self.model_(X[i:i + 4096], features=True)[1] for i in range(0, len(X), 4096)])
        self.model_.train()
        k = max(1, min(int(self.n_clusters), len(X)))
        seed = int(torch.randint(2**31, (1,), generator=self._gen))
        found = KMeans(n_clusters=k, n_init=5, max_iter=20, random_state=seed).fit_predict(z.cpu().numpy())
        return torch.as_tensor(found, device=X.device)

    def _meta_labels(self, x, labels, labeled, xv, yv, val_idx, meta_names) -> torch.Tensor:
        """One-hot corrected labels ``(n, 2)``: argmax of minus the gradient, with respect to a perturbation eps of
        ``labels``, of the validation loss after one look-ahead step on the classifier weights."""
        params = dict(self.model_.named_parameters())
        eps = torch.zeros_like(labels, requires_grad=True)
        inner = lagam_bce(self.model_(x), labels + eps)
        grads = torch.autograd.grad(inner, [params[k] for k in meta_names], create_graph=True)
        ahead = {**params, **{k: params[k] - self.meta_lr * g for k, g in zip(meta_names, grads)}}
        outer = lagam_bce(functional_call(self.model_, ahead, (xv[val_idx],)), yv[val_idx])
        grad_eps = torch.autograd.grad(outer, eps)[0]
        found = (-grad_eps).argmax(dim=1)
        found[labeled] = 1
        return F.one_hot(found, 2).to(labels.dtype).detach()
