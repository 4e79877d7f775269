"""Executing plans on the simulated arm: the visual-aid controller (FSD) and joint waypoints (direct action).

An episode: the gripper closes at waypoint 1 and grasps iff the end effector is within 0.05 of the
object's centre; the object then moves rigidly with the end effector through waypoints 2-8 (linear
interpolation in joint space, 5 sub-steps per segment) and is released at waypoint 8; the success
predicate is evaluated on the resulting scene.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arm import Arm
from .camera import Camera
from .grammar import TRACE_LENGTH, VisualAids
from .scene import Scene, is_success, parse_instruction

GRASP_TOLERANCE = 0.05
SUB_STEPS = 5


@dataclass(frozen=True)
class EpisodeResult:
    """Outcome of one episode.

    Attributes:
        success: whether the success predicate holds after release.
        reason: ``"ok"``, ``"parse_failure"``, ``"bad_trace"``, ``"unreachable"``, ``"absent_object"``,
            ``"grasp_missed"``, ``"outside_target"``, ``"overlap"`` or ``"relation"``.
        final_xy: (2,) the manipulated object's final table position (None when it never moved).
        ee_path: (K, 2) end-effector path (None when the episode stopped before moving).
    """

    success: bool
    reason: str
    final_xy: np.ndarray | None = None
    ee_path: np.ndarray | None = None


def joint_path(q: np.ndarray, sub_steps: int = SUB_STEPS) -> np.ndarray:
    """Linear interpolation in joint space: (K, 2) waypoints -> ((K-1) * sub_steps + 1, 2) joint path."""
    t = np.arange(sub_steps) / sub_steps
    segs = q[:-1, None, :] + t[None, :, None] * (q[1:] - q[:-1])[:, None, :]
    return np.concatenate([segs.reshape(-1, 2), q[-1:]], 0)


def execute_joints(scene: Scene, q: np.ndarray, arm: Arm, instruction: str | None = None) -> EpisodeResult:
    """Runs joint waypoints ``q`` (8, 2) on ``arm``: grasp at waypoint 1, release at the last.

    Args:
        scene: the scene; ``instruction`` defaults to its own.
        q: (K >= 2, 2) joint angles in radians.
    """
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 2 or q.shape[1] != 2 or len(q) < 2 or not np.all(np.isfinite(q)):
        raise ValueError(f"q: expected finite joint waypoints of shape (K >= 2, 2), got {q.shape}")
    instr = scene.instruction if instruction is None else parse_instruction(instruction)
    obj = scene.find(instr.target)
    if obj is None:
        return EpisodeResult(False, "absent_object")
    path = arm.fk(joint_path(q))
    if np.hypot(*(path[0] - obj.xy)) > GRASP_TOLERANCE:
        return EpisodeResult(False, "grasp_missed", obj.xy, path)
    final = path[-1] + (obj.xy - path[0])
    ok, reason = is_success(scene, instr, final)
    return EpisodeResult(ok, reason, final, path)


@dataclass(frozen=True)
class VisualAidController:
    """Follows FSD's object-centric visual trace with a given arm and camera calibration.

    The 8 trace waypoints (normalised image coordinates) go through ``Hcam^-1`` to the table, then
    through the arm's IK; only this controller knows the embodiment. With ``grasp_module`` (the paper's
    SimplerEnv pipeline, which picks with a grasp module and places with the affordance points) the arm
    grasps at the centre of the SrCoT box grounding the instructed object (the trace start when the output
    has none) and carries it straight to the mean affordance point; the trace is not used.
    """

    arm: Arm
    camera: Camera
    grasp_module: bool = False

    def trace_to_table(self, aids: VisualAids) -> np.ndarray:
        """(8, 2) table coordinates of the trace waypoints."""
        return self.camera.norm_to_table(np.asarray(aids.trace, dtype=np.float64))

    def grasp_path(self, aids: VisualAids, target: str) -> np.ndarray:
        """The grasp module's (8, 2) table path: grounded box centre of ``target`` -> mean affordance point."""
        boxes = [np.asarray(b, dtype=np.float64) for name, b in aids.refs if name == target]
        start = (boxes[0][:2] + boxes[0][2:]) / 2 if boxes else np.asarray(aids.trace[0], dtype=np.float64)
        ends = self.camera.norm_to_table(np.stack([start, np.mean(np.asarray(aids.points, dtype=np.float64), 0)]))
        return ends[0] + np.linspace(0.0, 1.0, TRACE_LENGTH)[:, None] * (ends[1] - ends[0])

    def execute(self, scene: Scene, aids: VisualAids | None, instruction: str | None = None) -> EpisodeResult:
        """Runs one episode; ``aids=None`` (unparsable output) is a failed episode, never skipped.

        An unreachable waypoint fails the episode with reason ``"unreachable"`` (no clamping).
        """
        if aids is None:
            return EpisodeResult(False, "parse_failure")
        if len(aids.trace) != TRACE_LENGTH:
            return EpisodeResult(False, "bad_trace")
        if self.grasp_module:
            target = (scene.instruction if instruction is None else parse_instruction(instruction)).target
            xy = self.grasp_path(aids, target)
        else:
            xy = self.trace_to_table(aids)
        if not np.all(self.arm.reachable(xy)):
            return EpisodeResult(False, "unreachable")
        return execute_joints(scene, self.arm.ik(xy), self.arm, instruction)
