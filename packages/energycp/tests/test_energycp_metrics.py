"""Set metrics against hand computations."""
import numpy as np
import pytest
from iclr26_energycp import metrics

SETS = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [1, 1, 1], [0, 1, 0], [0, 0, 1]], dtype=bool)
Y = np.array([0, 2, 1, 1, 1, 0])


def test_coverage_size_empty():
    assert metrics.coverage(SETS, Y) == pytest.approx(3 / 6)
    assert metrics.average_size(SETS) == pytest.approx(8 / 6)
    assert metrics.empty_rate(SETS) == pytest.approx(1 / 6)


def test_class_metrics():
    # class 0: rows 0, 5 -> covered 1 of 2; class 1: rows 2,3,4 -> 2 of 3; class 2: row 1 -> 0 of 1
    cov = np.array([0.5, 2 / 3, 0.0])
    assert metrics.covgap(SETS, Y, 0.1) == pytest.approx(np.abs(cov - 0.9).mean() * 100)
    assert metrics.vio_classes(SETS, Y, 0.1) == 3
    assert metrics.vio_classes(SETS, Y, 0.5, num_classes=3) == 1


def test_sscv_by_set_size():
    # sizes: 1,2,0,3,1,1 -> stratum 0-1: rows 0,2,4,5 cover 1,0,1,0 = 0.5; stratum 2-3: rows 1,3 cover 0,1 = 0.5
    assert metrics.sscv(SETS, Y, 0.1) == pytest.approx(0.4)


def test_diff_violation_by_rank():
    logits = np.array([[3, 2, 1], [3, 2, 1], [3, 2, 1], [1, 3, 2], [1, 3, 2], [3, 2, 1.0]])
    # true-label ranks: 1, 3, 2, 1, 1, 1 -> rank 1 rows 0,3,4,5 cover 1,1,1,0 = 0.75; ranks 2-3 rows 1,2 cover 0
    assert metrics.diff_violation(logits, SETS, Y, 0.1) == pytest.approx(0.9)


def test_bad_sets_raise():
    with pytest.raises(ValueError, match="boolean"):
        metrics.coverage(SETS.astype(int), Y)
    with pytest.raises(ValueError, match="num_classes"):
        metrics.covgap(SETS, Y, 0.1, num_classes=4)


def test_sscv_variants_minimum_stratum_and_one_sided():
    from iclr26_energycp import metrics

    sets = np.zeros((12, 5), dtype=bool)
    sets[:10, 0] = True  # 10 singletons, 9 covered (0.9)
    sets[10:, :3] = True  # 2 sets of size 3, both covered (1.0)
    y = np.array([0] * 9 + [1] + [2, 2])
    assert metrics.sscv(sets, y, 0.1) == pytest.approx(0.1)  # the over-covered pair counts
    assert metrics.sscv(sets, y, 0.1, min_stratum=3) == pytest.approx(0.0)
    assert metrics.sscv(sets, y, 0.1, one_sided=True) == pytest.approx(0.0)
    assert metrics.sscv(sets, y, 0.05, one_sided=True) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="min_stratum"):
        metrics.sscv(sets, y, 0.1, min_stratum=-1)
