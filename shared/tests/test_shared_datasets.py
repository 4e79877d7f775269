import gzip
import pickle

import numpy as np
import pytest
from iclr26_shared import datasets
from iclr26_shared.metrics import clustering_accuracy


@pytest.mark.parametrize(("name", "shape", "classes"), [
    ("digits", (1797, 64), 10), ("breast_cancer", (569, 30), 2), ("wine", (178, 13), 3), ("iris", (150, 4), 3),
    ("mfeat", (2000, 649), 10), ("mfeat_uci3", (2000, 356), 10),
])
def test_embedded_shapes_and_dtypes(name, shape, classes):
    ds = datasets.load(name)
    assert ds.X.shape == shape and ds.X.dtype == np.float64
    assert ds.y.shape == (shape[0],) and ds.y.dtype == np.int64
    assert ds.n_classes == classes and set(np.unique(ds.y)) == set(range(classes))


def test_mfeat_views_concatenate_to_X_and_labels_follow_row_order():
    ds = datasets.load("mfeat")
    assert [v.shape[1] for v in ds.views] == [76, 216, 64, 240, 47, 6]
    np.testing.assert_array_equal(np.concatenate(ds.views, axis=1), ds.X)
    np.testing.assert_array_equal(ds.y, np.arange(2000) // 200)


@pytest.mark.parametrize("name", ["blobs", "moons", "gaussian_mixture"])
def test_generators_are_seeded(name):
    a, b, c = datasets.load(name, seed=1), datasets.load(name, seed=1), datasets.load(name, seed=2)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, c.X)
    assert a.X.shape == (1000, 2)


def test_unknown_name_lists_the_choices():
    with pytest.raises(ValueError, match="digits"):
        datasets.load("imagenet")


def test_stratified_split_is_disjoint_complete_and_stratified():
    y = datasets.load("digits").y
    parts = datasets.stratified_split_indices(y, {"train": 0.6, "cal": 0.2, "test": 0.2}, seed=0)
    everything = np.concatenate(list(parts.values()))
    assert len(everything) == len(y) and len(np.unique(everything)) == len(y)
    overall = np.bincount(y) / len(y)
    for idx in parts.values():
        share = np.bincount(y[idx], minlength=10) / len(idx)
        assert np.max(np.abs(share - overall)) < 0.01
    assert abs(len(parts["train"]) - 0.6 * len(y)) <= 10


@pytest.mark.parametrize("fractions", [{"a": 1.0}, {"a": 0.5, "b": 0.6}, {"a": 0.0, "b": 1.0}])
def test_bad_fractions_are_refused(fractions):
    with pytest.raises(ValueError, match="fractions"):
        datasets.stratified_split_indices(np.zeros(10), fractions)


def test_missing_folder_says_what_goes_where(tmp_path, monkeypatch):
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="ICLR26_DATA"):
        datasets.load("mnist")
    with pytest.raises(FileNotFoundError, match=r"t10k-images-idx3-ubyte.*mnist"):
        datasets.load("mnist", root=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"data_batch_1.*cifar-10-batches-py"):
        datasets.load("cifar10", root=tmp_path)


def _idx(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def test_mnist_reads_idx_files_plain_or_gzipped(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    folder = tmp_path / "MNIST" / "raw"
    folder.mkdir(parents=True)
    images, labels = rng.integers(0, 256, (5, 28, 28)), rng.integers(0, 10, 5)
    (folder / "t10k-images-idx3-ubyte").write_bytes(_idx(images))
    with gzip.open(folder / "t10k-labels-idx1-ubyte.gz", "wb") as fh:
        fh.write(_idx(labels))
    for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        (folder / f).write_bytes(_idx(np.zeros((1,), np.uint8)))
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path))
    ds = datasets.load("mnist", split="test")
    np.testing.assert_array_equal(ds.X, images)
    np.testing.assert_array_equal(ds.y, labels)


def test_cifar10_reads_pickle_batches(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (6, 32, 32, 3)).astype(np.uint8)
    for i, name in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        flat = images[i:i + 1].transpose(0, 3, 1, 2).reshape(1, -1)
        (folder / name).write_bytes(pickle.dumps({b"data": flat, b"labels": [i]}))
    train = datasets.load("cifar10", root=tmp_path)
    np.testing.assert_array_equal(train.X, images[:5])
    np.testing.assert_array_equal(train.y, np.arange(5))
    assert datasets.load("cifar10", root=tmp_path, split="test").y.tolist() == [5]


def test_clustering_accuracy_matches_brute_force_over_permutations():
    from itertools import permutations

    rng = np.random.default_rng(0)
    y, pred = rng.integers(0, 4, 60), rng.integers(0, 4, 60)
    brute = max(np.mean(np.array(p)[pred] == y) for p in permutations(range(4)))
    assert clustering_accuracy(y, pred) == pytest.approx(brute)
    with pytest.raises(ValueError, match="y_true"):
        clustering_accuracy([0, 1], [0])


def test_dataset_pickles_are_read_without_running_code(tmp_path):
    import os
    import pickle

    from iclr26_shared.datasets import read_pickled_arrays

    batch = {b"data": np.arange(12, dtype=np.uint8).reshape(2, 6), b"labels": [3, 7], b"batch_label": b"x"}
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        (tmp_path / "b").write_bytes(pickle.dumps(batch, protocol=protocol))
        got = read_pickled_arrays(tmp_path / "b")
        assert got[b"labels"] == [3, 7] and np.array_equal(got[b"data"], batch[b"data"])

    class Exploit:
        def __reduce__(self):
            return os.system, ("touch " + str(tmp_path / "pwned"),)

    (tmp_path / "evil").write_bytes(pickle.dumps({b"data": Exploit()}))
    with pytest.raises(ValueError, match="evil: not a dataset pickle.*refusing to construct"):
        read_pickled_arrays(tmp_path / "evil")
    assert not (tmp_path / "pwned").exists()
