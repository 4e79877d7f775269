"""Bad input gets a clear error; nothing is silently wrong."""
import numpy as np
import pytest
from iclr26_camel import CAMEL, ConcatKMeans, apply_mask, make_incomplete_mask, make_incomplete_multiview_blobs


@pytest.fixture(scope="module")
def views():
    Xs, _ = make_incomplete_multiview_blobs(n=60, n_clusters=3, n_views=2, dims=(5, 6), random_state=0)
    return Xs


def test_view_errors(views):
    a, b = views
    with pytest.raises(ValueError, match="same number of rows"):
        CAMEL(3).fit([a, b[:-1]])
    with pytest.raises(ValueError, match="at least 2 views"):
        CAMEL(3).fit([a])
    with pytest.raises(TypeError, match="list of arrays"):
        CAMEL(3).fit(a)
    gone = [a.copy(), b.copy()]
    gone[0][0] = np.nan
    gone[1][0] = np.nan
    with pytest.raises(ValueError, match="missing in every view"):
        CAMEL(3).fit(gone)
    partial = [a.copy(), b]
    partial[0][3, 1] = np.nan
    with pytest.raises(ValueError, match="inside an observed row"):
        CAMEL(3).fit(partial)
    infinite = [a.copy(), b]
    infinite[0][3, 1] = np.inf
    with pytest.raises(ValueError, match="inside an observed row"):
        CAMEL(3).fit(infinite)


def test_view_with_too_few_observed_samples(views):
    mask = np.ones((60, 2), dtype=bool)
    mask[2:, 1] = False
    with pytest.raises(ValueError, match="fewer than n_clusters"):
        CAMEL(3).fit(views, mask=mask)


@pytest.mark.parametrize("mask,match", [(np.ones((60, 3)), "shape"), (np.full((60, 2), 2), "0/1")])
def test_mask_errors(views, mask, match):
    with pytest.raises(ValueError, match=match):
        CAMEL(3).fit(views, mask=mask)


@pytest.mark.parametrize("param,value", [("delta", 0.0), ("beta", -1.0), ("mu", 0.0), ("eta", 0.5),
                                         ("lambda1", -1e-3), ("lambda2", -1.0), ("n_anchors", 0), ("n_clusters", 1),
                                         ("degree", "exact"), ("tensor_norm", "fro"), ("tensor_layout", "c_n_m"),
                                         ("preprocess", "zscore")])
def test_hyper_parameter_errors(views, param, value):
    args = {"n_clusters": 3, param: value}
    with pytest.raises(ValueError, match=param):
        CAMEL(**args).fit(views)


def test_too_many_clusters(views):
    with pytest.raises(ValueError, match="fewer than n_clusters"):
        CAMEL(61).fit(views)


def test_negative_inputs_without_preprocessing(views):
    a, b = views
    negative = [a - 10.0, b]
    with pytest.warns(UserWarning, match="negative"):
        CAMEL(3, preprocess=None, max_iter=2).fit(negative)
    with pytest.raises(ValueError, match="negative"):
        CAMEL(3, preprocess=None, strict=True).fit(negative)


def test_mask_argument_overrides_nan_detection(views):
    mask = make_incomplete_mask(60, 2, 0.3, rng=0)
    by_nan = CAMEL(3, max_iter=5, random_state=0).fit(apply_mask(views, mask))
    by_mask = CAMEL(3, max_iter=5, random_state=0).fit(views, mask=mask)
    np.testing.assert_array_equal(by_nan.labels_, by_mask.labels_)
    np.testing.assert_array_equal(by_mask.mask_, mask)
    assert ConcatKMeans(3, random_state=0).fit_predict(views, mask).shape == (60,)
