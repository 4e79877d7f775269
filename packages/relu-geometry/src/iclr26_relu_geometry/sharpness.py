"""Sharpness ``λ_max(∇²_θ L(θ))`` from Hessian-vector products (power iteration or Lanczos).

At a ReLU kink (a pre-activation exactly 0) the autograd convention ``relu'(0) = 0`` is used: the Hessian
is the one of the active piece on which every tied neuron is off, which is what GD itself differentiates.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import nn

from ._checks import positive_int, real, tensor_xy
from .model import mse_loss

METHODS = ("power", "lanczos")


class HessianOperator:
    """``v ↦ ∇²_θ L(θ) v`` for ``L = loss_scale · mean((model(X) − y)²)``, on flat parameter vectors ``(P,)``."""

    def __init__(self, model: nn.Module, X: torch.Tensor, y: torch.Tensor, loss_scale: float = 0.5):
        X, y = tensor_xy(X, y)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.size = sum(p.numel() for p in self.params)
        loss = mse_loss(model, X, y, loss_scale)
        self._grads = torch.autograd.grad(loss, self.params, create_graph=True)
        self.dtype, self.device = self.params[0].dtype, self.params[0].device

    def __call__(self, vec: torch.Tensor) -> torch.Tensor:
        chunks, start = [], 0
        for p in self.params:
            chunks.append(vec[start:start + p.numel()].view_as(p))
            start += p.numel()
        # the gradient of the scalar <∇L, v> (grad_outputs would import sympy through torch.fx: seconds per process)
        dot = sum(torch.sum(g * c) for g, c in zip(self._grads, chunks))
        hv = torch.autograd.grad(dot, self.params, retain_graph=True, allow_unused=True)
        return torch.cat([(h if h is not None else torch.zeros_like(p)).reshape(-1) for h, p in zip(hv, self.params)])


def _power(op, v: torch.Tensor, iters: int, tol: float, shift: float = 0.0):
    """Power iteration on ``op − shift·I``; returns ``(eigenvalue, vector, converged)``."""
    v = v / v.norm()
    lam, converged = float("nan"), False
    for _ in range(iters):
        w = op(v) - shift * v
        new = float(torch.dot(v, w))
        nrm = w.norm()
        if nrm == 0:
            return 0.0, v, True
        v = w / nrm
        if abs(new - lam) <= tol * max(abs(new), 1e-12):
            lam, converged = new, True
            break
        lam = new
    return lam, v, converged


def top_eigenpair(model: nn.Module, X: torch.Tensor, y: torch.Tensor, iters: int = 100, tol: float = 1e-4,
                  loss_scale: float = 0.5, v0: torch.Tensor | None = None, seed: int = 0):
    """λ_max of the Hessian with its eigenvector by power iteration; ``(lam, vec (P,), converged)``.

    Power iteration finds the eigenvalue of largest modulus; when that one is negative the iteration is rerun on
    ``H − μI`` (μ the negative eigenvalue) so that the returned value is the largest algebraic eigenvalue.
    ``v0`` warm-starts the iteration (e.g. the previous vector during training).
    """
    op = HessianOperator(model, X, y, loss_scale)
    if v0 is None or v0.numel() != op.size:
        g = torch.Generator().manual_seed(seed)
        v0 = torch.randn(op.size, generator=g, dtype=op.dtype).to(op.device)
    lam, vec, converged = _power(op, v0.to(op.device, op.dtype), iters, tol)
    if lam < 0:
        shifted, vec, converged = _power(op, vec + 0.1 * v0.to(op.device, op.dtype), iters, tol, shift=lam)
        lam = shifted + lam
    return lam, vec, converged


def sharpness(model: nn.Module, X: torch.Tensor, y: torch.Tensor, iters: int = 100, tol: float = 1e-4,
              method: str = "power", loss_scale: float = 0.5, strict: bool = False) -> float:
    """``λ_max(∇²_θ L(θ))`` with ``L = loss_scale · mean((f − y)²)``, from Hessian-vector products.

    Args:
        model: a torch module mapping ``X (n, d)`` to ``(n,)`` (or ``(n, 1)``).
        X, y: ``(n, d)`` and ``(n,)`` tensors on the model's device.
        iters: at most this many power iterations (Lanczos: its iteration limit).
        tol: relative change of the Rayleigh quotient that counts as converged.
        method: ``"power"`` or ``"lanczos"`` (scipy's ARPACK ``eigsh`` on the HVP operator, float64).
        strict: raise ``RuntimeError`` when not converged after ``iters`` instead of warning.

    Returns:
        The largest algebraic eigenvalue of the Hessian.
    """
    iters, tol = positive_int("iters", iters), real("tol", tol, positive=True)
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    if method == "lanczos":
        return _lanczos(model, X, y, iters, tol, loss_scale)
    lam, _, converged = top_eigenpair(model, X, y, iters, tol, loss_scale)
    if not converged:
        message = f"sharpness: power iteration did not converge to rtol {tol} in {iters} iterations (last {lam:.6g})"
        if strict:
            raise RuntimeError(message)
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return lam


def _lanczos(model, X, y, iters, tol, loss_scale) -> float:
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    op = HessianOperator(model, X, y, loss_scale)

    def matvec(v: np.ndarray) -> np.ndarray:
        t = torch.as_tensor(np.ravel(v), dtype=op.dtype, device=op.device)
        return op(t).detach().cpu().numpy().astype(np.float64)

    lin = LinearOperator((op.size, op.size), matvec=matvec, dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(op.size)
    try:
        vals = eigsh(lin, k=1, which="LA", maxiter=max(iters, 10) * 10, tol=tol, v0=v0, return_eigenvectors=False)
    except ArpackNoConvergence as err:
        raise RuntimeError(f"sharpness: Lanczos did not converge ({err})") from err
    return float(vals[0])
