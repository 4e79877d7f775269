"""Sweeps: frozen run specifications, one pure function per run, resumable JSONL results.

``run_one(spec)`` depends on nothing but the ``RunSpec`` (and ``data_dir``); ``run_sweep`` maps it over
specs with the repository's one fan-out mechanism, ``iclr26_shared.parallel.parallel_map`` (``"local"``
joblib processes, ``jobs=1`` in this process; a ``"dask"`` or ``"ray"`` cluster), and appends one JSON line
per finished run keyed by ``spec.key()``. Timings go to a sidecar ``<out>.timing.jsonl`` so that the
results file itself is byte-identical across backends and reruns.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import pathlib
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from iclr26_shared.bench import atomic_path
from iclr26_shared.parallel import BACKENDS, parallel_map

from .data import LABELINGS, SCHEMES, make_benchmark_splits, make_pu_split
from .datasets import dataset_names, is_file_dataset
from .methods import REGISTRY, get_method
from .metrics import lee_liu_score, oracle_metrics, proxy_accuracy, proxy_auc

BUDGETS = ("cpu", "paper", "smoke")
VARY_C = (0.01, 0.03, 0.05, 0.07, 0.09, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
PRESETS: dict[str, list[tuple[str, str, float]]] = {
    "typical": [("case-control", "scar", 0.1)],
    "vary_c": [("case-control", "scar", c) for c in VARY_C],
    "vary_e": [("case-control", lab, c) for c in (0.05, 0.5) for lab in ("sar_pusb", "sar_lbeA", "sar_lbeB")],
    "cpu_smoke": [("case-control", "scar", 0.5)],
}
PRESETS["paper20"] = PRESETS["typical"] + PRESETS["vary_c"] + PRESETS["vary_e"]
SMOKE = {"epochs": 2, "epochs_stage2": 1, "epochs_phase2": 1, "vae_epochs": 1, "pretrain_steps": 5, "iterations": 2,
         "n_estimators": 3, "max_depth": 6, "warmup": 1, "outer": 1, "inner": 1, "m_steps": 2}


@dataclass(frozen=True)
class RunSpec:
    """One run of the benchmark; hashable and JSON-serialisable.

    Attributes:
        dataset, method: registry keys (``dataset`` may be the path of a ``.npz`` / ``.csv`` file).
            c: label frequency. scheme, labeling: PU construction.
        seed: the only source of randomness. method_params: sorted ``(name, value)`` pairs overriding the budget.
        budget: ``"cpu"`` (the registry's CPU budget), ``"paper"`` (class defaults) or ``"smoke"``.
        device: ``"cpu"``, ``"cuda"``, ...  fallback: apply the opt-in prior-calibrated fallback.
    """

    dataset: str
    method: str
    c: float
    scheme: str = "case-control"
    labeling: str = "scar"
    seed: int = 0
    method_params: tuple = ()
    budget: str = "cpu"
    device: str = "cpu"
    fallback: bool = False

    def __post_init__(self):
        if self.dataset not in dataset_names() and not is_file_dataset(self.dataset):
            raise ValueError(f"dataset: expected one of {dataset_names()} or a .npz / .csv file, "
                             f"got {self.dataset!r}")
        get_method(self.method)
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme: expected one of {list(SCHEMES)}, got {self.scheme!r}")
        if self.labeling not in LABELINGS:
            raise ValueError(f"labeling: expected one of {list(LABELINGS)}, got {self.labeling!r}")
        if self.budget not in BUDGETS:
            raise ValueError(f"budget: expected one of {list(BUDGETS)}, got {self.budget!r}")
        if not 0 < self.c <= 1:
            raise ValueError(f"c: expected a label frequency in (0, 1], got {self.c!r}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["method_params"] = [list(p) for p in self.method_params]
        return d

    def key(self) -> str:
        """Stable sha1 of the canonical JSON of the spec."""
        return hashlib.sha1(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    @property
    def setting(self) -> str:
        """``"<labeling> c=<c>"`` (plus the scheme when not case-control), for tables."""
        base = f"{self.labeling} c={self.c:g}"
        return base if self.scheme == "case-control" else f"{base} ({self.scheme})"


def expand_grid(datasets: Iterable[str], methods: Iterable[str], *, preset: str = "typical",
                seeds: Iterable[int] = (0,), budget: str = "cpu", device: str = "cpu") -> list[RunSpec]:
    """Every ``RunSpec`` of ``datasets`` x ``methods`` x the preset's settings x ``seeds``.

    Presets: ``typical`` (SCAR c = 0.1), ``vary_c`` (13 values of c), ``vary_e`` (3 SAR labelings x c in
    {0.05, 0.5}), ``paper20`` (the paper's 20 settings), ``cpu_smoke`` (SCAR c = 0.5).
    """
    if preset not in PRESETS:
        raise ValueError(f"preset: expected one of {list(PRESETS)}, got {preset!r}")
    return [RunSpec(d, m, c, scheme, lab, int(seed), budget=budget, device=device)
            for d in datasets for m in methods for scheme, lab, c in PRESETS[preset] for seed in seeds]


def _clean(obj: Any) -> Any:
    """JSON-safe: numpy scalars to python, non-finite floats to None."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _estimator(spec: RunSpec):
    m = REGISTRY[spec.method]
    params = dict(spec.method_params)
    accepted = m.cls().get_params()
    if spec.budget == "smoke":
        params = {**{k: v for k, v in SMOKE.items() if k in accepted}, **params}
    if "device" in accepted:
        params["device"] = spec.device
    return m.build("paper" if spec.budget == "paper" else "cpu", random_state=spec.seed, **params)


def run_one(spec: RunSpec, data_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Runs one spec and returns its result record (a plain dict; timings under ``"timing"``).

    Pure: all randomness comes from ``spec.seed`` (torch's thread pool is left as the caller set it).
    A run that raises is returned with ``status="failed"`` and the error text.
    """
    import torch

    # the first optimiser of a process imports torch._dynamo (seconds); keep that out of fit_time
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.0)
    record: dict[str, Any] = {"key": spec.key(), **spec.to_dict(), "setting": spec.setting,
                              "tier": REGISTRY[spec.method].tier, "family": REGISTRY[spec.method].family}
    try:
        record.update(_run(spec, data_dir))
        record["status"] = "ok"
    except Exception as err:  # one failed run must not stop a sweep
        record.update(status="failed", error=f"{type(err).__name__}: {err}",
                      traceback=traceback.format_exc(limit=3))
    return _clean(record)


def _run(spec: RunSpec, data_dir) -> dict[str, Any]:
    train, val, test = make_benchmark_splits(spec.dataset, spec.c, spec.scheme, spec.labeling, spec.seed,
                                             data_dir=data_dir)
    est = _estimator(spec)
    kw: dict[str, Any] = {}
    if est.needs_prior:
        kw["prior"] = train.prior
    if spec.method == "pn":
        kw["y"] = train.y
    if len(val.s) and 0 < val.s.sum() < len(val.s):
        kw.update(X_val=val.X, s_val=val.s, y_val=val.y)
    est.fit(train.X, train.s, **kw)
    score, pred = est.decision_function(test.X), est.predict(test.X)
    if spec.fallback and len(np.unique(pred)) == 1:
        from .metrics import prior_calibrated_predict

        pred = prior_calibrated_predict(score, train.prior)
    out: dict[str, Any] = {f"test_{k}": v for k, v in oracle_metrics(test.y, score, pred).items()}
    out["degenerate"] = bool(out.pop("test_degenerate"))
    out.update(_test_proxy(est, test, spec))
    if "X_val" in kw:
        out["val_proxy_acc"] = proxy_accuracy(val.s, est.predict(val.X), val.prior, spec.scheme)
        out["val_proxy_auc"] = proxy_auc(val.s, est.decision_function(val.X))
        out["val_lee_liu"] = lee_liu_score(val.s, est.predict(val.X))
    hist = getattr(est, "history_", [])
    if hist and "train_neg_risk" in hist[-1]:
        out["train_neg_risk_final"] = hist[-1]["train_neg_risk"]
    out["prior_given"] = kw.get("prior")
    out["prior_used"] = getattr(est, "prior_", None)
    out["threshold"] = float(est.threshold_)
    keep = ("n_total", "n_labeled", "n_unlabeled", "n_pos_unlabeled", "pi_unlabeled", "pi_train", "c_realized",
            "mean_phat_labeled", "mean_phat_positives")
    out["split"] = {k: train.meta[k] for k in keep if k in train.meta}
    out["stand_in_for"] = test.meta.get("stand_in_for", "")
    out["split"]["c_train_adjusted"] = bool(train.meta.get("c_train_adjusted", False))
    out["timing"] = {"fit_time": est.fit_time_, "fit_cpu_time": est.fit_cpu_time_}
    return out


def _test_proxy(est, test, spec: RunSpec) -> dict[str, Any]:
    """PA on the test rows turned into a SCAR case-control PU split (``random_state = seed + 1000``).

    When the test part has too few positives for one labeled row (c * n_pos_test < 1) the proxy is stored as
    None with ``test_proxy_skipped`` True: the run itself is kept.
    """
    n_pos = int(test.y.sum())
    if math.floor(spec.c * n_pos + 1e-9) < 1:
        return {"test_pu_proxy_acc": None, "test_pu_prior": None, "test_proxy_skipped": True}
    tpu = make_pu_split(test.X, test.y, spec.c, scheme="case-control", labeling="scar",
                        random_state=spec.seed + 1000)
    return {"test_pu_proxy_acc": proxy_accuracy(tpu.s, est.predict(tpu.X), tpu.prior), "test_pu_prior": tpu.prior,
            "test_proxy_skipped": False}


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a JSONL file; a truncated last line (an interrupted write) is skipped."""
    path = pathlib.Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            if line.strip():
                out.append(json.loads(line))
    return out


def timing_path(out: str | os.PathLike) -> pathlib.Path:
    """The sidecar holding the wall times of the results in ``out``."""
    p = pathlib.Path(out)
    return p.with_name(p.stem + ".timing.jsonl")


class _Runner:
    """Picklable ``spec -> run_one(spec, data_dir)``."""

    def __init__(self, data_dir):
        self.data_dir = data_dir

    def __call__(self, spec: RunSpec) -> dict[str, Any]:
        return run_one(spec, self.data_dir)


def run_sweep(specs: Iterable[RunSpec], *, backend: str = "local", jobs: int = 1, address: str | None = None,
              out: str | os.PathLike = "results.jsonl", resume: bool = True, overwrite: bool = False,
              retry_failed: bool = False, data_dir: str | os.PathLike | None = None,
              on_result: Callable[[dict[str, Any]], None] | None = None,
              run: Callable[[RunSpec], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Runs every spec not already in ``out`` and returns the records of all ``specs`` (finished ones included).

    Args:
        specs: run specifications (duplicates run once).
        backend: ``"local"`` (joblib's loky processes), ``"dask"`` or ``"ray"`` (see
            ``iclr26_shared.parallel``).
        jobs: local workers, or the size of the local cluster started when no ``address`` is given
            (``"local"`` with ``jobs=1`` runs in this process).
        address: the Dask scheduler or Ray cluster to join (default: start a local one).
        out: JSONL results file; each finished run is appended as one line (timings in the sidecar).
        resume: skip specs whose key is already in ``out``. With ``resume=False`` an existing ``out`` is an
            error unless ``overwrite``.
        retry_failed: also rerun the specs whose stored record has ``status="failed"``; their old lines are
            removed from ``out`` and its sidecar first (atomic rewrite), so each key keeps one line.
        on_result: called with each new record as it arrives (progress display).
        run: picklable ``spec -> record`` (default ``run_one`` with ``data_dir``); ``sweep_overhead`` passes a
            no-op to time the dispatch and the writes alone.

    Raises:
        ValueError: unknown backend; ``out`` exists with ``resume=False`` and ``overwrite=False``.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if int(jobs) < 1:
        raise ValueError(f"jobs: expected a positive number of workers, got {jobs}")
    out = pathlib.Path(out)
    specs = list(dict.fromkeys(specs))
    if not resume:
        if out.exists() and not overwrite:
            raise ValueError(f"out: {str(out)!r} exists; pass resume=True to continue it or overwrite=True (--force)")
        out.unlink(missing_ok=True)
        timing_path(out).unlink(missing_ok=True)
    done = {r["key"]: r for r in read_jsonl(out)}
    if retry_failed:
        failed = {k for k, r in done.items() if r.get("status") == "failed"}
        if failed:
            _drop_keys(out, failed)
            _drop_keys(timing_path(out), failed)
            done = {k: r for k, r in done.items() if k not in failed}
    pending = [s for s in specs if s.key() not in done]
    out.parent.mkdir(parents=True, exist_ok=True)
    for path in (out, timing_path(out)):  # an interrupted write leaves a partial last line: close it
        if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("\n")
    if pending:
        with open(out, "a", encoding="utf-8") as fh, open(timing_path(out), "a", encoding="utf-8") as th:
            runs = parallel_map(_Runner(data_dir) if run is None else run, pending, backend=backend, jobs=int(jobs),
                                address=address,
                                extra="iclr26-pubench")
            for rec in runs:
                timing = rec.pop("timing", None)
                fh.write(json.dumps(rec, sort_keys=True) + "\n")
                fh.flush()
                th.write(json.dumps({"key": rec["key"], **(timing or {})}, sort_keys=True) + "\n")
                th.flush()
                done[rec["key"]] = rec
                if on_result is not None:
                    on_result(rec)
    times = {r["key"]: r for r in read_jsonl(timing_path(out))}
    return [{**done[s.key()], "timing": {k: v for k, v in times.get(s.key(), {}).items() if k != "key"}}
            for s in specs if s.key() in done]


def _drop_keys(path: pathlib.Path, keys: set[str]) -> None:
    """Rewrites the JSONL file ``path`` atomically without the records whose ``key`` is in ``keys``."""
    if not path.exists():
        return
    kept = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and _line_key(line) not in keys]
    with atomic_path(path) as tmp:
        tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def _line_key(line: str) -> str | None:
    try:
        return json.loads(line).get("key")
    except json.JSONDecodeError:
        return None


class _NoOp:
    """Picklable ``spec -> record`` that trains nothing: the record of a run that took no time."""

    def __call__(self, spec: RunSpec) -> dict[str, Any]:
        return {"key": spec.key(), **spec.to_dict(), "setting": spec.setting, "status": "ok",
                "timing": {"fit_time": 0.0}}


def sweep_overhead(out: str | os.PathLike, n: int = 200, jobs: int = 2) -> dict[str, float]:
    """Wall seconds of ``run_sweep`` over ``n`` no-op specs on ``jobs`` local joblib workers into ``out``.

    Returns ``{"cold": s, "warm": s}``: the first sweep includes starting the workers (each imports torch and
    this package), the second reuses joblib's worker pool, so it times dispatch and the JSONL writes alone.
    """
    specs = [RunSpec("digits", "naive", 0.5, seed=i) for i in range(n)]
    seconds = {}
    for phase in ("cold", "warm"):
        start = time.perf_counter()
        run_sweep(specs, backend="local", jobs=jobs, out=out, resume=False, overwrite=True, run=_NoOp())
        seconds[phase] = time.perf_counter() - start
    return seconds
