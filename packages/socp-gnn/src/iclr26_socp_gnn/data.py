"""Embedded data: random SOCP instances labelled by Clarabel, feasibility calibration, caching.

Nothing downloads: instances are generated from a seed and labelled by the exact solver.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib

import numpy as np
import torch
from iclr26_shared.cache import cache_dir
from torch_geometric.data import HeteroData, InMemoryDataset

from .graph import from_heterodata, graphs
from .grid import socp_opf  # noqa: F401  (the spec's data.socp_opf; lives in grid, needs the [grid] extra)
from .problem import SOCP, SOCPDataset, solve  # noqa: F401  (SOCPDataset: also data.SOCPDataset)

TASKS = ("feasibility", "objective", "solution")
PILOT_SEED = 20_260_415  # pilot instances of the g_shift calibration; distinct from every benchmark seed
PILOT_SIZE = 200
# bump when the generator or the labelling changes: part of every cache key and checked against a cached dataset's
# meta, so that a dataset made by another generator is never read back
GENERATOR_VERSION = 2


def _check_sizes(n: int, m: int, k: int, density: float, p: float) -> None:
    for name, v in (("n", n), ("m", m), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    if not 0 < density <= 1:
        raise ValueError(f"density: expected 0 < density <= 1, got {density}")
    if not (np.isfinite(p) and p >= 1):
        raise ValueError(f"p: expected a finite number >= 1, got {p}")


def random_socp(n: int = 10, m: int = 5, k: int = 3, density: float = 0.3, p: float = 2.0,
                g_shift: float | None = None, bounds: float = 1.0, seed=None) -> SOCP:
    """One random instance: ``c ~ N(0, I)``; per cone ``A_i`` = Bernoulli(density) mask × N(0, 1) (all-zero
    rows redrawn), ``b_i ~ N(0, I_k)``, ``f_i`` = mask × N(0, 1), ``g_i = N(0, 1) + g_shift``; ``-bounds ≤ x ≤ bounds``.

    ``g_shift=None`` uses the calibrated value for ``(n, m, k, p, density, bounds)`` (≈ 50% feasible).
    """
    _check_sizes(n, m, k, density, p)
    if not bounds > 0:
        raise ValueError(f"bounds: expected a positive number, got {bounds}")
    if g_shift is None:
        g_shift = calibrate_g_shift(n, m, k, p, density, bounds)
    rng = np.random.default_rng(seed)
    A, b, f = [], [], []
    for _ in range(m):
        Ai = (rng.random((k, n)) < density) * rng.standard_normal((k, n))
        for r in range(k):
            while not Ai[r].any():
                Ai[r] = (rng.random(n) < density) * rng.standard_normal(n)
        A.append(Ai)
        b.append(rng.standard_normal(k))
        f.append((rng.random(n) < density) * rng.standard_normal(n))
    g = rng.standard_normal(m) + g_shift
    c = rng.standard_normal(n)
    return SOCP(c=c, A=A, b=b, f=f, g=g, lb=-bounds * np.ones(n), ub=bounds * np.ones(n), p=p)


def calibrate_g_shift(n: int = 10, m: int = 5, k: int = 3, p: float = 2.0, density: float = 0.3,
                      bounds: float = 1.0, lo: float = 0.0, hi: float = 4.0, iterations: int = 7) -> float:
    """The ``g_shift`` making ≈ 50% of instances feasible: bisection on ``PILOT_SIZE`` pilot instances.

    Feasibility is monotone in ``g_shift`` (raising ``g`` only relaxes the cones), so the pilots are drawn
    once with common random numbers and only ``g`` moves. The value is cached per configuration.
    """
    _check_sizes(n, m, k, density, p)
    key = f"gshift_n{n}_m{m}_k{k}_p{p:g}_d{density:g}_b{bounds:g}_s{PILOT_SEED}.json"
    path = cache_dir("socp-gnn") / key
    if path.exists():
        return float(json.loads(path.read_text())["g_shift"])
    pilots = [random_socp(n, m, k, density, p, 0.0, bounds, seed=[PILOT_SEED, i]) for i in range(PILOT_SIZE)]

    def feasible_fraction(shift: float) -> float:
        ok = 0
        for P in pilots:
            Q = SOCP(c=P.c, A=P.A, b=P.b, f=P.f, g=P.g + shift, lb=P.lb, ub=P.ub, p=P.p)
            ok += solve(Q, min_norm=False).status == "optimal"
        return ok / len(pilots)

    while feasible_fraction(hi) < 0.5:
        lo, hi = hi, 2 * hi + 1
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible_fraction(mid) >= 0.5 else (mid, hi)
    shift = round(0.5 * (lo + hi), 6)
    from iclr26_shared.bench import write_json_atomic

    write_json_atomic(path, {"g_shift": shift, "pilots": PILOT_SIZE})
    return shift


def label_instance(P: SOCP, task: str, unique_tol: float = 1e-3):
    """``(label, outcome, solver seconds)`` for one instance.

    ``outcome`` is ``"feasible"``, ``"infeasible"`` or ``"discarded"`` (any other solver status, or, for the
    solution task, an optimum that moves by more than ``unique_tol`` under a ``1e-6‖x‖²`` regulariser).
    Infeasible instances have no label for ``objective``/``solution`` (label ``None``).
    ``unique_tol`` is 1e-3, not the spec's 1e-4: with Clarabel's 1e-8 tolerances a unique optimum on a
    curved cone boundary is only located to O(√1e-8) = 1e-4, so 1e-4 rejected ~80% of unique optima.
    """
    if task not in TASKS:
        raise ValueError(f"task: expected one of {TASKS}, got {task!r}")
    res = solve(P, min_norm=task == "solution")
    if res.status == "infeasible":
        return (0 if task == "feasibility" else None), "infeasible", res.time
    if res.status != "optimal":
        return None, "discarded", res.time
    if task == "feasibility":
        return 1, "feasible", res.time
    if task == "objective":
        return res.obj, "feasible", res.time
    reg = solve(P, regularise=1e-6)
    if reg.status != "optimal" or np.max(np.abs(reg.x - res.x)) > unique_tol:
        return None, "discarded", res.time + reg.time
    return res.x, "feasible", res.time + reg.time


def _label_chunk(task, idx, n, m, k, density, p, g_shift, bounds, seed, stream):
    out = []
    for i in idx:
        P = random_socp(n, m, k, density, p, g_shift, bounds, seed=[seed, stream, i])
        label, outcome, secs = label_instance(P, task)
        out.append((i, P, label, outcome, secs))
    return out


def make_dataset(task: str, n_instances: int, n: int = 10, m: int = 5, k: int = 3, p: float = 2.0, seed: int = 0,
                 n_jobs: int = 1, density: float = 0.3, bounds: float = 1.0, g_shift: float | None = None,
                 cache: bool = False, stream: int = 0) -> SOCPDataset:
    """``n_instances`` labelled instances for ``task``.

    ``feasibility``: balanced, half feasible and half infeasible. ``objective``/``solution``: feasible
    instances only (solution: unique optimum checked, min-norm target). Instance ``i`` is drawn from the
    seed ``[seed, stream, i]`` (another ``stream`` gives a disjoint test set); candidates are taken in index
    order, so the result does not depend on ``n_jobs``.
    ``meta`` records ``g_shift``, the feasible fraction among candidates, the discarded count and the
    mean solver time. ``cache=True`` stores/reuses the dataset under the user cache directory (``SOCPGraphs``).
    """
    if task not in TASKS:
        raise ValueError(f"task: expected one of {TASKS}, got {task!r}")
    if isinstance(n_instances, bool) or not isinstance(n_instances, (int, np.integer)) or n_instances < 1:
        raise ValueError(f"n_instances: expected a positive integer, got {n_instances!r}")
    _check_sizes(n, m, k, density, p)
    if g_shift is None:
        g_shift = calibrate_g_shift(n, m, k, p, density, bounds)
    request = dict(task=task, n_instances=n_instances, n=n, m=m, k=k, p=float(p), seed=seed, stream=stream,
                   density=density, bounds=bounds, g_shift=g_shift, generator=GENERATOR_VERSION)
    key = hashlib.sha1(repr(tuple(request.values())).encode())
    folder = cache_dir("socp-gnn") / f"graphs_{task}_{key.hexdigest()[:16]}"
    if cache and SOCPGraphs.exists(folder):
        cached = SOCPGraphs.read(folder)
        stale = {name: (cached.meta.get(name), want) for name, want in request.items()
                 if cached.meta.get(name) != want}
        if stale or len(cached) != n_instances:
            raise ValueError(f"cache: {folder} does not hold the requested dataset (cached vs requested: {stale}, "
                             f"{len(cached)} vs {n_instances} instances); delete the folder to regenerate")
        return cached.to_items()
    need = {"feasible": n_instances // 2, "infeasible": n_instances - n_instances // 2} if task == "feasibility" \
        else {"feasible": n_instances, "infeasible": 0}
    got = {"feasible": [], "infeasible": []}
    stats = {"candidates": 0, "feasible": 0, "infeasible": 0, "discarded": 0, "solve_seconds": 0.0}
    start, chunk = 0, max(64, int(1.3 * n_instances))
    while any(len(got[o]) < need[o] for o in need):
        results = _run_chunks(task, range(start, start + chunk), n, m, k, density, p, g_shift, bounds, seed,
                              stream, n_jobs)
        for _, P, label, outcome, secs in results:
            if all(len(got[o]) >= need[o] for o in need):
                break
            stats["candidates"] += 1
            stats[outcome] += 1
            stats["solve_seconds"] += secs
            if outcome in got and label is not None and len(got[outcome]) < need[outcome]:
                got[outcome].append((P, label))
        start += chunk
        if start > 200 * n_instances:
            raise RuntimeError(f"make_dataset: could not collect {need} instances from {start} candidates")
    items = sorted(got["feasible"] + got["infeasible"], key=lambda it: it[0].meta["index"])
    meta = dict(request,
                feasible_fraction=stats["feasible"] / max(1, stats["candidates"]),
                mean_solve_ms=1e3 * stats["solve_seconds"] / max(1, stats["candidates"]), **stats)
    ds = SOCPDataset(items, meta)
    if cache:
        SOCPGraphs.from_items(ds).write(folder)
    return ds


def _run_chunks(task, indices, n, m, k, density, p, g_shift, bounds, seed, stream, n_jobs):
    idx = list(indices)
    if n_jobs == 1:
        results = _label_chunk(task, idx, n, m, k, density, p, g_shift, bounds, seed, stream)
    else:
        from joblib import Parallel, delayed

        parts = [idx[j::max(1, n_jobs)] for j in range(max(1, n_jobs))]
        job = delayed(_label_chunk)
        out = Parallel(n_jobs=n_jobs)(job(task, part, n, m, k, density, p, g_shift, bounds, seed, stream)
                                      for part in parts if part)
        results = sorted((r for part in out for r in part), key=lambda r: r[0])
    for i, P, *_ in results:
        P.meta["index"] = i
    return results


DATASET_FORMAT = "iclr26-socp-gnn/2"  # JSON; /1 was a pickle, no longer read


def _plain(value):
    """``value`` with arrays as (nested) lists, so that ``json`` can write it."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _instance_record(P: SOCP, label) -> dict:
    fields = {f.name: _plain(getattr(P, f.name)) for f in dataclasses.fields(P)}
    return {"socp": fields, "label": {"array": label.tolist()} if isinstance(label, np.ndarray) else _plain(label)}


