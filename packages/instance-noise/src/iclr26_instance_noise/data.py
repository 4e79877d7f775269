"""Embedded data (nothing downloads) and loaders for the user's own files.

- ``linear_instance_noise``: the synthetic benchmark with known ``w*`` and ``rho(x)``.
- ``breast_cancer`` (tabular), ``digits_odd_even`` (image), ``tones`` (audio-like, synthetic).
- ``load_table``: a user ``.npz`` (``X``, ``y``, optionally ``y_multi``) or ``.csv`` (last column = label).
- ``load_wav_folders``: two class subfolders of ``.wav`` files, featurised like ``tones``.
"""
from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

import numpy as np
from iclr26_shared import datasets
from scipy.io import wavfile
from scipy.signal import chirp, welch

from .losses import sigmoid
from .noise import flip_labels

TONE_RATE = 8000
N_BANDS = 32


@dataclass(frozen=True)
class LinearBenchmark:
    """The synthetic linear benchmark.

    Attributes:
        X: training features ``(n, d)``; y_clean, y_noisy: ``(n,)``; rho: true flip probabilities ``(n,)``.
        X_test ``(5000, d)``, y_test ``(5000,)``: clean test set.
        w_star, v: unit directions ``(d,)`` (``v`` orthogonal to ``w_star``).
    """

    X: np.ndarray
    y_clean: np.ndarray
    y_noisy: np.ndarray
    rho: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    w_star: np.ndarray
    v: np.ndarray


def linear_instance_noise(n: int = 3000, d: int = 10, seed: int = 0, n_test: int = 5000) -> LinearBenchmark:
    """``y = 1[x.w* > 0]`` with ``x ~ N(0, I_d)`` and ``rho(x) = 0.45 sigma(3 v.x + 1.5 w*.x)``.

    Draw order from ``default_rng(seed)``: ``w*``, ``v``, ``X`` (``n + n_test`` rows, the last
    ``n_test`` the clean test set), then the flips of the ``n`` training labels. Realised noise
    rate about 0.22.
    """
    if n < 2 or d < 2 or n_test < 1:
        raise ValueError(f"n, d, n_test: expected n >= 2, d >= 2, n_test >= 1, got {n}, {d}, {n_test}")
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    v = rng.normal(size=d)
    v -= (v @ w) * w
    v /= np.linalg.norm(v)
    X_all = rng.normal(size=(n + n_test, d))
    y_all = (X_all @ w > 0).astype(np.int64)
    X, y = X_all[:n], y_all[:n]
    rho = 0.45 * sigmoid(3.0 * (X @ v) + 1.5 * (X @ w))
    y_noisy = flip_labels(y, rho, rng)
    return LinearBenchmark(X, y, y_noisy, rho, X_all[n:], y_all[n:], w, v)


def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's breast cancer data, standardised: ``X`` ``(569, 30)``, ``y`` ``(569,)`` (1 = benign)."""
    ds = datasets.load("breast_cancer")
    return (ds.X - ds.X.mean(axis=0)) / ds.X.std(axis=0), ds.y


def digits_odd_even() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits, pixels / 16: ``X`` ``(1797, 64)``, ``y`` ``(1797,)`` = digit is odd."""
    ds = datasets.load("digits")
    return ds.X / 16.0, (ds.y % 2).astype(np.int64)


def band_energies(signal: np.ndarray, rate: int, n_bands: int = N_BANDS) -> np.ndarray:
    """``n_bands`` log band energies ``(n_bands,)`` of a 1-D signal from its Welch spectrum (0 to rate/2 Hz)."""
    freqs, power = welch(signal, fs=rate, nperseg=min(256, len(signal)))
    edges = np.linspace(0.0, rate / 2.0, n_bands + 1)
    band = np.clip(np.searchsorted(edges, freqs, side="right") - 1, 0, n_bands - 1)
    return np.log(np.bincount(band, weights=power, minlength=n_bands) + 1e-12)


def tones(n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Audio-like synthetic task: 0.25 s at 8 kHz; class 1 a 300 -> 900 Hz chirp, class 0 a steady tone
    at U(300, 900) Hz; white noise at SNR U(-5, 10) dB. Features: 32 log band energies (Welch),
    standardised. Returns ``X`` ``(n, 32)``, ``y`` ``(n,)`` (balanced at random).
    """
    if n < 2:
        raise ValueError(f"n: expected >= 2 signals, got {n}")
    rng = np.random.default_rng(seed)
    time = np.arange(int(0.25 * TONE_RATE)) / TONE_RATE
    y = rng.integers(0, 2, size=n)
    feats = np.empty((n, N_BANDS))
    for i in range(n):
        phase = rng.uniform(0, 360)
        if y[i]:
            clean = chirp(time, f0=300.0, t1=time[-1], f1=900.0, phi=phase)
        else:
            clean = np.cos(2 * np.pi * rng.uniform(300, 900) * time + np.deg2rad(phase))
        snr_db = rng.uniform(-5, 10)
        noise_sd = np.sqrt(np.mean(clean**2) / 10 ** (snr_db / 10))
        feats[i] = band_energies(clean + rng.normal(scale=noise_sd, size=time.size), TONE_RATE)
    return (feats - feats.mean(axis=0)) / feats.std(axis=0), y.astype(np.int64)


def load_table(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """A user's data: ``.npz`` with ``X`` and ``y`` (optionally ``y_multi`` ``(n, m)``, ``y_clean``, ``rho``),
    or ``.csv`` with a header row and the label in the last column.

    Raises:
        FileNotFoundError: no such file. ValueError: unknown suffix or missing arrays.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no file {str(p)!r}")
    if p.suffix == ".npz":
        with np.load(p) as npz:
            out = {k: npz[k] for k in npz.files}
        if "X" not in out or not ({"y", "y_noisy", "y_multi"} & out.keys()):
            raise ValueError(f"{p}: expected arrays 'X' and 'y' (or 'y_noisy'/'y_multi'), got {sorted(out)}")
        return out
    if p.suffix == ".csv":
        table = np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2)
        return {"X": table[:, :-1], "y": table[:, -1].astype(np.int64)}
    raise ValueError(f"path: expected a .npz or .csv file, got {p.suffix!r}")


def load_wav_folders(root: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, tuple[str, str]]:
    """``.wav`` files from exactly two subfolders of ``root`` (sorted names: label 0, label 1).

    Each file is mixed to mono and featurised with ``band_energies`` at its own rate.
    Returns ``X`` ``(n, 32)``, ``y`` ``(n,)`` and the two class names.

    Raises:
        FileNotFoundError: ``root`` missing, not two subfolders, or a subfolder without ``.wav`` files.
    """
    base = pathlib.Path(root)
    folders = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    if len(folders) != 2:
        raise FileNotFoundError(f"root: expected a folder with exactly two class subfolders of .wav files, "
                                f"got {str(base)!r} with {len(folders)} subfolder(s)")
    X, y = [], []
    for label, folder in enumerate(folders):
        files = sorted(folder.glob("*.wav"))
        if not files:
            raise FileNotFoundError(f"{folder}: expected .wav files, found none")
        for f in files:
            rate, signal = wavfile.read(f)
            signal = signal.astype(np.float64)
            X.append(band_energies(signal.mean(axis=1) if signal.ndim == 2 else signal, rate))
            y.append(label)
    return np.asarray(X), np.asarray(y, dtype=np.int64), (folders[0].name, folders[1].name)
