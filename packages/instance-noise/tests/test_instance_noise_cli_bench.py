"""The CLI round trip (flip -> estimate -> fit) and one smoke run of each benchmark."""
import json

import numpy as np
import pytest
from iclr26_instance_noise import bench
from iclr26_instance_noise.cli import main
from iclr26_shared.datasets import stratified_split_indices


def test_cli_round_trip(tmp_path, capsys):
    run = tmp_path / "run"
    noisy, rho = run / "noisy.npz", run / "rho.npy"
    assert main(["generate", "--data", "breast_cancer", "--seed", "0", "--out", str(run)]) == 0
    assert "realised noise rate" in capsys.readouterr().out
    with np.load(noisy) as f:
        assert set(f.files) == {"X", "y_clean", "y_noisy", "rho"} and f["rho"].max() <= 0.45
    assert main(["flip", "--data", "breast_cancer", "--out", str(run)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["estimate", "--in", str(noisy), "--method", "knn", "--out", str(run)]) == 0
    assert "MAE against the true rho" in capsys.readouterr().out
    assert np.load(rho).shape == (569,)
    assert main(["fit", "--in", str(noisy), "--learner", "linear", "--mode", "forward", "--rho", str(rho),
                 "--out", str(run)]) == 0
    assert "clean-label evaluation" in capsys.readouterr().out
    assert 0.5 < json.loads((run / "fit.json").read_text())["accuracy"] <= 1.0
    bad = tmp_path / "bad"
    assert main(["fit", "--in", str(noisy), "--rho", str(noisy), "--out", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: --rho: expected ")
    assert main(["estimate", "--in", str(rho), "--out", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: --in: expected ")
    assert main(["generate", "--data", str(tmp_path / "absent.csv"), "--out", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: --data: expected ")
    assert not bad.exists()


def test_a_rho_file_with_one_nan_is_refused_wherever_it_falls(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["generate", "--data", "breast_cancer", "--seed", "0", "--out", str(run), "--quiet"]) == 0
    with np.load(run / "noisy.npz") as f:
        rho, y = f["rho"].copy(), f["y_clean"]
    split = stratified_split_indices(y, {"train": 0.7, "test": 0.3}, seed=0)  # the split fit makes
    for row in (split["train"][0], split["test"][0]):
        bad = rho.copy()
        bad[row] = np.nan
        np.save(tmp_path / "bad.npy", bad)
        code = main(["fit", "--in", str(run / "noisy.npz"), "--rho", str(tmp_path / "bad.npy"), "--out",
                     str(tmp_path / f"out{row}")])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("error: --rho: expected ") and "NaN" in err and err.count("\n") == 1


def test_fit_on_noisy_only_data_says_so(tmp_path, capsys):
    path = tmp_path / "user.npz"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    np.savez(path, X=X, y=(X[:, 0] > 0).astype(int))
    assert main(["fit", "--in", str(path), "--learner", "linear", "--mode", "none", "--out", str(tmp_path)]) == 0
    assert "noisy-label evaluation" in capsys.readouterr().out


@pytest.mark.parametrize("benchmark", bench.BENCHMARKS, ids=lambda b: b.name)
def test_smoke_benchmark_writes_the_result_schema(benchmark, tmp_path):
    code = main(["bench", "--scale", "smoke", "--only", benchmark.name, "--out", str(tmp_path), "--quiet"])
    assert code == 0
    (path,) = tmp_path.glob(f"{benchmark.name}__smoke__seed0__*.json")
    result = json.loads(path.read_text())
    assert result["status"] == "ok", result["error"]
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds",
                "metrics", "rows", "claims", "figures"):
        assert key in result
    assert result["claims"] and all(isinstance(c["holds"], bool) for c in result["claims"])
    assert all("method" in row for row in result["rows"])
