"""Turns a folder of result JSON files into ``REPORT.md``: every claim in one table, then each benchmark."""
from __future__ import annotations

import json
import pathlib
import warnings

from iclr26_shared.bench import Claim, Result, atomic_path, check_result


def load_results(folder: str | pathlib.Path) -> list[Result]:
    """Every valid result ``*.json`` in ``folder``, sorted by benchmark, scale and seed.

    Dotfiles (temporary files of a write in progress, locks) are skipped; unreadable or invalid files are
    skipped with a warning naming each.

    Raises:
        FileNotFoundError: ``folder`` does not exist.
    """
    path = pathlib.Path(folder)
    if not path.is_dir():
        raise FileNotFoundError(
            f"results folder {str(path)!r} does not exist; run `iclr26-bench run --out {path}` first")
    results = []
    for f in sorted(path.glob("*.json")):
        if f.name.startswith("."):
            continue
        try:
            results.append(check_result(json.loads(f.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as err:
            warnings.warn(f"{f}: skipped, not a valid result ({err})", stacklevel=2)
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


def _seeds(c: Claim) -> list[str]:
    """Interval and wins of a claim over seeds, blank for a single-run claim."""
    if not c.per_seed:
        return ["", ""]
    ps = c.per_seed
    return [f"[{ps['low']:.4g}, {ps['high']:.4g}]", f"{ps['wins']}/{ps['n']}"]


def _verdict(holds: list[bool]) -> str:
    if all(holds):
        return "holds at every base seed"
    return "fragile" if any(holds) else "fails at every base seed"


def across_seeds(results: list[Result]) -> list[str]:
    """Markdown lines of the "Across base seeds" section: every claim of a benchmark run at two or more base
    seeds (same scale), one cell per base seed (mean, interval, wins, holds) and a verdict: it holds at every
    base seed, at some only (fragile), or at none. Empty when no benchmark has two base seeds."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        if r.status == "ok":
            groups.setdefault((r.benchmark, r.scale), []).append(r)
    groups = {k: sorted(v, key=lambda r: r.seed) for k, v in groups.items() if len({r.seed for r in v}) > 1}
    if not groups:
        return []
    rows = []
    for (bench, scale), runs in sorted(groups.items()):
        names = list(dict.fromkeys(c.name for r in runs for c in r.claims))
        for name in names:
            cells, holds = [], []
            for r in runs:
                c = next((c for c in r.claims if c.name == name), None)
                if c is None:
                    cells.append(f"{r.seed}: (absent)")
                    continue
                interval, wins = _seeds(c)
                detail = ", ".join(x for x in (interval, wins) if x)
                cells.append(f"{r.seed}: {_cell(c.measured)}{' ' + detail if detail else ''}, "
                             f"{'holds' if c.holds else 'fails'}")
                holds.append(c.holds)
            rows.append([bench, scale, name, "; ".join(cells), f"{sum(holds)}/{len(holds)}", _verdict(holds)])
    return ["", "## Across base seeds", "",
            "Claims of benchmarks run at several base seeds (`--seed`), one cell per base seed: mean, 90% interval "
            "and wins for a claim over derived seeds, then whether it held.", "",
            *_table(["benchmark", "scale", "claim", "per base seed", "holds at", "verdict"], rows)]


def render(results: list[Result]) -> str:
    """The Markdown text of the report."""
    claims = [(r, c) for r in results for c in r.claims]
    failed = [r for r in results if r.status != "ok"]
    held = sum(c.holds for _, c in claims)
    out = ["# iclr26 benchmark report", "",
           f"{len(results)} result(s), {len(claims)} claim(s), {held} hold, "
           f"{len(claims) - held} do not; {len(failed)} benchmark(s) failed to run.", "",
           "Claims over seeds show the mean (of the paired differences, for a comparison), its 90% interval "
           "and on how many seeds it held; the per-seed numbers are in the JSON.", "", "## Claims", ""]
    out += _table(["benchmark", "scale", "seed", "claim", "paper", "measured (mean)", "90% interval", "wins",
                   "criterion", "holds"],
                  [[r.benchmark, r.scale, r.seed, c.name, c.paper, c.measured, *_seeds(c), c.criterion, c.holds]
                   for r, c in claims])
    out += across_seeds(results)
    out += ["", "## Wall time", ""]
    out += _table(["benchmark", "scale", "seed", "device", "threads", "seconds"],
                  [[r.benchmark, r.scale, r.seed, r.device, r.versions.get("threads", ""), r.seconds]
                   for r in results])
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
