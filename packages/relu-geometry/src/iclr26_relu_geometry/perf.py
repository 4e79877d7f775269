"""The spec's performance figures: one GD run, one sharpness estimate and one depth computation, timed, with
``pyhessian``'s top-eigenvalue routine (optional extra ``perf``) as the anchor for the sharpness."""
from __future__ import annotations

import time

import torch

from .data import beta_radial, make_targets
from .depth import halfspace_depth
from .model import TwoLayerReLU
from .sharpness import sharpness
from .training import train_gd


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def measure_performance(device: str | torch.device = "cpu", steps: int = 4000, n: int = 1024) -> dict:
    """Seconds for ``train_gd`` (d = 5, n, K = 256, ``steps``), ``sharpness`` (50 power iterations) and
    ``halfspace_depth`` (1000 queries, 2000 points, d = 5, 2000 directions); pyhessian's value and time when installed.
    """
    X = beta_radial(n, 5, 1.0, rng=0).to(device)
    y = make_targets(X, rng=1)[0]
    model = TwoLayerReLU(5, 256, generator=torch.Generator().manual_seed(0)).to(device)
    _, t_train = _timed(lambda: train_gd(model, X, y, 0.2, steps, log_every=steps))
    lam, t_sharp = _timed(lambda: sharpness(model, X, y, iters=50, tol=1e-12))
    Xd = beta_radial(2000, 5, 1.0, rng=2, as_numpy=True)
    _, t_depth = _timed(lambda: halfspace_depth(Xd[:1000], Xd, n_dirs=2000, rng=0))
    out = {"train_gd_seconds": t_train, "train_gd_steps": steps, "sharpness": lam, "sharpness_seconds": t_sharp,
           "halfspace_depth_seconds": t_depth}
    try:
        from pyhessian import hessian
    except ImportError:
        return out
    criterion = lambda f, t: 0.5 * torch.mean((f - t) ** 2)  # noqa: E731 - the same ½ as L(θ)
    torch.manual_seed(0)
    engine = hessian(model, criterion, data=(X, y), cuda=X.is_cuda)
    engine.eigenvalues(maxIter=1, top_n=1)  # warm-up: its first call pays one-time imports inside torch
    (top,), t_anchor = _timed(lambda: engine.eigenvalues(maxIter=50, tol=1e-12, top_n=1)[0])
    out.update(pyhessian_sharpness=float(top), pyhessian_seconds=t_anchor)
    return out
