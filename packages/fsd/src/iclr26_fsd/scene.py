"""Procedural 2-D tabletop scenes, language instructions, their target regions and the success predicate.

All positions are table coordinates (unit square, y away from the robot). A scene holds 3-5 objects,
each a unique (colour, shape) pair, and optionally one plate (a placement target, never an obstacle).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

COLOURS = ("red", "green", "blue", "yellow", "purple", "orange")
SHAPES = ("square", "circle", "triangle")
RELATIONS = ("left of", "right of", "in front of", "behind", "on")
REGIONS = ("top left", "top right", "bottom left", "bottom right", "center", "left side", "right side")
HELD_OUT_PAIRS = (("purple", "triangle"), ("orange", "circle"), ("green", "square"), ("yellow", "triangle"))
HELD_OUT_COMBO = ("behind", "circle")  # relation, shape of the reference: never an instruction in training

# geometry (table units)
OBJECT_RADIUS = 0.06  # collision disc; two objects overlap when their centres are closer than 0.12
MIN_CENTRE_DISTANCE = 0.18
WORKSPACE = (0.1, 0.9)
REL_OFFSET = 0.2
REL_BOX = 0.16
PLATE_BOX = 0.07
REL_MARGIN = 0.05
ON_TOLERANCE = 0.05
CLEARANCE = {REL_BOX: 0.24, PLATE_BOX: 0.18}  # target-box centre to any other object's centre
REL_DIRECTION = {"left of": (-1.0, 0.0), "right of": (1.0, 0.0), "in front of": (0.0, -1.0), "behind": (0.0, 1.0)}
REGION_CENTRES = {"top left": (0.22, 0.78), "top right": (0.78, 0.78), "bottom left": (0.22, 0.22),
                  "bottom right": (0.78, 0.22), "center": (0.5, 0.5), "left side": (0.2, 0.5),
                  "right side": (0.8, 0.5)}


class UnknownObjectError(ValueError):
    """An instruction names a colour, shape or word outside the vocabulary."""


@dataclass(frozen=True)
class TableObject:
    """One object: a (colour, shape) pair at ``(x, y)`` of size ``size`` (table units)."""

    colour: str
    shape: str
    x: float
    y: float
    size: float

    @property
    def name(self) -> str:
        return f"{self.colour} {self.shape}"

    @property
    def xy(self) -> np.ndarray:
        return np.array([self.x, self.y])

    def extent(self) -> np.ndarray:
        """Table box ``[xmin, ymin, xmax, ymax]`` around the drawn shape."""
        h = self.size * (0.6 if self.shape == "triangle" else 0.5)
        return np.array([self.x - h, self.y - h, self.x + h, self.y + h])


@dataclass(frozen=True)
class Instruction:
    """A parsed instruction: ``kind`` is ``"rel"``, ``"on"`` or ``"region"``.

    ``target`` is the manipulated object's name; ``relation`` one of ``RELATIONS`` (rel/on kinds);
    ``reference`` the reference object's name (``"plate"`` for on); ``region`` one of ``REGIONS``.
    """

    kind: str
    target: str
    relation: str | None = None
    reference: str | None = None
    region: str | None = None

    @property
    def text(self) -> str:
        if self.kind == "region":
            return f"move the {self.target} to the {self.region} of the table"
        return f"put the {self.target} {self.relation} the {self.reference}"

    @property
    def goal(self) -> str:
        """The relation achieved: a relation or a region name."""
        return self.region if self.kind == "region" else self.relation


@dataclass(frozen=True)
class Scene:
    """Objects, an optional plate centre, one instruction, and the affordance points' draws.

    Attributes:
        objects: the objects (unique (colour, shape) pairs).
        plate: (x, y) of the plate, or None.
        instruction: the main instruction of the scene.
        point_u: (3, 2) uniform draws in [0, 1) placing the 3 ground-truth affordance points in the target box.
        texture_seed: seed of the wood texture.
    """

    objects: tuple[TableObject, ...]
    plate: tuple[float, float] | None
    instruction: Instruction
    point_u: tuple[tuple[float, float], ...]
    texture_seed: int

    def find(self, name: str) -> TableObject | None:
        """The object called ``name`` (``"red square"``), or None when the scene has none."""
        return next((o for o in self.objects if o.name == name), None)

    def moved(self, name: str, xy: np.ndarray) -> Scene:
        """A copy with object ``name`` at ``xy``."""
        objs = tuple(replace(o, x=float(xy[0]), y=float(xy[1])) if o.name == name else o for o in self.objects)
        return replace(self, objects=objs)


_NAME = rf"(?P<{{}}>({'|'.join(COLOURS)}) ({'|'.join(SHAPES)}))"
_REL_RE = re.compile(rf"^put the {_NAME.format('t')} (?P<rel>{'|'.join(RELATIONS[:4])}) the {_NAME.format('r')}$")
_ON_RE = re.compile(rf"^put the {_NAME.format('t')} on the plate$")
_REGION_RE = re.compile(rf"^move the {_NAME.format('t')} to the (?P<reg>{'|'.join(REGIONS)}) of the table$")
INSTRUCTION_WORDS = tuple(sorted(set(" ".join(
    ["put the move to of table on plate in front behind left right top bottom center side"]
    + list(COLOURS) + list(SHAPES)).split())))


def parse_instruction(text: str) -> Instruction:
    """Parses one of the instruction templates.

    Raises:
        TypeError: ``text`` is not a string.
        UnknownObjectError: a word is outside the vocabulary (the message lists the known words).
        ValueError: the words are known but do not form one of the templates.
    """
    if not isinstance(text, str):
        raise TypeError(f"instruction: expected a string, got {type(text).__name__}")
    words = text.lower().split()
    unknown = [w for w in words if w not in INSTRUCTION_WORDS]
    if unknown:
        raise UnknownObjectError(f"instruction: unknown word(s) {unknown} in {text!r}; known colours {COLOURS}, "
                                 f"shapes {SHAPES}, words {INSTRUCTION_WORDS}")
    norm = " ".join(words)
    if m := _REL_RE.match(norm):
        return Instruction("rel", m["t"], m["rel"], m["r"])
    if m := _ON_RE.match(norm):
        return Instruction("on", m["t"], "on", "plate")
    if m := _REGION_RE.match(norm):
        return Instruction("region", m["t"], region=m["reg"])
    raise ValueError(f"instruction: expected 'put the <colour> <shape> <relation> the <colour> <shape>', "
                     f"'put the <colour> <shape> on the plate' or 'move the <colour> <shape> to the <region> of "
                     f"the table' (relations {RELATIONS[:4]}, regions {REGIONS}), got {text!r}")


def _box(centre: np.ndarray, size: float) -> np.ndarray:
    return np.array([centre[0] - size / 2, centre[1] - size / 2, centre[0] + size / 2, centre[1] + size / 2])


def target_box(scene: Scene, instr: Instruction) -> np.ndarray | None:
    """Ground-truth target region ``[xmin, ymin, xmax, ymax]`` (table units); None when its reference is absent."""
    if instr.kind == "region":
        return _box(np.array(REGION_CENTRES[instr.region]), REL_BOX)
    if instr.kind == "on":
        return None if scene.plate is None else _box(np.array(scene.plate), PLATE_BOX)
    ref = scene.find(instr.reference)
    if ref is None:
        return None
    return _box(ref.xy + REL_OFFSET * np.array(REL_DIRECTION[instr.relation]), REL_BOX)


def relation_holds(relation: str, xy: np.ndarray, ref_xy: np.ndarray) -> bool:
    """Whether ``xy`` stands in ``relation`` to ``ref_xy`` with the 0.05 margin (``on``: within 0.05)."""
    dx, dy = xy[0] - ref_xy[0], xy[1] - ref_xy[1]
    if relation == "on":
        return bool(np.hypot(dx, dy) <= ON_TOLERANCE + 1e-12)
    margin = {"left of": -dx, "right of": dx, "in front of": -dy, "behind": dy}[relation]
    return bool(margin >= REL_MARGIN - 1e-12)


def current_relation(xy: np.ndarray, ref_xy: np.ndarray) -> str:
    """The dominant-axis relation of ``xy`` to ``ref_xy`` now (one of the four directional relations)."""
    d = np.asarray(xy) - np.asarray(ref_xy)
    if abs(d[0]) >= abs(d[1]):
        return "right of" if d[0] > 0 else "left of"
    return "behind" if d[1] > 0 else "in front of"


def is_success(scene: Scene, instr: Instruction, xy: np.ndarray) -> tuple[bool, str]:
    """The success predicate for the manipulated object placed at ``xy``.

    Returns:
        ``(success, reason)``: ``reason`` is ``"ok"``, ``"absent_object"``, ``"outside_target"``,
        ``"overlap"`` or ``"relation"``.
    """
    box = target_box(scene, instr)
    if scene.find(instr.target) is None or box is None:
        return False, "absent_object"
    eps = 1e-12
    if not (box[0] - eps <= xy[0] <= box[2] + eps and box[1] - eps <= xy[1] <= box[3] + eps):
        return False, "outside_target"
    for o in scene.objects:
        if o.name != instr.target and np.hypot(o.x - xy[0], o.y - xy[1]) < 2 * OBJECT_RADIUS:
            return False, "overlap"
    if instr.kind != "region":
        ref_xy = np.array(scene.plate) if instr.kind == "on" else scene.find(instr.reference).xy
        if not relation_holds(instr.relation, xy, ref_xy):
            return False, "relation"
    return True, "ok"


def is_held_out(instr: Instruction, scene: Scene) -> bool:
    """Whether the instruction involves a held-out colour-shape pair or the held-out relation combination."""
    names = {f"{c} {s}" for c, s in HELD_OUT_PAIRS}
    if instr.target in names or (instr.reference in names):
        return True
    return instr.relation == HELD_OUT_COMBO[0] and instr.reference is not None and \
        instr.reference.endswith(HELD_OUT_COMBO[1])


def feasible(scene: Scene, instr: Instruction) -> bool:
    """Rejection test of the generator: the whole target box inside ``[0.1, 0.9]^2``, far enough from every
    object other than the manipulated one and the reference, and the task not already solved."""
    box = target_box(scene, instr)
    if box is None or box[0] < WORKSPACE[0] or box[1] < WORKSPACE[0] or box[2] > WORKSPACE[1] or \
            box[3] > WORKSPACE[1]:
        return False
    centre = (box[:2] + box[2:]) / 2
    clearance = CLEARANCE[PLATE_BOX if instr.kind == "on" else REL_BOX]
    for o in scene.objects:
        if o.name not in (instr.target, instr.reference) and np.hypot(*(o.xy - centre)) < clearance:
            return False
    return not is_success(scene, instr, scene.find(instr.target).xy)[0]


def _candidate_instruction(rng: np.random.Generator, objects: tuple[TableObject, ...],
                           plate: tuple[float, float] | None) -> Instruction:
    target = objects[rng.integers(len(objects))]
    u = rng.random()
    if plate is not None and u < 0.2:
        return Instruction("on", target.name, "on", "plate")
    if u < 0.45:
        return Instruction("region", target.name, region=REGIONS[rng.integers(len(REGIONS))])
    others = [o for o in objects if o is not target]
    ref = others[rng.integers(len(others))]
    return Instruction("rel", target.name, RELATIONS[rng.integers(4)], ref.name)


def generate_scene(rng: np.random.Generator, split: str, max_tries: int = 1000) -> Scene:
    """Draws one scene with a feasible instruction for ``split`` (rejection sampling, never clipping).

    ``train`` and ``test_iid`` scenes contain no held-out colour-shape pair and never the held-out
    relation combination; every ``test_compositional`` instruction involves one of them.

    Raises:
        ValueError: unknown ``split``.
        RuntimeError: no feasible scene within ``max_tries`` draws (never seen with the defaults).
    """
    if split not in ("train", "test_iid", "test_compositional"):
        raise ValueError(f"split: expected 'train', 'test_iid' or 'test_compositional', got {split!r}")
    held = set(HELD_OUT_PAIRS)
    pairs = [(c, s) for c in COLOURS for s in SHAPES]
    seen = [p for p in pairs if p not in held]
    for _ in range(max_tries):
        n = int(rng.integers(3, 6))
        if split == "test_compositional":
            first = HELD_OUT_PAIRS[rng.integers(len(HELD_OUT_PAIRS))]
            rest = [p for p in pairs if p != first]
            chosen = [first] + [rest[i] for i in rng.choice(len(rest), n - 1, replace=False)]
        else:
            chosen = [seen[i] for i in rng.choice(len(seen), n, replace=False)]
        centres: list[np.ndarray] = []
        while len(centres) < n + 1:
            for _ in range(200):
                c = rng.uniform(*WORKSPACE, size=2)
                if all(np.hypot(*(c - d)) >= MIN_CENTRE_DISTANCE for d in centres):
                    centres.append(c)
                    break
            else:
                break
        if len(centres) < n:
            continue
        objects = tuple(TableObject(c, s, float(p[0]), float(p[1]), float(rng.uniform(0.10, 0.14)))
                        for (c, s), p in zip(chosen, centres[:n], strict=True))
        plate = None
        if len(centres) > n and rng.random() < 0.3:
            plate = (float(np.clip(centres[n][0], 0.15, 0.85)), float(np.clip(centres[n][1], 0.15, 0.85)))
            if any(np.hypot(o.x - plate[0], o.y - plate[1]) < MIN_CENTRE_DISTANCE for o in objects):
                plate = None
        point_u = tuple(tuple(float(v) for v in row) for row in rng.random((3, 2)))
        texture_seed = int(rng.integers(2**31))
        for _ in range(30):
            instr = _candidate_instruction(rng, objects, plate)
            scene = Scene(objects, plate, instr, point_u, texture_seed)
            if not feasible(scene, instr):
                continue
            if (split == "test_compositional") == is_held_out(instr, scene):
                return scene
    raise RuntimeError(f"no feasible {split} scene in {max_tries} draws")
