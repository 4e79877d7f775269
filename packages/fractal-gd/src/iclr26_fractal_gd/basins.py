"""Basin images: the outcome of scalar GD over a grid of initialisations (u₀, v₀).

The kernel works on flat arrays of initialisations (numpy, or torch on any device) and keeps only
the *active* runs in its working arrays: a run that leaves the ``blowup`` box is recorded as diverged
and dropped, and a run that has settled at a linearly stable minimiser is recorded as converged and
dropped. About three quarters of a typical grid diverges within a few steps, so this compaction is
what makes the images cheap (the naive loop is kept in ``naive_basin_labels`` as the reference).
"""
from __future__ import annotations

import pathlib
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _checks
from ._plotting import pyplot, save_figure
from .dynamics import RESIDUAL_TOL, converged_scalar, default_steps
from .theory import stable_step_size

LABEL_SETS = ("branch", "binary")
BACKENDS = ("numpy", "torch")
_CHECK_DIVERGENCE_EVERY = 2  # from |u| ≤ 1e6, two steps reach at most ~1e54: no overflow in float64
_CHECK_CONVERGENCE_EVERY = 8


class _NumpyOps:
    """Array constructors of the numpy backend."""

    def __init__(self, dtype):
        self.dtype = dtype

    def asarray(self, x):
        return np.asarray(x, dtype=self.dtype)

    def arange(self, n):
        return np.arange(n)

    def full(self, n, value):
        return np.full(n, value, dtype=np.int32)

    def zeros(self, n):
        return np.zeros(n, dtype=self.dtype)

    def numpy(self, x):
        return np.asarray(x)


class _TorchOps:
    """Array constructors of the torch backend (tensors live on ``device``)."""

    def __init__(self, dtype, device):
        import torch

        self.torch = torch
        self.dtype = {"float64": torch.float64, "float32": torch.float32}[dtype]
        self.device = torch.device(device)

    def asarray(self, x):
        return self.torch.as_tensor(np.asarray(x), dtype=self.dtype, device=self.device)

    def arange(self, n):
        return self.torch.arange(n, device=self.device)

    def full(self, n, value):
        return self.torch.full((n,), value, dtype=self.torch.int32, device=self.device)

    def zeros(self, n):
        return self.torch.zeros(n, dtype=self.dtype, device=self.device)

    def numpy(self, x):
        return x.cpu().numpy()


def _settled(u, v, y, eta, lam, tol):
    """Runs that may be retired as converged: the convergence test at a linearly stable minimiser.

    λ = 0: |uv − y| < 1e-6 and sharpness η(u² + v²) < 2 − 1e-3 (so the residual keeps contracting).
    λ > 0: the λ > 0 convergence test (the caller retires only when the minimisers are stable).
    """
    if lam == 0:
        return (abs(u * v - y) < RESIDUAL_TOL) & (eta * (u * u + v * v) < 2.0 - 1e-3)
    return converged_scalar(u, v, y, lam, tol)


def _kernel(u, v, ops, y, eta, lam, steps, tol, blowup):
    """GD with retirement on flat arrays ``u, v`` of shape (n,); returns numpy arrays of shape (n,).

    Returns:
        ``(final_u, final_v, steps_to_converge, steps_to_diverge, converged)``; a run that neither
        diverged nor settled is tested once more at the last step.
    """
    n = u.shape[0]
    idx = ops.arange(n)
    out_u, out_v = ops.zeros(n), ops.zeros(n)
    conv_step, div_step = ops.full(n, -1), ops.full(n, -1)
    decay = 1.0 - eta * lam
    can_retire = lam == 0 or eta < stable_step_size(y, lam)
    for t in range(1, steps + 1):
        er = eta * (u * v - y)
        u, v = decay * u - er * v, decay * v - er * u
        check_div = t % _CHECK_DIVERGENCE_EVERY == 0
        check_conv = can_retire and t % _CHECK_CONVERGENCE_EVERY == 0
        if not (check_div or check_conv):
            continue
        gone = ~((abs(u) <= blowup) & (abs(v) <= blowup))
        done = gone
        if check_conv:
            ok = _settled(u, v, y, eta, lam, tol) & ~gone
            done = gone | ok
        if bool(done.any()):
            div_step[idx[gone]] = t
            if check_conv:
                hit = idx[ok]
                conv_step[hit] = t
                out_u[hit], out_v[hit] = u[ok], v[ok]
            keep = ~done
            u, v, idx = u[keep], v[keep], idx[keep]
            if idx.shape[0] == 0:
                break
    if idx.shape[0]:
        gone = ~((abs(u) <= blowup) & (abs(v) <= blowup))
        div_step[idx[gone]] = steps
        ok = converged_scalar(u, v, y, lam, tol) & ~gone
        conv_step[idx[ok]] = steps
        live = ~gone
        out_u[idx[live]], out_v[idx[live]] = u[live], v[live]
    conv = ops.numpy(conv_step)
    return ops.numpy(out_u), ops.numpy(out_v), conv, ops.numpy(div_step), conv >= 0


