"""Loading user data in FSD's JSON-lines format (never needed by the benchmark; nothing downloads).

Each line: ``{"image": "rel/path.png", "instruction": str, "trace": [[x, y] x 8], "box": [x1, y1, x2, y2],
"points": [[x, y], ...]}`` with coordinates normalised to [0, 1000] on the image padded to a square.
Images are padded to a square and resized (``grammar.resize_pad``), which keeps normalised coordinates valid.
"""
from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass

import numpy as np

from .grammar import TRACE_LENGTH, VisualAids, resize_pad


@dataclass
class UserData:
    """Images uint8 (N, S, S, 3), their instructions, ground-truth aids and original sizes (W, H)."""

    images: np.ndarray
    instructions: list[str]
    aids: list[VisualAids]
    sizes: list[tuple[int, int]]


def load_jsonl(path: str | os.PathLike, image_root: str | os.PathLike, size: int = 64) -> UserData:
    """Reads a JSON-lines file of (image, instruction, trace, box, points) records.

    Raises:
        FileNotFoundError: the file or an image is missing.
        ValueError: a line is not valid JSON, lacks a field, or has coordinates outside [0, 1000] or a
            trace without 8 points (the message names the line).
    """
    import matplotlib.image

    path, root = pathlib.Path(path), pathlib.Path(image_root)
    if not path.is_file():
        raise FileNotFoundError(f"path: no JSON-lines file at {path}")
    images, instructions, aids, sizes = [], [], [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            missing = [k for k in ("image", "instruction", "trace", "box", "points") if k not in rec]
            if missing:
                raise ValueError(f"missing field(s) {missing}")
            if len(rec["trace"]) != TRACE_LENGTH:
                raise ValueError(f"trace: expected {TRACE_LENGTH} points, got {len(rec['trace'])}")
            aid = VisualAids(tuple(rec["box"]), tuple(map(tuple, rec["points"])), tuple(map(tuple, rec["trace"])))
        except (json.JSONDecodeError, ValueError, TypeError) as err:
            raise ValueError(f"{path}, line {n}: {err}") from None
        file = root / rec["image"]
        if not file.is_file():
            raise FileNotFoundError(f"{path}, line {n}: image {file} not found")
        img = np.asarray(matplotlib.image.imread(file))
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, -1)
        img = img[..., :3]
        sizes.append((img.shape[1], img.shape[0]))
        images.append(resize_pad(img, size))
        instructions.append(str(rec["instruction"]))
        aids.append(aid)
    if not images:
        raise ValueError(f"path: {path} holds no records")
    return UserData(np.stack(images), instructions, aids, sizes)