def _instance(record: dict) -> tuple[SOCP, object]:
    fields = dict(record["socp"])
    label = record["label"]
    return SOCP(**fields), np.asarray(label["array"], dtype=float) if isinstance(label, dict) else label


def save_dataset(path, items) -> pathlib.Path:
    """Writes a dataset (``SOCPDataset`` or list of ``(SOCP, label)``) as compact JSON, atomically.

    Infinite bounds (``lb``/``ub``) are written as ``Infinity``/``-Infinity``, which ``json`` reads back.
    """
    from iclr26_shared.bench import atomic_path

    ds = items if isinstance(items, SOCPDataset) else SOCPDataset(items)
    text = json.dumps({"format": DATASET_FORMAT, "items": [_instance_record(P, y) for P, y in ds],
                       "meta": _plain(ds.meta)}, separators=(",", ":"))
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return pathlib.Path(path)


def load_dataset(path) -> SOCPDataset:
    """Reads a dataset written by ``save_dataset`` (plain JSON: nothing in the file is executed).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not a dataset of this package.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no dataset at {path} (make one with `iclr26-socp-gnn generate`)")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:  # also UnicodeDecodeError
        raise ValueError(f"path: {path} is not a socp-gnn dataset (not JSON: {type(err).__name__})") from None
    if not isinstance(obj, dict) or obj.get("format") != DATASET_FORMAT:
        raise ValueError(f"path: {path} is not a socp-gnn dataset (expected format {DATASET_FORMAT!r})")
    try:
        items = [_instance(r) for r in obj["items"]]
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"path: {path} holds a malformed socp-gnn dataset ({err})") from None
    return SOCPDataset(items, obj["meta"])


class SOCPGraphs(InMemoryDataset):
    """Labelled instances as PyG graphs: one collated ``HeteroData`` in memory, tensors on disk (the dataset cache).

    Graph ``i`` is ``to_heterodata(P_i, float64)`` with its label attached as ``graph.graphs`` does (``y``, or
    ``var.y`` for solutions) and the graph attributes ``p`` and ``offset``, so ``to_items`` recovers every ``SOCP``
    exactly (``from_heterodata``). ``write(folder)`` stores ``graphs.pt`` (PyG's collated tensors and slices,
    ``torch.save``) and ``meta.json``; ``read(folder)`` loads them back with ``torch.load(weights_only=True)``:
    tensors and PyG's registered data classes only, nothing else is unpickled.
    """

    FILES = ("graphs.pt", "meta.json")

    def __init__(self, data=None, slices=None, meta: dict | None = None):
        super().__init__(None, log=False)
        self.data, self.slices, self.meta = data, slices, dict(meta or {})

    @classmethod
    def from_items(cls, items: SOCPDataset) -> SOCPGraphs:
        """Collates ``items`` (its ``meta["task"]`` says how labels are attached)."""
        data_list = graphs(items, items.meta["task"], torch.float64)
        for d, (P, _) in zip(data_list, items):
            d.p = torch.tensor([P.p], dtype=torch.float64)
            d.offset = torch.tensor([P.offset], dtype=torch.float64)
        data, slices = cls.collate(data_list)
        return cls(data, slices, items.meta)

    @classmethod
    def exists(cls, folder) -> bool:
        """True when ``folder`` holds a written dataset."""
        return all((pathlib.Path(folder) / f).is_file() for f in cls.FILES)

    def write(self, folder) -> pathlib.Path:
        """Writes ``graphs.pt`` and ``meta.json`` into ``folder`` (created), each atomically; returns the folder."""
        from iclr26_shared.bench import atomic_path, write_json_atomic

        folder = pathlib.Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(folder / "graphs.pt") as tmp:
            torch.save((self._data.to_dict(), self.slices), tmp)
        write_json_atomic(folder / "meta.json", _plain(self.meta))
        return folder

    @classmethod
    def read(cls, folder) -> SOCPGraphs:
        """Loads a dataset written by ``write``.

        Raises:
            FileNotFoundError: a file is missing. ValueError: ``graphs.pt`` holds more than tensors and PyG data.
        """
        folder = pathlib.Path(folder)
        if not cls.exists(folder):
            raise FileNotFoundError(f"folder: expected {cls.FILES} in {folder}")
        try:
            data, slices = torch.load(folder / "graphs.pt", weights_only=True)
        except Exception as err:  # the weights-only unpickler refuses anything but tensors and allow-listed classes
            raise ValueError(f"folder: {folder / 'graphs.pt'} is not a socp-gnn graph dataset "
                             f"({type(err).__name__})") from None
        return cls(HeteroData.from_dict(data), slices, json.loads((folder / "meta.json").read_text()))

    def to_items(self) -> SOCPDataset:
        """The ``(SOCP, label)`` pairs back (float64 graphs: exact), with ``meta``."""
        task, items = self.meta["task"], []
        for i in range(len(self)):
            d = self.get(i)
            P = dataclasses.replace(from_heterodata(d), p=float(d.p), offset=float(d.offset))
            if task == "solution":
                label = d["var"].y.numpy().astype(float)
            else:
                y = float(d.y)
                label = int(y) if task == "feasibility" else y
            items.append((P, label))
        return SOCPDataset(items, self.meta)