def _check_backend(backend, device, dtype):
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
    if dtype not in ("float64", "float32"):
        raise ValueError(f"dtype: expected 'float64' or 'float32', got {dtype!r}")
    if backend == "numpy":
        if str(device) != "cpu":
            raise ValueError(f"device: the numpy backend runs on 'cpu' only, got {device!r}; use backend='torch'")
        return _NumpyOps(np.float64 if dtype == "float64" else np.float32)
    from iclr26_shared.device import resolve_device

    return _TorchOps(dtype, resolve_device(device))


def classify_points(u0, v0, y, eta, lam: float = 0.0, steps: int | None = None, tol: float = 1e-8,
                    blowup: float = 1e6, labels: str = "branch", backend: str = "numpy", device: str = "cpu",
                    dtype: str = "float64", chunk: int | None = None) -> dict[str, np.ndarray]:
    """Runs GD from every initialisation and labels the outcome.

    Args:
        u0, v0: initialisations, arrays of equal shape S.
        y, eta, lam: target, step size and ℓ2 coefficient (0 ≤ λ < |y|).
        steps: GD steps (None: max(200, 40/η) for λ > 0, 3000 for λ = 0).
        tol: gradient tolerance of the λ > 0 convergence test; blowup: divergence threshold.
        labels: ``"branch"`` (1: converged with u + sign(y) v > 0, 2: converged with u + sign(y) v < 0)
            or ``"binary"`` (1: converged). 0 is always diverged or not converged.
        backend, device, dtype: numpy (CPU) or torch (any device); float64 or float32.
        chunk: number of initialisations per kernel call (None: all at once).

    Returns:
        dict of arrays of shape S: ``labels`` (int8), ``final_u``, ``final_v``, ``steps_to_converge``,
        ``steps_to_diverge`` (int32, −1 when it did not happen).
    """
    u0 = _checks.real_array("u0", u0)
    v0 = _checks.real_array("v0", v0)
    if u0.shape != v0.shape:
        raise ValueError(f"u0, v0: expected the same shape, got {u0.shape} and {v0.shape}")
    y = _checks.target(y)
    eta = float(_checks.step_size(_checks.real_scalar("eta", eta)))
    lam = _checks.regulariser(lam, y)
    steps = default_steps(eta, lam) if steps is None else _checks.positive_int("steps", steps)
    tol, blowup = _checks.real_scalar("tol", tol), _checks.real_scalar("blowup", blowup)
    if tol <= 0 or not 0 < blowup <= 1e30:
        raise ValueError(f"tol, blowup: expected tol > 0 and 0 < blowup <= 1e30, got {tol} and {blowup}")
    if labels not in LABEL_SETS:
        raise ValueError(f"labels: expected one of {LABEL_SETS}, got {labels!r}")
    ops = _check_backend(backend, device, dtype)
    flat_u, flat_v = u0.ravel(), v0.ravel()
    n = flat_u.size
    chunk = n if chunk is None else _checks.positive_int("chunk", chunk)
    parts = []
    for start in range(0, max(n, 1), max(chunk, 1)):
        sl = slice(start, start + chunk)
        with np.errstate(over="ignore", invalid="ignore"):  # runs that overflow are masked as diverged
            parts.append(_kernel(ops.asarray(flat_u[sl]), ops.asarray(flat_v[sl]), ops, y, eta, lam, steps, tol,
                                 blowup))
    fu, fv, cs, ds, conv = (np.concatenate([p[i] for p in parts]) for i in range(5))
    fu, fv = fu.astype(np.float64), fv.astype(np.float64)
    out = np.zeros(n, dtype=np.int8)
    if labels == "binary":
        out[conv] = 1
    else:
        side = fu + np.sign(y) * fv
        out[conv & (side > 0)] = 1
        out[conv & (side < 0)] = 2
    shape = u0.shape
    return {"labels": out.reshape(shape), "final_u": fu.reshape(shape), "final_v": fv.reshape(shape),
            "steps_to_converge": cs.astype(np.int32).reshape(shape),
            "steps_to_diverge": ds.astype(np.int32).reshape(shape)}


