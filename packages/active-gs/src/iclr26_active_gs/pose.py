"""Robust pose optimisation of a captured image against the current model (inferred, spec section 7).

``xi* = argmin_xi mean_p m(p) rho(|C(p; G, Exp(xi) T~) - I(p)|_1 / tau)`` with the Geman-McClure
``rho(r) = r^2 / (r^2 + 1)``, ``tau = 0.1``, the mask ``m(p) = 1[A(p) > 0.5]`` (pixels the current
model explains) and trimming of the largest 20% residuals, coarse to fine over images downsampled
by 4, 2, 1 (area averaging, intrinsics scaled), 60 Adam steps per level with a cosine decay to 10%.
The baseline ``loss="l2"`` uses ``rho(r) = r^2`` without mask or trimming.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .cameras import Camera
from .model import GaussianModel
from .render import render

LOSSES = ("geman-mcclure", "l2")


def pose_loss(rgb: torch.Tensor, image: torch.Tensor, alpha: torch.Tensor, loss: str = "geman-mcclure",
              tau: float = 0.1, trim: float = 0.2, mask_threshold: float = 0.5) -> torch.Tensor:
    """The robust photometric pose loss of a rendering ``rgb (H,W,3)``, ``alpha (H,W)`` against ``image (H,W,3)``.

    ``"geman-mcclure"``: mean of ``rho(r)`` over pixels with ``alpha > mask_threshold`` whose residual is
    not among the largest ``trim`` fraction; ``"l2"``: mean of ``r^2`` over all pixels. Returns a scalar.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss: expected one of {LOSSES}, got {loss!r}")
    if tau <= 0 or not 0 <= trim < 1:
        raise ValueError(f"tau > 0 and 0 <= trim < 1 expected, got tau={tau}, trim={trim}")
    r = (rgb - image).abs().sum(-1) / tau
    if loss == "l2":
        return (r * r).mean()
    keep = alpha.detach() > mask_threshold
    if trim > 0 and int(keep.sum()) > 1:
        cut = torch.quantile(r.detach()[keep], 1 - trim)
        keep = keep & (r.detach() <= cut)
    if not keep.any():
        return (r * 0).sum()
    rr = r[keep] ** 2
    return (rr / (rr + 1)).mean()


def downsample(image: torch.Tensor, factor: int) -> torch.Tensor:
    """Area-average an (H,W,C) image by an integer ``factor`` (cropping a remainder)."""
    if factor == 1:
        return image
    H, W = (image.shape[0] // factor) * factor, (image.shape[1] // factor) * factor
    x = image[:H, :W].permute(2, 0, 1)[None]
    return F.avg_pool2d(x, factor)[0].permute(1, 2, 0)


def robust_pose_refine(model: GaussianModel, image, camera: Camera, levels=(4, 2, 1), steps: int = 60,
                       loss: str = "geman-mcclure", tau: float = 0.1, trim: float = 0.2, lr: float = 2e-3,
                       extent: float | None = None, bg=(1.0, 1.0, 1.0), render_kw: dict | None = None,
                       pivot: bool = True):
    """Corrects the pose of ``camera`` so that ``model`` rendered from it matches ``image``.

    Args:
        model: the current Gaussian model (not modified).
        image: (H,W,3) image in [0,1] (uint8 converted).
        camera: the reported (noisy) camera ``T~``.
        levels: downsampling factors, coarse to fine.
        steps: Adam steps per level.
        loss: ``"geman-mcclure"`` (robust, masked, trimmed) or ``"l2"``.
        tau, trim: residual scale and trimmed fraction.
        lr: Adam learning rate of the rotation (radians); the translation uses ``lr * extent``.
        extent: scene scale of the translation step; default the camera's distance to the world origin.
        bg: background colour. render_kw: extra keywords for ``render``.
        pivot: optimise the twist in pivot coordinates (rotation about the scene's mean depth, see
            ``_twist``) rather than about the camera centre; the result is the same kind of left twist.

    Returns:
        (refined ``Camera`` = ``Exp(xi*) @ T~``, ``{"xi": list, "loss": final loss, "history": list}``).

    Raises:
        ValueError: bad image (size mismatch with the camera, range), unknown loss, bad levels/steps.
    """
    from .train import check_image

    image = check_image(image, "image", camera).to(model.means.device, model.means.dtype)
    if loss not in LOSSES:
        raise ValueError(f"loss: expected one of {LOSSES}, got {loss!r}")
    if not levels or any(int(f) < 1 for f in levels) or steps < 0:
        raise ValueError(f"levels: expected positive integers and steps >= 0, got {levels}, {steps}")
    camera = camera.to(model.means.device, model.means.dtype).detach()
    if extent is None:
        extent = max(float(camera.center.norm()), 1e-3)
    xi = torch.zeros(6, dtype=model.means.dtype, device=model.means.device, requires_grad=True)
    kw = dict(render_kw or {})
    centre = _pivot(model, camera, bg, kw) if pivot else torch.zeros(3, dtype=xi.dtype, device=xi.device)
    scale = torch.tensor([1.0] * 3 + [extent] * 3, dtype=xi.dtype, device=xi.device)
    history = []
    for factor in levels:
        target = downsample(image, int(factor))
        base = camera.scaled(int(factor)) if factor > 1 else camera
        opt = torch.optim.Adam([{"params": [xi], "lr": lr}], eps=1e-8)
        for step in range(steps):
            decay = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / max(steps, 1)))
            cam = base.perturbed(_twist(xi * scale, centre))
            out = render(model, cam, bg=bg, **kw)
            value = pose_loss(out["rgb"], target, out["alpha"], loss, tau, trim)
            opt.zero_grad(set_to_none=True)
            (xi.grad,) = torch.autograd.grad(value, xi)
            for group in opt.param_groups:
                group["lr"] = lr * decay
            opt.step()
            history.append(float(value.detach()))
    twist = _twist((xi * scale).detach(), centre)
    final = camera.perturbed(twist).detach()
    return final, {"xi": twist.cpu().tolist(), "loss": history[-1] if history else float("nan"), "history": history}


def _pivot(model, camera, bg, kw) -> torch.Tensor:
    """Camera-space point ``(0, 0, d)`` at the rendered scene's mean depth ``d`` (the camera distance if empty)."""
    with torch.no_grad():
        out = render(model, camera, bg=bg, **kw)
    covered = float(out["alpha"].sum())
    d = float(out["depth"].sum()) / covered if covered > 1e-6 else float(camera.center.norm())
    return torch.tensor([0.0, 0.0, d], dtype=model.means.dtype, device=model.means.device)


def _twist(v: torch.Tensor, pivot: torch.Tensor) -> torch.Tensor:
    """Left twist of pivot coordinates ``v = (omega, rho')``: ``rho = rho' + pivot x omega``.

    A pure ``omega`` then turns the camera about the pivot (an orbit around the scene) instead of about
    its own centre, which separates the orbit direction, nearly invisible in the image, from the others.
    """
    return torch.cat([v[:3], v[3:] + torch.linalg.cross(pivot, v[:3])])
