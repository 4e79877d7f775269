"""The PU generator: exact counts, SCAR uniformity, SAR direction, determinism, bad input."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_pubench import DatasetNotFoundError, labeling_propensity, load_dataset, make_benchmark_splits, make_pu_split
from iclr26_pubench.data import posterior_estimate


@pytest.fixture(scope="module")
def digits():
    ds = load_dataset("digits", random_state=0)
    return ds.X_train, ds.y_train


@pytest.mark.parametrize("labeling", ["scar", "sar_lbeA", "sar_lbeB", "sar_pusb"])
@pytest.mark.parametrize("c", [0.1, 0.5])
def test_case_control_full_u_counts(digits, labeling, c):
    X, y = digits
    n, n_pos = len(y), int(y.sum())
    sp = make_pu_split(X, y, c, labeling=labeling, random_state=3)
    n_l = math.floor(c * n_pos)
    assert sp.meta["n_labeled"] == (sp.s == 1).sum() == n_l
    assert sp.meta["n_unlabeled"] == (sp.s == 0).sum() == n
    assert sp.meta["n_pos_unlabeled"] == n_pos and sp.meta["n_neg_unlabeled"] == n - n_pos
    assert abs(sp.prior - n_pos / n) <= 1e-12
    # labeled rows stay inside U (no deduplication) and are all positives
    assert set(sp.source_index[sp.s == 1]) <= set(sp.source_index[sp.s == 0])
    assert (sp.y[sp.s == 1] == 1).all()
    assert np.array_equal(sp.X, X[sp.source_index])


@pytest.mark.parametrize("labeling", ["scar", "sar_lbeA"])
def test_single_sample_counts_and_prior(digits, labeling):
    X, y = digits
    n, n_pos = len(y), int(y.sum())
    sp = make_pu_split(X, y, 0.1, scheme="single", labeling=labeling, random_state=1)
    n_l = math.floor(0.1 * n_pos)
    assert sp.meta["n_unlabeled"] == n - n_l and len(sp.s) == n
    assert sp.prior == pytest.approx((n_pos - n_l) / (n - n_l), abs=1e-12)
    assert sp.prior != pytest.approx(n_pos / n, abs=1e-6)  # single and case-control priors differ
    assert len(np.unique(sp.source_index)) == n


def test_equal_n_counts(digits):
    X, y = digits
    n, pi, c = len(y), y.mean(), 0.3
    sp = make_pu_split(X, y, c, case_control_mode="equal_n", random_state=0)
    A = 1 / (1 - c + c * pi)
    assert sp.meta["n_labeled"] == math.ceil(A * c * pi * n)
    assert sp.meta["n_unlabeled"] == math.ceil(A * (1 - c) * n)
    assert sp.prior == pytest.approx(sp.y[sp.s == 0].mean())


def test_scar_is_uniform():
    X = np.arange(20.0)[:, None]
    y = np.array([1] * 10 + [0] * 10)
    counts = np.zeros(20)
    for seed in range(2000):
        sp = make_pu_split(X, y, 0.3, random_state=seed)
        counts[sp.source_index[sp.s == 1]] += 1
    freq = counts[:10] / 2000
    assert counts[10:].sum() == 0
    assert np.all(np.abs(freq - 0.3) <= 4 * math.sqrt(0.3 * 0.7 / 2000))


def test_sar_propensity_direction(digits):
    X, y = digits
    p_hat = posterior_estimate(X, y, 0)[y == 1]
    order = np.argsort(p_hat)
    a = labeling_propensity(X, y, "sar_lbeA", random_state=0)
    b = labeling_propensity(X, y, "sar_lbeB", random_state=0)
    assert a.sum() == pytest.approx(1) and b.sum() == pytest.approx(1)
    assert np.all(np.diff(a[order]) >= -1e-15) and np.all(np.diff(b[order]) <= 1e-15)
    assert a.min() >= 0.1 / len(a) - 1e-15
    lbe_a = make_pu_split(X, y, 0.5, labeling="sar_lbeA", random_state=0).meta
    lbe_b = make_pu_split(X, y, 0.5, labeling="sar_lbeB", random_state=0).meta
    assert lbe_a["mean_phat_labeled"] > lbe_a["mean_phat_positives"] > lbe_b["mean_phat_labeled"]


def test_pusb_rules(digits):
    X, y = digits
    top = make_pu_split(X, y, 0.2, labeling="sar_pusb", random_state=0)
    p_hat = posterior_estimate(X, y, 0)
    lab = np.unique(top.source_index[top.s == 1])
    unl_pos = np.setdiff1d(np.flatnonzero(y == 1), lab)
    assert p_hat[lab].min() >= p_hat[unl_pos].max()  # top-k: the most confident positives
    ar = make_pu_split(X, y, 0.9, labeling="sar_pusb", pusb_rule="accept_reject", random_state=0)
    assert ar.meta["c_realized"] < 0.9 and "warning" in ar.meta


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), c=st.floats(0.05, 1.0))
def test_same_seed_same_split(seed, c):
    X = np.random.default_rng(0).normal(size=(60, 3))
    y = (np.arange(60) % 3 == 0).astype(int)
    a = make_pu_split(X, y, c, scheme="single", random_state=seed)
    b = make_pu_split(X, y, c, scheme="single", random_state=seed)
    assert np.array_equal(a.source_index, b.source_index) and np.array_equal(a.s, b.s)
    assert a.meta["n_labeled"] == math.floor(c * 20 + 1e-9)


def test_validation_rows_split_before_sampling():
    train, val, test = make_benchmark_splits("digits", 0.1, seed=2)
    assert not set(train.source_index) & set(val.source_index)
    n_val = len(np.unique(val.source_index))
    assert n_val == round(0.01 * (len(np.unique(train.source_index)) + n_val))
    assert abs(train.X.mean()) < 0.05  # standardised with training statistics


@pytest.mark.parametrize("kw, match", [
    ({"c": 0.0}, "c: expected"), ({"c": 1.5}, "c: expected"), ({"c": 0.01}, "n_pos"),
    ({"c": 0.5, "scheme": "two"}, "scheme"), ({"c": 0.5, "labeling": "sar"}, "labeling"),
])
def test_generator_bad_input(kw, match):
    X, y = np.zeros((20, 2)), np.array([1] * 10 + [0] * 10)
    with pytest.raises(ValueError, match=match):
        make_pu_split(X, y, **kw)


def test_bad_labels_and_prevalence():
    with pytest.raises(ValueError, match="binary"):
        make_pu_split(np.zeros((4, 1)), [0, 1, 2, 1], 0.5)
    with pytest.raises(ValueError, match="target_prevalence"):
        make_benchmark_splits("wine", 0.5, target_prevalence=1.2)
    tr, va, te = make_benchmark_splits("wine", 0.5, target_prevalence=0.5)
    assert te.y.mean() == pytest.approx(0.5, abs=0.03)


def test_datasets_never_download(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="train-images-idx3-ubyte"):
        load_dataset("mnist", data_dir=tmp_path)
    with pytest.raises(DatasetNotFoundError, match="spambase.data"):
        load_dataset("spambase", data_dir=tmp_path)
    with pytest.raises(ValueError, match="digits"):
        load_dataset("imagenet")


def test_local_loader_reads_spambase(tmp_path):
    rows = np.random.default_rng(0).random((50, 58))
    rows[:, -1] = np.arange(50) % 2
    np.savetxt(tmp_path / "spambase.data", rows, delimiter=",")
    ds = load_dataset("spambase", data_dir=tmp_path)
    assert ds.X_train.shape == (40, 57) and set(np.unique(ds.y_test)) == {0, 1}


def test_user_data_files_npz_and_csv(tmp_path):
    from iclr26_pubench.datasets import load_file_dataset

    rng = np.random.default_rng(1)
    y = (np.arange(200) % 4 == 0).astype(int)
    X = rng.normal(size=(200, 3))
    np.savez(tmp_path / "d.npz", X=X, y=y)
    np.savetxt(tmp_path / "d.csv", np.column_stack([y, X]), delimiter=",", header="y,a,b,c", comments="")
    a = load_file_dataset(tmp_path / "d.npz", random_state=3)
    b = load_file_dataset(tmp_path / "d.csv", random_state=3)
    assert a.X_train.shape == (140, 3) and a.y_train.sum() + a.y_test.sum() == 50
    np.testing.assert_allclose(a.X_train, b.X_train)  # the header's 'y' column is the label, not the last column
    train, _, test = make_benchmark_splits(str(tmp_path / "d.csv"), 0.5, seed=0)
    assert train.meta["n_labeled"] == int(0.5 * train.y[train.s == 0].sum()) and len(test.y) == 60
    np.savez(tmp_path / "bad.npz", X=X, y=y + 1)
    with pytest.raises(ValueError, match="y: expected binary labels"):
        load_file_dataset(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="expected a .npz or .csv file"):
        load_file_dataset(tmp_path / "d.txt")
