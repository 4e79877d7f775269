"""FSD's output grammar: ``VisualAids``, ``serialize``, ``parse`` and the coordinate conventions.

Text format (SrCoT, then the answer)::

    <ref>red square</ref><box>[[x1, y1, x2, y2]]</box> <ref>blue circle</ref><box>[[...]]</box>
    <rel>red square|left of|blue circle</rel>
    <Answer><box>[[x1, y1, x2, y2]]</box><point>[[x, y], [x, y], [x, y]]</point>
    <point>[[x, y], ... 8 points]</point></Answer>

Coordinates are integers in [0, 1000], always ``[x, y]`` (x right, y **down**), over the image padded
to a square (centre padding): ``x_img = x_norm * S / 1000 - (S - W) / 2`` with ``S = max(W, H)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

TRACE_LENGTH = 8
COORD_MAX = 1000


class ParseError(ValueError):
    """Text that does not follow the grammar; ``position`` is the offending character offset."""

    def __init__(self, message: str, position: int):
        super().__init__(f"at offset {position}: {message}")
        self.position = position


Point = tuple[int, int]
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class VisualAids:
    """FSD's intermediate representation, in normalised image coordinates (integers in [0, 1000]).

    Attributes:
        box: spatial affordance box ``(x1, y1, x2, y2)``: where the object should go.
        points: spatial affordance points ``((x, y), ...)`` in free space inside the target region.
        trace: object-centric visual trace, 8 ``(x, y)`` waypoints from the object to the goal.
        refs: SrCoT grounding, ``((name, box), ...)``.
        relations: SrCoT relation triples ``((subject, relation, object), ...)``.
    """

    box: Box
    points: tuple[Point, ...]
    trace: tuple[Point, ...]
    refs: tuple[tuple[str, Box], ...] = ()
    relations: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self) -> None:
        for what, values in (("box", self.box), ("points", [v for p in self.points for v in p]),
                             ("trace", [v for p in self.trace for v in p])):
            for v in values:
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= COORD_MAX:
                    raise ValueError(f"{what}: expected integers in [0, {COORD_MAX}], got {v!r}")

    @classmethod
    def from_arrays(cls, box, points, trace, refs=(), relations=()) -> VisualAids:
        """Builds aids from float arrays (rounded to integers; raises when outside [0, 1000])."""
        def ints(a):
            a = np.rint(np.asarray(a, dtype=np.float64)).astype(np.int64)
            return tuple(int(v) for v in a) if a.ndim == 1 else tuple(tuple(int(v) for v in r) for r in a)
        return cls(ints(box), ints(points), ints(trace), tuple((n, ints(b)) for n, b in refs),
                   tuple(tuple(r) for r in relations))


def _fmt_points(pts) -> str:
    return "[" + ", ".join(f"[{x}, {y}]" for x, y in pts) + "]"


def serialize(aids: VisualAids) -> str:
    """The FSD text of ``aids`` (SrCoT part only when ``refs``/``relations`` are present)."""
    parts = [f"<ref>{name}</ref><box>[[{', '.join(map(str, b))}]]</box>" for name, b in aids.refs]
    parts += [f"<rel>{s}|{r}|{o}</rel>" for s, r, o in aids.relations]
    answer = (f"<Answer><box>[[{', '.join(map(str, aids.box))}]]</box><point>{_fmt_points(aids.points)}</point>"
              f"<point>{_fmt_points(aids.trace)}</point></Answer>")
    return " ".join(parts + [answer])


class _Reader:
    """A cursor over the text; every failure raises ``ParseError`` at the current offset."""

    _int = re.compile(r"-?\d+")
    _name = re.compile(r"[a-z][a-z ]*[a-z]|[a-z]")

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, lit: str) -> bool:
        self.skip_ws()
        return self.text.startswith(lit, self.pos)

    def expect(self, lit: str) -> None:
        self.skip_ws()
        if not self.text.startswith(lit, self.pos):
            got = self.text[self.pos:self.pos + len(lit) + 8] or "end of text"
            raise ParseError(f"expected {lit!r}, got {got!r}", self.pos)
        self.pos += len(lit)

    def integer(self) -> int:
        self.skip_ws()
        m = self._int.match(self.text, self.pos)
        if m is None:
            raise ParseError(f"expected an integer coordinate, got {self.text[self.pos:self.pos + 8]!r}", self.pos)
        v = int(m.group())
        if not 0 <= v <= COORD_MAX:
            raise ParseError(f"coordinate {v} outside [0, {COORD_MAX}] (not clipped)", self.pos)
        self.pos = m.end()
        return v

    def name(self, stop: str) -> str:
        end = self.text.find(stop, self.pos)
        if end < 0:
            raise ParseError(f"expected a name ended by {stop!r}", self.pos)
        name = self.text[self.pos:end].strip()
        if not self._name.fullmatch(name):
            raise ParseError(f"expected a lower-case name, got {name!r}", self.pos)
        self.pos = end
        return name

    def point_list(self, arity: int) -> list[tuple[int, ...]]:
        self.expect("[")
        out = []
        while True:
            self.expect("[")
            vals = [self.integer()]
            for _ in range(arity - 1):
                self.expect(",")
                vals.append(self.integer())
            self.expect("]")
            out.append(tuple(vals))
            if self.peek("]"):
                self.expect("]")
                return out
            self.expect(",")


def parse(text: str, strict: bool = False) -> VisualAids:
    """Reads FSD text back into ``VisualAids`` (inverse of ``serialize``).

    Text before ``<Answer>`` that is not a ``<ref>..</ref><box>..</box>`` or ``<rel>..</rel>`` element
    is free reasoning and is skipped; the answer must hold a box, a point list and a trace.

    Args:
        text: the model output.
        strict: also require exactly 8 trace points and a box with ``x1 <= x2, y1 <= y2``.

    Raises:
        TypeError: ``text`` is not a string.
        ParseError: the text does not follow the grammar, a coordinate is outside [0, 1000], or (strict) the
            trace does not have 8 points; ``err.position`` is the character offset.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a string, got {type(text).__name__}")
    r = _Reader(text)
    answer_at = text.find("<Answer>")
    if answer_at < 0:
        raise ParseError("expected '<Answer>'", len(text))
    refs, relations = [], []
    while True:
        r.skip_ws()
        nxt = [i for i in (text.find("<ref>", r.pos), text.find("<rel>", r.pos)) if 0 <= i < answer_at]
        if not nxt:
            break
        r.pos = min(nxt)
        if r.peek("<ref>"):
            r.expect("<ref>")
            name = r.name("</ref>")
            r.expect("</ref>")
            r.expect("<box>")
            (box,) = r.point_list(4)
            r.expect("</box>")
            refs.append((name, box))
        else:
            r.expect("<rel>")
            start = r.pos
            end = text.find("</rel>", start)
            if end < 0:
                raise ParseError("expected '</rel>'", start)
            parts = [p.strip() for p in text[start:end].split("|")]
            if len(parts) != 3 or not all(parts):
                raise ParseError(f"expected 'subject|relation|object', got {text[start:end]!r}", start)
            r.pos = end
            r.expect("</rel>")
            relations.append(tuple(parts))
    r.pos = answer_at
    r.expect("<Answer>")
    r.expect("<box>")
    (box,) = r.point_list(4)
    r.expect("</box>")
    r.expect("<point>")
    points = r.point_list(2)
    r.expect("</point>")
    r.expect("<point>")
    trace_at = r.pos
    trace = r.point_list(2)
    r.expect("</point>")
    r.expect("</Answer>")
    if strict:
        if len(trace) != TRACE_LENGTH:
            raise ParseError(f"trace: expected {TRACE_LENGTH} points, got {len(trace)}", trace_at)
        if box[0] > box[2] or box[1] > box[3]:
            raise ParseError(f"box: expected x1 <= x2 and y1 <= y2, got {list(box)}", answer_at)
    return VisualAids(box, tuple(points), tuple(trace), tuple(refs), tuple(relations))


