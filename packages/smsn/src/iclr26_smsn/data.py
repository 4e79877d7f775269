"""The procedural 4-modality brain-tumour phantom, modality subsets, and the optional BraTS loader.

Label convention (BraTS): 0 background, 1 necrotic/non-enhancing core (NCR), 2 oedema (ED),
4 enhancing tumour (ET). Regions: WT = {1, 2, 4}, TC = {1, 4}, ET = {4}.
"""
from __future__ import annotations

import itertools
import os
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from scipy.ndimage import gaussian_filter

MODALITIES = ("t1", "t1ce", "t2", "flair")
DISPLAY_NAMES = ("T1", "T1ce", "T2", "FLAIR")
BRATS_LABELS = (0, 1, 2, 4)

# Mean intensity per tissue and modality (T1, T1ce, T2, FLAIR): the phantom's public contract.
TISSUES = ("background", "skull", "csf", "grey_matter", "white_matter", "oedema", "necrosis", "enhancing")
TISSUE_MEANS = np.array([
    [0.00, 0.00, 0.00, 0.00],
    [0.25, 0.25, 0.15, 0.20],
    [0.20, 0.20, 1.00, 0.10],
    [0.55, 0.55, 0.55, 0.50],
    [0.80, 0.80, 0.35, 0.40],
    [0.45, 0.45, 0.80, 0.90],
    [0.25, 0.22, 0.90, 0.45],
    [0.45, 1.00, 0.80, 0.90],  # enhancing = oedema in T1, T2 and FLAIR: only T1ce separates them
], dtype=np.float32)
_TISSUE_OF_LABEL = {2: 5, 1: 6, 4: 7}
ARC_COS = 0.5  # the enhancing arc spans arccos(c)/π of the rim, c ~ U(-ARC_COS, ARC_COS)


@dataclass
class PhantomSet:
    """Phantom cases.

    Attributes:
        images: float32 ``(n, 4, H, W[, D])`` in ``MODALITIES`` order, z-scored inside the head.
        labels: int64 ``(n, H, W[, D])`` with values in {0, 1, 2, 4}.
        tissue: int64 ``(n, H, W[, D])`` index into ``TISSUES``.
        clean: float32 like ``images``: the noiseless tissue-mean maps (``return_clean=True``), else None.
    """

    images: np.ndarray
    labels: np.ndarray
    tissue: np.ndarray
    clean: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.images)


def subset_masks() -> np.ndarray:
    """The 15 non-empty modality subsets as a bool array ``(15, 4)``.

    Order: by subset size, then lexicographic by modality index, e.g. row 0 = {T1},
    row 4 = {T1, T1ce}, row 14 = all four.
    """
    rows = []
    for k in range(1, 5):
        for combo in itertools.combinations(range(4), k):
            row = np.zeros(4, dtype=bool)
            row[list(combo)] = True
            rows.append(row)
    return np.stack(rows)


def subset_name(mask) -> str:
    """``[False, True, False, True]`` -> ``"T1ce+FLAIR"``."""
    return "+".join(n for n, m in zip(DISPLAY_NAMES, np.asarray(mask, dtype=bool)) if m)


def apply_mask(images, mask):
    """Zero-fills missing modalities.

    Args:
        images: ``(B, M, *spatial)`` numpy array or tensor.
        mask: ``(B, M)`` or ``(M,)`` availability (bool or 0/1).

    Returns:
        ``images`` with every channel whose mask is 0 replaced by zeros (same type).
    """
    if isinstance(images, torch.Tensor):
        m = torch.as_tensor(mask, device=images.device).to(images.dtype)
        m = m.expand(images.shape[0], -1) if m.ndim == 1 else m
        return images * m.reshape(*m.shape, *([1] * (images.ndim - 2)))
    m = np.asarray(mask).astype(images.dtype)
    m = np.broadcast_to(m, images.shape[:2])
    return images * m.reshape(*m.shape, *([1] * (images.ndim - 2)))


