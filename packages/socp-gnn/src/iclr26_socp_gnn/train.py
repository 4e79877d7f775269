"""Training (Adam, cosine decay, gradient clipping) and evaluation of the GNN and the MLP baseline."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch_geometric.loader import DataLoader

from .graph import EDGE_TYPES, NODE_DIMS, graphs, to_heterodata
from .problem import SOCP
from .problem import project as project_point


@dataclass
class History:
    """What ``fit`` recorded: training loss per epoch, validation metric every ``log_every`` epochs."""

    loss: list[float] = field(default_factory=list)
    val: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0
    best_epoch: int | None = None


def _check_items(items, name: str):
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError(f"{name}: expected a non-empty list of (SOCP, label) pairs, got {type(items).__name__}")
    if not all(isinstance(it, (list, tuple)) and len(it) == 2 and isinstance(it[0], SOCP) for it in items):
        raise TypeError(f"{name}: every item must be an (SOCP, label) pair")


def _targets(batch, task: str) -> torch.Tensor:
    return batch["var"].y if task == "solution" else batch.y


SCALINGS = ("pooled", "variable")
FEATURE_CONSTANT = 1e-9  # a feature column whose std is below this x (1 + |mean|) is constant: centred, not scaled
TARGET_STD_FLOOR = 1e-3  # per-position stds below this x their RMS (constant variables, loads) are raised to it


def _floored_std(std: torch.Tensor) -> torch.Tensor:
    """Per-position stds (d,) with every entry below ``TARGET_STD_FLOOR`` x their RMS raised to that floor."""
    rms = float(torch.sqrt(torch.mean(std ** 2))) if std.numel() else 0.0
    return torch.clamp(std, min=TARGET_STD_FLOOR * rms) if rms > 0 else torch.ones_like(std)


def set_scaling(model, data: list, scaling: str = "pooled") -> None:
    """Fits the input and target scaling buffers of ``model`` (see ``models._Scaled``) on training graphs.

    ``data``: ``HeteroData`` graphs from ``graphs`` (labels attached). ``'pooled'``: every node feature column
    standardised over all nodes of its type (a column of one value is only centred), every edge weight divided
    by its edge type's RMS, targets by one mean and one std (equivariant; any instance size). ``'variable'``
    (instances of one layout, e.g. a power grid under load changes): in addition the load ``h_r`` of each
    linear row gets its own z-score across the training instances (stds below ``TARGET_STD_FLOOR`` times
    their RMS, buses without load, are raised to that floor), and for the solution task each variable's
    target is centred on its own training mean. The loss divides the error by one common scale, the RMS of the
    per-variable stds (``y_std``), so it is proportional to the reported error Σ‖x̂ − x*‖² / Σ‖x* − mean‖²; the
    network's output is scaled per variable (``out_std``: each variable's own std, floored as above), so it
    predicts z-scores of unit spread. With the common scale as the output scale too, the one shared GNN readout
    had to emit ~5 units of spread for the marginal generator and ~0.2 for the v/c/s variables, and sat near the mean
    predictor (case9 quick, tuning seed 101: test rel MSE 0.65; with ``out_std`` 0.11).

    Raises:
        ValueError: unknown ``scaling``; ``'variable'`` with instances of different sizes.
    """
    if scaling not in SCALINGS:
        raise ValueError(f"scaling: expected one of {SCALINGS}, got {scaling!r}")
    dtype = next(model.parameters()).dtype
    for t in NODE_DIMS:
        x = torch.cat([d[t].x for d in data]).to(dtype)
        mean = x.mean(0) if len(x) else torch.zeros(NODE_DIMS[t], dtype=dtype)
        std = x.std(0, correction=0) if len(x) else torch.ones(NODE_DIMS[t], dtype=dtype)
        setattr(model, f"x_mean_{t}", mean)
        setattr(model, f"x_std_{t}", torch.where(std > FEATURE_CONSTANT * (1 + mean.abs()), std, torch.ones_like(std)))
    for et in EDGE_TYPES:
        w = torch.cat([d[et].edge_weight for d in data]).to(dtype)
        rms = float(torch.sqrt(torch.mean(w ** 2))) if len(w) else 0.0
        setattr(model, f"w_scale_{et[1]}", torch.tensor(rms if rms > 0 else 1.0, dtype=dtype))
    task, empty = model.task, torch.zeros(0, dtype=dtype)
    model.h_mean, model.h_std = empty, torch.ones(0, dtype=dtype)
    if scaling == "variable":
        sizes = {(d["var"].x.size(0), d["lin"].x.size(0)) for d in data}
        if len(sizes) != 1:
            raise ValueError(f"scaling: 'variable' needs instances of one layout (same n, q), got (n, q) in "
                             f"{sorted(sizes)}")
        (q,) = {s[1] for s in sizes}
        if q:
            h = torch.stack([d["lin"].x[:, 0] for d in data]).to(dtype)
            model.h_mean, model.h_std = h.mean(0), _floored_std(h.std(0, correction=0))
    if task == "feasibility":
        return
    if scaling == "variable" and task == "solution":
        ys = torch.stack([_targets(d, task) for d in data]).to(dtype)
        per_var = ys.std(0, correction=0)
        spread = float(torch.sqrt(torch.mean(per_var ** 2)))
        model.y_mean, model.y_std = ys.mean(0), torch.full_like(ys[0], spread if spread > 0 else 1.0)
        model.out_std = _floored_std(per_var)
    else:
        ys = torch.cat([_targets(d, task).reshape(-1) for d in data]).to(dtype)
        std = float(ys.std())
        model.y_mean, model.y_std = ys.mean(), torch.tensor(std if std > 0 else 1.0, dtype=dtype)


def fit(model, train, val=None, epochs: int = 300, lr: float = 1e-3, batch_size: int = 64, seed: int = 0,
        device="cpu", weight_decay: float = 0.0, clip: float = 1.0, lr_min: float = 1e-5, log_every: int = 25,
        restore_best: bool = True, callback=None, progress=None, scaling: str = "pooled") -> History:
    """Trains ``model`` on ``train`` (list of ``(SOCP, label)``); returns its ``History``.

    Adam with cosine decay from ``lr`` to ``lr_min`` per step, gradient-norm clip ``clip``; loss: BCE with
    logits (feasibility) or MSE on standardised targets (objective, solution). Inputs and targets are scaled
    as ``scaling`` says (``set_scaling``: ``'pooled'`` keeps the GNN equivariant and accepts any instance size;
    ``'variable'`` standardises every variable and load of a fixed layout, for power grids). With ``val``, the
    validation metric of ``evaluate`` is logged every ``log_every`` epochs and, if ``restore_best``, the best
    state is restored at the end (early stopping).
    ``callback(epoch, val_metric)`` is called at each log; ``progress`` wraps the range of epochs (a
    progress-bar function such as ``iclr26_shared.cli.progress``).
    """
    _check_items(train, "train")
    if val is not None:
        _check_items(val, "val")
    for name, v in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    if not lr > 0:
        raise ValueError(f"lr: expected a positive number, got {lr}")
    task = model.task
    device = torch.device(device)
    dtype = next(model.parameters()).dtype
    data = graphs(train, task, dtype)
    set_scaling(model, data, scaling)
    model.to(device)
    # foreach: one fused update over the GNN's ~250 small tensors (the per-tensor loop cost a quarter of a step)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    steps = epochs * math.ceil(len(data) / batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (lr_min + 0.5 * (lr - lr_min) * (1 + math.cos(math.pi * min(s, steps) / steps))) / lr)
    gen = torch.Generator().manual_seed(seed)
    # collating PyG batches costs about as much as a step on these small graphs: draw N_SHUFFLES random
    # partitions into batches once (a DataLoader over a random order) and cycle through them (batch order still
    # reshuffled every epoch)
    partitions = [[batch.to(device) for batch in DataLoader(data, batch_size=batch_size,
                                                            sampler=torch.randperm(len(data), generator=gen).tolist())]
                  for _ in range(min(epochs, N_SHUFFLES))]
    hist, best, start = History(), None, time.perf_counter()
    for epoch in range(1, epochs + 1) if progress is None else progress(range(1, epochs + 1)):
        model.train()
        total, count = 0.0, 0
        part = partitions[(epoch - 1) % len(partitions)]
        for b in torch.randperm(len(part), generator=gen).tolist():
            batch = part[b]
            out, y = model(batch), _targets(batch, task)
            if task == "feasibility":
                loss = torch.nn.functional.binary_cross_entropy_with_logits(out, y)
            else:
                loss = torch.mean(((out - y) / model.target_scale(batch)[1]) ** 2)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            sched.step()
            total += loss.item() * y.numel()
            count += y.numel()
        hist.loss.append(total / count)
        if val is not None and (epoch % log_every == 0 or epoch == epochs):
            metric = evaluate(model, val, device=device)[_HEADLINE[task]]
            hist.val.append((epoch, metric))
            if callback is not None:
                callback(epoch, metric)
            if best is None or metric < best[0]:
                best = (metric, epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
    if best is not None and restore_best:
        model.load_state_dict(best[2])
        hist.best_epoch = best[1]
    hist.seconds = time.perf_counter() - start
    return hist


N_SHUFFLES = 8
_HEADLINE = {"feasibility": "error_rate", "objective": "rel_mse", "solution": "rel_mse"}


@torch.no_grad()
def predict(model, items, device="cpu", batch_size: int = 512) -> list:
    """Predictions per instance: feasibility probability, optimal value, or an (n,) solution array."""
    model.eval()
    model.to(device)
    dtype = next(model.parameters()).dtype
    data = [to_heterodata(P, dtype=dtype) for P, *_ in items]
    out = []
    for batch in DataLoader(data, batch_size=batch_size):
        batch = batch.to(device)
        z = model(batch)
        if model.task == "solution":
            out += unbatch_solution(z, batch)
        elif model.task == "feasibility":
            out += torch.sigmoid(z).cpu().numpy().astype(float).tolist()
        else:
            out += z.cpu().numpy().astype(float).tolist()
    return out


def unbatch_solution(z: torch.Tensor, batch) -> list[np.ndarray]:
    """A solution model's output on a ``Batch`` (total variables,) split into one float64 (n_i,) array per instance."""
    sizes = (batch["var"].ptr[1:] - batch["var"].ptr[:-1]).tolist()
    return [v.detach().cpu().numpy().astype(float) for v in torch.split(z, sizes)]


