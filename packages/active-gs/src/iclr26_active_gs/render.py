"""The 3DGS forward model (Kerbl et al. 2023) behind one function, ``render``.

Two backends: ``"torch"``, a differentiable pure-PyTorch rasteriser that runs anywhere (CPU
default), in a ``"tiled"`` mode (16x16-pixel tiles, the fast path) and a ``"dense"`` mode
(every pixel against every Gaussian, the reference used in tests); and ``"gsplat"``, the
CUDA rasteriser of the ``gsplat`` library (optional extra ``[gpu]``). Per pixel p,
``alpha_i(p) = min(0.99, sigmoid(o_i) exp(-0.5 d^T Sigma2_i^-1 d))`` (zero below 1/255),
Gaussians are composited front to back by camera depth, ``w_i(p) = alpha_i(p) T_i(p)``, and
the per-Gaussian contribution ``W_i = sum_p w_i(p)`` is the visibility the method uses.
"""
from __future__ import annotations

import math

import torch

from .cameras import Camera
from .model import GaussianModel

ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.99
BACKENDS = ("auto", "torch", "gsplat")
MODES = ("tiled", "dense")
_CHUNK = 4096  # pixels per dense chunk
_TILE_BUDGET = 1 << 22  # pixel x Gaussian pairs evaluated at once in tiled mode
_GROUPS = 8  # tile groups of similar list length


def quat_to_rotmat(quats: torch.Tensor) -> torch.Tensor:
    """Unit rotation matrices ``(N,3,3)`` from quaternions ``(N,4)`` (w, x, y, z), normalised here."""
    q = quats / quats.norm(dim=-1, keepdim=True)
    w, x, y, z = q.unbind(-1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], dim=-1).reshape(q.shape[:-1] + (3, 3))


def project(means: torch.Tensor, log_scales: torch.Tensor, quats: torch.Tensor, camera: Camera,
            near: float = 0.01, eps2d: float = 0.3) -> dict[str, torch.Tensor]:
    """Steps 1-4: camera-space means, EWA 2-D covariances and pixel-space means.

    Args:
        means (N,3), log_scales (N,3), quats (N,4): the Gaussians.
        camera: the pinhole camera (OpenCV axes).
        near: Gaussians with camera depth below ``near`` are marked invalid.
        eps2d: the low-pass dilation added to every 2-D covariance.

    Returns:
        ``{"xy" (N,2), "conic" (N,3) = entries (a, b, c) of Sigma2^-1, "cov2d" (N,3) = (s_xx, s_xy, s_yy),
        "depth" (N,), "valid" (N,) bool}``. Invalid entries hold finite placeholders.
    """
    dtype = means.dtype
    R, t, K = camera.R.to(dtype), camera.t.to(dtype), camera.K.to(dtype)
    m = means @ R.T + t
    valid = m[:, 2] > near
    z = torch.where(valid, m[:, 2], torch.ones_like(m[:, 2]))
    x, y = m[:, 0], m[:, 1]
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    zero = torch.zeros_like(z)
    J = torch.stack([torch.stack([fx / z, zero, -fx * x / z**2], -1),
                     torch.stack([zero, fy / z, -fy * y / z**2], -1)], dim=1)  # (N,2,3)
    M = quat_to_rotmat(quats) * torch.exp(log_scales)[:, None, :]  # R(q) diag(s): Sigma = M M^T
    A = J @ R @ M  # (N,2,3)
    cov = A @ A.transpose(1, 2)
    sxx, sxy, syy = cov[:, 0, 0] + eps2d, cov[:, 0, 1], cov[:, 1, 1] + eps2d
    det = sxx * syy - sxy * sxy
    conic = torch.stack([syy / det, -sxy / det, sxx / det], -1)
    xy = torch.stack([fx * x / z + cx, fy * y / z + cy], -1)
    return {"xy": xy, "conic": conic, "cov2d": torch.stack([sxx, sxy, syy], -1), "depth": z, "valid": valid}


