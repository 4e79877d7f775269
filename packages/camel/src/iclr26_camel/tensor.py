"""Third-order tensors under the t-product: t-SVD, the tensor nuclear norm, the l_delta norm and their proxes.

Conventions (Kilmer & Martin; Lu et al.): a tensor ``T`` has shape ``(n1, n2, n3)``; its frontal
slices are ``T[:, :, k]``; ``T̄ = fft(T, axis=2)``. The t-product is slice-wise matrix multiplication
in the Fourier domain. Norms average over the ``n3`` Fourier slices:

- ``tnn(T) = (1/n3) sum_k ||T̄^(k)||_*``,
- ``||T||_{l_delta} = (1/n3) sum_k sum_i f_delta(sigma_i(T̄^(k)))`` with ``f_delta(x) = (1+delta) x / (delta + x)``.

Only the slices ``k = 0 .. n3 // 2`` are decomposed; the others are complex conjugates because ``T``
is real, which keeps every result real up to round-off (checked).
"""
from __future__ import annotations

import numpy as np

_IMAG_TOL = 1e-10


def _check_tensor(T, name: str = "T") -> np.ndarray:
    T = np.asarray(T)
    if T.ndim != 3:
        raise ValueError(f"{name}: expected a 3-D array (n1, n2, n3), got shape {T.shape}")
    if not np.isrealobj(T):
        raise TypeError(f"{name}: expected a real array, got dtype {T.dtype}")
    if not np.all(np.isfinite(T)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return T.astype(np.float64, copy=False)


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not np.isscalar(value) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: expected a positive finite number, got {value!r}")
    return float(value)


def _half_slices(n3: int) -> int:
    return n3 // 2 + 1


def _real_ifft(Tbar: np.ndarray) -> np.ndarray:
    """Inverse FFT along axis 2 of a conjugate-symmetric array; raises if the result is not real."""
    out = np.fft.ifft(Tbar, axis=2)
    scale = max(1.0, float(np.abs(out.real).max(initial=0.0)))
    residue = float(np.abs(out.imag).max(initial=0.0))
    if residue > _IMAG_TOL * scale:
        raise FloatingPointError(f"imaginary residue {residue:.3g} after ifft (expected <= {_IMAG_TOL:g})")
    return out.real


def _fill_conjugates(Tbar: np.ndarray) -> None:
    """Sets slices ``k > n3 // 2`` to the conjugates of slices ``n3 - k`` (in place)."""
    n3 = Tbar.shape[2]
    for k in range(_half_slices(n3), n3):
        Tbar[:, :, k] = np.conj(Tbar[:, :, n3 - k])


def tprod(A, B) -> np.ndarray:
    """t-product ``A * B``.

    Args:
        A: ``(n1, n2, n3)`` real tensor.
        B: ``(n2, n4, n3)`` real tensor.

    Returns:
        ``(n1, n4, n3)`` real tensor.

    Raises:
        ValueError: shapes do not chain.
    """
    A, B = _check_tensor(A, "A"), _check_tensor(B, "B")
    if A.shape[1] != B.shape[0] or A.shape[2] != B.shape[2]:
        raise ValueError(f"A, B: expected shapes (n1, n2, n3) and (n2, n4, n3), got {A.shape} and {B.shape}")
    Abar, Bbar = np.fft.fft(A, axis=2), np.fft.fft(B, axis=2)
    Cbar = np.einsum("ijk,jlk->ilk", Abar, Bbar)
    return _real_ifft(Cbar)


def ttranspose(T) -> np.ndarray:
    """t-transpose: each frontal slice transposed, slices 2..n3 in reverse order; ``(n2, n1, n3)``."""
    T = _check_tensor(T)
    Tt = np.transpose(T, (1, 0, 2))
    return np.concatenate([Tt[:, :, :1], Tt[:, :, :0:-1]], axis=2)


def tsvd(T) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Skinny t-SVD ``T = U * S * V^T`` (t-product, t-transpose).

    Args:
        T: ``(n1, n2, n3)`` real tensor.

    Returns:
        ``U`` ``(n1, r, n3)``, ``S`` ``(r, r, n3)`` f-diagonal, ``V`` ``(n2, r, n3)``, ``r = min(n1, n2)``;
        all real.
    """
    T = _check_tensor(T)
    n1, n2, n3 = T.shape
    r = min(n1, n2)
    Tbar = np.fft.fft(T, axis=2)
    Ubar = np.zeros((n1, r, n3), dtype=complex)
    Sbar = np.zeros((r, r, n3), dtype=complex)
    Vbar = np.zeros((n2, r, n3), dtype=complex)
    for k in range(_half_slices(n3)):
        u, s, vh = np.linalg.svd(Tbar[:, :, k], full_matrices=False)
        Ubar[:, :, k], Vbar[:, :, k] = u, vh.conj().T
        Sbar[:, :, k] = np.diag(s)
    for arr in (Ubar, Sbar, Vbar):
        _fill_conjugates(arr)
    return _real_ifft(Ubar), _real_ifft(Sbar), _real_ifft(Vbar)


def _fourier_singular_values(T: np.ndarray) -> np.ndarray:
    """Singular values of every Fourier slice: ``(n3, min(n1, n2))``."""
    Tbar = np.fft.fft(T, axis=2)
    half = np.linalg.svd(np.moveaxis(Tbar[:, :, : _half_slices(T.shape[2])], 2, 0), compute_uv=False)
    n3 = T.shape[2]
    return np.concatenate([half, half[1: n3 - _half_slices(n3) + 1][::-1]], axis=0)


def tensor_rank_profile(T, tol: float = 1e-10) -> np.ndarray:
    """Number of singular values above ``tol`` in each Fourier slice: int array ``(n3,)``.

    The tubal rank is its maximum.
    """
    T = _check_tensor(T)
    return (_fourier_singular_values(T) > tol).sum(axis=1)


def ldelta(x, delta: float) -> np.ndarray:
    """The scalar surrogate ``f_delta(x) = (1 + delta) x / (delta + x)`` for ``x >= 0`` (elementwise).

    ``f_delta(0) = 0``; ``f_delta(x) -> 1`` for ``x >> delta``; ``f_delta(x) -> x`` as ``delta -> inf``.

    Raises:
        ValueError: ``delta <= 0`` or a negative ``x``.
    """
    delta = _check_positive(delta, "delta")
    x = np.asarray(x, dtype=np.float64)
    if np.any(x < 0):
        raise ValueError("x: expected non-negative values (singular values)")
    return (1.0 + delta) * x / (delta + x)


def ldelta_tensor_norm(T, delta: float) -> float:
    """``||T||_{l_delta} = (1/n3) sum_k sum_i f_delta(sigma_i(T̄^(k)))`` for a real ``(n1, n2, n3)`` tensor."""
    T = _check_tensor(T)
    return float(ldelta(_fourier_singular_values(T), delta).sum() / T.shape[2])


def tnn(T) -> float:
    """Tensor nuclear norm ``(1/n3) sum_k ||T̄^(k)||_*`` of a real ``(n1, n2, n3)`` tensor."""
    T = _check_tensor(T)
    return float(_fourier_singular_values(T).sum() / T.shape[2])


def _scalar_objective(x, s, tau, delta):
    return tau * (1.0 + delta) * x / (delta + x) + 0.5 * (x - s) ** 2


def _largest_cubic_root(s: np.ndarray, tau: np.ndarray, delta: float) -> np.ndarray:
    """Largest real root ``u`` of ``u^3 - (s+delta) u^2 + tau delta (1+delta) = 0`` (NaN when only one is real).

    With ``u = x + delta`` this is the stationarity condition ``(x - s)(delta + x)^2 + tau delta (1+delta) = 0``.
    The cubic has one negative root; the largest of the two others (when real) is the local minimiser.
    """
    b = s + delta
    P = -(b**2) / 3.0
    Q = -2.0 * b**3 / 27.0 + tau * delta * (1.0 + delta)
    root = np.full_like(s, np.nan)
    three_real = (4.0 * P**3 + 27.0 * Q**2) < 0
    Pm, Qm = P[three_real], Q[three_real]
    arg = np.clip((3.0 * Qm / (2.0 * Pm)) * np.sqrt(-3.0 / Pm), -1.0, 1.0)
    w = 2.0 * np.sqrt(-Pm / 3.0) * np.cos(np.arccos(arg) / 3.0)
    root[three_real] = w + b[three_real] / 3.0
    # Two Newton polishing steps on the cubic remove the trigonometric round-off.
    u = root[three_real]
    d = tau[three_real] * delta * (1.0 + delta)
    bb = b[three_real]
    for _ in range(2):
        g = u**3 - bb * u**2 + d
        dg = 3.0 * u**2 - 2.0 * bb * u
        step = np.divide(g, dg, out=np.zeros_like(g), where=np.abs(dg) > 1e-300)
        u = u - step
    root[three_real] = u
    return root


def prox_ldelta_scalar(s, tau, delta: float, method: str = "cubic", max_iter: int = 50) -> np.ndarray:
    """Elementwise ``x* = argmin_{x >= 0} tau f_delta(x) + (x - s)^2 / 2``.

    Stationary points solve ``(x - s)(delta + x)^2 + tau delta (1 + delta) = 0``; the candidate
    root in ``(0, s]`` is compared with ``x = 0`` and the smaller objective wins.

    Args:
        s: array of non-negative numbers (singular values).
        tau: positive number or array broadcastable to ``s`` (``1/mu`` inside ADMM).
        delta: the surrogate's parameter, ``> 0``.
        method: ``"cubic"`` (closed-form root, Newton-polished) or ``"fixed_point"``
            (``x <- max(0, s - tau delta (1+delta) / (delta + x)^2)`` from ``x = s``, ``max_iter`` steps).
        max_iter: iterations of the fixed-point method.

    Returns:
        ``x*`` with the shape of ``s``; ``0 <= x* <= s`` and ``x*`` is nondecreasing in ``s``.

    Raises:
        ValueError: negative ``s``, non-positive ``tau`` or ``delta``, unknown ``method``.
    """
    delta = _check_positive(delta, "delta")
    s = np.asarray(s, dtype=np.float64)
    if np.any(~np.isfinite(s)) or np.any(s < 0):
        raise ValueError("s: expected finite non-negative values")
    tau_arr = np.asarray(tau, dtype=np.float64)
    if np.any(~np.isfinite(tau_arr)) or np.any(tau_arr <= 0):
        raise ValueError(f"tau: expected positive values, got {tau!r}")
    s_b, tau_b = np.broadcast_arrays(s, tau_arr)
    s_f, tau_f = s_b.ravel().copy(), tau_b.ravel().copy()
    if method == "cubic":
        x = _largest_cubic_root(s_f, tau_f, delta) - delta
        x = np.where(np.isfinite(x) & (x > 0) & (x <= s_f), x, 0.0)
    elif method == "fixed_point":
        x = s_f.copy()
        c = tau_f * delta * (1.0 + delta)
        for _ in range(max_iter):
            x = np.maximum(0.0, s_f - c / (delta + x) ** 2)
    else:
        raise ValueError(f"method: expected 'cubic' or 'fixed_point', got {method!r}")
    better_zero = _scalar_objective(0.0, s_f, tau_f, delta) <= _scalar_objective(x, s_f, tau_f, delta)
    x = np.where(better_zero, 0.0, x)
    return x.reshape(s_b.shape)


def prox_tensor(T, tau: float, delta: float = 0.1, norm: str = "ldelta", return_norm: bool = False):
    """t-SVD shrinkage: ``argmin_G tau ||G||_norm + ||G - T||_F^2 / 2``.

    Per Fourier slice ``T̄^(k) = U diag(s) V^H``, ``Ḡ^(k) = U diag(s') V^H`` with ``s' = prox(s)``
    (Parseval makes the problem separate over slices; the ``1/n3`` factors cancel).

    Args:
        T: ``(n1, n2, n3)`` real tensor.
        tau: positive weight (``1/mu`` inside ADMM).
        delta: the l_delta parameter (ignored for ``"tnn"``).
        norm: ``"ldelta"`` (scalar prox of ``f_delta``) or ``"tnn"`` (soft threshold ``max(s - tau, 0)``).
        return_norm: also return the norm of the result (from the shrunk singular values).

    Returns:
        ``G`` ``(n1, n2, n3)`` real, or ``(G, norm(G))`` with ``return_norm``.

    Raises:
        ValueError: bad shapes, ``tau <= 0``, ``delta <= 0`` or unknown ``norm``.
    """
    T = _check_tensor(T)
    tau = _check_positive(tau, "tau")
    if norm not in ("ldelta", "tnn"):
        raise ValueError(f"norm: expected 'ldelta' or 'tnn', got {norm!r}")
    if norm == "ldelta":
        delta = _check_positive(delta, "delta")
    n3 = T.shape[2]
    half = _half_slices(n3)
    Tbar = np.fft.fft(T, axis=2)
    u, s, vh = np.linalg.svd(np.moveaxis(Tbar[:, :, :half], 2, 0), full_matrices=False)
    if norm == "ldelta":
        s_new = prox_ldelta_scalar(s, tau, delta)
        slice_norms = ldelta(s_new, delta).sum(axis=1)
    else:
        s_new = np.maximum(s - tau, 0.0)
        slice_norms = s_new.sum(axis=1)
    Gbar = np.empty_like(Tbar)
    Gbar[:, :, :half] = np.moveaxis((u * s_new[:, None, :]) @ vh, 0, 2)
    _fill_conjugates(Gbar)
    G = _real_ifft(Gbar)
    if not return_norm:
        return G
    weights = np.full(half, 2.0)
    weights[0] = 1.0
    if n3 % 2 == 0:
        weights[-1] = 1.0
    return G, float((weights * slice_norms).sum() / n3)
