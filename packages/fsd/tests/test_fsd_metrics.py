import numpy as np
import pytest
from iclr26_fsd.metrics import box_iou, discrete_frechet, hausdorff, point_accuracy, trace_rmse


def test_discrete_frechet_of_parallel_lines_is_their_offset():
    a = np.array([[0, 0], [1, 0], [2, 0], [3, 0]], dtype=float)
    assert discrete_frechet(a, a + [0, 2]) == pytest.approx(2.0)


def test_discrete_frechet_sees_order_hausdorff_does_not():
    a = np.array([[0, 0], [10, 0]], dtype=float)
    assert hausdorff(a, a[::-1]) == 0.0
    assert discrete_frechet(a, a[::-1]) == pytest.approx(10.0)


def test_hausdorff_closed_form():
    a = np.array([[0, 0], [4, 0]], dtype=float)
    b = np.array([[0, 3]], dtype=float)
    assert hausdorff(a, b) == pytest.approx(5.0)  # from (4, 0) to (0, 3)


def test_rmse_iou_and_point_accuracy():
    t = np.random.default_rng(0).uniform(0, 1000, (8, 2))
    assert trace_rmse(t, t) == 0.0
    assert trace_rmse(t, t + [3, 4]) == pytest.approx(5.0)
    assert box_iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert box_iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(1 / 3)
    assert point_accuracy([[[1, 1], [20, 1]]], [[0, 0, 10, 10]]) == 0.5


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="pred"):
        trace_rmse(np.zeros((8, 3)), np.zeros((8, 2)))
    with pytest.raises(ValueError, match="boxes"):
        point_accuracy(np.zeros((2, 3, 2)), np.zeros((3, 4)))
