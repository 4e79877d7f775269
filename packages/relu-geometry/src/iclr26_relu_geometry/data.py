"""The paper's two data families (isotropic Beta(α) radial, mixtures of low-dimensional balls),
the Gaussian shell, seeded regression targets, and the real-data stand-ins (digits, local MNIST).

Every sampler takes ``rng`` (``None``, an integer seed or a ``numpy.random.Generator``) and
returns a float32 torch tensor ``(n, d)``, or a float64 numpy array with ``as_numpy=True``.
Train and test sets of one experiment must come from one call (then split), so that a mixture's
random subspaces are shared by both.
"""
from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

import numpy as np
import torch

from ._checks import as_rng, matrix, positive_int, real


def _out(X: np.ndarray, as_numpy: bool):
    return X if as_numpy else torch.from_numpy(X.astype(np.float32))


def _unit_vectors(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """``(n, d)`` points uniform on the sphere S^{d-1}."""
    G = rng.standard_normal((n, d))
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def beta_radial(n: int, d: int, alpha, rng=None, as_numpy: bool = False):
    """Isotropic Beta(α) radial family: ``X = h(R)·U``, ``h(r) = 1 − (1 − r)^{1/α}``, R ~ U[0,1], U ~ Unif(S^{d−1}).

    ``‖X‖ ~ Beta(1, α)``: ``P(‖X‖ ≤ s) = 1 − (1 − s)^α``. ``alpha = 0`` or ``"sphere"`` puts every point
    exactly on the unit sphere (the α → 0 limit). α = 1 is a uniform radius, not the uniform ball.

    Returns:
        ``X`` of shape ``(n, d)``.

    Raises:
        ValueError: ``n < 2``, ``d < 1`` or ``alpha < 0``.
    """
    n, d = positive_int("n", n, 2), positive_int("d", d)
    a = 0.0 if isinstance(alpha, str) and alpha == "sphere" else real("alpha", alpha, nonnegative=True)
    rng = as_rng(rng)
    U = _unit_vectors(rng, n, d)
    if a == 0.0:
        return _out(U, as_numpy)
    R = rng.random(n)
    radius = 1.0 - (1.0 - R) ** (1.0 / a)
    return _out(radius[:, None] * U, as_numpy)


@dataclass(frozen=True)
class BallMixture:
    """``P_X = (1/J) Σ_j Unif(ball of radius ρ in c_j + span(V_j))``, each ball m-dimensional inside ℝ^d.

    Attributes:
        centers: ``(J, d)`` component centres ``c_j``.
        bases: ``(J, d, m)`` orthonormal bases ``V_j`` of the components' subspaces.
        radius: ρ.
    """

    centers: np.ndarray
    bases: np.ndarray
    radius: float

    @classmethod
    def random(cls, d: int, m: int, J: int, radius: float = 1.0, center_scale: float = 0.5, rng=None) -> BallMixture:
        """Draws J random m-dimensional affine subspaces of ℝ^d; centres ``center_scale·Unif(S^{d−1})``.

        Raises:
            ValueError: ``m < 1``, ``m >= d``, ``J < 1``, ``radius <= 0`` or ``center_scale < 0``.
        """
        d, m, J = positive_int("d", d, 2), positive_int("m", m), positive_int("J", J)
        if m >= d:
            raise ValueError(f"m: expected an intrinsic dimension 1 <= m < d = {d}, got {m}")
        radius = real("radius", radius, positive=True)
        center_scale = real("center_scale", center_scale, nonnegative=True)
        rng = as_rng(rng)
        centers = center_scale * _unit_vectors(rng, J, d)
        bases = np.stack([np.linalg.qr(rng.standard_normal((d, m)))[0] for _ in range(J)])
        return cls(centers=centers, bases=bases, radius=radius)

    def sample(self, n: int, rng=None) -> tuple[np.ndarray, np.ndarray]:
        """``(X (n, d), component (n,))``; inside a component the radius is ``ρ·U^{1/m}``."""
        n = positive_int("n", n, 2)
        rng = as_rng(rng)
        J, d, m = self.bases.shape
        comp = rng.integers(J, size=n)
        z = _unit_vectors(rng, n, m) * (self.radius * rng.random(n) ** (1.0 / m))[:, None]
        X = self.centers[comp] + np.einsum("ndm,nm->nd", self.bases[comp], z)
        return X, comp


def ball_mixture(n: int, d: int, m: int, J: int, radius: float = 1.0, center_scale: float = 0.5, rng=None,
                 return_component: bool = False, as_numpy: bool = False):
    """``n`` points from a fresh random ``BallMixture`` (J balls of dimension m in ℝ^d, equal weights).

    Returns:
        ``X`` ``(n, d)``, and the component index ``(n,)`` when ``return_component``.

    Raises:
        ValueError: ``n < 2``, ``m < 1``, ``m >= d``, ``J < 1``.
    """
    rng = as_rng(rng)
    positive_int("n", n, 2)
    mix = BallMixture.random(d, m, J, radius=radius, center_scale=center_scale, rng=rng)
    X, comp = mix.sample(n, rng)
    return (_out(X, as_numpy), comp) if return_component else _out(X, as_numpy)


def lines(n: int, d: int, J: int = 20, rng=None, as_numpy: bool = False):
    """``ball_mixture(m=1)``: J random segments (one-dimensional balls) in ℝ^d."""
    return ball_mixture(n, d, 1, J, rng=rng, as_numpy=as_numpy)


def gaussian_shell(n: int, d: int, rng=None, as_numpy: bool = False):
    """``N(0, I_d/d)``: for large d the mass concentrates near the unit sphere."""
    n, d = positive_int("n", n, 2), positive_int("d", d)
    return _out(as_rng(rng).standard_normal((n, d)) / np.sqrt(d), as_numpy)


TARGETS = ("ridge", "teacher", "zero")


def target_function(X: np.ndarray, kind: str = "ridge", target_seed: int = 0) -> np.ndarray:
    """The clean target ``y*(x)`` ``(n,)``; its random parameters depend only on ``target_seed`` and d.

    - ``"ridge"``: ``Σ_{j=1}^{3} a_j tanh(b_jᵀx)``, ``a_j ~ N(0,1)``, ``b_j ~ 2·Unif(S^{d−1})`` (inferred choice).
    - ``"teacher"``: a width-5 ReLU teacher ``Σ_j a_j relu(b_jᵀx − c_j)``, ``a_j ~ N(0,1)``, ``b_j ~ Unif(S^{d−1})``,
      ``c_j ~ U[−0.5, 0.5]``.
    - ``"zero"``: ``y* = 0`` (pure-noise memorisation test).
    """
    X = matrix("X", X)
    if kind not in TARGETS:
        raise ValueError(f"kind: expected one of {TARGETS}, got {kind!r}")
    if kind == "zero":
        return np.zeros(X.shape[0])
    g = np.random.default_rng(target_seed)
    d = X.shape[1]
    if kind == "ridge":
        a = g.standard_normal(3)
        B = 2.0 * _unit_vectors(g, 3, d)
        return np.tanh(X @ B.T) @ a
    a = g.standard_normal(5)
    B = _unit_vectors(g, 5, d)
    c = g.uniform(-0.5, 0.5, 5)
    return np.maximum(X @ B.T - c, 0.0) @ a


def make_targets(X, kind: str = "ridge", noise: float = 0.5, rng=None, target_seed: int = 0):
    """Noisy regression targets ``y = y*(x) + σ·ε``, ε ~ N(0, 1).

    Args:
        X: ``(n, d)`` inputs (torch or numpy).
        kind: ``"ridge"`` (default), ``"teacher"`` or ``"zero"``; see ``target_function``.
        noise: σ >= 0.
        rng: draws the noise; ``target_seed`` fixes the target function itself (shared by train and test).

    Returns:
        ``(y_noisy, y_clean)``, each ``(n,)``, float32 tensors when ``X`` is a tensor, else float64 arrays.
    """
    noise = real("noise", noise, nonnegative=True)
    clean = target_function(X, kind, target_seed)
    noisy = clean + noise * as_rng(rng).standard_normal(clean.shape[0])
    if isinstance(X, torch.Tensor):
        return (torch.from_numpy(noisy.astype(np.float32)).to(X.device),
                torch.from_numpy(clean.astype(np.float32)).to(X.device))
    return noisy, clean


def _unit_max_norm(X: np.ndarray) -> np.ndarray:
    return X / np.linalg.norm(X, axis=1).max()


def digits_dataset(noise: float = 0.5, rng=None):
    """scikit-learn's bundled digits (1797 × 64), scaled so that ``max ‖x‖ = 1``; the stand-in for MNIST.

    Returns:
        ``(X (1797, 64), y_noisy (1797,), y_clean (1797,))`` float32 tensors, ``y_clean = digit/9 − 0.5``.
    """
    from sklearn.datasets import load_digits

    noise = real("noise", noise, nonnegative=True)
    X, digit = load_digits(return_X_y=True)
    clean = digit / 9.0 - 0.5
    noisy = clean + noise * as_rng(rng).standard_normal(clean.shape[0])
    return tuple(torch.from_numpy(a.astype(np.float32)) for a in (_unit_max_norm(X), noisy, clean))


def mnist_dataset(noise: float = 0.5, rng=None, root: str | os.PathLike | None = None):
    """MNIST's 60 000 training images from the local data folder (``root`` or ``$ICLR26_DATA``), the paper's real data.

    Flattened to 784, scaled so that ``max ‖x‖ = 1``; ``y_clean = digit/9 − 0.5``. Never downloads: a missing folder
    raises ``FileNotFoundError`` saying which files to put where.

    Returns:
        ``(X (60000, 784), y_noisy (60000,), y_clean (60000,))`` float32 tensors.
    """
    from iclr26_shared.datasets import load

    noise = real("noise", noise, nonnegative=True)
    ds = load("mnist", root=root, split="train")
    clean = ds.y / 9.0 - 0.5
    noisy = clean + noise * as_rng(rng).standard_normal(clean.shape[0])
    X = _unit_max_norm(ds.X.reshape(len(ds.X), -1).astype(np.float64))
    return tuple(torch.from_numpy(a.astype(np.float32)) for a in (X, noisy, clean))


def load_mnist_local(path: str | os.PathLike):
    """MNIST from a local file or folder; never downloads.

    ``path`` is either an ``.npz`` holding ``x`` (N × 784 or N × 28 × 28, uint8) and ``y`` (N,), or a folder
    holding ``train-images-idx3-ubyte`` and ``train-labels-idx1-ubyte`` (optionally ``.gz``).

    Returns:
        ``(X (N, 784) float32 scaled so that max ‖x‖ = 1, labels (N,) int64)``.

    Raises:
        FileNotFoundError: nothing usable at ``path`` (the message says what is expected).
    """
    from iclr26_shared.datasets import read_idx

    p = pathlib.Path(path)
    if p.is_file() and p.suffix == ".npz":
        with np.load(p) as z:
            if "x" not in z or "y" not in z:
                raise ValueError(f"path: expected an .npz with arrays 'x' and 'y', got keys {sorted(z.files)}")
            images, labels = z["x"], z["y"]
    elif p.is_dir() and any((p / f"train-images-idx3-ubyte{s}").exists() for s in ("", ".gz")):
        images = read_idx(p / "train-images-idx3-ubyte")
        labels = read_idx(p / "train-labels-idx1-ubyte")
    else:
        raise FileNotFoundError(
            f"path: no MNIST at {str(p)!r}. Put train-images-idx3-ubyte and train-labels-idx1-ubyte (or .gz) in "
            "that folder, or pass an .npz with arrays x (N x 784 uint8) and y (N,). Nothing is downloaded.")
    X = np.asarray(images, dtype=np.float64).reshape(len(images), -1)
    if X.shape[1] != 784:
        raise ValueError(f"path: expected 784 pixels per image, got {X.shape[1]}")
    return torch.from_numpy(_unit_max_norm(X).astype(np.float32)), np.asarray(labels, dtype=np.int64)