V_OFFSET = 0.5  # v samples at pixel centres; u samples at the fraction ``_u_offset`` picks, in [1/4, 3/4]


def _circle_distance(x):
    """Distance of x to the nearest integer."""
    return np.abs(x - np.round(x))


def _u_offset(u_min: float, v_min: float, du: float, dv: float) -> float:
    """The in-pixel fraction of the u samples, in [1/4, 3/4], that keeps the grid farthest from u = ±v.

    With square pixels (du = dv = d), u_j − v_i = d (c₋ + j − i + f) and u_j + v_i = d (c₊ + j + i + f) for
    constants c∓, so both distances depend only on the fractional parts of c∓ + f. The best f in [1/4, 3/4]
    (a tie goes to the larger) keeps every sample at least d/8 from both lines, d/4 on a symmetric square.
    Non-square pixels get 3/4 (``basin_map`` records the clearance it reached).
    """
    if not np.isclose(du, dv, rtol=1e-12, atol=0):
        return 0.75
    c_minus, c_plus = (u_min - v_min) / du - V_OFFSET, (u_min + v_min) / du + V_OFFSET
    bad = np.mod([-c_minus, -c_plus], 1.0)  # the fractions f that put a row of samples on a line
    mids = np.mod([bad.mean(), bad.mean() + 0.5], 1.0)  # midpoints of the two arcs between them
    candidates = np.array([0.75, 0.25, *[m for m in mids if 0.25 <= m <= 0.75]])
    clearance = np.min(_circle_distance(candidates[:, None] - bad[None, :]), axis=1)
    return float(candidates[np.argmax(clearance + 1e-12 * candidates)])


def diagonal_clearance(us, vs) -> float:
    """Smallest distance of a grid sample (us[j], vs[i]) to the lines u = v and u = −v, in pixel widths."""
    us, vs = np.asarray(us, dtype=float), np.asarray(vs, dtype=float)
    pixel = min(abs(us[1] - us[0]), abs(vs[1] - vs[0]))
    du = us[None, :] - vs[:, None]
    su = us[None, :] + vs[:, None]
    return float(min(np.abs(du).min(), np.abs(su).min()) / pixel)


