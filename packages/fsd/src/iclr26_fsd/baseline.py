"""``DirectActionPolicy``: the VLA analogue, the same backbone mapping image + instruction to joint waypoints.

Output: 8 joint-space waypoints ``(q1, q2)``, each angle quantised into 256 bins over that joint's range
in the training set's expert waypoints (5% margin each side): 16 output tokens. Trained by behaviour
cloning on the expert's joint waypoints (default arm) of the same training scenes.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .env import TableTop2D
from .grammar import TRACE_LENGTH
from .model import TokenPolicy
from .tokens import Vocab, action_automaton

MARGIN = 0.05


class DirectActionPolicy(TokenPolicy):
    """Direct action: image + instruction -> 8 quantised joint waypoints for the training arm.

    Args:
        n_bins: bins per joint angle (256).
        d_model, n_layers, n_heads, d_mlp, image_size, seed, device: as ``FSDTiny``.

    Attributes (after ``fit``): ``joint_low_``, ``joint_high_`` (2,) the quantisation range per joint.
    """

    kind = "direct"

    def __init__(self, n_bins: int = 256, d_model: int = 96, n_layers: int = 3, n_heads: int = 4, d_mlp: int = 384,
                 image_size: int = 64, seed: int = 0, device="cpu"):
        if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 2:
            raise ValueError(f"n_bins: expected an integer >= 2, got {n_bins!r}")
        vocab = Vocab(image_size, action_bins=n_bins)
        self.n_bins = n_bins
        self.automaton = action_automaton(vocab, 2 * TRACE_LENGTH)
        super().__init__(vocab, d_model, n_layers, n_heads, d_mlp, image_size, self.automaton.max_length, seed,
                         device)
        self.joint_low_: np.ndarray | None = None
        self.joint_high_: np.ndarray | None = None

    def set_range(self, joints: np.ndarray) -> None:
        """Sets the per-joint quantisation range from expert waypoints (N, 8, 2), widened by 5% each side."""
        j = np.asarray(joints, dtype=np.float64).reshape(-1, 2)
        lo, hi = j.min(0), j.max(0)
        pad = MARGIN * np.maximum(hi - lo, 1e-6)
        self.joint_low_, self.joint_high_ = lo - pad, hi + pad

    def _require_range(self) -> None:
        if self.joint_low_ is None:
            raise RuntimeError("DirectActionPolicy: call fit (or set_range) before quantising or predicting")

    def quantize(self, q: np.ndarray) -> np.ndarray:
        """Joint angles (..., 2) -> bin indices (..., 2) (clipped to the range)."""
        self._require_range()
        u = (np.asarray(q, dtype=np.float64) - self.joint_low_) / (self.joint_high_ - self.joint_low_)
        return np.clip(np.floor(u * self.n_bins), 0, self.n_bins - 1).astype(np.int64)

    def dequantize(self, k: np.ndarray) -> np.ndarray:
        """Bin indices (..., 2) -> joint angles (..., 2) at the bin centres."""
        self._require_range()
        return self.joint_low_ + (np.asarray(k) + 0.5) / self.n_bins * (self.joint_high_ - self.joint_low_)

    def _targets(self, joints: np.ndarray) -> list[list[str]]:
        return [[f"<a{k}>" for k in row.reshape(-1)] for row in self.quantize(joints)]

    def fit(self, env: TableTop2D, steps: int = 1200, batch_size: int = 32, lr: float = 1e-3,
            weight_decay: float = 0.05, log_every: int = 100, progress=None, callback=None) -> dict:
        """Behaviour cloning on ``env.expert_joints`` for ``steps`` optimisation steps; returns the history."""
        self._check_env(env)
        self.set_range(env.expert_joints)
        targets = self._targets(env.expert_joints)
        prompts = [t.split() for t in env.instructions]

        def sample(n, rng, step):
            idx = rng.integers(len(env), size=n)
            return env.images[idx], [prompts[i] for i in idx], [targets[i] for i in idx]

        return self._train(sample, steps, batch_size, lr, weight_decay, log_every, progress, callback)

    def predict(self, images, instructions: Sequence[str]) -> np.ndarray:
        """Joint waypoints (B, 8, 2) in radians for the training arm (greedy, constrained decoding)."""
        self._require_range()
        outs = self._decode(*self._inputs(images, instructions), self.automaton)
        off = self.vocab.action_offset
        k = np.array([[self.vocab.stoi[t] - off for t in o[:2 * TRACE_LENGTH]] for o in outs])
        return self.dequantize(k.reshape(-1, TRACE_LENGTH, 2))

    def plan(self, env: TableTop2D) -> np.ndarray:
        """Joint waypoints (n, 8, 2) for every scene of a split."""
        return self.predict(env.images, env.instructions)

    def _state(self) -> dict:
        return {**super()._state(), "n_bins": self.n_bins, "joint_low": torch.tensor(self.joint_low_),
                "joint_high": torch.tensor(self.joint_high_)}
