"""CLI round trip and one smoke run of the registered benchmark."""
import json

import numpy as np
import pytest
from iclr26_pubench.bench import PUBENCH
from iclr26_pubench.cli import main
from iclr26_shared.bench import run_and_save


def test_cli_round_trip(tmp_path, capsys):
    assert main(["methods"]) == 0
    assert "cgenpu" in capsys.readouterr().out
    npz = tmp_path / "split.npz"
    assert main(["split", "--dataset", "wine", "--c", "0.5", "--labeling", "sar_lbeA", "--save",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "pi_U" in out and "mean p-hat of L" in out
    with np.load(npz) as z:
        assert json.loads(str(z["meta"]))["labeling"] == "sar_lbeA" and set(np.unique(z["s"])) == {0, 1}
    assert main(["split", "--dataset", "wine", "--c", "0.5", "--save", "--out", str(tmp_path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["fit", "--method", "nnpu", "--dataset", "wine", "--c", "0.5", "--epochs", "2", "--device", "cpu",
                 "--out", str(tmp_path / "fit")]) == 0
    assert "test_f1" in capsys.readouterr().out
    assert json.loads((tmp_path / "fit" / "fit.json").read_text())["status"] == "ok"
    sweep = ["sweep", "--preset", "cpu_smoke", "--datasets", "wine", "--methods", "nnpu", "puet", "--budget",
             "smoke", "--backend", "local", "--jobs", "1", "--out", str(tmp_path / "sw"), "--quiet"]
    assert main(sweep) == 0
    jsonl = tmp_path / "sw" / "results.jsonl"
    assert main(sweep) == 2 and "--force" in capsys.readouterr().err
    assert main([*sweep, "--resume"]) == 0 and len(jsonl.read_text().splitlines()) == 2
    assert main(["sweep", "--preset", "paper20", "--methods", "nnpu", "--dry-run"]) == 0
    assert "20 runs" in capsys.readouterr().out
    assert main(["report", str(jsonl), "--out", str(tmp_path / "rep")]) == 0
    assert main(["report", str(jsonl), "--out", str(tmp_path / "rep")]) == 2
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "| 1 |" in text and "puet" in text and (tmp_path / "rep" / "landscape_wine_f1.png").exists()


def test_bench_smoke_writes_the_result_json(tmp_path):
    result, path, skipped = run_and_save(PUBENCH, "smoke", "cpu", 0, tmp_path)
    assert not skipped and result.status == "ok", result.error
    data = json.loads(path.read_text())
    assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
            "claims", "figures"} <= set(data)
    assert data["benchmark"] == "pubench" and len(data["claims"]) == 16
    assert all({"name", "paper", "measured", "criterion", "holds"} <= set(c) for c in data["claims"])
    assert {r["method"] for r in data["rows"]} == {"pn", "naive", "upu", "elkannoto", "baggingpu", "nnpu", "pusb",
                                                   "vpu", "bbepu", "lbe", "puet", "distpu", "pulda"}
    claim1 = next(c for c in data["claims"] if c["name"].startswith("1 "))
    assert claim1["holds"] is True
    assert all((tmp_path / f).exists() for f in data["figures"])


def test_cli_data_file_and_retry_failed(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = (np.arange(240) % 2).astype(int)
    np.savetxt(tmp_path / "mine.csv", np.column_stack([rng.normal(size=(240, 3)) + y[:, None], y]), delimiter=",")
    assert main(["fit", "--method", "naive", "--data", str(tmp_path / "mine.csv"), "--c", "0.5", "--epochs", "2",
                 "--device", "cpu", "--out", str(tmp_path / "fit")]) == 0
    assert "mine.csv" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["fit", "--data", str(tmp_path / "mine.txt"), "--out", str(tmp_path)])
    assert "--data" in capsys.readouterr().err
    sweep = ["sweep", "--data", str(tmp_path / "mine.csv"), "--methods", "naive", "--budget", "smoke", "--jobs", "1",
             "--out", str(tmp_path / "sw"), "--quiet"]
    assert main(sweep) == 0 and main([*sweep, "--retry-failed"]) == 0
    assert len((tmp_path / "sw" / "results.jsonl").read_text().splitlines()) == 1
