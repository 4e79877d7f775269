"""Results tables and landscape plots (method x setting) from sweep records."""
from __future__ import annotations

import math
import pathlib
from collections import defaultdict
from typing import Any

import numpy as np
from iclr26_shared.bench import atomic_path


def _c_of(setting: str) -> float:
    return float(setting.split("c=")[1].split()[0])


def aggregate(records: list[dict[str, Any]], metric: str = "f1") -> dict[str, dict[str, dict[str, list[float]]]]:
    """dataset -> method -> setting -> the metric's values over seeds (successful runs only)."""
    key = f"test_{metric}"
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        if r.get("status") == "ok" and r.get(key) is not None:
            out[r["dataset"]][r["method"]][r["setting"]].append(float(r[key]))
    return out


def _fmt(vals: list[float]) -> str:
    if not vals:
        return "-"
    return f"{np.mean(vals):.3f} ± {np.std(vals):.3f}" if len(vals) > 1 else f"{vals[0]:.3f}"


def report_markdown(records: list[dict[str, Any]], metric: str = "f1") -> str:
    """Per dataset: methods ranked by mean ``metric`` (± std over seeds) per setting; then the average rank
    across datasets, mean fit time per method, the SAR-minus-SCAR drop and the metric-vs-c table."""
    agg = aggregate(records, metric)
    stand_in = {r["dataset"]: r.get("stand_in_for", "") for r in records}
    lines = [f"# PU-Bench results ({metric})", "",
             f"{sum(r.get('status') == 'ok' for r in records)} runs ok, "
             f"{sum(r.get('status') != 'ok' for r in records)} failed. "
             "Embedded stand-ins are synthetic or small substitutes: "
             "no ranking here is a ranking on the real dataset.", ""]
    ranks: dict[str, list[float]] = defaultdict(list)
    for d in sorted(agg):
        settings = sorted({s for m in agg[d].values() for s in m}, key=lambda s: (s.split()[0] != "scar", s))
        means = {m: float(np.mean([np.mean(v) for v in agg[d][m].values()])) for m in agg[d]}
        order = sorted(means, key=lambda m: -means[m])
        for i, m in enumerate(order):
            ranks[m].append(i + 1)
        title = f"## {d}" + (f" (stand-in for {stand_in[d]})" if stand_in.get(d) else "")
        lines += [title, "", "| rank | method | " + " | ".join(settings) + " | mean |",
                  "|---" * (len(settings) + 3) + "|"]
        for i, m in enumerate(order):
            cells = [_fmt(agg[d][m].get(s, [])) for s in settings]
            lines.append(f"| {i + 1} | {m} | " + " | ".join(cells) + f" | {means[m]:.3f} |")
        lines.append("")
        drops = []
        for m in order:
            for s in settings:
                if s.startswith("sar"):
                    scar = agg[d][m].get(f"scar c={s.split('c=')[1]}")
                    if scar:
                        drops.append(f"| {m} | {s} | {np.mean(agg[d][m][s]) - np.mean(scar):+.3f} |")
        if drops:
            lines += [f"SAR minus SCAR ({metric}, same c; negative = SAR hurts):", "", "| method | SAR setting | "
                      "difference |", "|---|---|---|", *drops, ""]
    if ranks:
        lines += ["## Average rank across datasets", "", "| method | average rank | datasets |", "|---|---|---|"]
        for m in sorted(ranks, key=lambda m: np.mean(ranks[m])):
            lines.append(f"| {m} | {np.mean(ranks[m]):.2f} | {len(ranks[m])} |")
        lines.append("")
    times: dict[str, list[float]] = defaultdict(list)
    for r in records:
        t = (r.get("timing") or {}).get("fit_time")
        if t is not None:
            times[r["method"]].append(float(t))
    if times:
        lines += ["## Wall time (fit seconds per run, fastest first)", "", "| method | mean | max | runs |",
                  "|---|---|---|---|"]
        for m in sorted(times, key=lambda m: np.mean(times[m])):
            lines.append(f"| {m} | {np.mean(times[m]):.2f} | {np.max(times[m]):.2f} | {len(times[m])} |")
        lines.append("")
    return "\n".join(lines)


def plot_landscapes(records: list[dict[str, Any]], out_dir: pathlib.Path, metric: str = "f1") -> list[pathlib.Path]:
    """One heatmap per dataset (methods x settings, mean ``metric``) and, where SCAR has several c, a
    metric-vs-c plot. Files are written atomically; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = aggregate(records, metric)
    paths = []
    for d in sorted(agg):
        methods = sorted(agg[d])
        settings = sorted({s for m in agg[d].values() for s in m})
        grid = np.array([[np.mean(agg[d][m][s]) if agg[d][m].get(s) else np.nan for s in settings] for m in methods])
        fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(settings), 0.8 + 0.35 * len(methods)))
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(settings)), settings, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(methods)), [m for m in methods], fontsize=7)
        for i in range(len(methods)):
            for j in range(len(settings)):
                if not math.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=6, color="w")
        fig.colorbar(im, ax=ax, label=metric)
        ax.set_title(f"{d}: test {metric}")
        fig.tight_layout()
        paths.append(_save(fig, out_dir / f"landscape_{d}_{metric}.png"))
        plt.close(fig)
        scar = [s for s in settings if s.startswith("scar") and "(" not in s]
        if len(scar) >= 2:
            fig, ax = plt.subplots(figsize=(5, 3.5))
            cs = sorted(scar, key=_c_of)
            for m in methods:
                ys = [np.mean(agg[d][m][s]) if agg[d][m].get(s) else np.nan for s in cs]
                ax.plot([_c_of(s) for s in cs], ys, marker="o", label=m)
            ax.set_xlabel("label frequency c")
            ax.set_ylabel(f"test {metric}")
            ax.set_title(f"{d}: {metric} vs c (SCAR)")
            ax.legend(fontsize=6)
            fig.tight_layout()
            paths.append(_save(fig, out_dir / f"{metric}_vs_c_{d}.png"))
            plt.close(fig)
    return paths


def _save(fig, path: pathlib.Path) -> pathlib.Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    return path


def write_report(records: list[dict[str, Any]], out_dir: str | pathlib.Path, metric: str = "f1",
                 force: bool = True) -> tuple[pathlib.Path, list[pathlib.Path]]:
    """Writes ``report.md`` and the plots into ``out_dir``; returns ``(markdown path, figure paths)``.

    Raises:
        FileExistsError: ``report.md`` exists and ``force`` is False.
    """
    out_dir = pathlib.Path(out_dir)
    md = out_dir / "report.md"
    if md.exists() and not force:
        raise FileExistsError(f"out: {str(md)!r} exists; pass --force to overwrite it")
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = plot_landscapes(records, out_dir, metric)
    text = report_markdown(records, metric) + "\n" + "\n".join(f"![{f.stem}]({f.name})" for f in figures) + "\n"
    with atomic_path(md) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return md, figures
