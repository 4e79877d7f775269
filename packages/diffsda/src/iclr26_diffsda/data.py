"""Procedural sequences with known static and dynamic factors, and loaders for user data.

Every generator returns a ``SeqSet`` whose ``x`` is float32 of shape (n, V, *elem_shape),
roughly in [-1, 1], with integer static and dynamic factor labels and, where defined, a
per-element ground truth ``dynamic_t`` of shape (n, V, ...).
"""
from __future__ import annotations

import csv
import os
import pathlib
from dataclasses import dataclass, field

import numpy as np

TIMBRE_DECAYS = (0.3, 0.5, 0.7)
CONTOURS = ("rising", "falling", "flat", "vibrato")
MOTIONS = ("right", "left", "down", "up", "down_right", "up_left", "clockwise", "counter_clockwise")
SHAPES = ("disk", "square", "triangle", "plus")
COLORS = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=np.float32)
BACKGROUNDS = (0.1, 0.3)
REGIMES = ("trend_up", "trend_down", "periodic", "step")
SERIES_OFFSETS = np.array([[0.0, 0.0, 0.0, 0.0], [0.4, -0.4, 0.4, -0.4], [-0.5, -0.2, 0.2, 0.5],
                           [0.5, 0.5, -0.5, -0.5], [0.0, 0.3, 0.0, -0.3]], dtype=np.float32)
SERIES_SCALES = np.array([[0.5, 0.5, 0.5, 0.5], [0.3, 0.3, 0.3, 0.3], [0.2, 0.4, 0.4, 0.2],
                          [0.4, 0.2, 0.2, 0.4], [0.6, 0.3, 0.6, 0.3]], dtype=np.float32)