def evaluate(model, test, task: str | None = None, device="cpu", project: bool = False,
             prox_step: float | None = None, prox_centre=None) -> dict[str, float]:
    """Test metrics of ``model`` on ``test`` (list of ``(SOCP, label)``).

    feasibility: ``error_rate`` (threshold 0.5). objective: ``rel_mse`` = Σ(ŷ−y)²/Σ(y−ȳ)², ``mae``.
    solution: ``rel_mse`` = Σ‖x̂−x*‖²/Σ‖x* − mean(x*)‖², ``objective_gap`` = mean |cᵀx̂−cᵀx*|/(1+|cᵀx*|),
    ``cone_violation_mean``/``cone_violation_max`` of x̂. Always ``inference_ms`` per instance (batched).
    With ``project`` (solution only), every x̂ is also restored to feasibility by ``problem.project`` and the same
    metrics are reported for the projections under ``projected_*``, plus ``projected_violation_max`` (largest
    cone, linear-row or bound violation), ``projection_failures`` (instances where Clarabel did not return a
    projection; their unprojected x̂ is scored), ``projection_inaccurate`` (returned at Clarabel's reduced
    tolerances; scored as returned), ``projection_retried`` (solved by the squared-form retry of ``project``) and
    ``projection_ms`` (wall time per instance).
    With ``prox_step`` (solution only), every x̂ is also restored by the proximal projection
    ``problem.project(P, x̂, step=prox_step)`` (the minimiser of ``cᵀx + ‖x − x̂‖²/(2·prox_step)`` over the feasible
    set), reported under ``prox_*`` with ``prox_failures`` and ``prox_ms``; ``prox_centre`` ((n,), optional) adds the
    same restoration started from that fixed point instead of x̂ (e.g. the training mean), under ``prox_centre_*``.

    Raises:
        ValueError: ``task`` differs from the model's, or ``project``/``prox_step`` for a task other than
            ``'solution'``.
    """
    _check_items(test, "test")
    task = task or model.task
    if task != model.task:
        raise ValueError(f"task: the model was built for {model.task!r}, got {task!r}")
    for name, asked in (("project", project), ("prox_step", prox_step is not None)):
        if asked and task != "solution":
            raise ValueError(f"{name}: expected a solution model (it restores predicted solutions), got task {task!r}")
    start = time.perf_counter()
    pred = predict(model, test, device=device)
    ms = 1e3 * (time.perf_counter() - start) / len(test)
    if task == "feasibility":
        y = np.array([float(lab) for _, lab in test])
        return {"error_rate": float(np.mean((np.array(pred) > 0.5) != (y > 0.5))), "inference_ms": ms}
    if task == "objective":
        y, p = np.array([float(lab) for _, lab in test]), np.array(pred)
        return {"rel_mse": float(np.sum((p - y) ** 2) / np.sum((y - y.mean()) ** 2)),
                "mae": float(np.mean(np.abs(p - y))), "inference_ms": ms}
    out = {**solution_metrics(test, pred), "inference_ms": ms}
    if project:
        start = time.perf_counter()
        restored = [project_point(P, x) for (P, _), x in zip(test, pred)]
        out["projection_ms"] = 1e3 * (time.perf_counter() - start) / len(test)
        out["projection_inaccurate"] = sum(r.status == "optimal_inaccurate" for r in restored)
        out["projection_retried"] = sum(r.status == "optimal_squared" for r in restored)
        out.update(_restored_metrics("projected", "projection", test, pred, restored))
    if prox_step is not None:
        start = time.perf_counter()
        restored = [project_point(P, x, step=prox_step) for (P, _), x in zip(test, pred)]
        out["prox_ms"] = 1e3 * (time.perf_counter() - start) / len(test)
        out.update(_restored_metrics("prox", "prox", test, pred, restored))
        if prox_centre is not None:
            fixed = [np.asarray(prox_centre, float)] * len(test)
            restored = [project_point(P, x, step=prox_step) for (P, _), x in zip(test, fixed)]
            out.update(_restored_metrics("prox_centre", "prox_centre", test, fixed, restored))
    return out