def grid_axes(extent, resolution: int, offset: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (us, vs), each of shape (resolution,), over ``extent = (u_min, u_max, v_min, v_max)``.

    ``offset=True`` samples inside each pixel: v at the pixel centre, u at the fraction of the pixel
    (in [1/4, 3/4]) that keeps every sample farthest from the measure-zero lines u = ±v, where the map is
    one-dimensional and its basins differ: at least 1/8 pixel for square pixels, 1/4 on a symmetric square
    (u at 3/4). Plain pixel centres put a whole row of samples on u = −v there. ``offset=False`` samples
    ``linspace(min, max, resolution)``, endpoints included.
    """
    if not isinstance(extent, (tuple, list, np.ndarray)) or len(extent) != 4:
        raise ValueError(f"extent: expected (u_min, u_max, v_min, v_max), got {extent!r}")
    u_min, u_max, v_min, v_max = (_checks.real_scalar("extent", e) for e in extent)
    if not (u_max > u_min and v_max > v_min):
        raise ValueError(f"extent: expected u_max > u_min and v_max > v_min (non-zero area), got {tuple(extent)}")
    resolution = _checks.positive_int("resolution", resolution, 16)
    if offset:
        i = np.arange(resolution)
        du, dv = (u_max - u_min) / resolution, (v_max - v_min) / resolution
        return u_min + du * (i + _u_offset(u_min, v_min, du, dv)), v_min + dv * (i + V_OFFSET)
    return np.linspace(u_min, u_max, resolution), np.linspace(v_min, v_max, resolution)


@dataclass
class BasinMap:
    """A basin image: ``labels[i, j]`` is the outcome of GD from (u, v) = (us[j], vs[i]).

    Attributes:
        labels: (R, R) int8; 0 = diverged or not converged, 1/2 = converged to the branch u + v > 0 / < 0
            (``binary``: 1 = converged).
        final_u, final_v: (R, R) final iterates (0 where diverged).
        steps_to_converge, steps_to_diverge: (R, R) int32, −1 where it did not happen.
        extent: (u_min, u_max, v_min, v_max). params: every argument of the run, plus ``dtype`` and ``seconds``.
    """

    labels: np.ndarray
    final_u: np.ndarray
    final_v: np.ndarray
    steps_to_converge: np.ndarray
    steps_to_diverge: np.ndarray
    extent: tuple[float, float, float, float]
    params: dict[str, Any] = field(default_factory=dict)

    def fractions(self) -> dict[str, float]:
        """Fraction of pixels per label: ``{"diverged_or_unconverged", "branch_plus", "branch_minus"}`` or binary."""
        n = self.labels.size
        if self.params.get("labels") == "binary":
            conv = float(np.count_nonzero(self.labels == 1)) / n
            return {"diverged_or_unconverged": 1.0 - conv, "converged": conv}
        return {"diverged_or_unconverged": float(np.count_nonzero(self.labels == 0)) / n,
                "branch_plus": float(np.count_nonzero(self.labels == 1)) / n,
                "branch_minus": float(np.count_nonzero(self.labels == 2)) / n}

    def plot(self, ax=None, title: str | None = None):
        """Draws the labels (white: diverged, blue/orange: the two branches); returns the axes."""
        from matplotlib.colors import ListedColormap

        if ax is None:
            _, ax = pyplot().subplots(figsize=(5, 5))

        cmap = ListedColormap(["white", "#1f77b4", "#ff7f0e"])
        ax.imshow(self.labels, origin="lower", extent=self.extent, cmap=cmap, vmin=0, vmax=2,
                  interpolation="nearest")
        ax.set_xlabel("u0")
        ax.set_ylabel("v0")
        p = self.params
        ax.set_title(title or f"eta={p.get('eta')}, y={p.get('y')}, lam={p.get('lam')}")
        return ax

    def save_png(self, path, title: str | None = None) -> pathlib.Path:
        """Writes ``plot()`` to ``path`` atomically; returns the path."""
        fig, ax = pyplot().subplots(figsize=(5, 5))
        self.plot(ax, title)
        fig.tight_layout()
        return pathlib.Path(save_figure(fig, path, dpi=120))

    def save_npz(self, path) -> pathlib.Path:
        """Writes every array, the extent and the scalar params to ``path`` (.npz) atomically."""
        from iclr26_shared.bench import atomic_path

        scalars = {f"param_{k}": np.asarray(v) for k, v in self.params.items()
                   if isinstance(v, (int, float, str, bool))}
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, labels=self.labels, final_u=self.final_u, final_v=self.final_v,
                                    steps_to_converge=self.steps_to_converge, steps_to_diverge=self.steps_to_diverge,
                                    extent=np.asarray(self.extent), **scalars)
        return pathlib.Path(path)

    @classmethod
    def load_npz(cls, path) -> BasinMap:
        """Reads a map written by ``save_npz``.

        Raises:
            ValueError: the file is not an .npz archive, lacks one of the arrays, or holds arrays of the
                wrong shape or type (the message says which).
        """
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise ValueError(f"not a numpy file ({err.__class__.__name__})") from err
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError(f"a single .npy array of shape {data.shape}, not an .npz archive")
        with data:
            missing = [k for k in _ARRAYS + ("extent",) if k not in data.files]
            if missing:
                raise ValueError(f"no array {', '.join(missing)}")
            arrays = [data[k] for k in _ARRAYS]
            extent = data["extent"]
            params = {k[len("param_"):]: data[k].item() for k in data.files if k.startswith("param_")}
        labels = arrays[0]
        if labels.ndim != 2 or min(labels.shape) < 2 or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"labels of shape {labels.shape} and dtype {labels.dtype} (expected 2-D integers)")
        if any(a.shape != labels.shape for a in arrays) or extent.shape != (4,):
            raise ValueError(f"arrays of shapes {[a.shape for a in arrays]} and extent {extent.shape} "
                             "(expected equal shapes and 4 extent values)")
        return cls(*arrays, tuple(float(e) for e in extent), params)


_ARRAYS = ("labels", "final_u", "final_v", "steps_to_converge", "steps_to_diverge")


def basin_map(eta, y, lam: float = 0.0, extent=(-4, 4, -4, 4), resolution: int = 1024, steps: int | None = None,
              tol: float = 1e-8, blowup: float = 1e6, labels: str = "branch", offset: bool = True,
              backend: str = "numpy", device: str = "cpu", chunk: int | None = None,
              dtype: str = "float64") -> BasinMap:
    """The basin image of GD on ½(uv − y)² + λ/2 (u² + v²) over a ``resolution``² grid of initialisations.

    Args:
        eta, y, lam: step size, target and ℓ2 coefficient (0 ≤ λ < |y|).
        extent: (u_min, u_max, v_min, v_max), non-zero area. resolution: pixels per side, ≥ 16.
        offset: sample inside pixels with u staggered (default; see ``grid_axes``), which keeps a
            symmetric grid off the lines u = ±v.
        labels, steps, tol, blowup, backend, device, chunk, dtype: see ``classify_points``.
            float32 is allowed (torch on GPU) but warned about: boundary dimensions can shift.

    Returns:
        ``BasinMap`` with (resolution, resolution) arrays.

    Raises:
        ValueError/TypeError: bad step size, target, regulariser, extent, resolution, labels or backend.
    """
    us, vs = grid_axes(extent, resolution, offset)
    if dtype == "float32":
        warnings.warn("basin_map: float32 iterates; boundary dimensions can shift against float64", stacklevel=2)
    clearance = diagonal_clearance(us, vs)
    if clearance < 1e-3:
        warnings.warn(f"basin_map: samples within {clearance:.2g} px of u = +-v, where the basins differ",
                      stacklevel=2)
    uu, vv = np.meshgrid(us, vs)
    start = time.perf_counter()
    out = classify_points(uu, vv, y, eta, lam, steps, tol, blowup, labels, backend, device, dtype, chunk)
    seconds = time.perf_counter() - start
    lam_f = float(lam)
    params = {"eta": float(eta), "y": float(y), "lam": lam_f, "resolution": int(resolution),
              "steps": default_steps(float(eta), lam_f) if steps is None else int(steps), "tol": float(tol),
              "blowup": float(blowup), "labels": labels, "offset": bool(offset), "backend": backend,
              "device": str(device), "dtype": dtype, "seconds": seconds,
              "diagonal_clearance_px": clearance}
    return BasinMap(out["labels"], out["final_u"], out["final_v"], out["steps_to_converge"],
                    out["steps_to_diverge"], tuple(float(e) for e in extent), params)


def naive_basin_labels(eta, y, lam: float = 0.0, extent=(-4, 4, -4, 4), resolution: int = 256,
                       steps: int = 3000, tol: float = 1e-8) -> np.ndarray:
    """Reference implementation: the whole grid iterated for every step, no divergence mask, no retirement.

    Overflow is let through (inf/NaN are silenced and labelled 0). Binary labels, shape (R, R).
    Used only to check and time the fast kernel.
    """
    us, vs = grid_axes(extent, resolution, True)
    u, v = np.meshgrid(us, vs)
    decay = 1.0 - eta * lam
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            er = eta * (u * v - y)
            u, v = decay * u - er * v, decay * v - er * u
        ok = converged_scalar(u, v, y, lam, tol)
    return ok.astype(np.int8)


def zoom_sequence(center, widths, **basin_kwargs) -> list[BasinMap]:
    """Basin maps on square windows of the given ``widths`` centred at ``center = (u, v)``; one map per width."""
    cu, cv = (_checks.real_scalar("center", c) for c in center)
    maps = []
    for w in widths:
        w = _checks.real_scalar("widths", w)
        if w <= 0:
            raise ValueError(f"widths: expected positive window widths, got {w}")
        maps.append(basin_map(extent=(cu - w / 2, cu + w / 2, cv - w / 2, cv + w / 2), **basin_kwargs))
    return maps


def refinement_flip_fraction(basin_kwargs: dict, resolutions) -> list[float]:
    """Fraction of fine pixels whose label differs from the coarse pixel containing them, for each refinement.

    ``resolutions`` is increasing, each a multiple of the previous one; with ``grid_axes``' in-pixel
    sampling a coarse pixel's sample lies inside its block of fine pixels. For a boundary of box
    dimension D the fraction decays like (pixel width)^(2 − D).

    Returns:
        list of ``len(resolutions) − 1`` floats.
    """
    res = [_checks.positive_int("resolutions", r, 16) for r in resolutions]
    if len(res) < 2 or any(b % a or b <= a for a, b in zip(res, res[1:])):
        raise ValueError(f"resolutions: expected >= 2 increasing values, each a multiple of the previous, got {res}")
    kwargs = {k: v for k, v in basin_kwargs.items() if k not in ("resolution", "offset")}
    maps = [basin_map(resolution=r, offset=True, **kwargs).labels for r in res]
    fracs = []
    for coarse, fine in zip(maps, maps[1:]):
        k = fine.shape[0] // coarse.shape[0]
        parent = np.repeat(np.repeat(coarse, k, axis=0), k, axis=1)
        fracs.append(float(np.mean(parent != fine)))
    return fracs
