"""Next-view selectors behind one interface: the paper's semantic-variance rule and the baselines.

``Selector.select(model, train_images, train_cams, candidate_cams, n=1) -> list[int]`` returns
indices into ``candidate_cams``; ``scores_`` holds the scores of the first greedy pick.

- ``SemanticVarianceSelector`` (the method, inferred "bottom-up" rule, spec section 6): per-Gaussian
  feature variance -> region uncertainty ``U_r`` -> top-``k_top`` regions ``R*`` -> candidate score
  ``S(c) = sum_{r in R*} U_r * sum_{i in r} W_ic / |r|``; greedy batches with the pseudo-update
  ``var_i <- var_i kappa / (kappa + W_ic)``.
- ``RandomSelector``, ``FarthestViewSelector`` (FisherRF's initialisation / NeRF Director's FVS),
  ``FisherSelector`` (FisherRF-style diagonal Fisher, Rademacher-probe estimate on the CPU).
"""
from __future__ import annotations

import numpy as np
import torch

from .cameras import Camera
from .model import GaussianModel
from .regions import partition_regions, region_uncertainty
from .render import render
from .unexplored import probe_footprint, probe_points
from .variance import variance_from_stats, view_stats

FISHER_PARAMS = ("means", "log_scales", "quats", "opacity_logits", "color_logits")


def _check(candidate_cams, n: int) -> None:
    if not candidate_cams:
        raise ValueError("candidate_cams: expected at least one candidate camera")
    if not isinstance(n, (int, np.integer)) or not 1 <= n <= len(candidate_cams):
        raise ValueError(f"n: expected 1 <= n <= {len(candidate_cams)} (remaining candidates), got {n}")


class Selector:
    """Common interface: ``select(model, train_images, train_cams, candidate_cams, n=1) -> list[int]``."""

    scores_: np.ndarray | None = None

    def select(self, model: GaussianModel, train_images, train_cams: list[Camera], candidate_cams: list[Camera],
               n: int = 1) -> list[int]:
        """Indices of the ``n`` chosen candidates, best first (ties: lowest index)."""
        _check(candidate_cams, n)
        return self._select(model, train_images, train_cams, candidate_cams, n)

    def _select(self, model, train_images, train_cams, candidate_cams, n):
        raise TypeError(f"{type(self).__name__} must implement _select")