def _restored_metrics(prefix: str, kind: str, test, pred, restored) -> dict[str, float]:
    """``solution_metrics`` of restored points (``SolveResult``s; a failed one scores its x̂) under ``prefix_*``, with
    ``prefix_violation_max`` (largest cone, linear-row or bound violation) and ``kind_failures``."""
    fixed = [x if r.x is None else r.x for r, x in zip(restored, pred)]
    out = {f"{prefix}_{k}": v for k, v in solution_metrics(test, fixed).items()}
    out[f"{prefix}_violation_max"] = max(max(r[k] for k in ("cone_max", "linear_max", "bound_max"))
                                         for r in (P.residuals(x) for (P, _), x in zip(test, fixed)))
    out[f"{kind}_failures"] = sum(r.x is None for r in restored)
    return out


def solution_metrics(test, pred) -> dict[str, float]:
    """``rel_mse``, ``objective_gap``, ``cone_violation_mean``/``_max`` of predicted solutions ``pred`` (list of (n,))
    against ``test``'s ``(SOCP, x*)`` (see ``evaluate``)."""
    X = [np.asarray(lab, float) for _, lab in test]
    mean = np.mean(X, axis=0) if len({x.shape for x in X}) == 1 else None
    num = sum(float(np.sum((p - x) ** 2)) for p, x in zip(pred, X))
    den = sum(float(np.sum((x - (mean if mean is not None else x.mean())) ** 2)) for x in X)
    gaps, viol = [], []
    for (P, x), p in zip(test, pred):
        obj = float(P.c @ x)
        gaps.append(abs(float(P.c @ p) - obj) / (1 + abs(obj)))
        viol.append(P.residuals(p)["cone_max"])
    return {"rel_mse": num / max(den, 1e-300), "objective_gap": float(np.mean(gaps)),
            "cone_violation_mean": float(np.mean(viol)), "cone_violation_max": float(np.max(viol))}
