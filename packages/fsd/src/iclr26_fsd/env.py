"""``TableTop2D``: a seeded split of rendered scenes, their ground truth, and the training task mixture.

Tasks (hierarchical, weak-to-strong, plus self-consistency), each a (prompt, target) token pair:

- ``level0``: single-object grounding (the scene re-rendered with the named object alone, ``find the red
  square`` -> its box): where a coordinate token points, before any name has to be bound to an object;
- ``level1``: grounding (``find the red square`` -> ``<ref> red square </ref> <box> .. </box>``; a share
  ``GROUNDING_SHARE`` of the samples) and region captioning (``what is in <box> .. </box>`` -> ``<ref> .. </ref>``);
- ``level2``: spatial-relation QA (``is the a left of the b`` -> ``yes``/``no``) and relation-graph
  generation (``relate the a and the b`` -> ``<rel> a @relation b </rel>``);
- ``level3``: the instruction -> SrCoT + visual aids (answer only when ``cot=False``);
- ``consistency`` (inverse tasks aligning coordinates with pixels): point reading (a marker is drawn ->
  its ``<point>``), referring (``what is at <point> x y </point>`` -> the object's name) and trace
  reading (the ground-truth trace is drawn -> the moved object and the relation achieved).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .arm import Arm
from .camera import Camera
from .grammar import TRACE_LENGTH, VisualAids
from .render import draw_marker, draw_polyline, render
from .scene import (
    HELD_OUT_COMBO,
    RELATIONS,
    WORKSPACE,
    Scene,
    current_relation,
    generate_scene,
    relation_holds,
    target_box,
)
from .tokens import Vocab, aids_to_tokens, relation_token

SPLITS = ("train", "test_iid", "test_compositional")
TASKS = ("level0", "level1", "level2", "level3", "consistency")
MIXTURE = {"level0": 0.0, "level1": 0.15, "level2": 0.15, "level3": 0.55, "consistency": 0.15}
CURRICULUM = (
    (0.3, {"level0": 0.2, "level1": 0.8, "level2": 0.0, "level3": 0.0, "consistency": 0.0}),
    (0.3, {"level0": 0.0, "level1": 0.8, "level2": 0.1, "level3": 0.0, "consistency": 0.1}),
    (0.4, MIXTURE),
)
"""FSD's staged, weak-to-strong data as a schedule: (fraction of the steps, task weights). Single-object
grounding first, then multi-object grounding and relations, then the full mixture with SrCoT + visual aids
(points and traces); point reading (``consistency``) throughout."""
GROUNDING_SHARE = 0.8
"""Fraction of ``level1`` samples that are grounding (``find the X``); the rest are region captioning."""
CURRICULA = {"staged": CURRICULUM, "mixture": ((1.0, MIXTURE),)}
"""Named schedules for ``FSDTiny.fit(curriculum=...)``: ``staged`` (the default) or the single-stage ``mixture``
(the spec's original mixing ratios from the first step, no single-object stage)."""


def curriculum_stages(curriculum, tasks: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Stage ends (fractions of the steps, cumulative) and per-stage weights over ``tasks`` (stages, len(tasks)).

    ``curriculum``: a name of ``CURRICULA`` or a sequence of ``(fraction, {task: weight})`` stages whose
    fractions are positive and sum to 1 (tasks left out weigh 0).

    Raises:
        ValueError: an unknown name or task, fractions that do not sum to 1, or a stage with no weight on ``tasks``.
    """
    if isinstance(curriculum, str):
        if curriculum not in CURRICULA:
            raise ValueError(f"curriculum: expected one of {sorted(CURRICULA)} or (fraction, weights) stages, "
                             f"got {curriculum!r}")
        curriculum = CURRICULA[curriculum]
    try:
        stages = [(float(f), dict(w)) for f, w in curriculum]
    except (TypeError, ValueError):
        raise ValueError(f"curriculum: expected (fraction, {{task: weight}}) stages, got {curriculum!r}") from None
    fractions = np.array([f for f, _ in stages])
    if not stages or np.any(fractions <= 0) or abs(fractions.sum() - 1.0) > 1e-9:
        raise ValueError(f"curriculum: expected stage fractions > 0 summing to 1, got {fractions.tolist()}")
    unknown = sorted({t for _, w in stages for t in w} - set(TASKS))
    if unknown:
        raise ValueError(f"curriculum: expected tasks among {TASKS}, got {unknown}")
    weights = np.array([[float(w.get(t, 0.0)) for t in tasks] for _, w in stages])
    if np.any(weights < 0) or np.any(weights.sum(1) <= 0):
        raise ValueError(f"curriculum: expected non-negative weights and some weight on {tasks} in every stage, "
                         f"got {weights.tolist()}")
    return np.cumsum(fractions), weights


@dataclass
class TaskBatch:
    """A batch of (image, prompt, target) samples.

    Attributes:
        images: uint8 (n, S, S, 3).
        prompts: n token lists (instruction words, grammar and coordinate tokens).
        targets: n token lists (without ``<eos>``).
        tasks: n task names (``level1`` ... ``consistency``).
    """

    images: np.ndarray
    prompts: list[list[str]]
    targets: list[list[str]]
    tasks: list[str]


def ground_truth_aids(scene: Scene, camera: Camera) -> VisualAids:
    """The scene's ground-truth visual aids (normalised image coordinates), SrCoT included.

    Box: image box around the projected target region; points: the scene's 3 uniform draws inside the
    target region; trace: 8 evenly spaced points on the straight table-coordinate line from the
    manipulated object's centre to the target box's centre; refs: the manipulated object and the
    reference (object or plate) with their image boxes; relation: the reference's current relation.
    """
    instr = scene.instruction
    box = target_box(scene, instr)
    obj = scene.find(instr.target)
    pts = box[:2] + np.asarray(scene.point_u) * (box[2:] - box[:2])
    centre = (box[:2] + box[2:]) / 2
    trace = obj.xy + np.linspace(0.0, 1.0, TRACE_LENGTH)[:, None] * (centre - obj.xy)
    refs = [(obj.name, camera.table_box_to_norm(obj.extent()))]
    relations = []
    if instr.kind == "rel":
        ref = scene.find(instr.reference)
        refs.append((ref.name, camera.table_box_to_norm(ref.extent())))
        relations.append((obj.name, current_relation(obj.xy, ref.xy), ref.name))
    elif instr.kind == "on":
        p = np.array(scene.plate)
        refs.append(("plate", camera.table_box_to_norm(np.concatenate([p - 0.075, p + 0.075]))))
        relations.append((obj.name, current_relation(obj.xy, p), "plate"))
    return VisualAids.from_arrays(camera.table_box_to_norm(box), camera.table_to_norm(pts),
                                  camera.table_to_norm(trace), refs, relations)


class TableTop2D:
    """A seeded split of procedural tabletop scenes, rendered through a fixed camera.

    Args:
        split: ``"train"``, ``"test_iid"`` or ``"test_compositional"``.
        n_scenes: number of scenes (one main instruction each).
        seed: the split's seed (each split draws from its own stream of ``seed``).
        image_size: image side in pixels (64; 128 at the GPU scale).
        camera: the camera; default ``Camera(size=image_size)``.

    Attributes:
        scenes: the scenes; ``images`` uint8 (n, S, S, 3); ``instructions`` their texts;
        aids: ground-truth ``VisualAids``; ``expert_joints`` (n, 8, 2) default-arm IK of the GT trace.
    """

    def __init__(self, split: str = "train", n_scenes: int = 6000, seed: int = 0, image_size: int = 64,
                 camera: Camera | None = None):
        if split not in SPLITS:
            raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")
        if isinstance(n_scenes, bool) or not isinstance(n_scenes, (int, np.integer)) or n_scenes < 1:
            raise ValueError(f"n_scenes: expected a positive integer, got {n_scenes!r}")
        self.split, self.seed = split, int(seed)
        self.camera = Camera(size=image_size) if camera is None else camera
        rng = np.random.default_rng([self.seed, SPLITS.index(split)])
        self.scenes = [generate_scene(rng, split) for _ in range(int(n_scenes))]
        self.images = np.stack([self.render(s) for s in self.scenes])
        self.instructions = [s.instruction.text for s in self.scenes]
        self.aids = [ground_truth_aids(s, self.camera) for s in self.scenes]
        arm = Arm.default()
        self._single: dict[tuple[int, int], np.ndarray] = {}  # level0 images, rendered when first drawn
        self.expert_joints = np.stack([arm.ik(self.camera.norm_to_table(np.asarray(a.trace, dtype=float)))
                                       for a in self.aids])

    def __len__(self) -> int:
        return len(self.scenes)

    def render(self, scene: Scene) -> np.ndarray:
        """uint8 (S, S, 3) image of ``scene`` through this split's camera."""
        return render(scene, self.camera)

    def target_boxes(self) -> np.ndarray:
        """(n, 4) ground-truth target boxes, normalised image coordinates."""
        return np.array([a.box for a in self.aids], dtype=np.float64)

    def sample_tasks(self, n: int, tasks=TASKS, weights=None, cot: bool = True, vocab: Vocab | None = None,
                     rng: np.random.Generator | None = None) -> TaskBatch:
        """Draws ``n`` training samples: a scene, then a task from ``tasks`` by ``weights`` (default ``MIXTURE``).

        Raises:
            ValueError: unknown task name, or weights that do not match ``tasks``.
        """
        tasks = tuple(tasks)
        bad = [t for t in tasks if t not in TASKS]
        if bad or not tasks:
            raise ValueError(f"tasks: expected a non-empty subset of {TASKS}, got {tasks}")
        w = np.array([MIXTURE[t] for t in tasks] if weights is None else weights, dtype=np.float64)
        if w.shape != (len(tasks),) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights: expected {len(tasks)} non-negative numbers, got {weights!r}")
        vocab = Vocab(self.camera.size) if vocab is None else vocab
        rng = np.random.default_rng() if rng is None else rng
        idx = rng.integers(len(self), size=n)
        kinds = rng.choice(len(tasks), size=n, p=w / w.sum())
        images, prompts, targets, names = [], [], [], []
        for i, k in zip(idx, kinds, strict=True):
            img, prompt, target = getattr(self, f"_{tasks[k]}")(int(i), rng, vocab, cot)
            images.append(img)
            prompts.append(prompt)
            targets.append(target)
            names.append(tasks[k])
        return TaskBatch(np.stack(images), prompts, targets, names)

    def _pixel_tokens(self, xy: np.ndarray, vocab: Vocab) -> list[str]:
        return [vocab.coord(v) for v in self.camera.table_to_norm(xy)]

    def _box_tokens(self, table_box: np.ndarray, vocab: Vocab) -> list[str]:
        return ["<box>", *[vocab.coord(v) for v in self.camera.table_box_to_norm(table_box)], "</box>"]

    def _level0(self, i, rng, vocab, cot):
        scene = self.scenes[i]
        j = int(rng.integers(len(scene.objects)))
        obj = scene.objects[j]
        if (i, j) not in self._single:
            self._single[i, j] = self.render(replace(scene, objects=(obj,), plate=None))
        return (self._single[i, j], ["find", "the", *obj.name.split()],
                ["<ref>", *obj.name.split(), "</ref>", *self._box_tokens(obj.extent(), vocab)])

    def _level1(self, i, rng, vocab, cot):
        scene = self.scenes[i]
        obj = scene.objects[rng.integers(len(scene.objects))]
        if rng.random() < GROUNDING_SHARE:
            return (self.images[i], ["find", "the", *obj.name.split()],
                    ["<ref>", *obj.name.split(), "</ref>", *self._box_tokens(obj.extent(), vocab)])
        return (self.images[i], ["what", "is", "in", *self._box_tokens(obj.extent(), vocab)],
                ["<ref>", *obj.name.split(), "</ref>"])

    def _level2(self, i, rng, vocab, cot):
        scene = self.scenes[i]
        a, b = (scene.objects[j] for j in rng.choice(len(scene.objects), 2, replace=False))
        if rng.random() < 0.5:
            rels = [r for r in RELATIONS[:4] if not (r == HELD_OUT_COMBO[0] and b.shape == HELD_OUT_COMBO[1])]
            rel = rels[rng.integers(len(rels))]
            answer = "yes" if relation_holds(rel, a.xy, b.xy) else "no"
            return self.images[i], ["is", "the", *a.name.split(), *rel.split(), "the", *b.name.split()], [answer]
        rel = relation_token(current_relation(a.xy, b.xy))
        return (self.images[i], ["relate", "the", *a.name.split(), "and", "the", *b.name.split()],
                ["<rel>", *a.name.split(), rel, *b.name.split(), "</rel>"])

    def _level3(self, i, rng, vocab, cot):
        return self.images[i], self.instructions[i].split(), aids_to_tokens(self.aids[i], vocab, cot)

    def _consistency(self, i, rng, vocab, cot):
        scene, u = self.scenes[i], rng.random()
        if u < 1 / 3:
            xy = rng.uniform(*WORKSPACE, size=2)
            img = draw_marker(self.images[i], self.camera.table_to_pixel(xy))
            return img, ["where", "is", "the", "marker"], ["<point>", *self._pixel_tokens(xy, vocab), "</point>"]
        if u < 2 / 3:
            obj = scene.objects[rng.integers(len(scene.objects))]
            return (self.images[i], ["what", "is", "at", "<point>", *self._pixel_tokens(obj.xy, vocab), "</point>"],
                    ["<ref>", *obj.name.split(), "</ref>"])
        instr = scene.instruction
        uv = np.asarray(self.aids[i].trace, dtype=np.float64) * (self.camera.size / 1000.0)
        other = "table" if instr.kind == "region" else instr.reference
        return (draw_polyline(self.images[i], uv), ["which", "object", "moves"],
                ["<ref>", *instr.target.split(), "</ref>", "<rel>", *instr.target.split(),
                 relation_token(instr.goal), *other.split(), "</rel>"])


def referring_prompt(point_norm: np.ndarray, vocab: Vocab) -> list[str]:
    """The referring task's prompt for a normalised image point (self-consistency check at inference)."""
    return ["what", "is", "at", "<point>", vocab.coord(point_norm[0]), vocab.coord(point_norm[1]), "</point>"]