class RandomSelector(Selector):
    """Uniformly random candidates (without replacement); the generator persists across calls."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def _select(self, model, train_images, train_cams, candidate_cams, n):
        self.scores_ = self.rng.random(len(candidate_cams))
        return [int(i) for i in np.argsort(-self.scores_, kind="stable")[:n]]


class FarthestViewSelector(Selector):
    """Greedy farthest-view sampling: maximise the minimum distance to the training camera centres."""

    def _select(self, model, train_images, train_cams, candidate_cams, n):
        cand = np.stack([c.center.detach().cpu().double().numpy() for c in candidate_cams])
        chosen_pts = [c.center.detach().cpu().double().numpy() for c in train_cams]
        chosen: list[int] = []
        for step in range(n):
            if chosen_pts:
                d = np.linalg.norm(cand[:, None] - np.stack(chosen_pts)[None], axis=-1).min(1)
            else:
                d = np.zeros(len(cand))
            d[chosen] = -np.inf
            if step == 0:
                self.scores_ = d.copy()
            k = int(np.argmax(d))
            chosen.append(k)
            chosen_pts.append(cand[k])
        return chosen


class SemanticVarianceSelector(Selector):
    """The paper's selector (inferred): semantic feature variance -> regions -> view score.

    Args:
        extractor: 2-D feature extractor (default ``HandcraftedFeatures()``).
        n_regions, knn, min_size: region partition settings (16, 8, 5).
        k_top: number of most uncertain regions scored (3).
        kappa: prior pseudo-count of the variance (1.0).
        probe_grid: probes per axis of the never-observed-space region (``unexplored``; 0 turns it off).
        seed: K-means seed.
        bg, render_kw: background and renderer keywords.

    After ``select``: ``variance_`` (N,), ``labels_`` (N,), ``region_uncertainty_`` (R,), ``scores_`` (C,).
    """

    def __init__(self, extractor=None, n_regions: int = 16, k_top: int = 3, kappa: float = 1.0, seed: int = 0,
                 knn: int = 8, min_size: int = 5, bg=(1.0, 1.0, 1.0), render_kw: dict | None = None,
                 probe_grid: int = 16):
        if k_top < 1 or kappa <= 0:
            raise ValueError(f"k_top >= 1 and kappa > 0 expected, got {k_top}, {kappa}")
        if probe_grid != 0 and probe_grid < 2:
            raise ValueError(f"probe_grid: expected 0 (off) or >= 2, got {probe_grid}")
        self.extractor, self.n_regions, self.k_top, self.kappa, self.seed = extractor, n_regions, k_top, kappa, seed
        self.probe_grid = probe_grid
        self.knn, self.min_size, self.bg, self.render_kw = knn, min_size, bg, dict(render_kw or {})

    def _select(self, model, train_images, train_cams, candidate_cams, n):
        stats = view_stats(model, train_images, train_cams, self.extractor, self.bg, self.render_kw)
        var = variance_from_stats(stats.contrib, stats.lifted, stats.var0, self.kappa).cpu().numpy().astype(np.float64)
        labels = partition_regions(model, train_cams, stats.contrib, self.n_regions, self.knn, self.min_size, self.seed)
        opacity = model.opacity.detach().cpu().double().numpy()
        with torch.no_grad():
            outs = [render(model, c, bg=self.bg, return_contrib=True, **self.render_kw) for c in candidate_cams]
        W = np.stack([o["contrib"].cpu().double().numpy() for o in outs])  # (C,N)
        self.variance_, self.labels_ = var.copy(), labels
        if self.probe_grid:  # never-observed space: unobserved probes with the prior variance, one more region
            probes, h = probe_points(model, self.probe_grid)
            with torch.no_grad():
                seen = sum(probe_footprint(probes, h, c, render(model, c, bg=self.bg, **self.render_kw))
                           for c in train_cams)
            probes = probes[seen == 0]
            W = np.concatenate([W, np.stack([probe_footprint(probes, h, c, o) for c, o in
                                             zip(candidate_cams, outs, strict=True)])], 1)
            var = np.concatenate([var, np.full(len(probes), stats.var0)])
            labels = np.concatenate([labels, np.full(len(probes), labels.max() + 1)])
            opacity = np.concatenate([opacity, np.ones(len(probes))])
        chosen: list[int] = []
        for step in range(n):
            scores, U = self.score(W, labels, var, opacity)
            if step == 0:
                self.scores_, self.region_uncertainty_ = scores.copy(), U
            scores[chosen] = -np.inf
            k = int(np.argmax(scores))
            chosen.append(k)
            var = var * self.kappa / (self.kappa + W[k])
        return chosen

    def score(self, W: np.ndarray, labels: np.ndarray, var: np.ndarray, opacity: np.ndarray):
        """``S(c)`` for candidate contributions ``W (C,N)``; returns (scores (C,), U (R,))."""
        U = region_uncertainty(labels, var, opacity)
        top = np.argsort(-U, kind="stable")[: self.k_top]
        scores = np.zeros(W.shape[0])
        for r in top:
            members = labels == r
            scores += U[r] * W[:, members].sum(1) / max(int(members.sum()), 1)
        return scores, U


def fisher_probe_gradients(model: GaussianModel, camera: Camera, probes: torch.Tensor, bg=(1.0, 1.0, 1.0),
                           render_kw: dict | None = None) -> torch.Tensor:
    """``g_s = J^T z_s`` for probes ``z (S,H,W,3)``: gradients of ``<C, z_s>`` w.r.t. all Fisher parameters, (S,P).

    ``mean_s g_s^2`` is the unbiased Rademacher estimate of ``diag(J^T J)``; with one-hot probes over every
    output value, ``sum_s g_s^2`` is the exact diagonal.
    """
    params = [getattr(model, name) for name in FISHER_PARAMS]
    rgb = render(model, camera, bg=bg, **(render_kw or {}))["rgb"]
    rows = []
    for s in range(probes.shape[0]):
        grads = torch.autograd.grad((rgb * probes[s]).sum(), params, retain_graph=s + 1 < probes.shape[0])
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    return torch.stack(rows)


def fisher_diagonal(model: GaussianModel, camera: Camera, n_probes: int = 8, generator: torch.Generator | None = None,
                    bg=(1.0, 1.0, 1.0), render_kw: dict | None = None) -> torch.Tensor:
    """Rademacher estimate of ``diag(sum_p (dC(p)/dtheta)^2)`` over the Fisher parameters, (P,)."""
    if n_probes < 1:
        raise ValueError(f"n_probes: expected >= 1, got {n_probes}")
    shape = (n_probes, camera.height, camera.width, 3)
    z = torch.randint(0, 2, shape, generator=generator).to(model.means.device, model.means.dtype) * 2 - 1
    return (fisher_probe_gradients(model, camera, z, bg, render_kw) ** 2).mean(0)


class FisherSelector(Selector):
    """FisherRF-style expected information gain with a diagonal Fisher.

    Score ``sum H(c) / (H_train + reg)``, greedy update ``H_train += H(c)``; ``H`` estimated with
    ``n_probes`` Rademacher probes on images rendered at ``score_scale`` of the candidate resolution.
    """

    def __init__(self, n_probes: int = 8, reg: float = 1e-6, score_scale: float = 0.5, seed: int = 0,
                 bg=(1.0, 1.0, 1.0), render_kw: dict | None = None):
        if n_probes < 1 or reg <= 0 or not 0 < score_scale <= 1:
            raise ValueError(f"n_probes >= 1, reg > 0, 0 < score_scale <= 1 expected, got {n_probes}, {reg}, "
                             f"{score_scale}")
        self.n_probes, self.reg, self.score_scale, self.seed = n_probes, reg, score_scale, seed
        self.bg, self.render_kw = bg, dict(render_kw or {})

    def _diag(self, model, cam, gen):
        factor = max(1, round(1 / self.score_scale))
        c = cam.scaled(factor) if factor > 1 else cam
        return fisher_diagonal(model, c, self.n_probes, gen, self.bg, self.render_kw)

    def _select(self, model, train_images, train_cams, candidate_cams, n):
        gen = torch.Generator().manual_seed(self.seed)
        h_train = sum(self._diag(model, c, gen) for c in train_cams)
        H = torch.stack([self._diag(model, c, gen) for c in candidate_cams])  # (C,P)
        chosen: list[int] = []
        for step in range(n):
            scores = (H / (h_train + self.reg)).sum(1).cpu().double().numpy()
            if step == 0:
                self.scores_ = scores.copy()
            scores[chosen] = -np.inf
            k = int(np.argmax(scores))
            chosen.append(k)
            h_train = h_train + H[k]
        return chosen


SELECTORS = {"semvar": SemanticVarianceSelector, "fisher": FisherSelector, "fvs": FarthestViewSelector,
             "random": RandomSelector}
