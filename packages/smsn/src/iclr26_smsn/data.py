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


def _radial(rng: np.random.Generator, r0: float, theta: np.ndarray, phi: np.ndarray | None) -> np.ndarray:
    """r(θ[, φ]) = r0·(1 + Σ_k a_k cos(kθ + φ_k) [+ Σ_k b_k cos(kφ + ψ_k)]), a_k, b_k ~ U(0, 0.12)."""
    ks = range(2, 5) if phi is None else range(2, 4)
    pert = np.zeros_like(theta)
    for k in ks:
        pert += rng.uniform(0, 0.12) * np.cos(k * theta + rng.uniform(0, 2 * np.pi))
        if phi is not None:
            pert += rng.uniform(0, 0.12) * np.cos(k * phi + rng.uniform(0, 2 * np.pi))
    return r0 * (1.0 + pert)


def _phantom_case(rng: np.random.Generator, shape: tuple[int, ...], noise: float, bias_field: float):
    """One case: (images (4, *shape), labels, tissue, clean)."""
    size = shape[0]
    axes = [np.arange(n, dtype=np.float64) - (n - 1) / 2 for n in shape]
    grid = np.meshgrid(*axes, indexing="ij")
    a = rng.uniform(0.38, 0.45) * size
    b = rng.uniform(0.30, 0.38) * size
    rot = np.deg2rad(rng.uniform(-15, 15))
    u = np.cos(rot) * grid[0] + np.sin(rot) * grid[1]  # rotated head frame
    v = -np.sin(rot) * grid[0] + np.cos(rot) * grid[1]
    semi = [a, b]
    coords = [u, v]
    if len(shape) == 3:
        semi.append(rng.uniform(0.30, 0.38) * shape[2])
        coords.append(grid[2])

    def rho(scale_add: float = 0.0, factor: float = 1.0) -> np.ndarray:
        return np.sqrt(sum((c / (s * factor + scale_add)) ** 2 for c, s in zip(coords, semi)))

    brain = rho() <= 1.0
    head = rho(scale_add=0.04 * size) <= 1.0
    tissue = np.zeros(shape, dtype=np.int64)
    tissue[head] = 1
    tissue[brain] = 3
    tissue[rho(factor=0.65) <= 1.0] = 4
    rim = brain & (rho(scale_add=-1.0) > 1.0)
    ventricles = np.zeros(shape, dtype=bool)
    for side in (-1, 1):
        vent_semi = [0.06 * size, 0.12 * size] + ([0.06 * shape[2]] if len(shape) == 3 else [])
        vc = [coords[0] - side * 0.07 * size, *coords[1:]]
        ventricles |= sum((c / s) ** 2 for c, s in zip(vc, vent_semi)) <= 1.0
    tissue[rim | ventricles] = 2

    labels = np.zeros(shape, dtype=np.int64)
    if rng.uniform() >= 0.05:
        inner = [s - 0.12 * size for s in semi]
        for _ in range(100):
            centre = [rng.uniform(-s, s) for s in inner]
            if sum((c / s) ** 2 for c, s in zip(centre, inner)) > 1.0:
                continue
            d = [c - c0 for c, c0 in zip(coords, centre)]
            dist = np.sqrt(sum(x**2 for x in d))
            theta = np.arctan2(d[1], d[0])
            phi = np.arccos(np.clip(d[2] / np.maximum(dist, 1e-9), -1, 1)) if len(shape) == 3 else None
            r_ed = rng.uniform(0.10, 0.20) * size
            r_tc = r_ed * rng.uniform(0.45, 0.60)
            r_ncr = r_tc * rng.uniform(0.15, 0.45)  # ET is a rim: a minority of the oedema-like T2/FLAIR lesion
            wt = (dist <= _radial(rng, r_ed, theta, phi)) & brain
            if not (wt & ventricles).any():
                break
        else:
            wt = np.zeros(shape, dtype=bool)
        tc = wt & (dist <= _radial(rng, r_tc, theta, phi))
        ncr = tc & (dist <= _radial(rng, r_ncr, theta, phi))
        labels[wt] = 2
        if rng.uniform() < 0.1:  # low-grade case: no enhancing tumour, the whole core is NCR
            labels[tc] = 1
        else:
            # Incomplete ring enhancement: only an arc of the rim enhances (the rest is necrosis), so the
            # rim's place next to the necrotic core does not give ET away without T1ce.
            arc = np.cos(theta - rng.uniform(-np.pi, np.pi)) > rng.uniform(-ARC_COS, ARC_COS)
            labels[tc] = 1
            labels[tc & ~ncr & arc] = 4
    for lab, tis in _TISSUE_OF_LABEL.items():
        tissue[labels == lab] = tis

    clean = np.moveaxis(TISSUE_MEANS[tissue], -1, 0)  # (4, *shape)
    gain = rng.uniform(0.9, 1.1, size=(4,) + (1,) * len(shape))
    norm = [g / (n / 2) for g, n in zip(grid, shape)]
    poly = sum(rng.normal() * p for p in _quadratic_terms(norm))
    poly = 2 * (poly - poly.min()) / max(poly.max() - poly.min(), 1e-9) - 1
    img = clean * gain * (1 + bias_field * poly)
    img = np.stack([gaussian_filter(ch, 0.7) for ch in img])
    n1 = rng.normal(0, noise, img.shape)
    n2 = rng.normal(0, noise, img.shape)
    img = np.sqrt((img + n1) ** 2 + n2**2)
    mu = img[:, head].mean(axis=1).reshape(4, *([1] * len(shape)))
    sd = img[:, head].std(axis=1).reshape(4, *([1] * len(shape)))
    img = (img - mu) / np.maximum(sd, 1e-6)
    img[:, ~head] = 0.0
    return img.astype(np.float32), labels, tissue, clean.astype(np.float32)


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
    cases = [_phantom_case(np.random.default_rng(seed + i), shape, noise, bias_field) for i in range(n)]
    images, labels, tissue, clean = (np.stack(parts) for parts in zip(*cases))
    return PhantomSet(images, labels, tissue, clean if return_clean else None)


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