def _radial_terms(three_d: bool) -> list[tuple[int, bool]]:
    """``(k, on_phi)`` of the shape terms of a star-shaped region, in the order their draws are made:
    k = 2..4 in θ (2-D), or k = 2, 3 in θ then in φ (3-D). Each term draws an amplitude, then a phase."""
    return [(k, on_phi) for k in (range(2, 4) if three_d else range(2, 5))
            for on_phi in ((False, True) if three_d else (False,))]


def _radial_coeffs(rng: np.random.Generator, three_d: bool) -> list[tuple[int, float, float, bool]]:
    """Draws a region's shape: ``(k, amplitude ~ U(0, 0.12), phase ~ U(0, 2π), on_phi)`` per term."""
    return [(k, rng.uniform(0, 0.12), rng.uniform(0, 2 * np.pi), on_phi) for k, on_phi in _radial_terms(three_d)]


def _radial(r0, coeffs, theta: np.ndarray, phi: np.ndarray | None) -> np.ndarray:
    """r(θ[, φ]) = r0·(1 + Σ_k a_k cos(kθ + φ_k) [+ Σ_k b_k cos(kφ + ψ_k)]).

    ``r0`` and the amplitudes/phases in ``coeffs`` (``(k, a, phase, on_phi)``) are floats, or arrays that
    broadcast against the angles (one row per candidate shape); the result has the broadcast shape.
    """
    pert = np.zeros_like(theta)
    for k, amp, phase, on_phi in coeffs:
        pert += amp * np.cos(k * (phi if on_phi else theta) + phase)
    return r0 * (1.0 + pert)


def _distance(coords: list[np.ndarray], centre: list) -> np.ndarray:
    """Euclidean distance of the points ``coords`` (one array per axis) to ``centre`` (broadcasting per axis)."""
    return np.sqrt(sum((c - c0) ** 2 for c, c0 in zip(coords, centre)))


