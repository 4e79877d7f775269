"""The per-user cache folder of iclr26: results that are costly to recompute and safe to delete.

``$ICLR26_CACHE`` if set, else ``$XDG_CACHE_HOME/iclr26``, else ``~/.cache/iclr26``; one sub-folder per package.
Nothing here is ever downloaded: packages cache what they computed themselves (trained logits, calibrated
generator constants, generated data sets) so a second run skips the work.
"""

from __future__ import annotations

import os
import pathlib

CACHE_ENV = "ICLR26_CACHE"


def cache_dir(package: str | None = None) -> pathlib.Path:
    """The cache folder, or its sub-folder ``package`` (e.g. ``"energycp"``); not created here.

    Raises:
        ValueError: ``package`` is empty or not a single path component.
    """
    if os.environ.get(CACHE_ENV):
        root = pathlib.Path(os.environ[CACHE_ENV]).expanduser()
    else:
        root = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache").expanduser() / "iclr26"
    if package is None:
        return root
    plain = isinstance(package, str) and package not in ("", ".", "..") and pathlib.PurePath(package).name == package
    if not plain:
        raise ValueError(f"package: expected a plain folder name such as 'energycp', got {package!r}")
    return root / package
