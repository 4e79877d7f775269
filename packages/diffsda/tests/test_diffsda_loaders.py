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


def test_cli_accepts_npy_and_csv_user_files(tmp_path, capsys):
    from iclr26_diffsda.cli import main

    x = np.random.default_rng(0).uniform(-1, 1, (12, 5, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    tiny = ["--epochs", "1", "--batch-size", "6", "--hidden-dim", "4", "--mlp-hidden", "2", "--noise-repeats", "2",
            "--device", "cpu", "--quiet"]
    assert main(["fit", "--data", str(tmp_path / "x.npy"), "--out", str(tmp_path / "npy"), *tiny]) == 0
    assert main(["predict", "--ckpt", str(tmp_path / "npy" / "model.pt"), "--data", str(tmp_path / "x.npy"),
                 "--out", str(tmp_path / "npy"), "--device", "cpu"]) == 0
    assert np.load(tmp_path / "npy" / "codes.npz")["dynamic"].shape == (12, 5, 4)
    rows = ["date,a,b"] + [f"d{i},{np.sin(i)},{np.cos(i)}" for i in range(40)]
    (tmp_path / "s.csv").write_text("\n".join(rows))
    assert main(["fit", "--data", str(tmp_path / "s.csv"), "--window", "8", "--stride", "4",
                 "--out", str(tmp_path / "csv"), *tiny]) == 0
    (tmp_path / "x.txt").write_text("1 2 3")
    capsys.readouterr()
    assert main(["fit", "--data", str(tmp_path / "x.txt"), "--out", str(tmp_path / "txt"), *tiny]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --data: expected an .npz") and ".npy" in err and "x.txt" in err


def test_cli_npy_mask_reaches_training_and_encoding(tmp_path, capsys):
    """An .npy with NaN where --mask is 0 trains and encodes; the same file without the mask, or a --mask without
    an .npy --data, ends in a one-line error and exit code 2."""
    from iclr26_diffsda.cli import main

    x = np.random.default_rng(1).uniform(-1, 1, (12, 5, 3)).astype(np.float32)
    mask = np.ones_like(x)
    x[2, 3, 1], mask[2, 3, 1] = np.nan, 0
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "m.npy", mask)
    tiny = ["--epochs", "1", "--batch-size", "12", "--hidden-dim", "4", "--mlp-hidden", "2", "--noise-repeats", "1",
            "--device", "cpu", "--quiet"]
    out = str(tmp_path / "run")
    assert main(["fit", "--data", str(tmp_path / "x.npy"), "--mask", str(tmp_path / "m.npy"), "--out", out, *tiny]) == 0
    assert main(["predict", "--ckpt", f"{out}/model.pt", "--data", str(tmp_path / "x.npy"),
                 "--mask", str(tmp_path / "m.npy"), "--out", out, "--device", "cpu"]) == 0
    assert np.isfinite(np.load(f"{out}/codes.npz")["static"]).all()
    capsys.readouterr()
    assert main(["fit", "--data", str(tmp_path / "x.npy"), "--out", str(tmp_path / "nomask"), *tiny]) == 2
    assert "NaN" in capsys.readouterr().err
    (tmp_path / "s.csv").write_text("a,b\n" + "\n".join(f"{i},{i}" for i in range(30)))
    assert main(["fit", "--data", str(tmp_path / "s.csv"), "--mask", str(tmp_path / "m.npy"), "--window", "5",
                 "--out", str(tmp_path / "csv"), *tiny]) == 2
    assert capsys.readouterr().err.startswith("error: --mask: expected")