def _polar(coords: list[np.ndarray], centre: list) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(distance, θ, φ or None) of the points ``coords`` (one array per axis) about ``centre`` (one float, or
    array broadcasting against ``coords``, per axis); the outputs have the broadcast shape."""
    d = [c - c0 for c, c0 in zip(coords, centre)]
    dist = _distance(coords, centre)
    theta = np.arctan2(d[1], d[0])
    phi = np.arccos(np.clip(d[2] / np.maximum(dist, 1e-9), -1, 1)) if len(coords) == 3 else None
    return dist, theta, phi


def _uniform(u, low: float, high):
    """``Generator.uniform(low, high)`` from the standard-uniform draw ``u`` it is made of: low + (high − low)·u."""
    return low + (high - low) * u


_TUMOUR_TRIES = 100
_TRY_CHUNK = 16
_BATCH = 16  # cases generated together by make_phantom (their arrays stay in cache)
_BATCH_VOXELS = 2 ** 16  # at most this many voxels per modality in one batch (fewer cases when larger)


def _place_tumour(rng: np.random.Generator, inner: list[float], size: int, vent_coords: list[np.ndarray]):
    """Draws the lesion until its oedema misses the ventricles, at most ``_TUMOUR_TRIES`` tries.

    Each try draws a centre ``c_j ~ U(-inner_j, inner_j)``; one outside the inner ellipse ends the try, else
    r_ed ~ U(0.1, 0.2)·size, r_tc = r_ed·U(0.45, 0.6), r_ncr = r_tc·U(0.15, 0.45) and the oedema shape
    (``_radial_coeffs``) follow. The tries are evaluated in chunks from one block of standard-uniform draws;
    ``rng`` is then left exactly where the one-draw-at-a-time loop leaves it, with the same values.

    Args:
        inner: semi-axes of the ellipse the centre must lie in (one per axis).
        vent_coords: coordinates of the ventricle voxels inside the brain, one ``(V,)`` array per axis.

    Returns:
        ``(centre, r_ed, r_tc, r_ncr, ed_shape)`` of the accepted try, or None when every try failed.
    """
    ndim = len(inner)
    terms = _radial_terms(ndim == 3)
    per_try = ndim + 3 + 2 * len(terms)
    state = rng.bit_generator.state
    u = rng.random(_TUMOUR_TRIES * per_try)
    n_starts = len(u) - ndim + 1
    centres = [_uniform(u[j:j + n_starts], -s, s) for j, s in enumerate(inner)]  # the centre a try at o draws
    inside = (sum((c / s) ** 2 for c, s in zip(centres, inner)) <= 1.0).tolist()
    starts, offset = [], 0
    for _ in range(_TUMOUR_TRIES):
        if inside[offset]:
            starts.append(offset)
        offset += per_try if inside[offset] else ndim
    accepted, used = None, offset
    vent = [c[None, :] for c in vent_coords]
    for first in range(0, len(starts), _TRY_CHUNK):
        o = np.array(starts[first:first + _TRY_CHUNK])  # (T,) offsets of the tries of this chunk
        centre = [c[o, None] for c in centres]
        r_ed = _uniform(u[o + ndim], 0.10, 0.20) * size
        amps = [_uniform(u[o + ndim + 3 + 2 * i], 0, 0.12) for i in range(len(terms))]
        dist = _distance(vent, centre)  # (T, V)
        # r(θ) lies in r_ed·(1 ± Σ a_k): the nearest ventricle voxel decides most tries without any angle
        nearest, spread = dist.min(1, initial=np.inf), sum(amps)
        reach = r_ed * (1.0 + spread) * (1.0 + 1e-9)
        misses = nearest > reach
        unsure = np.flatnonzero(~misses & (nearest > r_ed * (1.0 - spread) * (1.0 - 1e-9)))
        if unsure.size:
            # only the (try, voxel) pairs within the try's largest radius can be inside its oedema
            t, v = np.nonzero(dist[unsure] <= reach[unsure, None])
            tries = unsure[t]
            _, theta, phi = _polar([c[0, v] for c in vent], [c[tries, 0] for c in centre])
            coeffs = [(k, amps[i][tries], _uniform(u[o[tries] + ndim + 4 + 2 * i], 0, 2 * np.pi), on_phi)
                      for i, (k, on_phi) in enumerate(terms)]
            hit = dist[tries, v] <= _radial(r_ed[tries], coeffs, theta, phi)
            misses[unsure] = np.bincount(t[hit], minlength=unsure.size) == 0
        if misses.any():
            accepted = int(o[np.argmax(misses)])
            used = accepted + per_try
            break
    rng.bit_generator.state = state
    rng.random(used)  # consume exactly the draws of the tries made
    if accepted is None:
        return None
    v = u[accepted:accepted + per_try].tolist()
    centre = [_uniform(v[j], -s, s) for j, s in enumerate(inner)]
    r_ed = _uniform(v[ndim], 0.10, 0.20) * size
    r_tc = r_ed * _uniform(v[ndim + 1], 0.45, 0.60)
    r_ncr = r_tc * _uniform(v[ndim + 2], 0.15, 0.45)  # ET is a rim: a minority of the oedema-like T2/FLAIR lesion
    ed_shape = [(k, _uniform(v[ndim + 3 + 2 * i], 0, 0.12), _uniform(v[ndim + 4 + 2 * i], 0, 2 * np.pi), on_phi)
                for i, (k, on_phi) in enumerate(terms)]
    return centre, r_ed, r_tc, r_ncr, ed_shape


def _head_frames(rngs: list[np.random.Generator], grid: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Draws each case's head ellipse (semi-axes a ~ U(0.38, 0.45)·S, b ~ U(0.30, 0.38)·S [, c ~ U(0.30, 0.38)·D],
    rotation ~ U(-15°, 15°)) from its generator and rotates the grid into every case's head frame.

    Args:
        rngs: one generator per case (B).
        grid: centred voxel coordinates, one ``shape`` array per axis.

    Returns:
        ``(coords, semi)``: one ``(B, *shape)`` array per axis (the rotated frame), one ``(B, 1, ...)`` array of
        semi-axes per axis (broadcasting against ``coords``).
    """
    shape = grid[0].shape
    size, three_d = shape[0], len(shape) == 3
    draws = []
    for rng in rngs:
        a = rng.uniform(0.38, 0.45) * size
        b = rng.uniform(0.30, 0.38) * size
        rot = np.deg2rad(rng.uniform(-15, 15))
        draws.append((a, b, np.cos(rot), np.sin(rot)) + ((rng.uniform(0.30, 0.38) * shape[2],) if three_d else ()))
    d = np.array(draws).T.reshape(-1, len(rngs), *(1,) * len(shape))  # (4 or 5, B, 1, ...)
    coords = [d[2] * grid[0] + d[3] * grid[1], -d[3] * grid[0] + d[2] * grid[1]]
    semi = [d[0], d[1]]
    if three_d:
        semi.append(d[4])
        coords.append(np.broadcast_to(grid[2], coords[0].shape))
    return coords, semi


