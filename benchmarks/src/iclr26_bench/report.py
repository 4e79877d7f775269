"""Turns a folder of result JSON files into ``REPORT.md``: every claim in one table, then each benchmark."""
from __future__ import annotations

import json
import pathlib

from iclr26_shared.bench import Result, atomic_path


def load_results(folder: str | pathlib.Path) -> list[Result]:
    """Every ``*.json`` result in ``folder``, sorted by benchmark, scale and seed.

    Raises:
        FileNotFoundError: ``folder`` does not exist.
    """
    path = pathlib.Path(folder)
    if not path.is_dir():
        raise FileNotFoundError(
            f"results folder {str(path)!r} does not exist; run `iclr26-bench run --out {path}` first")
    results = []
    for f in sorted(path.glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "benchmark" in data and "claims" in data:
            results.append(Result.from_dict(data))
    return sorted(results, key=lambda r: (r.benchmark, r.scale, r.seed, r.device))


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def render(results: list[Result]) -> str:
    """The Markdown text of the report."""
    claims = [(r, c) for r in results for c in r.claims]
    failed = [r for r in results if r.status != "ok"]
    held = sum(c.holds for _, c in claims)
    out = ["# iclr26 benchmark report", "",
           f"{len(results)} result(s), {len(claims)} claim(s), {held} hold, "
           f"{len(claims) - held} do not; {len(failed)} benchmark(s) failed to run.", "", "## Claims", ""]
    out += _table(["benchmark", "scale", "seed", "claim", "paper", "measured", "criterion", "holds"],
                  [[r.benchmark, r.scale, r.seed, c.name, c.paper, c.measured, c.criterion, c.holds]
                   for r, c in claims])
    if failed:
        out += ["", "## Failed benchmarks", ""]
        for r in failed:
            last = (r.error or "").strip().splitlines()[-1:] or ["(no error recorded)"]
            out.append(f"- `{r.benchmark}` ({r.scale}, seed {r.seed}): {last[0]}")
    for r in results:
        if r.status != "ok":
            continue
        out += ["", f"## {r.benchmark}", "", f"*{r.paper}* ({r.package}); scale {r.scale}, seed {r.seed}, "
                f"{r.device}, {r.seconds:.1f} s", ""]
        if r.rows:
            keys = list(dict.fromkeys(k for row in r.rows for k in row))
            out += _table(keys, [[row.get(k, "") for k in keys] for row in r.rows])
        for fig in r.figures:
            out += ["", f"![{pathlib.PurePath(fig).name}]({fig})"]
    return "\n".join(out) + "\n"


def write_report(folder: str | pathlib.Path) -> pathlib.Path:
    """Writes ``<folder>/REPORT.md`` (atomically) from the results in ``folder``; returns its path."""
    results = load_results(folder)
    target = pathlib.Path(folder) / "REPORT.md"
    with atomic_path(target) as tmp:
        tmp.write_text(render(results), encoding="utf-8")
    return target
