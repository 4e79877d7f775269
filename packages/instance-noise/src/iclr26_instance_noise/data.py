"""Embedded data (nothing downloads) and loaders for the user's own files.

- ``linear_instance_noise``: the synthetic benchmark with known ``w*`` and ``rho(x)``.
- ``breast_cancer`` and ``wine_binary`` (tabular), ``digits_odd_even`` (image), ``tones`` (audio-like,
  synthetic): embedded in scikit-learn or generated.
- ``load_table``: a user ``.npz`` (``X``, ``y``, optionally ``y_multi``) or ``.csv`` (last column = label).
- ``load_wav_folders``: two class subfolders of ``.wav`` files, featurised like ``tones``.
- ``speech_commands``: two words of the local Speech Commands folders as log-mel spectrograms (``paper`` scale).
"""
from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

import numpy as np
from iclr26_shared import datasets
from scipy.io import wavfile
from scipy.signal import chirp, stft, welch

from .losses import sigmoid
from .noise import flip_labels

TONE_RATE = 8000
N_BANDS = 32
N_MELS = 40
SPEECH_FOLDERS = ("speech_commands", "speech_commands_v0.02", "SpeechCommands/speech_commands_v0.02")


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


def wine_binary() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's wine data (13 chemical measurements), standardised, as cultivar 2 against cultivars 1 and 3:
    ``X`` ``(178, 13)``, ``y`` ``(178,)`` (71 positives). The cultivars are almost separable, as the
    posterior estimator of ``rho`` assumes (deterministic clean labels)."""
    ds = datasets.load("wine")
    return (ds.X - ds.X.mean(axis=0)) / ds.X.std(axis=0), (ds.y == 1).astype(np.int64)


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


def mel_filterbank(n_mels: int, n_fft: int, rate: int, f_min: float = 20.0) -> np.ndarray:
    """Triangular filters ``(n_mels, n_fft // 2 + 1)`` equally spaced on the mel scale
    ``m = 2595 log10(1 + f / 700)`` from ``f_min`` to ``rate / 2``, each peaking at 1."""
    def mel(f):
        return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)

    hz = 700.0 * (10.0 ** (np.linspace(mel(f_min), mel(rate / 2.0), n_mels + 2) / 2595.0) - 1.0)
    freqs = np.linspace(0.0, rate / 2.0, n_fft // 2 + 1)
    low, centre, high = hz[:-2, None], hz[1:-1, None], hz[2:, None]
    rising, falling = (freqs - low) / (centre - low), (high - freqs) / (high - centre)
    return np.maximum(0.0, np.minimum(rising, falling))


def log_mel(signal: np.ndarray, rate: int, n_mels: int = N_MELS) -> np.ndarray:
    """Log-mel spectrogram ``(n_mels, frames)`` of a 1-D signal: 25 ms Hann windows every 10 ms,
    power spectrum through ``mel_filterbank``, ``log(. + 1e-6)``."""
    win, hop = int(0.025 * rate), int(0.010 * rate)
    n_fft = 1 << (win - 1).bit_length()
    _, _, spec = stft(signal, fs=rate, window="hann", nperseg=win, noverlap=win - hop, nfft=n_fft)
    return np.log(mel_filterbank(n_mels, n_fft, rate) @ np.abs(spec) ** 2 + 1e-6)


def speech_commands_folder(root: str | os.PathLike | None = None,
                           words: tuple[str, str] = ("no", "yes")) -> pathlib.Path:
    """The local Speech Commands folder holding one subfolder of ``.wav`` files per word in ``words``.

    Looked up under ``root`` (default ``$ICLR26_DATA``) as one of ``SPEECH_FOLDERS``; nothing downloads.

    Raises:
        FileNotFoundError: no data folder, or none of the candidates has ``.wav`` files for both words.
    """
    base = datasets.data_root(root)
    for sub in SPEECH_FOLDERS:
        folder = base / sub
        if all(any((folder / w).glob("*.wav")) for w in words):
            return folder
    tried = ", ".join(str(base / s) for s in SPEECH_FOLDERS)
    raise FileNotFoundError(f"speech_commands: expected .wav files in the subfolders {list(words)} of one of: "
                            f"{tried}. Unpack the Speech Commands archive there. Nothing is downloaded automatically.")


def speech_commands(root: str | os.PathLike | None = None, words: tuple[str, str] = ("no", "yes"),
                    n_mels: int = N_MELS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two words of Speech Commands as log-mel spectrograms, label 1 = ``words[1]``.

    Every clip is cropped or zero-padded to 1 s. Rows listed in the folder's ``testing_list.txt``
    (``word/file.wav`` per line) are the test split; without that file the split is left to the caller
    (all rows train).

    Returns:
        ``X`` ``(n, 1, n_mels, frames)`` float32, ``y`` ``(n,)`` int64, ``is_test`` ``(n,)`` bool.

    Raises:
        FileNotFoundError: see ``speech_commands_folder``. ValueError: clips at different sampling rates.
    """
    folder = speech_commands_folder(root, words)
    listed = folder / "testing_list.txt"
    test_names = set(listed.read_text().split()) if listed.is_file() else set()
    X, y, is_test, rates = [], [], [], set()
    for label, word in enumerate(words):
        for f in sorted((folder / word).glob("*.wav")):
            rate, signal = wavfile.read(f)
            rates.add(rate)
            if len(rates) > 1:
                raise ValueError(f"{f}: expected every clip at one sampling rate, got {sorted(rates)} Hz")
            signal = signal.astype(np.float64)
            signal = signal.mean(axis=1) if signal.ndim == 2 else signal
            clip = np.zeros(rate)
            clip[:min(rate, len(signal))] = signal[:rate]
            X.append(log_mel(clip, rate, n_mels)[None])
            y.append(label)
            is_test.append(f"{word}/{f.name}" in test_names)
    return np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.int64), np.asarray(is_test)
