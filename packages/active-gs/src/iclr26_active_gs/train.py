"""Training of the Gaussian model (3DGS defaults) and the image metrics.

Loss ``(1 - lambda) L1 + lambda (1 - SSIM)`` with ``lambda = 0.2``; Adam with the 3DGS learning
rates (means ``1.6e-4 * extent``, log-scales 5e-3, quaternions 1e-3, opacity logits 5e-2,
colour logits 2.5e-3) times ``lr_scale``; one random training view per iteration. Training is
in place: calling ``fit`` again continues with the same optimiser state.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from .cameras import Camera
from .model import GaussianModel
from .pose import pose_loss
from .render import render

BASE_LR = {"means": 1.6e-4, "log_scales": 5e-3, "quats": 1e-3, "opacity_logits": 5e-2, "color_logits": 2.5e-3}


def check_image(image, name: str = "image", camera: Camera | None = None) -> torch.Tensor:
    """An (H,W,3) float tensor in [0,1]; uint8 input is divided by 255.

    Raises:
        ValueError: wrong shape, non-finite values, values outside [0,1], or a size that differs from ``camera``.
    """
    if isinstance(image, np.ndarray) and image.dtype == np.uint8 or (
            isinstance(image, torch.Tensor) and image.dtype == torch.uint8):
        image = torch.as_tensor(np.asarray(image) if isinstance(image, np.ndarray) else image).float() / 255.0
    image = torch.as_tensor(image)
    if not image.is_floating_point():
        raise ValueError(f"{name}: expected a float image in [0,1] or uint8, got dtype {image.dtype}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"{name}: expected shape (H, W, 3), got {tuple(image.shape)}")
    if not torch.isfinite(image).all():
        raise ValueError(f"{name}: expected finite values")
    if float(image.min()) < 0 or float(image.max()) > 1:
        raise ValueError(f"{name}: expected values in [0, 1], got range [{float(image.min()):.3g}, "
                         f"{float(image.max()):.3g}] (uint8 images are converted automatically)")
    if camera is not None and tuple(image.shape[:2]) != (camera.height, camera.width):
        raise ValueError(f"{name}: size {tuple(image.shape[:2])} does not match the camera's "
                         f"{(camera.height, camera.width)} (height, width)")
    return image


def _gauss_window(dtype, device, size: int = 11, sigma: float = 1.5) -> torch.Tensor:
    x = torch.arange(size, dtype=dtype, device=device) - (size - 1) / 2
    g = torch.exp(-x * x / (2 * sigma * sigma))
    g = g / g.sum()
    return g[:, None] * g[None, :]


def ssim_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Differentiable mean SSIM of two (H,W,C) images in [0,1]: Gaussian window 11, sigma 1.5,
    K1 = 0.01, K2 = 0.03, over the valid region (no padding)."""
    C = a.shape[-1]
    win = _gauss_window(a.dtype, a.device).expand(C, 1, 11, 11)
    x, y = a.permute(2, 0, 1)[None], b.permute(2, 0, 1)[None]
    filt = lambda z: F.conv2d(z, win, groups=C)  # noqa: E731
    mx, my = filt(x), filt(y)
    sxx, syy, sxy = filt(x * x) - mx * mx, filt(y * y) - my * my, filt(x * y) - mx * my
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
    return s.mean()


def psnr(a, b) -> float:
    """PSNR in dB of two images with values in [0,1] (scikit-image)."""
    a, b = (np.asarray(torch.as_tensor(v).detach().cpu().double()) for v in (a, b))
    if a.shape != b.shape:
        raise ValueError(f"psnr: shapes differ, {a.shape} vs {b.shape}")
    mse = float(np.mean((a - b) ** 2))
    return math.inf if mse == 0 else float(peak_signal_noise_ratio(a, b, data_range=1.0))


def ssim(a, b) -> float:
    """Mean SSIM (scikit-image; Gaussian window 11, sigma 1.5, K1 0.01, K2 0.03, valid region) of (H,W,3) images."""
    a, b = (np.asarray(torch.as_tensor(v).detach().cpu().double()) for v in (a, b))
    if a.shape != b.shape:
        raise ValueError(f"ssim: shapes differ, {a.shape} vs {b.shape}")
    return float(structural_similarity(a, b, data_range=1.0, channel_axis=-1, gaussian_weights=True, sigma=1.5,
                                       use_sample_covariance=False))


def photometric_loss(pred: torch.Tensor, target: torch.Tensor, ssim_weight: float = 0.2) -> torch.Tensor:
    """``(1 - lambda) * L1 + lambda * (1 - SSIM)`` of (H,W,3) images."""
    return (1 - ssim_weight) * (pred - target).abs().mean() + ssim_weight * (1 - ssim_torch(pred, target))


def rig_extent(cameras: list[Camera]) -> float:
    """Radius of the bounding sphere of the camera centres (max distance to their mean); 1.0 for one camera."""
    c = torch.stack([cam.center.detach().double().cpu() for cam in cameras])
    r = float((c - c.mean(0)).norm(dim=1).max())
    return r if r > 1e-9 else 1.0