def _brain_tissue(coords: list[np.ndarray], semi: list[np.ndarray], size: int) -> tuple[np.ndarray, ...]:
    """The healthy anatomy of a batch of head frames (``_head_frames``): skull, CSF rim and ventricles, grey
    and white matter.

    Returns:
        ``(brain, head, ventricles (B, *shape) bool, tissue (B, *shape) int64)``.
    """
    def rho(scale_add: float = 0.0, factor: float = 1.0) -> np.ndarray:
        return np.sqrt(sum((c / (s * factor + scale_add)) ** 2 for c, s in zip(coords, semi)))

    depth = coords[-1].shape[-1]
    brain = rho() <= 1.0
    head = rho(scale_add=0.04 * size) <= 1.0
    tissue = np.zeros(brain.shape, dtype=np.int64)
    tissue[head] = 1
    tissue[brain] = 3
    tissue[rho(factor=0.65) <= 1.0] = 4
    rim = brain & (rho(scale_add=-1.0) > 1.0)
    ventricles = np.zeros(brain.shape, dtype=bool)
    for side in (-1, 1):
        vent_semi = [0.06 * size, 0.12 * size] + ([0.06 * depth] if len(coords) == 3 else [])
        vc = [coords[0] - side * 0.07 * size, *coords[1:]]
        ventricles |= sum((c / s) ** 2 for c, s in zip(vc, vent_semi)) <= 1.0
    tissue[rim | ventricles] = 2
    return brain, head, ventricles, tissue


def _lesion(rng: np.random.Generator, coords: list[np.ndarray], semi: list[float], brain: np.ndarray,
            ventricles: np.ndarray, labels: np.ndarray, tissue: np.ndarray) -> None:
    """Draws one case's tumour (or none, with probability 0.05) and writes it into ``labels`` (zeros on entry) and
    ``tissue`` in place; every array is one case's ``shape``, ``coords`` its head frame, ``semi`` its semi-axes."""
    if rng.uniform() < 0.05:
        return
    size = brain.shape[0]
    inner = [s - 0.12 * size for s in semi]
    three_d = brain.ndim == 3
    vent = ventricles & brain  # the oedema must not touch the ventricles
    placed = _place_tumour(rng, inner, size, [c[vent] for c in coords])
    # no place found: radii -1 give empty regions (the core's shapes and the arc are drawn all the same)
    centre, r_ed, r_tc, r_ncr, ed_shape = placed or ([0.0] * brain.ndim, -1.0, -1.0, -1.0, [])
    # The regions are evaluated only at the brain voxels within the oedema's largest radius
    # r_ed·(1 + Σ a_k): elsewhere every region is empty (cos <= 1 and rounding is monotone).
    reach = r_ed * (1.0 + sum(amp for _, amp, _, _ in ed_shape)) * (1.0 + 1e-9)
    near = np.flatnonzero(brain & (_distance(coords, centre) <= reach))
    dist, theta, phi = _polar([c.reshape(-1)[near] for c in coords], centre)
    # each region is evaluated only inside its parent (WT ⊇ TC ⊇ NCR): positions into ``near``
    wt = np.flatnonzero(dist <= _radial(r_ed, ed_shape, theta, phi))
    tc = wt[dist[wt] <= _radial(r_tc, _radial_coeffs(rng, three_d), theta[wt], phi if phi is None else phi[wt])]
    rim = tc[dist[tc] > _radial(r_ncr, _radial_coeffs(rng, three_d), theta[tc], phi if phi is None else phi[tc])]
    lesion = np.zeros(len(near), dtype=labels.dtype)  # the labels at the voxels ``near`` (zero elsewhere)
    lesion[wt] = 2
    lesion[tc] = 1
    if rng.uniform() >= 0.1:  # else a low-grade case: no enhancing tumour, the whole core is NCR
        # Incomplete ring enhancement: only an arc of the rim enhances (the rest is necrosis), so the
        # rim's place next to the necrotic core does not give ET away without T1ce.
        arc = np.cos(theta[rim] - rng.uniform(-np.pi, np.pi)) > rng.uniform(-ARC_COS, ARC_COS)
        lesion[rim[arc]] = 4
    labels.reshape(-1)[near] = lesion
    for lab, tis in _TISSUE_OF_LABEL.items():
        tissue.reshape(-1)[near[lesion == lab]] = tis


