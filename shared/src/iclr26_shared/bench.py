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
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import numpy as np

from .seeding import seed_everything

SCALES = ("smoke", "quick", "full", "paper")
ENTRY_POINT_GROUP = "iclr26.benchmarks"


def check_scale(scale: str) -> str:
    """Returns ``scale`` if it is one of ``SCALES``; raises ``ValueError`` naming the choices otherwise."""
    if scale not in SCALES:
        raise ValueError(f"scale: expected one of {SCALES}, got {scale!r}")
    return scale


@dataclass
class Claim:
    """One sentence of the paper turned into a check on measured numbers.

    Attributes:
        name: short identifier of the claim.
        paper: what the paper reports (a figure or a sentence).
        measured: the number (or short text) this run measured.
        criterion: the check, in words or as an inequality, e.g. ``"coverage >= 0.88"``.
        holds: whether ``measured`` satisfies ``criterion``; always computed, never written in.
    """

    name: str
    paper: str
    measured: Any
    criterion: str
    holds: bool

    @classmethod
    def at_least(cls, name: str, paper: str, measured: float, threshold: float, what: str = "measured") -> Claim:
        """The claim ``measured >= threshold``."""
        return cls(name, paper, float(measured), f"{what} >= {threshold:.4g}", bool(measured >= threshold))

    @classmethod
    def at_most(cls, name: str, paper: str, measured: float, threshold: float, what: str = "measured") -> Claim:
        """The claim ``measured <= threshold``."""
        return cls(name, paper, float(measured), f"{what} <= {threshold:.4g}", bool(measured <= threshold))


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
            out_dir: str | os.PathLike = "results") -> Result:
        """Seeds, times and runs the benchmark; returns its ``Result`` with the configuration filled in.

        Raises:
            ValueError: unknown ``scale``; whatever the benchmark itself raises.
        """
        check_scale(scale)
        dev, _ = _resolve(device)
        out = pathlib.Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        seed_everything(seed)
        start = time.perf_counter()
        result = self.func(scale, dev, seed, out)
        result.seconds = round(time.perf_counter() - start, 3)
        result.benchmark, result.package, result.paper = self.name, self.package, self.paper
        # described after the run, so thread settings the benchmark chose are what is recorded
        result.scale, result.seed, result.device = scale, int(seed), _resolve(dev)[1]
        result.versions = versions(self.package)
        result.figures = [_relative(p, out) for p in result.figures]
        return result


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


def run_and_save(bench: Benchmark, scale: str = "quick", device: str = "auto", seed: int = 0,
                 out_dir: str | os.PathLike = "results", force: bool = False) -> tuple[Result, pathlib.Path, bool]:
    """Runs ``bench`` unless its result for this configuration is already on disk.

    Returns:
        ``(result, path, skipped)``. A benchmark that raises gives a ``Result`` with
        ``status="failed"`` and the traceback in ``error``; it is written like any other.
    """
    check_scale(scale)
    dev, _ = _resolve(device)
    path = result_path(out_dir, bench.name, scale, seed, dev)
    if path.exists() and not force:
        with contextlib.suppress(ValueError, TypeError, KeyError):
            return Result.from_dict(json.loads(path.read_text(encoding="utf-8"))), path, True
    try:
        result = bench.run(scale=scale, device=dev, seed=seed, out_dir=out_dir)
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
        measured = f"{c.measured:.4g}" if isinstance(c.measured, (int, float)) else str(c.measured)
        verdict = "PASS" if c.holds else "FAIL"
        lines.append(f"  {verdict}  {c.name}: measured {measured}; {c.criterion} (paper: {c.paper})")
    return "\n".join(lines)