class Trainer:
    """Adam training of a ``GaussianModel`` on posed images, optionally refining camera poses jointly.

    Args:
        model: trained in place.
        lr_scale: multiplies every Gaussian learning rate.
        ssim_weight: lambda of the loss.
        refine_poses: learn a twist per refinable view (``fit(..., refine=...)``) with the robust loss.
        pose_lr: Adam learning rate of those twists.
        seed: order of the training views.
        extent: learning-rate scale of the means; default: ``rig_extent`` of the first ``fit``'s cameras.
        bg: background colour.
        render_kw: extra keywords for ``render`` (backend, mode, tile_size).
        pose_loss_kw: keywords of the robust pose loss (``loss``, ``tau``, ``trim``).
    """

    def __init__(self, model: GaussianModel, lr_scale: float = 1.0, ssim_weight: float = 0.2,
                 refine_poses: bool = False, pose_lr: float = 1e-4, seed: int = 0, extent: float | None = None,
                 bg=(1.0, 1.0, 1.0), render_kw: dict | None = None, pose_loss_kw: dict | None = None):
        if lr_scale <= 0 or pose_lr <= 0:
            raise ValueError(f"lr_scale and pose_lr: expected > 0, got {lr_scale}, {pose_lr}")
        if not 0 <= ssim_weight <= 1:
            raise ValueError(f"ssim_weight: expected a value in [0, 1], got {ssim_weight}")
        self.model, self.lr_scale, self.ssim_weight = model, lr_scale, ssim_weight
        self.refine_poses, self.pose_lr, self.extent, self.bg = refine_poses, pose_lr, extent, bg
        self.render_kw = dict(render_kw or {})
        self.pose_loss_kw = dict(pose_loss_kw or {})
        self.rng = np.random.default_rng(seed)
        self.optimizer: torch.optim.Adam | None = None
        self.cameras_: list[Camera] = []

    def _make_optimizer(self, cameras):
        if self.extent is None:
            self.extent = rig_extent(cameras)
        groups = []
        for name, lr in BASE_LR.items():
            scale = self.extent if name == "means" else 1.0
            groups.append({"params": [getattr(self.model, name)], "lr": lr * scale * self.lr_scale, "name": name})
        self.optimizer = torch.optim.Adam(groups, eps=1e-15)

    def fit(self, images, cameras: list[Camera], iters: int, refine=None) -> list[float]:
        """Runs ``iters`` Adam steps, one random view each; returns the loss history.

        Args:
            images: list of (H,W,3) images in [0,1] (uint8 converted).
            cameras: their (reported) cameras.
            iters: number of iterations (>= 0).
            refine: optional list of bools, True for views whose pose is learnt (``refine_poses`` only).

        After the call ``cameras_`` holds the cameras with their learnt twists applied.

        Raises:
            ValueError: mismatched lengths, bad images, negative ``iters``.
        """
        if len(images) != len(cameras) or not cameras:
            raise ValueError(f"images, cameras: expected equal non-zero lengths, got {len(images)}, {len(cameras)}")
        if iters < 0:
            raise ValueError(f"iters: expected >= 0, got {iters}")
        device = self.model.means.device
        imgs = [check_image(im, f"images[{k}]", c).to(device, self.model.means.dtype)
                for k, (im, c) in enumerate(zip(images, cameras, strict=True))]
        cams = [c.to(device, self.model.means.dtype) for c in cameras]
        if self.optimizer is None:
            self._make_optimizer(cams)
        refine = [False] * len(cams) if refine is None or not self.refine_poses else list(refine)
        if len(refine) != len(cams):
            raise ValueError(f"refine: expected {len(cams)} flags, got {len(refine)}")
        twists = {k: torch.zeros(6, dtype=self.model.means.dtype, device=device, requires_grad=True)
                  for k, r in enumerate(refine) if r}
        pose_opt = None
        if twists:
            pose_opt = torch.optim.Adam([{"params": list(twists.values()), "lr": self.pose_lr}], eps=1e-15)
        params = [getattr(self.model, name) for name in BASE_LR]
        history = []
        for _ in range(iters):
            k = int(self.rng.integers(len(cams)))
            cam = cams[k].perturbed(twists[k]) if k in twists else cams[k]
            out = render(self.model, cam, bg=self.bg, **self.render_kw)
            loss = photometric_loss(out["rgb"], imgs[k], self.ssim_weight)
            self.optimizer.zero_grad(set_to_none=True)
            if k in twists:
                grads = torch.autograd.grad(loss, params, retain_graph=True)
                for p, g in zip(params, grads, strict=True):
                    p.grad = g
                robust = pose_loss(out["rgb"], imgs[k], out["alpha"], **self.pose_loss_kw)
                pose_opt.zero_grad(set_to_none=True)
                (twists[k].grad,) = torch.autograd.grad(robust, twists[k])
                pose_opt.step()
            else:
                loss.backward()
            self.optimizer.step()
            history.append(float(loss.detach()))
        self.cameras_ = [cams[k].perturbed(twists[k].detach()).detach() if k in twists else cams[k]
                         for k in range(len(cams))]
        return history