def _alpha(dx: torch.Tensor, dy: torch.Tensor, conic: torch.Tensor, opacity: torch.Tensor) -> torch.Tensor:
    """Step 5: clamped, thresholded alpha of broadcast pixel offsets; ``conic``/``opacity`` broadcast likewise."""
    power = -0.5 * (conic[..., 0] * dx * dx + 2 * conic[..., 1] * dx * dy + conic[..., 2] * dy * dy)
    a = torch.clamp(opacity * torch.exp(power), max=ALPHA_MAX)
    return torch.where(a >= ALPHA_MIN, a, torch.zeros_like(a))


def _blend(alpha: torch.Tensor) -> torch.Tensor:
    """Step 6: ``w = alpha * exclusive_cumprod(1 - alpha)`` along the last (depth-sorted) axis."""
    trans = torch.cumprod(1 - alpha, dim=-1)
    trans = torch.cat([torch.ones_like(trans[..., :1]), trans[..., :-1]], dim=-1)
    return alpha * trans


def _pixel_centres(width: int, height: int, dtype, device) -> torch.Tensor:
    """(H*W, 2) pixel centres ``(u + 0.5, v + 0.5)`` in row-major order."""
    v, u = torch.meshgrid(torch.arange(height, dtype=dtype, device=device),
                          torch.arange(width, dtype=dtype, device=device), indexing="ij")
    return torch.stack([u.reshape(-1) + 0.5, v.reshape(-1) + 0.5], -1)


def _screen_radius(cov2d: torch.Tensor, opacity: torch.Tensor) -> torch.Tensor:
    """Distance beyond which alpha < 1/255: ``sqrt(2 ln(255 o)) sqrt(lambda_max)``; -1 when ``o < 1/255``."""
    sxx, sxy, syy = cov2d.unbind(-1)
    mid = 0.5 * (sxx + syy)
    lam = mid + torch.sqrt(torch.clamp(mid * mid - (sxx * syy - sxy * sxy), min=0.0))
    level = torch.log(torch.clamp(255.0 * opacity, min=1.0))
    return torch.where(255.0 * opacity >= 1.0, torch.sqrt(2 * level * lam), -torch.ones_like(lam))


def _composite_dense(xy, conic, opacity, values, pix, lift=None):
    """Dense path over pixels ``pix (P,2)``: ``values (M,C)``, optional ``lift (P,K)``.

    Returns (sum_w (P,), out (P,C), W (M,), lifted (M,K) or None).
    """
    sums, outs, contrib, lifted = [], [], torch.zeros_like(opacity), None
    for start in range(0, pix.shape[0], _CHUNK):
        p = pix[start:start + _CHUNK]
        w = _blend(_alpha(p[:, None, 0] - xy[None, :, 0], p[:, None, 1] - xy[None, :, 1], conic[None], opacity[None]))
        sums.append(w.sum(1))
        outs.append(w @ values)
        contrib = contrib + w.sum(0)
        if lift is not None:
            part = w.T @ lift[start:start + _CHUNK]
            lifted = part if lifted is None else lifted + part
    return torch.cat(sums), torch.cat(outs), contrib, lifted