def _phantom_batch(rngs: list[np.random.Generator], grid: list[np.ndarray], bias_terms: list[np.ndarray],
                   bias_field: float, labels: np.ndarray, tissue: np.ndarray):
    """A batch of B cases before smoothing and noise, each drawn from its own generator in ``rngs`` (in the order:
    head ellipse, lesion, modality gains, bias-field coefficients); the array work runs on the whole batch.

    Args:
        grid: centred voxel coordinates, one ``shape`` array per axis.
        bias_terms: the monomials of ``_quadratic_terms`` of the normalised coordinates.
        labels, tissue: ``(B, *shape)`` int64 outputs, written in place.

    Returns:
        ``(biased (B, 4, *shape) float64, head (B, *shape) bool, clean (B, 4, *shape) float32)``.
    """
    coords, semi = _head_frames(rngs, grid)
    brain, head, ventricles, tissue[...] = _brain_tissue(coords, semi, grid[0].shape[0])
    labels[...] = 0
    gains, coefs = [], []
    for b, rng in enumerate(rngs):
        _lesion(rng, [c[b] for c in coords], [float(s[b].item()) for s in semi], brain[b], ventricles[b], labels[b],
                tissue[b])
        gains.append(rng.uniform(0.9, 1.1, size=4))
        coefs.append([rng.normal() for _ in bias_terms])
    ndim = len(grid)
    clean = np.stack([means[tissue] for means in TISSUE_MEANS.T], axis=1)  # (B, 4, *shape) float32
    gain = np.array(gains).reshape(len(rngs), 4, *(1,) * ndim)
    coef = np.array(coefs).T.reshape(len(bias_terms), len(rngs), *(1,) * ndim)
    poly = sum(c * p for c, p in zip(coef, bias_terms))
    axes = tuple(range(1, ndim + 1))
    low, high = poly.min(axis=axes, keepdims=True), poly.max(axis=axes, keepdims=True)
    poly = 2 * (poly - low) / np.maximum(high - low, 1e-9) - 1
    biased = clean * gain
    biased *= (1 + bias_field * poly)[:, None]
    return biased, head, clean


