"""CLI round trip (in process) and the file loaders."""
import json

import numpy as np
import pytest
from iclr26_energycp import EnergyConformalClassifier, datasets
from iclr26_energycp.cli import main


def write_data(tmp_path, seed=0, n=300, K=5):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K)) * rng.uniform(0.5, 3, (n, 1))
    y = rng.integers(0, K, n)
    return z, y


def test_fit_then_predict_matches_python_api(tmp_path, capsys):
    z, y = write_data(tmp_path)
    zt, _ = write_data(tmp_path, seed=1, n=80)
    np.save(tmp_path / "cal.npy", z)
    np.save(tmp_path / "cal_labels.npy", y)
    np.savez(tmp_path / "test.npz", logits=zt)
    out = tmp_path / "out"
    assert main(["fit", "--cal-logits", str(tmp_path / "cal.npy"), "--cal-labels",
                 str(tmp_path / "cal_labels.npy"), "--score", "raps", "--alpha", "0.1", "--T-energy", "0.5",
                 "--beta", "2", "--seed", "3", "--device", "cpu", "--out", str(out)]) == 0
    predict = ["predict", "--model", str(out / "model.json"), "--logits", str(tmp_path / "test.npz"),
               "--device", "cpu", "--out", str(out)]
    assert main(predict) == 0
    api = EnergyConformalClassifier("raps", alpha=0.1, T_energy=0.5, beta=2.0, random_state=3).fit(z, y)
    assert np.array_equal(np.load(out / "sets.npy"), api.predict_set(zt))
    capsys.readouterr()
    assert main(predict) == 2
    assert "--force" in capsys.readouterr().err
    assert main(predict + ["--format", "json"]) == 0
    sets = np.load(out / "sets.npy")
    assert json.loads((out / "sets.json").read_text()) == [np.flatnonzero(r).tolist() for r in sets]


def test_fit_with_tuning_and_evaluate(tmp_path, capsys):
    z, y = write_data(tmp_path, n=400)
    np.savez(tmp_path / "cal.npz", logits=z[:300], labels=y[:300])
    np.savez(tmp_path / "tune.npz", logits=z[300:], labels=y[300:])
    out = tmp_path / "out"
    assert main(["calibrate", "--cal-logits", str(tmp_path / "cal.npz"), "--tune-logits", str(tmp_path / "tune.npz"),
                 "--score", "saps", "--device", "cpu", "--out", str(out)]) == 0
    assert "tuned on 100" in capsys.readouterr().out
    assert (out / "model.json").is_file()
    assert main(["evaluate", "--cal-logits", str(tmp_path / "cal.npz"), "--test-logits", str(tmp_path / "tune.npz"),
                 "--scores", "aps,lac", "--trials", "2", "--device", "cpu", "--out", str(out), "--quiet"]) == 0
    ev = json.loads((out / "evaluation.json").read_text())
    assert set(ev) == {"aps", "energy-aps", "lac", "energy-lac"}
    assert 0.0 <= ev["aps"]["coverage"]["mean"] <= 1.0


def test_cli_bad_input_exits_with_message(tmp_path, capsys):
    np.save(tmp_path / "bad.npy", np.array([[0.0, np.nan]]))
    np.save(tmp_path / "lab.npy", np.array([0]))
    out = tmp_path / "out"
    code = main(["fit", "--cal-logits", str(tmp_path / "bad.npy"), "--cal-labels", str(tmp_path / "lab.npy"),
                 "--device", "cpu", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --cal-logits:") and "finite" in err
    np.save(tmp_path / "good.npy", np.zeros((3, 4)))
    code = main(["fit", "--cal-logits", str(tmp_path / "good.npy"), "--device", "cpu", "--out", str(out)])
    assert code == 2 and capsys.readouterr().err.startswith("error: --cal-labels:")
    with pytest.raises(SystemExit, match="2"):
        main(["evaluate", "--cal-logits", str(tmp_path / "good.npy"), "--test-logits", str(tmp_path / "good.npy"),
              "--scores", "aps,nope", "--out", str(out)])
    assert capsys.readouterr().err.startswith("error: --scores:")
    assert not out.exists()


def test_loaders_read_every_format(tmp_path):
    z, y = write_data(tmp_path, n=20, K=3)
    np.savez(tmp_path / "a.npz", logits=z, labels=y)
    rows = "".join(f"{float(r[0])!r},{float(r[1])!r},{float(r[2])!r},{label}\n" for r, label in zip(z, y))
    (tmp_path / "a.csv").write_text("c0,c1,c2,label\n" + rows)
    for name in ("a.npz", "a.csv"):
        got_z, got_y = datasets.load_logits(tmp_path / name)
        np.testing.assert_allclose(got_z, z)
        assert np.array_equal(got_y, y)
    (tmp_path / "a.txt").write_text("1")
    with pytest.raises(ValueError, match=".npy, .npz"):
        datasets.load_logits(tmp_path / "a.txt")
    with pytest.raises(FileNotFoundError):
        datasets.load_logits(tmp_path / "missing.npy")
    torch = pytest.importorskip("torch")
    torch.save({"logits": torch.tensor(z), "labels": torch.tensor(y)}, tmp_path / "a.pt")
    got_z, got_y = datasets.load_logits(tmp_path / "a.pt")
    np.testing.assert_allclose(got_z, z)
    assert np.array_equal(got_y, y)


def test_cli_probabilities_input_and_bad_model_or_labels(tmp_path, capsys):
    z, y = write_data(tmp_path, n=200)
    probs = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    np.save(tmp_path / "p.npy", probs)
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "out"
    base = ["fit", "--cal-logits", str(tmp_path / "p.npy"), "--cal-labels", str(tmp_path / "y.npy"), "--device", "cpu",
            "--out", str(out), "--input", "probs"]
    assert main(base) == 2 and capsys.readouterr().err.startswith("error: --input:")
    assert main(base + ["--no-energy"]) == 0
    assert json.loads((out / "model.json").read_text())["params"]["input"] == "probs"
    (tmp_path / "model.json").write_text("not json")
    code = main(["predict", "--model", str(tmp_path / "model.json"), "--logits", str(tmp_path / "p.npy"), "--out",
                 str(out)])
    assert code == 2 and capsys.readouterr().err.startswith("error: --model:")
    with pytest.raises(SystemExit, match="2"):
        main(["predict", "--model", str(tmp_path / "missing.json"), "--logits", str(tmp_path / "p.npy")])
    assert "--model" in capsys.readouterr().err
    (tmp_path / "bad.npy").write_bytes(b"junk")
    code = main(["fit", "--cal-logits", str(tmp_path / "p.npy"), "--cal-labels", str(tmp_path / "bad.npy"),
                 "--device", "cpu", "--out", str(tmp_path / "o2")])
    assert code == 2 and capsys.readouterr().err.startswith("error: --cal-labels:")
    with pytest.raises(SystemExit, match="2"):
        main(["fit", "--cal-logits", str(tmp_path / "p.npy"), "--T-energy", "-1", "--out", str(out)])
    assert "--T-energy" in capsys.readouterr().err
