"""Matplotlib on the Agg backend and atomic PNG writes."""
from __future__ import annotations

import pathlib


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (works without a display)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path, dpi: int = 110) -> str:
    """Writes ``fig`` to ``path`` atomically (a temporary file, then a rename), closes it; returns the path."""
    from iclr26_shared.bench import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi)
    pyplot().close(fig)
    return str(pathlib.Path(path))
