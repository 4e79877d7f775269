import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_smsn import region_dice
from iclr26_smsn.metrics import _predicted_regions


def _reference(pred, gt, labels):
    p, g = np.isin(pred, labels), np.isin(gt, labels)
    if p.sum() + g.sum() == 0:
        return 1.0
    return 2 * (p & g).sum() / (p.sum() + g.sum())


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_region_dice_matches_reference(seed):
    rng = np.random.default_rng(seed)
    pred, gt = rng.choice([0, 1, 2, 4], (6, 7)), rng.choice([0, 1, 2, 4], (6, 7))
    got = region_dice(pred, gt)
    for region, labels in (("WT", (1, 2, 4)), ("TC", (1, 4)), ("ET", (4,))):
        assert got[region] == pytest.approx(_reference(pred, gt, labels))


def test_empty_cases():
    z = np.zeros((4, 4), int)
    assert region_dice(z, z) == {"WT": 1.0, "TC": 1.0, "ET": 1.0}
    fp = z.copy()
    fp[0, 0] = 4
    assert region_dice(fp, z)["ET"] == 0.0


def test_bad_labels():
    with pytest.raises(ValueError, match="pred_labels"):
        region_dice(np.full((2, 2), 3), np.zeros((2, 2), int))
    with pytest.raises(ValueError, match="shape"):
        region_dice(np.zeros((2, 2), int), np.zeros((2, 3), int))


def test_region_dice_matches_monai():
    monai_metrics = pytest.importorskip("monai.metrics")
    import torch

    rng = np.random.default_rng(0)
    pred, gt = rng.choice([0, 1, 2, 4], (8, 8)), rng.choice([0, 1, 2, 4], (8, 8))
    onehot = [np.stack([np.isin(a, r) for r in ((1, 2, 4), (1, 4), (4,))])[None] for a in (pred, gt)]
    metric = monai_metrics.DiceMetric(include_background=True, reduction="none")
    ref = metric(torch.as_tensor(onehot[0]).float(), torch.as_tensor(onehot[1]).float())[0].numpy()
    assert np.allclose(list(region_dice(pred, gt).values()), ref)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_hd95_shifted_squares(k):
    from iclr26_smsn.metrics import hd95

    a = np.zeros((40, 40), bool)
    a[10:20, 10:20] = True
    b = np.roll(a, k, axis=0)
    assert hd95(a, b) == pytest.approx(k)
    assert hd95(a, a) == 0.0


def test_hd95_empty_rules():
    from iclr26_smsn.metrics import hd95, region_hd95

    z = np.zeros((6, 8), bool)
    one = z.copy()
    one[2, 3] = True
    assert hd95(z, z) == 0.0
    assert hd95(one, z) == hd95(z, one) == pytest.approx(10.0)
    assert region_hd95(np.zeros((6, 8), int), np.zeros((6, 8), int)) == {"WT": 0.0, "TC": 0.0, "ET": 0.0}
    with pytest.raises(ValueError, match="pred_mask"):
        hd95(z, np.zeros((6, 7), bool))


def test_hd95_matches_medpy():
    medpy_binary = pytest.importorskip("medpy.metric.binary")
    from iclr26_smsn import make_phantom
    from iclr26_smsn.metrics import hd95

    labels = make_phantom(6, 48, seed=4).labels
    for i in range(5):
        pred, gt = labels[i] > 0, np.roll(labels[i + 1] > 0, i, axis=1)
        if pred.any() and gt.any():
            assert hd95(pred, gt) == pytest.approx(medpy_binary.hd95(pred, gt))


def test_predicted_regions_equal_argmax():
    """The comparison arg-max of evaluate_subsets gives argmax's regions, ties included (they go to the lower class)."""
    classes = torch.tensor([[False, True, True, True], [False, True, False, True], [False, False, False, True]])
    gen = torch.Generator().manual_seed(0)
    for logits in (torch.randn(6, 4, 9, 9, generator=gen), torch.randint(0, 3, (6, 4, 9, 9), generator=gen).float()):
        expected = classes[:, logits.argmax(1).flatten(1)].transpose(0, 1)
        assert torch.equal(_predicted_regions(logits), expected)
