"""Per-Gaussian semantic feature variance (inferred formulation, spec section 4).

For training view v: ``W_iv = sum_p w_iv(p)`` and the lifted feature ``phi_iv = sum_p w_iv(p) Phi_v(p) / W_iv``
(only where ``W_iv > 1e-4``). With ``m_i = sum_v W_iv phi_iv / sum_v W_iv``,

    var_i = (sum_v W_iv ||phi_iv - m_i||^2 / K + kappa var0) / (sum_v W_iv + kappa),

``var0`` the mean channel variance of Phi over all training pixels and ``kappa`` a pseudo-count.
A Gaussian seen by no view gets exactly ``var0``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .cameras import Camera
from .features import HandcraftedFeatures, standardize
from .model import GaussianModel
from .render import render

MIN_WEIGHT = 1e-4


@dataclass
class ViewStats:
    """What the training views say about every Gaussian.

    Attributes:
        contrib: (V,N) ``W_iv``.
        lifted: (V,N,K) ``sum_p w_iv(p) Phi_v(p)`` (un-normalised).
        var0: the prior variance.
    """

    contrib: torch.Tensor
    lifted: torch.Tensor
    var0: float


def view_stats(model: GaussianModel, images, cameras: list[Camera], extractor=None, bg=(1.0, 1.0, 1.0),
               render_kw: dict | None = None) -> ViewStats:
    """Renders every training view once and lifts its standardised features onto the Gaussians.

    Raises:
        ValueError: empty or mismatched ``images`` / ``cameras``.
    """
    if len(images) != len(cameras) or not cameras:
        raise ValueError(f"images, cameras: expected equal non-zero lengths, got {len(images)}, {len(cameras)}")
    extractor = extractor or HandcraftedFeatures()
    feats, var0 = standardize([np.asarray(extractor(im), dtype=np.float64) for im in images])
    contrib, lifted = [], []
    dev, dtype = model.means.device, model.means.dtype
    with torch.no_grad():
        for f, cam in zip(feats, cameras, strict=True):
            out = render(model, cam, bg=bg, return_contrib=True, lift=torch.tensor(f, dtype=dtype, device=dev),
                         **(render_kw or {}))
            contrib.append(out["contrib"])
            lifted.append(out["lifted"])
    return ViewStats(torch.stack(contrib), torch.stack(lifted), var0)


def variance_from_stats(contrib: torch.Tensor, lifted: torch.Tensor, var0: float, kappa: float = 1.0) -> torch.Tensor:
    """The variance formula on precomputed ``contrib (V,N)`` and ``lifted (V,N,K)``; returns (N,).

    Raises:
        ValueError: ``kappa <= 0`` or ``var0 < 0``.
    """
    if kappa <= 0 or var0 < 0:
        raise ValueError(f"kappa > 0 and var0 >= 0 expected, got kappa={kappa}, var0={var0}")
    seen = contrib > MIN_WEIGHT  # (V,N)
    W = torch.where(seen, contrib, torch.zeros_like(contrib))
    phi = lifted / torch.where(seen, contrib, torch.ones_like(contrib))[..., None]  # (V,N,K)
    total = W.sum(0)  # (N,)
    mean = (W[..., None] * phi).sum(0) / torch.where(total > 0, total, torch.ones_like(total))[:, None]
    K = lifted.shape[-1]
    spread = (W * ((phi - mean[None]) ** 2).sum(-1)).sum(0) / K
    return (spread + kappa * var0) / (total + kappa)


def gaussian_feature_variance(model: GaussianModel, images, cameras: list[Camera], extractor=None,
                              kappa: float = 1.0, bg=(1.0, 1.0, 1.0), render_kw: dict | None = None) -> torch.Tensor:
    """Semantic feature variance ``var_i`` of every Gaussian over the training views, shape (N,).

    Args:
        model: the current model.
        images: list of (H,W,3) training images in [0,1].
        cameras: their cameras.
        extractor: ``Phi`` (default ``HandcraftedFeatures()``); its output is standardised jointly.
        kappa: prior pseudo-count, in pixel-weight units.
    """
    stats = view_stats(model, images, cameras, extractor, bg, render_kw)
    return variance_from_stats(stats.contrib, stats.lifted, stats.var0, kappa)