@dataclass
class SeqSet:
    """Sequences with ground-truth factors.

    Attributes:
        x: float32 (n, V, *elem_shape), roughly in [-1, 1].
        static: factor name -> int64 (n,) class of the whole sequence (e.g. ``timbre``).
        dynamic: factor name -> int64 (n,) sequence-level class of the change (e.g. ``contour``).
        dynamic_t: per-element ground truth (n, V, ...) (f0 for tones, centre for sprites), or None.
    """

    x: np.ndarray
    static: dict[str, np.ndarray] = field(default_factory=dict)
    dynamic: dict[str, np.ndarray] = field(default_factory=dict)
    dynamic_t: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def elem_shape(self) -> tuple[int, ...]:
        """Shape of one element (frame), e.g. (32,) for tones or (3, 16, 16) for sprites."""
        return tuple(self.x.shape[2:])

    def subset(self, index: np.ndarray) -> SeqSet:
        """The sequences at ``index`` (an int array or a boolean mask over n)."""
        dyn_t = None if self.dynamic_t is None else self.dynamic_t[index]
        return SeqSet(self.x[index], {k: v[index] for k, v in self.static.items()},
                      {k: v[index] for k, v in self.dynamic.items()}, dyn_t)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat dict for ``np.savez``: ``x``, ``static_<name>``, ``dynamic_<name>``, ``dynamic_t``."""
        out = {"x": self.x}
        out.update({f"static_{k}": v for k, v in self.static.items()})
        out.update({f"dynamic_{k}": v for k, v in self.dynamic.items()})
        if self.dynamic_t is not None:
            out["dynamic_t"] = self.dynamic_t
        return out

    @classmethod
    def from_arrays(cls, arrays) -> SeqSet:
        """Inverse of ``to_arrays`` (accepts an ``np.load`` result)."""
        if "x" not in arrays:
            raise ValueError(f"arrays: expected a key 'x' holding (N, V, ...) sequences, got keys {sorted(arrays)}")
        static = {k[len("static_"):]: np.asarray(arrays[k]) for k in arrays if k.startswith("static_")}
        dynamic = {k[len("dynamic_"):]: np.asarray(arrays[k]) for k in arrays
                   if k.startswith("dynamic_") and k != "dynamic_t"}
        dyn_t = np.asarray(arrays["dynamic_t"]) if "dynamic_t" in arrays else None
        return cls(np.asarray(arrays["x"], dtype=np.float32), static, dynamic, dyn_t)


def _check_count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    return int(value)


def tone_f0(contour: np.ndarray, f_start: np.ndarray, frames: int) -> np.ndarray:
    """Pitch f0_tau (in bins) of each frame: (n,) contour classes and start pitches -> (n, V)."""
    t = np.linspace(0.0, 1.0, frames)[None, :]
    fs = f_start[:, None]
    options = np.stack([fs * (1 + 0.5 * t), fs * (1.5 - 0.5 * t), fs * np.ones_like(t),
                        fs * (1 + 0.12 * np.sin(4 * np.pi * t))])
    return options[contour, np.arange(len(contour))]


def make_tones(n: int, *, frames: int = 16, bins: int = 32, seed: int = 0) -> SeqSet:
    """Audio-like log-spectrogram sequences (n, frames, bins).

    Static ``timbre`` (6): harmonic decay in {0.3, 0.5, 0.7} x {all, odd-only} harmonics;
    dynamic ``contour`` (4): rising, falling, flat, vibrato pitch from a start f_s ~ U(2, 3.5).
    spectrum(b) = sum_k A_k exp(-(b - k f0)^2 / (2 0.6^2)), A_k = decay^(k-1), value
    (log(0.01 + spectrum) + 2) / 2. ``dynamic_t`` is f0 (n, frames).
    """
    n = _check_count("n", n, 1)
    frames = _check_count("frames", frames, 2)
    bins = _check_count("bins", bins, 8)
    rng = np.random.default_rng(seed)
    timbre = rng.integers(0, 6, n)
    contour = rng.integers(0, 4, n)
    f_start = rng.uniform(2.0, 3.5, n)
    f0 = tone_f0(contour, f_start, frames)
    k = np.arange(1, 12, dtype=np.float64)
    decay = np.asarray(TIMBRE_DECAYS)[timbre // 2]
    odd_only = (timbre % 2) == 1
    amp = decay[:, None] ** (k[None, :] - 1)
    amp = np.where(odd_only[:, None] & (k[None, :] % 2 == 0), 0.0, amp)
    centres = k[None, None, :] * f0[:, :, None]
    amp = np.where(centres <= bins, amp[:, None, :], 0.0)
    b = np.arange(bins, dtype=np.float64)
    peaks = np.exp(-((b[None, None, None, :] - centres[..., None]) ** 2) / (2 * 0.6**2))
    spectrum = np.einsum("nvk,nvkb->nvb", amp, peaks)
    x = (np.log(0.01 + spectrum) + 2.0) / 2.0
    return SeqSet(x.astype(np.float32), {"timbre": timbre.astype(np.int64)},
                  {"contour": contour.astype(np.int64)}, f0.astype(np.float32))


def sprite_masks() -> np.ndarray:
    """The fixed 5x5 rasterised masks of the four shapes: bool (4, 5, 5)."""
    yy, xx = np.mgrid[0:5, 0:5]
    disk = (yy - 2) ** 2 + (xx - 2) ** 2 <= 5
    square = np.ones((5, 5), bool)
    triangle = np.abs(xx - 2) <= yy / 2
    plus = (yy == 2) | (xx == 2)
    return np.stack([disk, square, triangle, plus])


def sprite_positions(motion: np.ndarray, frames: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Top-left corner (x, y) of the 5x5 sprite for each frame: (n,) motions -> int (n, frames, 2)."""
    n = len(motion)
    t = np.arange(frames)
    span = size - 5
    steps = np.array([[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [-1, -1]])
    pos = np.zeros((n, frames, 2), dtype=np.int64)
    linear = motion < 6
    if span < frames - 1 or span < 6:
        need = max(frames - 1, 6) + 5
        raise ValueError(f"size: expected a canvas of at least {need} px for {frames} frames, got {size}")
    for i in np.flatnonzero(linear):
        step = steps[motion[i]]
        start = np.array([rng.integers(0, span - frames + 2) if s > 0 else
                          rng.integers(frames - 1, span + 1) if s < 0 else rng.integers(0, span + 1)
                          for s in step])
        pos[i] = start[None, :] + t[:, None] * step[None, :]
    for i in np.flatnonzero(~linear):
        centre = rng.uniform(3.0, span - 3.0, 2)
        phase = rng.uniform(0, 2 * np.pi)
        direction = 1.0 if motion[i] == 6 else -1.0
        angle = phase + direction * 2 * np.pi / 8 * t
        pos[i] = np.rint(centre[None, :] + 3.0 * np.stack([np.cos(angle), np.sin(angle)], 1)).astype(np.int64)
    return pos


def make_sprites(n: int, *, frames: int = 8, size: int = 16, noise: float = 0.0, seed: int = 0) -> SeqSet:
    """Video-like RGB sprite sequences (n, frames, 3, size, size) in [-1, 1].

    Static: ``shape`` (4), ``color`` (6), ``bg`` (2 grey levels); dynamic ``motion`` (8: right,
    left, down, up, down-right, up-left, clockwise and counter-clockwise circle of radius 3
    with step 2 pi / 8, y pointing down). ``dynamic_t`` is the sprite centre (x, y) per frame.
    """
    n = _check_count("n", n, 1)
    frames = _check_count("frames", frames, 2)
    size = _check_count("size", size, 12)
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise: expected a finite value >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    shape = rng.integers(0, 4, n)
    color = rng.integers(0, 6, n)
    bg = rng.integers(0, 2, n)
    motion = rng.integers(0, 8, n)
    pos = sprite_positions(motion, frames, size, rng)
    masks = sprite_masks()
    video = np.broadcast_to(np.asarray(BACKGROUNDS, np.float32)[bg][:, None, None, None, None],
                            (n, frames, 3, size, size)).copy()
    for i in range(n):
        for v in range(frames):
            x0, y0 = pos[i, v]
            patch = video[i, v, :, y0:y0 + 5, x0:x0 + 5]
            patch[:, masks[shape[i]]] = COLORS[color[i]][:, None]
    video = video * 2.0 - 1.0
    if noise > 0:
        video = video + rng.normal(0.0, noise, video.shape).astype(np.float32)
    return SeqSet(video.astype(np.float32),
                  {"shape": shape.astype(np.int64), "color": color.astype(np.int64), "bg": bg.astype(np.int64)},
                  {"motion": motion.astype(np.int64)}, (pos + 2).astype(np.float32))


def series_regime(regime: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """The shared dynamic signal of each series, in [-1, 1]: (n,) regimes -> (n, length)."""
    n = len(regime)
    t = np.linspace(0.0, 1.0, length)[None, :]
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    jump = rng.integers(length // 4, 3 * length // 4, (n, 1))
    options = np.stack([np.broadcast_to(2 * t - 1, (n, length)), np.broadcast_to(1 - 2 * t, (n, length)),
                        np.sin(4 * np.pi * t + phase),
                        np.where(np.arange(length)[None, :] >= jump, 1.0, -1.0)])
    return options[regime, np.arange(n)]


def make_series(n: int, *, length: int = 24, channels: int = 4, seed: int = 0) -> SeqSet:
    """Multivariate time series (n, length, channels).

    Static ``profile`` (5 channel offset/scale patterns), dynamic ``regime`` (4: trend up, trend
    down, periodic, step) shared by every channel, plus N(0, 0.05^2) noise. ``dynamic_t`` is the
    shared regime signal (n, length).
    """
    n = _check_count("n", n, 1)
    length = _check_count("length", length, 4)
    channels = _check_count("channels", channels, 1)
    if channels > SERIES_OFFSETS.shape[1]:
        raise ValueError(f"channels: expected at most {SERIES_OFFSETS.shape[1]}, got {channels}")
    rng = np.random.default_rng(seed)
    profile = rng.integers(0, 5, n)
    regime = rng.integers(0, 4, n)
    signal = series_regime(regime, length, rng)
    x = (SERIES_OFFSETS[profile, None, :channels] + SERIES_SCALES[profile, None, :channels] * signal[:, :, None]
         + rng.normal(0.0, 0.05, (n, length, channels)))
    return SeqSet(x.astype(np.float32), {"profile": profile.astype(np.int64)},
                  {"regime": regime.astype(np.int64)}, signal.astype(np.float32))


GENERATORS = {"tones": make_tones, "sprites": make_sprites, "series": make_series}


def make(kind: str, n: int, *, seed: int = 0) -> SeqSet:
    """``make_tones`` / ``make_sprites`` / ``make_series`` by name, with default shapes."""
    if kind not in GENERATORS:
        raise ValueError(f"kind: expected one of {sorted(GENERATORS)}, got {kind!r}")
    return GENERATORS[kind](n, seed=seed)


def load_npy_sequences(path: str | os.PathLike, *, mask_path: str | os.PathLike | None = None
                       ) -> tuple[np.ndarray, np.ndarray | None]:
    """User sequences from ``.npy``: x float32 (N, V, F) and an optional 0/1 mask (N, V, F).

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: x is not 3-D, V < 2, the mask's shape differs, or x has NaN/Inf where the
            mask (or its absence) says it is observed.
    """
    x = np.load(pathlib.Path(path)).astype(np.float32)
    if x.ndim != 3 or x.shape[1] < 2:
        raise ValueError(f"path: expected an array (N, V, F) with V >= 2, got shape {x.shape}")
    mask = None
    if mask_path is not None:
        mask = np.load(pathlib.Path(mask_path)).astype(np.float32)
        if mask.shape != x.shape:
            raise ValueError(f"mask_path: expected a mask of shape {x.shape}, got {mask.shape}")
    observed = np.ones_like(x, bool) if mask is None else mask > 0
    if not np.isfinite(x[observed]).all():
        raise ValueError("path: observed entries contain NaN or Inf; give a mask_path that marks them 0")
    if mask is not None:
        x = np.where(observed, x, 0.0).astype(np.float32)
    return x, mask


def load_csv_series(path: str | os.PathLike, *, window: int, stride: int,
                    columns: list[str] | None = None) -> np.ndarray:
    """Slices a long multivariate CSV (header row, one time step per row) into windows (N, window, C).

    Non-numeric columns (dates) are dropped unless named in ``columns``.

    Raises:
        ValueError: window < 2, stride < 1, an unknown column, too few rows, or non-numeric values.
    """
    window = _check_count("window", window, 2)
    stride = _check_count("stride", stride, 1)
    with open(pathlib.Path(path), newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2:
        raise ValueError(f"path: expected a header and at least one row, got {len(rows)} line(s)")
    header, body = rows[0], rows[1:]

    def numeric(j: int) -> bool:
        try:
            float(body[0][j])
        except ValueError:
            return False
        return True

    if columns is None:
        chosen = [j for j in range(len(header)) if numeric(j)]
    else:
        missing = [c for c in columns if c not in header]
        if missing:
            raise ValueError(f"columns: {missing} not in the CSV header {header}")
        chosen = [header.index(c) for c in columns]
    try:
        values = np.array([[float(r[j]) for j in chosen] for r in body], dtype=np.float32)
    except ValueError as err:
        raise ValueError(f"path: non-numeric value in the chosen columns ({err})") from None
    if len(values) < window:
        raise ValueError(f"window: expected at most {len(values)} (the CSV's rows), got {window}")
    starts = np.arange(0, len(values) - window + 1, stride)
    return np.stack([values[s:s + window] for s in starts])