def _noisy_normalised(rngs: list[np.random.Generator], smooth: np.ndarray, head: np.ndarray, noise: float,
                      out: np.ndarray) -> None:
    """Rician noise sqrt((x + n1)² + n2²), n1, n2 ~ N(0, noise²) from each case's generator, then a z-score per
    case and modality inside ``head``, zeros outside: ``smooth (B, 4, *shape)`` float64 into ``out``, float32 of
    the same shape (zeros on entry)."""
    # noise·standard_normal: the draws and values of rng.normal(0, noise) (up to the sign of zeros, squared away)
    n2 = np.empty_like(smooth)
    img = np.empty_like(smooth)
    for b, rng in enumerate(rngs):
        rng.standard_normal(out=img[b])
        rng.standard_normal(out=n2[b])
    img *= noise
    img += smooth
    img *= img
    n2 *= noise
    n2 *= n2
    img += n2
    np.sqrt(img, out=img)
    for b in range(len(rngs)):
        idx = np.flatnonzero(head[b])
        inside = img[b].reshape(len(img[b]), -1)[:, idx]
        # the operations of numpy's mean and std (sum / n; sum of squared deviations / n), sharing the deviations
        mean = inside.sum(axis=1) / len(idx)
        dev = inside - mean[:, None]
        sd = np.sqrt(np.square(dev, out=inside).sum(axis=1) / len(idx))
        dev /= np.maximum(sd, 1e-6)[:, None]
        out[b].reshape(len(dev), -1)[:, idx] = dev


def _quadratic_terms(x: list[np.ndarray]) -> list[np.ndarray]:
    """Monomials of degree 1 and 2 of the normalised coordinates."""
    terms = list(x)
    for i, j in itertools.combinations_with_replacement(range(len(x)), 2):
        terms.append(x[i] * x[j])
    return terms


