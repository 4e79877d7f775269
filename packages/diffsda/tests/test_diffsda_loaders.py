"""User-data loaders: shapes, masks and clear errors."""
import numpy as np
import pytest
from iclr26_diffsda import load_csv_series, load_npy_sequences


def test_npy_with_mask_zeroes_unobserved(tmp_path):
    x = np.ones((4, 5, 3), np.float32)
    x[0, 1, 2] = np.nan
    mask = np.ones_like(x)
    mask[0, 1, 2] = 0
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "m.npy", mask)
    got, m = load_npy_sequences(tmp_path / "x.npy", mask_path=tmp_path / "m.npy")
    assert got[0, 1, 2] == 0 and m.shape == x.shape
    with pytest.raises(ValueError, match="NaN"):
        load_npy_sequences(tmp_path / "x.npy")
    np.save(tmp_path / "bad.npy", np.ones((4, 1, 3)))
    with pytest.raises(ValueError, match="V >= 2"):
        load_npy_sequences(tmp_path / "bad.npy")


def test_csv_windows(tmp_path):
    rows = ["date,a,b"] + [f"2020-01-{i:02d},{i},{2 * i}" for i in range(1, 11)]
    (tmp_path / "s.csv").write_text("\n".join(rows))
    w = load_csv_series(tmp_path / "s.csv", window=4, stride=3)
    assert w.shape == (3, 4, 2)
    np.testing.assert_array_equal(w[1, :, 0], [4, 5, 6, 7])
    with pytest.raises(ValueError, match="columns"):
        load_csv_series(tmp_path / "s.csv", window=4, stride=1, columns=["c"])
    with pytest.raises(ValueError, match="window"):
        load_csv_series(tmp_path / "s.csv", window=11, stride=1)