def _check_size(width, height) -> tuple[int, int]:
    for what, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
            raise ValueError(f"{what}: expected a positive integer number of pixels, got {v!r}")
    return int(width), int(height)


def to_pixels(coords, width: int, height: int) -> np.ndarray:
    """Normalised [0, 1000] coordinates (..., 2) -> pixel coordinates of a W x H image (pad-to-square rule).

    ``x_img = x * S / 1000 - (S - W) / 2``, ``y_img = y * S / 1000 - (S - H) / 2``, ``S = max(W, H)``.
    """
    w, h = _check_size(width, height)
    c = np.asarray(coords, dtype=np.float64)
    if c.shape[-1:] != (2,):
        raise ValueError(f"coords: expected shape (..., 2) as [x, y], got {c.shape}")
    s = max(w, h)
    return c * (s / COORD_MAX) - np.array([(s - w) / 2, (s - h) / 2])


def to_normalised(pixels, width: int, height: int) -> np.ndarray:
    """Pixel coordinates (..., 2) of a W x H image -> normalised [0, 1000] floats (inverse of ``to_pixels``)."""
    w, h = _check_size(width, height)
    p = np.asarray(pixels, dtype=np.float64)
    if p.shape[-1:] != (2,):
        raise ValueError(f"pixels: expected shape (..., 2) as [x, y], got {p.shape}")
    s = max(w, h)
    return (p + np.array([(s - w) / 2, (s - h) / 2])) * (COORD_MAX / s)


def resize_pad(image: np.ndarray, size: int = 64) -> np.ndarray:
    """Pads an (H, W, 3) image to a centred square (black) and resizes it to (size, size, 3) uint8.

    This is the geometry the normalised coordinates refer to, so aids predicted on the result map back
    to the original image with ``to_pixels(coords, W, H)``.
    """
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"image: expected an (H, W, 3) array, got shape {img.shape}")
    if img.dtype != np.uint8:
        img = np.clip(np.rint(img * (255.0 if img.max() <= 1.0 else 1.0)), 0, 255).astype(np.uint8)
    h, w = img.shape[:2]
    s = max(h, w)
    centres = (np.arange(size) + 0.5) * s / size
    rows = np.floor(centres - (s - h) / 2).astype(int)
    cols = np.floor(centres - (s - w) / 2).astype(int)
    out = np.zeros((size, size, 3), dtype=np.uint8)
    r_ok, c_ok = (rows >= 0) & (rows < h), (cols >= 0) & (cols < w)
    out[np.ix_(r_ok, c_ok)] = img[np.ix_(rows[r_ok], cols[c_ok])]
    return out
