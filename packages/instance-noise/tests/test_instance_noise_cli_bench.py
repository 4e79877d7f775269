"""The CLI round trip (flip -> estimate -> fit) and one smoke run of each benchmark."""
import json

import numpy as np
import pytest
from iclr26_instance_noise import bench
from iclr26_instance_noise.cli import main


def test_cli_round_trip(tmp_path, capsys):
    noisy, rho = tmp_path / "noisy.npz", tmp_path / "rho.npy"
    assert main(["flip", "--data", "breast_cancer", "--seed", "0", "-o", str(noisy)]) == 0
    assert "realised noise rate" in capsys.readouterr().out
    with np.load(noisy) as f:
        assert set(f.files) == {"X", "y_clean", "y_noisy", "rho"} and f["rho"].max() <= 0.45
    with pytest.raises(SystemExit, match="--force"):
        main(["flip", "--data", "breast_cancer", "-o", str(noisy)])
    assert main(["estimate", "--in", str(noisy), "--method", "knn", "-o", str(rho)]) == 0
    assert "MAE against the true rho" in capsys.readouterr().out
    assert np.load(rho).shape == (569,)
    out = tmp_path / "fit.json"
    assert main(["fit", "--in", str(noisy), "--learner", "linear", "--mode", "forward", "--rho", str(rho),
                 "-o", str(out)]) == 0
    assert "clean-label evaluation" in capsys.readouterr().out
    assert 0.5 < json.loads(out.read_text())["accuracy"] <= 1.0


def test_fit_on_noisy_only_data_says_so(tmp_path, capsys):
    path = tmp_path / "user.npz"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    np.savez(path, X=X, y=(X[:, 0] > 0).astype(int))
    assert main(["fit", "--in", str(path), "--learner", "linear", "--mode", "none"]) == 0
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