def make_phantom(n: int, size: int = 64, seed: int = 0, *, noise: float = 0.05, bias_field: float = 0.2,
                 ndim: int = 2, depth: int | None = None, return_clean: bool = False) -> PhantomSet:
    """Generates ``n`` phantom cases; case ``i`` uses ``numpy.random.default_rng(seed + i)``.

    Args:
        n: number of cases (>= 1).
        size: in-plane size S (>= 8); images are S×S (2-D) or S×S×depth (3-D).
        seed: base seed (>= 0).
        noise: Rician noise level (>= 0).
        bias_field: amplitude b of the multiplicative bias field 1 + b·P (0 <= b < 1).
        ndim: 2 or 3.
        depth: third dimension for ``ndim=3`` (default ``size``).
        return_clean: also return the noiseless tissue-mean maps.

    Returns:
        ``PhantomSet`` with images ``(n, 4, S, S[, D])`` float32 and labels ``(n, S, S[, D])`` int64.

    Raises:
        ValueError: any argument out of range.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    if not isinstance(size, (int, np.integer)) or size < 8:
        raise ValueError(f"size: expected an integer >= 8, got {size!r}")
    if ndim not in (2, 3):
        raise ValueError(f"ndim: expected 2 or 3, got {ndim!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: expected a finite value >= 0, got {noise!r}")
    if not 0 <= bias_field < 1:
        raise ValueError(f"bias_field: expected 0 <= bias_field < 1, got {bias_field!r}")
    shape = (size, size) if ndim == 2 else (size, size, depth or size)
    grid = np.meshgrid(*(np.arange(k, dtype=np.float64) - (k - 1) / 2 for k in shape), indexing="ij")
    bias_terms = _quadratic_terms([g / (k / 2) for g, k in zip(grid, shape)])
    sigma = (0, 0) + (0.7,) * ndim  # the same Gaussian per modality image, over a batch of cases at once
    images = np.zeros((n, 4, *shape), dtype=np.float32)
    labels = np.empty((n, *shape), dtype=np.int64)
    tissue = np.empty((n, *shape), dtype=np.int64)
    clean = np.empty((n, 4, *shape), dtype=np.float32) if return_clean else None
    batch = max(1, min(_BATCH, _BATCH_VOXELS // int(np.prod(shape))))
    for start in range(0, n, batch):
        part = slice(start, min(n, start + batch))
        rngs = [np.random.default_rng(seed + i) for i in range(part.start, part.stop)]
        biased, head, maps = _phantom_batch(rngs, grid, bias_terms, bias_field, labels[part], tissue[part])
        _noisy_normalised(rngs, gaussian_filter(biased, sigma), head, noise, images[part])
        if clean is not None:
            clean[part] = maps
    return PhantomSet(images, labels, tissue, clean)


def labels_to_classes(labels):
    """BraTS labels {0, 1, 2, 4} -> class indices {0, 1, 2, 3} (tensor or array)."""
    return torch.where(labels == 4, 3, labels) if isinstance(labels, torch.Tensor) else np.where(labels == 4, 3, labels)


def classes_to_labels(classes):
    """Class indices {0, 1, 2, 3} -> BraTS labels {0, 1, 2, 4} (tensor or array)."""
    if isinstance(classes, torch.Tensor):
        return torch.where(classes == 3, 4, classes)
    return np.where(classes == 3, 4, classes)


def check_labels(labels: np.ndarray, convention: str = "brats") -> np.ndarray:
    """Returns ``labels`` in {0, 1, 2, 4}; ``convention="brats2023"`` maps label 3 (ET) to 4.

    Raises:
        ValueError: values outside the convention's label set, or an unknown convention.
    """
    allowed = {"brats": {0, 1, 2, 4}, "brats2023": {0, 1, 2, 3}}
    if convention not in allowed:
        raise ValueError(f"label_convention: expected 'brats' or 'brats2023', got {convention!r}")
    found = set(np.unique(labels).tolist())
    if not found <= allowed[convention]:
        raise ValueError(f"labels: expected values in {sorted(allowed[convention])}, got {sorted(found)}")
    return np.where(labels == 3, 4, labels) if convention == "brats2023" else labels


class PhantomDataset(torch.utils.data.Dataset):
    """A ``PhantomSet`` (or any images/labels pair) as a torch dataset of ``(image (4, ...), label (...))``.

    Raises:
        ValueError: image/label shape mismatch, NaN/Inf images or labels outside {0, 1, 2, 4}.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, label_convention: str = "brats"):
        images = np.asarray(images, dtype=np.float32)
        labels = np.asarray(labels)
        if images.ndim not in (4, 5):
            raise ValueError(f"images: expected (n, M, H, W[, D]), got shape {images.shape}")
        if labels.shape != (images.shape[0], *images.shape[2:]):
            raise ValueError(f"labels: expected shape {(images.shape[0], *images.shape[2:])} to match images "
                             f"{images.shape}, got {labels.shape}")
        if not np.isfinite(images).all():
            raise ValueError("images: contain NaN or Inf")
        self.images = torch.from_numpy(images)
        self.labels = torch.from_numpy(check_labels(labels, label_convention).astype(np.int64))

    @classmethod
    def from_phantom(cls, phantom: PhantomSet) -> PhantomDataset:
        """Wraps a ``PhantomSet``."""
        return cls(phantom.images, phantom.labels)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        return self.images[i], self.labels[i]


@dataclass
class Case:
    """One BraTS case: ``images (4, H, W, D)`` float32 (missing modalities zero), ``available (4,)`` bool,
    ``labels (H, W, D)`` int64 in {0, 1, 2, 4} or None, the NIfTI ``affine``, and its ``case_id``."""

    case_id: str
    images: np.ndarray
    available: np.ndarray
    labels: np.ndarray | None
    affine: np.ndarray


_SUFFIXES = {"t1": ("t1", "t1n"), "t1ce": ("t1ce", "t1c"), "t2": ("t2", "t2w"), "flair": ("flair", "t2f")}


def _nibabel():
    try:
        import nibabel
    except ImportError as err:
        raise ImportError("reading NIfTI needs nibabel: pip install 'iclr26-smsn[nifti]'") from err
    return nibabel


def _find(folder: pathlib.Path, case_id: str, keys: tuple[str, ...]) -> pathlib.Path | None:
    for key in keys:
        for sep in ("_", "-"):
            path = folder / f"{case_id}{sep}{key}.nii.gz"
            if path.exists():
                return path
    return None


