import json

import numpy as np
from iclr26_perm_compress import moments
from iclr26_perm_compress.bench import EXACTNESS
from iclr26_perm_compress.cli import main


def test_compress_round_trip_and_no_silent_overwrite(tmp_path, capsys):
    W = np.random.default_rng(0).uniform(-1, 1, (400, 2))
    np.save(tmp_path / "W.npy", W)
    out = tmp_path / "out"
    argv = ["compress", "--in", str(tmp_path / "W.npy"), "--k", "3", "--target", "30", "--out", str(out)]
    assert main(argv) == 0
    assert "Tchakaloff bound N = 10" in capsys.readouterr().out
    support, weights = np.load(out / "support.npy"), np.load(out / "weights.npy")
    assert support.size <= 30
    np.testing.assert_allclose(moments(W[support], weights, 3), moments(W, None, 3), rtol=1e-9, atol=1e-9)
    assert main(argv) == 2 and "--force" in capsys.readouterr().err
    assert main(argv + ["--force"]) == 0
    (tmp_path / "W.csv").write_text("1,2\nx,y\n")
    assert main(["compress", "--in", str(tmp_path / "W.csv"), "--out", str(tmp_path / "y")]) == 2
    assert capsys.readouterr().err.startswith("error: --in: expected")
    assert not (tmp_path / "y").exists()
    assert main(["compress", "--in", str(tmp_path / "W.npy"), "--k", "3", "--target", "5", "--out",
                 str(tmp_path / "x"), "--force"]) == 2
    assert "target_size" in capsys.readouterr().err


def test_bench_smoke_writes_the_result_contract(tmp_path):
    assert main(["bench", "--scale", "smoke", "--only", EXACTNESS.name, "--device", "cpu", "--out", str(tmp_path)]) == 0
    files = list(tmp_path.glob("perm-compress.exactness__smoke__seed0__cpu.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
            "claims", "figures"} <= set(data)
    assert data["status"] == "ok" and data["scale"] == "smoke"
    assert {r["method"] for r in data["rows"]} == {"moment_matched", "random_subset", "kmeans_centroids"}
    for claim in data["claims"]:
        assert {"name", "paper", "measured", "criterion", "holds"} <= set(claim) and isinstance(claim["holds"], bool)
    assert all(c["holds"] for c in data["claims"])


def test_experiment_commands_write_csv_and_png(tmp_path, capsys):
    assert main(["error-scaling", "--m", "1", "--k", "1", "--d", "300", "600", "--trials", "1",
                 "--out", str(tmp_path), "--quiet"]) == 0
    assert "m1_k1: fitted slope" in capsys.readouterr().out
    assert main(["dataset", "--d", "400", "--target", "60", "--k", "2", "--steps", "5", "--device", "cpu",
                 "--out", str(tmp_path)]) == 0
    assert main(["scaling-law", "--d", "300", "600", "--k", "2", "--steps", "5", "--device", "cpu",
                 "--out", str(tmp_path)]) == 0
    assert "alpha(full)" in capsys.readouterr().out
    for name in ("error_scaling.csv", "error_scaling.png", "dataset.csv", "dataset.png", "scaling_law.csv",
                 "scaling_law.json"):
        assert (tmp_path / name).stat().st_size > 0
    header = (tmp_path / "dataset.csv").read_text().splitlines()[0]
    assert header == "method,step,test_mse"
