"""The embodiment: a planar 2-link arm with closed-form inverse kinematics."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class UnreachableError(ValueError):
    """A target outside the arm's annulus of reach."""


@dataclass(frozen=True)
class Arm:
    """Planar 2-link arm with its base at ``base`` (table units) and links ``(l1, l2)``.

    Joint angles ``q = (q1, q2)``: q1 of the first link from the +x axis, q2 of the second relative to
    the first. The IK branch is ``q2 in [0, pi]`` (one fixed elbow branch, so paths are continuous).
    """

    base: tuple[float, float] = (0.5, -0.35)
    l1: float = 0.75
    l2: float = 0.65

    @classmethod
    def default(cls) -> Arm:
        """The training embodiment: base (0.5, -0.35), links (0.75, 0.65)."""
        return cls()

    @classmethod
    def alternative(cls) -> Arm:
        """The zero-shot embodiment: base (0.15, -0.3), links (0.6, 0.85)."""
        return cls(base=(0.15, -0.3), l1=0.6, l2=0.85)

    @classmethod
    def named(cls, name: str) -> Arm:
        """``"default"`` or ``"alt"``."""
        if name == "default":
            return cls.default()
        if name == "alt":
            return cls.alternative()
        raise ValueError(f"arm: expected 'default' or 'alt', got {name!r}")

    def fk(self, q: np.ndarray) -> np.ndarray:
        """End-effector positions (..., 2) of joint angles ``q`` (..., 2)."""
        q = np.asarray(q, dtype=np.float64)
        q1, q12 = q[..., 0], q[..., 0] + q[..., 1]
        x = self.base[0] + self.l1 * np.cos(q1) + self.l2 * np.cos(q12)
        y = self.base[1] + self.l1 * np.sin(q1) + self.l2 * np.sin(q12)
        return np.stack([x, y], -1)

    def reachable(self, p: np.ndarray) -> np.ndarray:
        """Boolean (...) : whether each point (..., 2) lies in the annulus ``|l1 - l2| <= r <= l1 + l2``."""
        r = np.hypot(*np.moveaxis(np.asarray(p, dtype=np.float64) - np.array(self.base), -1, 0))
        return (r >= abs(self.l1 - self.l2) - 1e-12) & (r <= self.l1 + self.l2 + 1e-12)

    def ik(self, p: np.ndarray) -> np.ndarray:
        """Joint angles (..., 2) reaching the points ``p`` (..., 2) (closed form, ``q2 in [0, pi]``).

        Raises:
            UnreachableError: a point is outside the reachable annulus (never clamped).
        """
        p = np.asarray(p, dtype=np.float64)
        if not np.all(self.reachable(p)):
            bad = p[~self.reachable(p)] if p.ndim > 1 else p
            raise UnreachableError(f"ik: point(s) {np.round(bad, 4).tolist()} outside the reach of {self}")
        d = p - np.array(self.base)
        r2 = (d**2).sum(-1)
        c2 = np.clip((r2 - self.l1**2 - self.l2**2) / (2 * self.l1 * self.l2), -1.0, 1.0)
        q2 = np.arccos(c2)
        q1 = np.arctan2(d[..., 1], d[..., 0]) - np.arctan2(self.l2 * np.sin(q2), self.l1 + self.l2 * np.cos(q2))
        return np.stack([q1, q2], -1)
