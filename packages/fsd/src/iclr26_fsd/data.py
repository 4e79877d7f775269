"""Loading user data in FSD's JSON-lines format (never needed by the benchmark; nothing downloads).

Each line: ``{"image": "rel/path.png", "instruction": str, "trace": [[x, y] x 8], "box": [x1, y1, x2, y2],
"points": [[x, y], ...]}`` with coordinates normalised to [0, 1000] on the image padded to a square;
optionally the SrCoT part, ``"refs": [[name, [x1, y1, x2, y2]], ...]`` and ``"relations": [[subject,
relation, object], ...]`` (what ``FSDTiny(cot=True)`` learns to write before the answer).
Images are padded to a square and resized (``grammar.resize_pad``), which keeps normalised coordinates valid.
"""
from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass

import numpy as np

from .grammar import TRACE_LENGTH, VisualAids, resize_pad

FIELDS = ("image", "instruction", "trace", "box", "points")


@dataclass
class UserData:
    """Images uint8 (N, S, S, 3), their instructions, ground-truth aids, original sizes (W, H) and line numbers."""

    images: np.ndarray
    instructions: list[str]
    aids: list[VisualAids]
    sizes: list[tuple[int, int]]
    lines: list[int]

    def __len__(self) -> int:
        return len(self.instructions)


def read_image(path: str | os.PathLike) -> np.ndarray:
    """An (H, W, 3) uint8 image (PNG, or JPEG with Pillow); grey images become RGB, alpha is dropped.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not an image (the message names it).
    """
    import matplotlib.image

    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"image {path} not found")
    try:
        img = np.asarray(matplotlib.image.imread(path))
    except Exception as err:  # matplotlib/Pillow raise many kinds for a file that is not an image
        raise ValueError(f"image {path.name}: expected a PNG or JPEG image, got a file that does not decode "
                         f"({type(err).__name__})") from None
    if img.ndim not in (2, 3) or img.size == 0 or (img.ndim == 3 and img.shape[2] not in (3, 4)):
        raise ValueError(f"image {path.name}: expected an (H, W) or (H, W, 3|4) image, got shape {img.shape}")
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, -1)
    img = img[..., :3]
    if img.dtype != np.uint8:
        img = np.clip(np.rint(img * 255), 0, 255).astype(np.uint8)
    return img


def _aids(rec: dict) -> VisualAids:
    if len(rec["trace"]) != TRACE_LENGTH:
        raise ValueError(f"trace: expected {TRACE_LENGTH} points, got {len(rec['trace'])}")
    refs = tuple((str(name), tuple(box)) for name, box in rec.get("refs", ()))
    for name, box in refs:
        if len(box) != 4:
            raise ValueError(f"refs: expected [name, [x1, y1, x2, y2]] for {name!r}, got box {list(box)}")
    rels = tuple(tuple(map(str, r)) for r in rec.get("relations", ()))
    if any(len(r) != 3 for r in rels):
        raise ValueError(f"relations: expected [subject, relation, object] triples, got {rec['relations']}")
    return VisualAids(tuple(rec["box"]), tuple(map(tuple, rec["points"])), tuple(map(tuple, rec["trace"])),
                      refs, rels)


def load_jsonl(path: str | os.PathLike, image_root: str | os.PathLike | None = None, size: int = 64) -> UserData:
    """Reads a JSON-lines file of (image, instruction, trace, box, points[, refs, relations]) records.

    Args:
        path: the JSON-lines file.
        image_root: the folder image paths are relative to (default: the file's folder).
        size: side of the square images returned (the model's ``image_size``).

    Raises:
        FileNotFoundError: the file or an image is missing (the message names the line).
        ValueError: a line is not valid JSON, lacks a field, has coordinates outside [0, 1000] or a trace
            without 8 points, or its image does not decode (the message names the line).
    """
    path = pathlib.Path(path)
    root = path.parent if image_root is None else pathlib.Path(image_root)
    if not path.is_file():
        raise FileNotFoundError(f"path: no JSON-lines file at {path}")
    images, instructions, aids, sizes, lines = [], [], [], [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
            missing = [k for k in FIELDS if k not in rec]
            if missing:
                raise ValueError(f"missing field(s) {missing}")
            aid = _aids(rec)
            img = read_image(root / rec["image"])
        except FileNotFoundError as err:
            raise FileNotFoundError(f"{path}, line {n}: {err}") from None
        except (ValueError, TypeError) as err:  # JSONDecodeError is a ValueError
            raise ValueError(f"{path}, line {n}: {err}") from None
        sizes.append((img.shape[1], img.shape[0]))
        images.append(resize_pad(img, size))
        instructions.append(str(rec["instruction"]))
        aids.append(aid)
        lines.append(n)
    if not images:
        raise ValueError(f"path: {path} holds no records")
    return UserData(np.stack(images), instructions, aids, sizes, lines)