def _tile_lists(xy, radius, ntx, nty, tile):
    """(tiles, L) depth-ordered Gaussian indices per tile, padded with ``M`` (the empty slot).

    A Gaussian joins every tile that its bounding square ``xy +- radius`` overlaps; Gaussians with a
    negative radius join none. Indices are listed in increasing order (the global depth order).
    """
    M, device = xy.shape[0], xy.device
    n_tiles = ntx * nty
    with torch.no_grad():
        r = radius.detach()
        keep = (r >= 0) & (xy[:, 0] + r >= 0) & (xy[:, 0] - r <= ntx * tile) & (xy[:, 1] + r >= 0) & \
            (xy[:, 1] - r <= nty * tile)
        gid = torch.nonzero(keep).squeeze(1)
        lo = torch.floor((xy[gid].detach() - r[gid, None]) / tile).long()
        hi = torch.floor((xy[gid].detach() + r[gid, None]) / tile).long()
        lo[:, 0].clamp_(0, ntx - 1), lo[:, 1].clamp_(0, nty - 1)
        hi[:, 0].clamp_(0, ntx - 1), hi[:, 1].clamp_(0, nty - 1)
        nx, ny = hi[:, 0] - lo[:, 0] + 1, hi[:, 1] - lo[:, 1] + 1
        k = nx * ny
        pair_g = torch.repeat_interleave(torch.arange(gid.numel(), device=device), k)
        start = torch.cumsum(k, 0) - k
        off = torch.arange(pair_g.numel(), device=device) - start[pair_g]
        tid = (lo[pair_g, 1] + off // nx[pair_g]) * ntx + lo[pair_g, 0] + off % nx[pair_g]
        key = tid * (M + 1) + gid[pair_g]
        key, _ = torch.sort(key)
        tid, g = key // (M + 1), key % (M + 1)
        counts = torch.bincount(tid, minlength=n_tiles)
        L = max(int(counts.max()) if counts.numel() else 0, 1)
        first = torch.cumsum(counts, 0) - counts
        pos = torch.arange(tid.numel(), device=device) - first[tid]
        lists = torch.full((n_tiles, L), M, dtype=torch.long, device=device)
        lists[tid, pos] = g
    return lists


def _composite_tiled(xy, conic, opacity, values, radius, width, height, tile, lift=None):
    """Tiled path: a Gaussian joins every tile its bounding square overlaps; lists keep depth order.

    Returns (sum_w (H*W,), out (H*W,C), W (M,), lifted (M,K) or None), as the dense path.
    """
    M, dtype, device = xy.shape[0], xy.dtype, xy.device
    ntx, nty = math.ceil(width / tile), math.ceil(height / tile)
    lists = _tile_lists(xy, radius, ntx, nty, tile)
    pad = lambda a: torch.cat([a, a.new_zeros((1,) + a.shape[1:])], 0)  # noqa: E731 - the empty slot: opacity 0
    xy_p, conic_p, op_p, val_p = pad(xy), pad(conic), pad(opacity), pad(values)
    local = _pixel_centres(tile, tile, dtype, device)  # (P,2)
    n_tiles, P = nty * ntx, tile * tile
    origin = torch.stack([(torch.arange(ntx, dtype=dtype, device=device) * tile).repeat(nty),
                          (torch.arange(nty, dtype=dtype, device=device) * tile).repeat_interleave(ntx)], -1)
    if lift is not None:  # image (H*W,K) -> tiles (tiles,P,K), zero beyond the border
        K = lift.shape[1]
        full = torch.zeros(nty * tile, ntx * tile, K, dtype=dtype, device=device)
        full[:height, :width] = lift.reshape(height, width, K)
        lift = full.reshape(nty, tile, ntx, tile, K).permute(0, 2, 1, 3, 4).reshape(n_tiles, P, K)
        lifted = torch.zeros(M + 1, K, dtype=dtype, device=device)
    # tiles sorted by list length and cut into groups, each padded only to its own longest list
    counts = (lists < M).sum(1)
    tile_order = torch.argsort(counts, descending=True)
    group = max(1, math.ceil(n_tiles / _GROUPS))
    sums, outs, contrib = [], [], torch.zeros(M + 1, dtype=dtype, device=device)
    s = 0
    while s < n_tiles:
        Lg = max(int(counts[tile_order[s]]), 1)
        tiles = tile_order[s:s + max(1, min(group, _TILE_BUDGET // (P * Lg)))]
        s += tiles.numel()
        idx = lists[tiles, :Lg]  # (T,Lg)
        pix = origin[tiles, None, :] + local[None]  # (T,P,2)
        g_xy = xy_p[idx]  # (T,Lg,2)
        dx = pix[:, :, None, 0] - g_xy[:, None, :, 0]
        dy = pix[:, :, None, 1] - g_xy[:, None, :, 1]
        w = _blend(_alpha(dx, dy, conic_p[idx][:, None], op_p[idx][:, None]))  # (T,P,Lg)
        sums.append(w.sum(-1))
        outs.append(w @ val_p[idx])  # (T,P,C)
        contrib = contrib.index_add(0, idx.reshape(-1), w.sum(1).reshape(-1))
        if lift is not None:
            part = w.transpose(1, 2) @ lift[tiles]  # (T,Lg,K)
            lifted = lifted.index_add(0, idx.reshape(-1), part.reshape(-1, part.shape[-1]))
    inverse = torch.argsort(tile_order)
    sum_w, out = torch.cat(sums)[inverse], torch.cat(outs)[inverse]  # (tiles,P), (tiles,P,C)
    # tiles -> image rows, cropping the padding beyond the image border
    sum_w = sum_w.reshape(nty, ntx, tile, tile).permute(0, 2, 1, 3).reshape(nty * tile, ntx * tile)
    out = out.reshape(nty, ntx, tile, tile, -1).permute(0, 2, 1, 3, 4).reshape(nty * tile, ntx * tile, -1)
    return (sum_w[:height, :width].reshape(-1), out[:height, :width].reshape(height * width, -1), contrib[:M],
            lifted[:M] if lift is not None else None)


def _prepare(model, camera, near, eps2d):
    """Projects, drops Gaussians behind the near plane and sorts the rest by depth.

    Returns (order (M,), xy (M,2), conic (M,3), opacity (M,), radius (M,), depth (M,)) for the M kept.
    """
    proj = project(model.means, model.log_scales, model.quats, camera.to(model.means.device), near, eps2d)
    depth = torch.where(proj["valid"], proj["depth"], torch.full_like(proj["depth"], math.inf))
    order = torch.argsort(depth, stable=True)[: int(proj["valid"].sum())]
    op = model.opacity[order]
    radius = _screen_radius(proj["cov2d"][order], op)
    return order, proj["xy"][order], proj["conic"][order], op, radius, proj["depth"][order]


def _composite(prep, values, width, height, mode, tile, lift=None):
    """Runs the dense or the tiled path on prepared Gaussians."""
    _, xy, conic, op, radius, _ = prep
    if mode == "dense":
        return _composite_dense(xy, conic, op, values, _pixel_centres(width, height, xy.dtype, xy.device), lift)
    return _composite_tiled(xy, conic, op, values, radius, width, height, tile, lift)


def _check_inputs(model: GaussianModel, camera: Camera, bg) -> torch.Tensor:
    if not isinstance(model, GaussianModel):
        raise TypeError(f"model: expected a GaussianModel, got {type(model).__name__}")
    if not isinstance(camera, Camera):
        raise TypeError(f"camera: expected a Camera, got {type(camera).__name__}")
    model.validate()
    bg = torch.as_tensor(bg, dtype=model.means.dtype, device=model.means.device)
    if bg.shape != (3,) or not torch.isfinite(bg).all():
        raise ValueError(f"bg: expected 3 finite values, got {bg.tolist()}")
    return bg


def resolve_backend(backend: str, device: torch.device) -> str:
    """``"auto"`` -> ``"gsplat"`` when on CUDA with gsplat importable, else ``"torch"``.

    Raises:
        ValueError: unknown backend; ``"gsplat"`` without CUDA or without gsplat installed.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
    if backend == "torch":
        return backend
    on_cuda = torch.device(device).type == "cuda"
    try:
        import gsplat  # noqa: F401
        has_gsplat = True
    except ImportError:
        has_gsplat = False
    if backend == "auto":
        return "gsplat" if on_cuda and has_gsplat else "torch"
    if not on_cuda:
        raise ValueError("backend: 'gsplat' needs the model on a CUDA device; use backend='torch' on the CPU")
    if not has_gsplat:
        raise ValueError("backend: 'gsplat' is not installed; pip install 'iclr26-active-gs[gpu]' "
                         "(needs the CUDA toolkit and ninja; it compiles on first use)")
    return backend


def render(model: GaussianModel, camera: Camera, bg=(1.0, 1.0, 1.0), backend: str = "auto",
           return_contrib: bool = False, return_features: bool = False, lift: torch.Tensor | None = None,
           mode: str = "tiled", tile_size: int = 4, near: float = 0.01, eps2d: float = 0.3) -> dict:
    """Renders ``model`` from ``camera``; differentiable in the model's parameters and in ``camera.R, camera.t``.

    Args:
        model: the Gaussians.
        camera: a ``Camera``; the image is ``camera.height x camera.width``.
        bg: background colour, 3 values in [0,1].
        backend: ``"auto"`` (gsplat on CUDA when installed, else torch), ``"torch"`` or ``"gsplat"``.
        return_contrib: also return ``"contrib" (N,)``: ``W_i = sum_p w_i(p)``.
        return_features: also return ``"features" (H,W,K)`` = ``sum_i w_i(p) f_i`` (model needs features).
        lift: optional per-pixel features ``(H,W,K)``; returns ``"lifted" (N,K)`` = ``sum_p w_i(p) lift(p)``
            (the un-normalised lifting of 2-D features onto the Gaussians; the gsplat backend lifts by
            ``lift_by_gradient``).
        mode: torch backend only: ``"tiled"`` (default, fast) or ``"dense"`` (reference); they agree to 1e-6.
        tile_size: tile edge in pixels for ``"tiled"``.
        near: near plane; Gaussians closer than this are dropped.
        eps2d: 2-D low-pass dilation (0.3, as 3DGS/gsplat).

    Returns:
        ``{"rgb" (H,W,3), "alpha" (H,W), "depth" (H,W)}`` (+ the optional keys), on the model's device.

    Raises:
        ValueError: non-finite parameters, zero-norm quaternions, bad ``bg``, unknown backend or mode,
            ``"gsplat"`` without CUDA/gsplat, ``lift`` of the wrong size, features asked of a model without.
    """
    bg = _check_inputs(model, camera, bg)
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    if not isinstance(tile_size, int) or tile_size < 1:
        raise ValueError(f"tile_size: expected a positive integer, got {tile_size!r}")
    if return_features and model.features is None:
        raise ValueError("return_features: the model has no per-Gaussian features (feature_dim=0)")
    H, W = camera.height, camera.width
    if lift is not None:
        lift = torch.as_tensor(lift, dtype=model.means.dtype, device=model.means.device)
        if lift.ndim != 3 or lift.shape[:2] != (H, W):
            raise ValueError(f"lift: expected shape ({H}, {W}, K) to match the camera, got {tuple(lift.shape)}")
    if resolve_backend(backend, model.means.device) == "gsplat":
        result = _render_gsplat(model, camera, bg, return_contrib, return_features, near, eps2d)
        if lift is not None:
            result["lifted"] = lift_by_gradient(model, camera, lift, "gsplat", near=near, eps2d=eps2d)
        return result
    prep = _prepare(model, camera, near, eps2d)
    order, depth = prep[0], prep[5]
    blocks = [model.colors[order], depth[:, None]]
    if return_features:
        blocks.append(model.features[order])
    flat_lift = None if lift is None else lift.reshape(H * W, -1)
    sum_w, out, contrib, lifted = _composite(prep, torch.cat(blocks, 1), W, H, mode, tile_size, flat_lift)
    result = {"rgb": (out[:, :3] + (1 - sum_w)[:, None] * bg).reshape(H, W, 3),
              "alpha": sum_w.reshape(H, W), "depth": out[:, 3].reshape(H, W)}
    if return_features:
        result["features"] = out[:, 4:].reshape(H, W, -1)
    zeros = torch.zeros(len(model), dtype=depth.dtype, device=depth.device)
    if return_contrib:
        result["contrib"] = zeros.index_put((order,), contrib)
    if lift is not None:
        result["lifted"] = torch.zeros(len(model), lifted.shape[1], dtype=depth.dtype,
                                       device=depth.device).index_put((order,), lifted)
    return result


def contrib_by_gradient(model: GaussianModel, camera: Camera, bg=(1.0, 1.0, 1.0), backend: str = "auto",
                        **kw) -> torch.Tensor:
    """``W_i = sum_p w_i(p)`` by one backward pass (N,): ``lift_by_gradient`` of a constant image of ones.

    Works on either backend (gsplat exposes no per-Gaussian contribution); equals ``render(...,
    return_contrib=True)["contrib"]`` of the torch backend (test 3b). ``bg`` is checked only: the
    background does not depend on the Gaussians.
    """
    _check_inputs(model, camera, bg)
    ones = torch.ones(camera.height, camera.width, 1, dtype=model.means.dtype, device=model.means.device)
    return lift_by_gradient(model, camera, ones, backend, **kw)[:, 0]


def lift_by_gradient(model: GaussianModel, camera: Camera, lift: torch.Tensor, backend: str = "auto",
                     **kw) -> torch.Tensor:
    """``sum_p w_i(p) lift(p)`` (N,K) for per-pixel features ``lift (H,W,K)``, on either backend.

    The composited image of per-Gaussian values ``a (N,K)`` is ``F(p) = sum_i w_i(p) a_i``, linear in
    ``a`` with weights that do not depend on ``a``, so ``d/da_i sum_p <F(p), lift(p)> = sum_p w_i(p)
    lift(p)``: one render with ``a = 0`` and one backward pass lift the features, which is how the
    gsplat backend (no per-Gaussian outputs) gets the same lifting as the torch backend's direct sum.
    ``kw``: ``near``, ``eps2d`` and (torch backend) ``mode``, ``tile_size``.
    """
    lift = torch.as_tensor(lift, dtype=model.means.dtype, device=model.means.device)
    if lift.ndim != 3 or lift.shape[:2] != (camera.height, camera.width):
        raise ValueError(f"lift: expected shape ({camera.height}, {camera.width}, K) to match the camera, "
                         f"got {tuple(lift.shape)}")
    with torch.enable_grad():
        values = torch.zeros(len(model), lift.shape[2], dtype=lift.dtype, device=lift.device, requires_grad=True)
        image = _composite_values(model, values, camera, backend, **kw)
        (grad,) = torch.autograd.grad((image * lift).sum(), values)
    return grad


def _composite_values(model, values, camera, backend, near=0.01, eps2d=0.3, mode="tiled", tile_size=4):
    """``sum_i w_i(p) values_i`` (H,W,C) for per-Gaussian ``values (N,C)`` used as given (no sigmoid, no bg)."""
    if resolve_backend(backend, model.means.device) == "gsplat":
        return _rasterize(model, values, camera, near, eps2d, "RGB")[0]
    prep = _prepare(model, camera, near, eps2d)
    _, out, _, _ = _composite(prep, values[prep[0]], camera.width, camera.height, mode, tile_size)
    return out.reshape(camera.height, camera.width, -1)


def _rasterize(model, values, camera, near, eps2d, render_mode):
    """One ``gsplat.rasterization`` call with per-Gaussian ``values (N,C)``; returns (out (H,W,C[+1]), alpha (H,W))."""
    from gsplat import rasterization

    cam = camera.to(model.means.device, model.means.dtype)
    out, alphas, _ = rasterization(
        model.means, model.quats / model.quats.norm(dim=-1, keepdim=True), torch.exp(model.log_scales),
        model.opacity, values, cam.viewmat[None], cam.K[None], cam.width, cam.height, near_plane=near,
        eps2d=eps2d, rasterize_mode="classic", packed=False, render_mode=render_mode)
    return out[0], alphas[0, ..., 0]


def _gsplat_call(model, colors, camera, bg, near, eps2d):
    """Rendered ``colors (N,C)`` over ``bg`` (first 3 channels); returns (rgb (H,W,C), alpha (H,W), depth (H,W))."""
    out, alpha = _rasterize(model, colors, camera, near, eps2d, "RGB+D")
    rgb = out[..., :-1]
    rgb = torch.cat([rgb[..., :3] + (1 - alpha)[..., None] * bg, rgb[..., 3:]], -1)
    return rgb, alpha, out[..., -1]


def _render_gsplat(model, camera, bg, return_contrib, return_features, near, eps2d) -> dict:
    colors = torch.cat([model.colors, model.features], 1) if return_features else model.colors
    rgb, alpha, depth = _gsplat_call(model, colors, camera, bg, near, eps2d)
    result = {"rgb": rgb[..., :3], "alpha": alpha, "depth": depth}
    if return_features:
        result["features"] = rgb[..., 3:]
    if return_contrib:
        result["contrib"] = contrib_by_gradient(model, camera, bg, backend="gsplat", near=near, eps2d=eps2d)
    return result