def read_case(folder: str | os.PathLike, modalities: tuple[str, ...] = MODALITIES) -> Case:
    """Reads one case folder ``<case_id>/<case_id>_{t1,t1ce,t2,flair,seg}.nii.gz`` (or BraTS 2023 names).

    Each present modality is z-scored inside its brain mask (non-zero voxels); absent ones stay zero.

    Raises:
        ImportError: nibabel is not installed.
        FileNotFoundError: the folder holds none of the modalities.
        ValueError: shapes or affines differ between modalities (beyond 1e-3).
    """
    nib = _nibabel()
    folder = pathlib.Path(folder)
    case_id = folder.name
    vols, affine, shape = {}, None, None
    for mod in modalities:
        path = _find(folder, case_id, _SUFFIXES[mod])
        if path is None:
            continue
        img = nib.load(str(path))
        data = np.asarray(img.get_fdata(), dtype=np.float32)
        if shape is None:
            shape, affine = data.shape, img.affine
        elif data.shape != shape or not np.allclose(img.affine, affine, atol=1e-3):
            raise ValueError(f"{path.name}: shape {data.shape}/affine differ from the case's first modality "
                             f"{shape}; resample the case first (nothing is resampled silently)")
        brain = data != 0
        if brain.any():
            data = np.where(brain, (data - data[brain].mean()) / max(data[brain].std(), 1e-6), 0.0)
        vols[mod] = data.astype(np.float32)
    if not vols:
        raise FileNotFoundError(f"{folder}: no modality file named {case_id}_<{'|'.join(modalities)}>.nii.gz")
    images = np.stack([vols.get(m, np.zeros(shape, np.float32)) for m in modalities])
    available = np.array([m in vols for m in modalities])
    seg_path = _find(folder, case_id, ("seg",))
    labels = None
    if seg_path is not None:
        raw = np.asarray(nib.load(str(seg_path)).dataobj).astype(np.int64)
        labels = check_labels(raw, "brats2023" if 3 in np.unique(raw) else "brats")
    return Case(case_id, images, available, labels, affine)


def load_brats_folder(root: str | os.PathLike, *, modalities: tuple[str, ...] = MODALITIES, slice_axis: int = 2,
                      keep_slices: str = "tumor") -> Iterator[Case]:
    """Yields the cases under ``root`` (one sub-folder per case), as 2-D slice stacks.

    Each yielded ``Case`` has ``images (S, 4, H, W)`` and ``labels (S, H, W)``: the slices along
    ``slice_axis`` that contain tumour (``keep_slices="tumor"``) or brain (``"brain"``) or all (``"all"``).

    Raises:
        FileNotFoundError: ``root`` does not exist or holds no case folder.
        ValueError: bad ``slice_axis``/``keep_slices``; see ``read_case``.
    """
    root = pathlib.Path(root)
    if keep_slices not in ("tumor", "brain", "all"):
        raise ValueError(f"keep_slices: expected 'tumor', 'brain' or 'all', got {keep_slices!r}")
    if slice_axis not in (0, 1, 2):
        raise ValueError(f"slice_axis: expected 0, 1 or 2, got {slice_axis!r}")
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not folders:
        raise FileNotFoundError(f"{root}: expected BraTS case folders <case_id>/<case_id>_t1.nii.gz ... "
                                "(put the BraTS training data there; nothing is downloaded)")
    for folder in folders:
        case = read_case(folder, modalities)
        imgs = np.moveaxis(case.images, slice_axis + 1, 0)
        labs = np.moveaxis(case.labels, slice_axis, 0) if case.labels is not None else None
        axes = tuple(range(1, imgs.ndim))
        if keep_slices == "tumor" and labs is not None:
            keep = (labs > 0).any(axis=(1, 2))
        elif keep_slices == "all":
            keep = np.ones(len(imgs), dtype=bool)
        else:
            keep = (imgs != 0).any(axis=axes)
        yield Case(case.case_id, imgs[keep], case.available, None if labs is None else labs[keep], case.affine)
