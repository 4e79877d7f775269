"""The benchmark protocol: ``Benchmark``, ``Result``, ``Claim`` and atomic result files.

A package registers ``Benchmark`` objects under the entry-point group
``iclr26.benchmarks``. ``Benchmark.run(scale, device, seed, out_dir)`` seeds, times
and calls the package's function, which returns a ``Result`` holding metrics, rows
(method x metric, baselines included) and ``Claim``s computed from the measured
numbers. ``run_and_save`` is what both the runner and each package's ``bench``
subcommand call: it skips a result already on disk for the same configuration
unless ``force``, records a benchmark that raises as failed, and writes the JSON
atomically.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import pathlib
import platform
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import numpy as np

from .device import current_threads, set_threads
from .seeding import seed_everything

SCALES = ("smoke", "quick", "full", "paper")
ENTRY_POINT_GROUP = "iclr26.benchmarks"


def check_scale(scale: str) -> str:
    """Returns ``scale`` if it is one of ``SCALES``; raises ``ValueError`` naming the choices otherwise."""
    if scale not in SCALES:
        raise ValueError(f"scale: expected one of {SCALES}, got {scale!r}")
    return scale


def derive_seeds(base: int, k: int) -> list[int]:
    """The ``k`` seeds a multi-seed benchmark runs for base seed ``base``: ``base * 1000 + i``, ``i < k``.

    Different base seeds give disjoint seed sets (for ``k <= 1000``), so checking a claim at a held-out
    base seed never reuses a seed of the benchmark's own.

    Raises:
        ValueError: ``base`` is negative or ``k`` is not in ``[1, 1000]``.
    """
    if int(base) < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {base}")
    if not 1 <= int(k) <= 1000:
        raise ValueError(f"k: expected 1 <= k <= 1000 seeds, got {k}")
    return [int(base) * 1000 + i for i in range(int(k))]


def t_interval(values, level: float = 0.9) -> tuple[float, float, float]:
    """``(mean, low, high)``: the two-sided Student-t interval of the mean of ``values`` (shape ``(n,)``).

    With one value the interval is that value's point (no spread can be estimated); use ``n >= 3``.
    """
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"values: expected finite numbers, got {x.tolist()}")
    mean = float(x.mean())
    if x.size == 1:
        return mean, mean, mean
    from scipy.special import stdtrit  # lighter than scipy.stats

    half = float(stdtrit(x.size - 1, 0.5 + level / 2) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, mean - half, mean + half


@dataclass
class Claim:
    """One sentence of the paper turned into a check on measured numbers.

    Attributes:
        name: short identifier of the claim.
        paper: what the paper reports (a figure or a sentence).
        measured: the number (or short text) this run measured; for a claim over seeds, the mean.
        criterion: the check, in words or as an inequality, e.g. ``"coverage >= 0.88"``.
        holds: whether ``measured`` satisfies ``criterion``; always computed, never written in.
        per_seed: for claims over seeds (``paired``, ``mean_at_least``, ``mean_at_most``) the per-seed
            numbers and their summary: ``seeds``, ``values`` (the paired differences, or the values),
            ``method`` and ``baseline`` (paired only), ``mean``, ``low``, ``high``, ``level``, ``wins``, ``n``.
    """

    name: str
    paper: str
    measured: Any
    criterion: str
    holds: bool
    per_seed: dict[str, Any] | None = None

    @classmethod
    def at_least(cls, name: str, paper: str, measured: float, threshold: float, what: str = "measured") -> Claim:
        """The claim ``measured >= threshold``."""
        return cls(name, paper, float(measured), f"{what} >= {threshold:.4g}", bool(measured >= threshold))

    @classmethod
    def at_most(cls, name: str, paper: str, measured: float, threshold: float, what: str = "measured") -> Claim:
        """The claim ``measured <= threshold``."""
        return cls(name, paper, float(measured), f"{what} <= {threshold:.4g}", bool(measured <= threshold))

    @classmethod
    def paired(cls, name: str, paper: str, method, baseline, seeds, *, margin: float = 0.0,
               higher_is_better: bool = True, level: float = 0.9, what: str = "method - baseline") -> Claim:
        """The method beats the baseline by more than ``margin``, judged over seeds on a paired interval.

        ``method[i]`` and ``baseline[i]`` (shape ``(n,)``) were measured on the same seed ``seeds[i]`` and
        data. The per-seed difference is ``method - baseline`` (``baseline - method`` when lower is better);
        the claim holds when the lower end of its ``level`` t-interval exceeds ``margin`` (a negative
        margin states non-inferiority). ``wins`` counts the seeds whose difference exceeds ``margin``.

        Raises:
            ValueError: the three sequences differ in length, or hold non-finite numbers.
        """
        m, b = np.asarray(method, dtype=float).ravel(), np.asarray(baseline, dtype=float).ravel()
        seeds = [int(s) for s in seeds]
        if not m.size == b.size == len(seeds):
            raise ValueError(f"method, baseline, seeds: expected equal lengths, got {m.size}, {b.size}, {len(seeds)}")
        diff = (m - b) if higher_is_better else (b - m)
        mean, low, high = t_interval(diff, level)
        wins = int(np.sum(diff > margin))
        label = what if higher_is_better else f"-({what})"
        criterion = f"{level:.0%} t-interval of {label} over {diff.size} seeds > {margin:.4g}"
        per_seed = {"seeds": seeds, "values": diff.tolist(), "method": m.tolist(), "baseline": b.tolist(),
                    "mean": mean, "low": low, "high": high, "level": level, "wins": wins, "n": int(diff.size)}
        return cls(name, paper, mean, criterion, bool(low > margin), per_seed)

    @classmethod
    def mean_at_least(cls, name: str, paper: str, values, seeds, threshold: float, what: str = "mean") -> Claim:
        """The mean over seeds of ``values`` (shape ``(n,)``) is at least ``threshold``; the interval is recorded."""
        return cls._over_seeds(name, paper, values, seeds, threshold, what, ">=")

    @classmethod
    def mean_at_most(cls, name: str, paper: str, values, seeds, threshold: float, what: str = "mean") -> Claim:
        """The mean over seeds of ``values`` (shape ``(n,)``) is at most ``threshold``; the interval is recorded."""
        return cls._over_seeds(name, paper, values, seeds, threshold, what, "<=")

    @classmethod
    def _over_seeds(cls, name, paper, values, seeds, threshold, what, op) -> Claim:
        v, seeds = np.asarray(values, dtype=float).ravel(), [int(s) for s in seeds]
        if v.size != len(seeds):
            raise ValueError(f"values, seeds: expected equal lengths, got {v.size}, {len(seeds)}")
        mean, low, high = t_interval(v)
        ok = (v >= threshold) if op == ">=" else (v <= threshold)
        per_seed = {"seeds": seeds, "values": v.tolist(), "mean": mean, "low": low, "high": high, "level": 0.9,
                    "wins": int(ok.sum()), "n": int(v.size)}
        holds = mean >= threshold if op == ">=" else mean <= threshold
        return cls(name, paper, mean, f"{what} over {v.size} seeds {op} {threshold:.4g}", bool(holds), per_seed)


@dataclass
class Result:
    """What a benchmark run produced; ``Benchmark.run`` fills the configuration fields.

    Attributes:
        metrics: name -> number, the headline measurements.
        rows: one dict per method (baselines included), ``{"method": ..., metric: number, ...}``.
        claims: the ``Claim``s, each computed from the measured numbers.
        figures: paths of written figures, relative to the output folder.
        benchmark, package, paper, scale, seed, device, versions, seconds: the configuration.
        status: ``"ok"`` or ``"failed"``; ``error`` holds the traceback of a failed run.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    benchmark: str = ""
    package: str = ""
    paper: str = ""
    scale: str = ""
    seed: int = 0
    device: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    status: str = "ok"
    error: str | None = None

    @property
    def all_hold(self) -> bool:
        """True when the run succeeded and every claim holds."""
        return self.status == "ok" and all(c.holds for c in self.claims)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ARCHITECTURE.md (plus ``status`` and ``error``)."""
        d = asdict(self)
        order = ["benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds",
                 "metrics", "rows", "claims", "figures", "status", "error"]
        return {k: d[k] for k in order}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        """Inverse of ``to_dict``."""
        fields = dict(d)
        fields["claims"] = [Claim(**c) for c in d.get("claims", [])]
        return cls(**fields)


@dataclass(frozen=True)
class Benchmark:
    """A registered reproduction.

    Attributes:
        name: ``<slug>`` or ``<slug>.<variant>``.
        paper: the paper's title.
        package: the distribution name, e.g. ``"iclr26-energycp"``.
        func: ``func(scale, device, seed, out_dir) -> Result``; ``device`` is a string such as
            ``"cpu"`` or ``"cuda"`` (already checked), ``out_dir`` a ``pathlib.Path`` for figures.
    """

    name: str
    paper: str
    package: str
    func: Callable[[str, str, int, pathlib.Path], Result]

    def run(self, scale: str = "quick", device: str = "auto", seed: int = 0,
            out_dir: str | os.PathLike = "results", threads: int | None = None) -> Result:
        """Seeds, times and runs the benchmark; returns its ``Result`` with the configuration filled in.

        ``threads`` sizes torch's and BLAS's thread pools before the run (default: leave them as they are;
        the CLIs pass ``--threads``, every core unless told); the number in use is recorded in
        ``versions["threads"]``. Figures are written into a private folder
        and then renamed ``<benchmark>__<scale>__seed<seed>__<device>__<file>`` in ``out_dir``, so runs
        of other scales or seeds never overwrite them.

        Raises:
            ValueError: unknown ``scale``; whatever the benchmark itself raises.
        """
        check_scale(scale)
        dev, _ = _resolve(device)
        out = pathlib.Path(out_dir)
        stem = result_path(out, self.name, scale, seed, dev).stem
        scratch = out / f".{stem}.files"
        scratch.mkdir(parents=True, exist_ok=True)
        used = set_threads(threads) if threads is not None else current_threads()
        seed_everything(seed)
        start = time.perf_counter()
        result = self.func(scale, dev, seed, scratch)
        result.seconds = round(time.perf_counter() - start, 3)
        result.benchmark, result.package, result.paper = self.name, self.package, self.paper
        # described after the run, so thread settings the benchmark chose are what is recorded
        result.scale, result.seed, result.device = scale, int(seed), _resolve(dev)[1]
        result.versions = {**versions(self.package), "threads": str(used)}
        result.figures = [_publish(p, scratch, out, stem) for p in result.figures]
        with contextlib.suppress(OSError):
            scratch.rmdir()  # kept only when the benchmark wrote files other than figures
        return result


def _publish(path: str | os.PathLike, scratch: pathlib.Path, out: pathlib.Path, stem: str) -> str:
    """Moves a figure written under ``scratch`` to ``out/<stem>__<relative path>``; returns it relative to ``out``."""
    p = pathlib.Path(path)
    if not p.is_absolute() and not p.exists():
        p = scratch / p
    try:
        rel = p.resolve().relative_to(scratch.resolve())
    except ValueError:
        return _relative(p, out)
    target = out / f"{stem}__{'__'.join(rel.parts)}"
    os.replace(p, target)
    return target.name


def _resolve(device: str) -> tuple[str, str]:
    """(device string handed to the benchmark, description for the result)."""
    try:
        from .device import device_name, resolve_device

        dev = resolve_device(device)
        return (dev.type if dev.index is None else str(dev)), device_name(dev)
    except ImportError:  # numpy-only installation: only the CPU exists
        if device not in ("auto", "cpu"):
            raise ValueError(f"device: {device!r} needs torch, which is not installed") from None
        return "cpu", "cpu"


def _relative(path: str | os.PathLike, out: pathlib.Path) -> str:
    p = pathlib.Path(path)
    try:
        return str(p.resolve().relative_to(out.resolve()))
    except ValueError:
        return str(p)


def versions(package: str) -> dict[str, str]:
    """Versions that identify a run: python, platform, numpy, torch (when imported), the package."""
    out = {"python": platform.python_version(), "platform": platform.platform(terse=True), "numpy": np.__version__}
    if "torch" in sys.modules:
        out["torch"] = sys.modules["torch"].__version__
    with contextlib.suppress(metadata.PackageNotFoundError):
        out[package] = metadata.version(package)
    return out


def _jsonable(obj: Any) -> Any:
    """numpy scalars/arrays to python; non-finite floats to None (strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[pathlib.Path]:
    """Yields a temporary path beside ``path`` (same suffix); renames it onto ``path`` only on success.

    An interrupted write leaves any previous file at ``path`` untouched. The file gets the permissions a
    plain ``open(path, "w")`` would give (``0o666`` less the umask), not ``mkstemp``'s private ``0o600``.
    """
    target = pathlib.Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    os.close(fd)
    tmp_path = pathlib.Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():
            umask = os.umask(0)
            os.umask(umask)
            tmp_path.chmod(0o666 & ~umask)
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_json_atomic(path: str | os.PathLike, obj: Any) -> pathlib.Path:
    """Writes ``obj`` as strict, indented JSON to ``path`` atomically; returns the path."""
    text = json.dumps(_jsonable(obj), indent=2, allow_nan=False) + "\n"
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return pathlib.Path(path)


def result_path(out_dir: str | os.PathLike, name: str, scale: str, seed: int, device: str) -> pathlib.Path:
    """Where the result of one configuration lives: ``<out>/<name>__<scale>__seed<seed>__<device>.json``.

    ``device`` is the requested spelling with ``"auto"`` already resolved (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
    """
    safe = device.replace(":", "-")
    return pathlib.Path(out_dir) / f"{name}__{scale}__seed{seed}__{safe}.json"


RESULT_KEYS = {"benchmark": str, "package": str, "paper": str, "scale": str, "seed": int, "device": str,
               "versions": dict, "seconds": (int, float), "metrics": dict, "rows": list, "claims": list,
               "figures": list, "status": str}


def check_result(data: Any, bench: Benchmark | None = None, scale: str | None = None, seed: int | None = None,
                 device: str | None = None) -> Result:
    """Validates a result JSON (already parsed) against the schema and, when given, the configuration.

    A result matches its configuration when benchmark, scale, seed and device agree, and the version of
    ``bench.package`` it records is the one installed now.

    Raises:
        ValueError: naming the first field that is missing, of the wrong type, or of another configuration.
    """
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    for key, kind in RESULT_KEYS.items():
        if key not in data:
            raise ValueError(f"{key}: expected a field of the result, got none")
        if not isinstance(data[key], kind) or isinstance(data[key], bool):
            raise ValueError(f"{key}: expected {kind}, got {type(data[key]).__name__}")
    try:
        result = Result.from_dict(data)
    except TypeError as err:
        raise ValueError(f"claims: expected {{name, paper, measured, criterion, holds}} objects, got {err}") from None
    if any(not isinstance(c.holds, bool) for c in result.claims):
        raise ValueError("claims: expected holds to be true or false")
    want = {"benchmark": bench.name if bench else None, "scale": scale, "seed": seed}
    for key, value in want.items():
        if value is not None and getattr(result, key) != value:
            raise ValueError(f"{key}: expected {value!r}, got {getattr(result, key)!r}")
    if device is not None and result.device.split(" ")[0].partition(":")[0] != device.partition(":")[0]:
        raise ValueError(f"device: expected {device!r}, got {result.device!r}")
    if bench is not None:
        with contextlib.suppress(metadata.PackageNotFoundError):
            installed = metadata.version(bench.package)
            if result.versions.get(bench.package) != installed:
                raise ValueError(f"versions.{bench.package}: expected {installed}, "
                                 f"got {result.versions.get(bench.package)}")
    return result


def load_cached(path: pathlib.Path, bench: Benchmark, scale: str, seed: int, device: str) -> Result | None:
    """The finished result at ``path`` when it is valid, of this configuration and not failed; else ``None``.

    Anything else (unreadable, truncated, another configuration or version, a failed run) is reported with a
    warning naming the file, so the caller recomputes it.
    """
    if not path.exists():
        return None
    try:
        result = check_result(json.loads(path.read_text(encoding="utf-8")), bench, scale, seed, device)
    except (OSError, ValueError) as err:
        warnings.warn(f"{path}: not a valid result of this configuration ({err}); recomputing", stacklevel=2)
        return None
    if result.status != "ok":
        warnings.warn(f"{path}: holds a failed run; retrying", stacklevel=2)
        return None
    return result


@contextlib.contextmanager
def _locked(path: pathlib.Path) -> Iterator[None]:
    """Holds an exclusive lock on ``.<name>.lock`` beside ``path`` (POSIX ``flock``; a no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.stem}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_and_save(bench: Benchmark, scale: str = "quick", device: str = "auto", seed: int = 0,
                 out_dir: str | os.PathLike = "results", force: bool = False,
                 threads: int | None = None) -> tuple[Result, pathlib.Path, bool]:
    """Runs ``bench`` unless a valid, finished result of this configuration is already on disk.

    A per-result lock makes a second process that asks for the same configuration wait, then reuse
    what the first one wrote. Failed or invalid results on disk are recomputed.

    Returns:
        ``(result, path, skipped)``. A benchmark that raises gives a ``Result`` with
        ``status="failed"`` and the traceback in ``error``; it is written like any other.
    """
    check_scale(scale)
    dev, _ = _resolve(device)
    path = result_path(out_dir, bench.name, scale, seed, dev)
    with _locked(path):
        cached = None if force else load_cached(path, bench, scale, seed, dev)
        if cached is not None:
            return cached, path, True
        try:
            result = bench.run(scale=scale, device=dev, seed=seed, out_dir=out_dir, threads=threads)
        except Exception:  # a failing benchmark must not stop the others
            result = Result(benchmark=bench.name, package=bench.package, paper=bench.paper, scale=scale,
                            seed=seed, device=dev, versions=versions(bench.package), status="failed",
                            error=traceback.format_exc())
        write_json_atomic(path, result.to_dict())
    return result, path, False


def discover() -> dict[str, Any]:
    """Every registered benchmark's entry point, by name, without importing any package."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def select(names: list[str] | None, registered: dict[str, Any]) -> list[str]:
    """Expands requested names: ``<slug>`` selects ``<slug>`` and every ``<slug>.<variant>``.

    Raises:
        ValueError: a name matches nothing registered.
    """
    if not names:
        return sorted(registered)
    chosen: list[str] = []
    for name in names:
        hits = sorted(n for n in registered if n == name or n.startswith(f"{name}."))
        if not hits:
            raise ValueError(f"benchmark: {name!r} is not registered; known: {sorted(registered)}")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def format_claims(result: Result) -> str:
    """A plain-text table of the claims, PASS/FAIL per line, for terminal summaries."""
    if result.status != "ok":
        return f"{result.benchmark}: FAILED\n{result.error}"
    lines = [f"{result.benchmark} [{result.scale}, seed {result.seed}, {result.device}] {result.seconds:.1f}s"]
    for c in result.claims:
        lines.append(f"  {'PASS' if c.holds else 'FAIL'}  {c.name}: measured {format_measured(c)}; "
                     f"{c.criterion} (paper: {c.paper})")
    return "\n".join(lines)


def format_measured(claim: Claim) -> str:
    """``0.123``, or for a claim over seeds ``0.123 [0.05, 0.2], 4/5 seeds``."""
    m = claim.measured
    text = f"{m:.4g}" if isinstance(m, (int, float)) and not isinstance(m, bool) else str(m)
    if claim.per_seed:
        ps = claim.per_seed
        text += f" [{ps['low']:.4g}, {ps['high']:.4g}], {ps['wins']}/{ps['n']} seeds"
    return text
