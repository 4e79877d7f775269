"""Visual-aid quality metrics, in normalised image coordinates (0-1000 units).

``point_accuracy`` (fraction of predicted points inside the ground-truth target box), ``trace_rmse``,
``discrete_frechet`` (discrete Fréchet distance of two polylines), ``hausdorff`` (symmetric Hausdorff
distance, via SciPy) and ``box_iou``.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist, directed_hausdorff


def _polyline(a, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 2 or len(a) == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected finite points of shape (K >= 1, 2) as [x, y], got {a.shape}")
    return a


def point_accuracy(points, boxes) -> float:
    """Fraction of points inside their box (edges included).

    Args:
        points: (N, K, 2) points per episode (or (K, 2) for one episode).
        boxes: (N, 4) boxes ``[x1, y1, x2, y2]`` (or (4,)).
    """
    p = np.asarray(points, dtype=np.float64)
    b = np.asarray(boxes, dtype=np.float64)
    if p.ndim == 2:
        p, b = p[None], b[None]
    if p.ndim != 3 or p.shape[2] != 2 or b.shape != (p.shape[0], 4):
        raise ValueError(f"points, boxes: expected (N, K, 2) and (N, 4), got {p.shape} and {b.shape}")
    inside = (p[..., 0] >= b[:, None, 0]) & (p[..., 0] <= b[:, None, 2]) & \
             (p[..., 1] >= b[:, None, 1]) & (p[..., 1] <= b[:, None, 3])
    return float(inside.mean())


def trace_rmse(pred, gt) -> float:
    """Root mean squared Euclidean distance between corresponding waypoints of two (K, 2) traces."""
    p, g = _polyline(pred, "pred"), _polyline(gt, "gt")
    if p.shape != g.shape:
        raise ValueError(f"pred, gt: expected equal shapes, got {p.shape} and {g.shape}")
    return float(np.sqrt(((p - g) ** 2).sum(-1).mean()))


def discrete_frechet(pred, gt) -> float:
    """Discrete Fréchet distance (Eiter and Mannila's coupling recursion) between polylines (K, 2) and (M, 2)."""
    p, g = _polyline(pred, "pred"), _polyline(gt, "gt")
    d = cdist(p, g)
    ca = np.empty_like(d)
    for i in range(len(p)):
        for j in range(len(g)):
            if i == 0 and j == 0:
                prev = 0.0
            elif i == 0:
                prev = ca[0, j - 1]
            elif j == 0:
                prev = ca[i - 1, 0]
            else:
                prev = min(ca[i - 1, j], ca[i - 1, j - 1], ca[i, j - 1])
            ca[i, j] = max(prev, d[i, j])
    return float(ca[-1, -1])


def hausdorff(pred, gt) -> float:
    """Symmetric Hausdorff distance between two point sets (K, 2) and (M, 2)."""
    p, g = _polyline(pred, "pred"), _polyline(gt, "gt")
    return float(max(directed_hausdorff(p, g)[0], directed_hausdorff(g, p)[0]))


def box_iou(a, b) -> float:
    """Intersection over union of two boxes ``[x1, y1, x2, y2]``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != (4,) or b.shape != (4,):
        raise ValueError(f"a, b: expected boxes of shape (4,), got {a.shape} and {b.shape}")
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0
