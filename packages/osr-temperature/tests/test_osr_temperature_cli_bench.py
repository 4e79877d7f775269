"""CLI round trip and one smoke run of the benchmark."""
import json

import numpy as np
import pytest
from iclr26_osr_temperature.cli import main


def test_schedule_and_evaluate_commands(tmp_path, capsys):
    assert main(["render", "--name", "negcos", "--epochs", "10", "--plot", "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "schedule.png").read_bytes()[:4] == b"\x89PNG"
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "epoch,tau" and len(lines) == 12 and float(lines[-1].split(",")[1]) == 2.0
    rng = np.random.default_rng(0)
    files = {"k": rng.random(20) + 0.5, "u": rng.random(10), "p": np.arange(20) % 3, "y": np.arange(20) % 3}
    for name, arr in files.items():
        np.save(tmp_path / f"{name}.npy", arr)
    assert main(["evaluate", "--known-scores", str(tmp_path / "k.npy"), "--unknown-scores", str(tmp_path / "u.npy"),
                 "--known-preds", str(tmp_path / "p.npy"), "--known-labels", str(tmp_path / "y.npy")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main(["evaluate", "--known-scores", str(tmp_path / "k.npy"), "--unknown-scores", str(tmp_path / "u.npy"),
                 "--known-preds", str(tmp_path / "p.npy")]) == 2
    assert capsys.readouterr().err.startswith("error: --known-preds/--known-labels: expected both or neither")
    assert out["oscr"] == pytest.approx(out["auroc"]) and 0.5 < out["auroc"] <= 1.0
    assert main(["render", "--name", "negcos", "--tau-min", "3", "--tau-max", "2"]) == 2


def test_fit_command_writes_json_and_refuses_overwrite(tmp_path, capsys):
    argv = ["fit", "--data", "digits", "--split", "1", "--epochs", "2", "--device", "cpu", "--out", str(tmp_path)]
    assert main(argv) == 0
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["temperatures"][0] == 0.5 and run["temperatures"][-1] == 2.0 and 0 <= run["auroc"] <= 1
    assert "AUROC" in capsys.readouterr().out
    assert main(argv) == 2 and "--force" in capsys.readouterr().err
    assert main(["train", "--loss", "supcon", "--schedule", "constant", "--epochs", "1", "--device", "cpu",
                 "--k", "10", "--out", str(tmp_path / "supcon")]) == 0


def test_bench_smoke_writes_the_result_contract(tmp_path, capsys):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("osr-temperature__smoke__seed0__cpu.json")
    result = json.loads(path.read_text())
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in result
    assert result["status"] == "ok" and {r["arm"] for r in result["rows"]} == {"a", "b"}
    names = {c["name"] for c in result["claims"]}
    assert {"schedule_exactness", "no_overhead", "negcos_beats_constant_auroc"} <= names
    assert all(isinstance(c["holds"], bool) for c in result["claims"])
    assert next(c for c in result["claims"] if c["name"] == "schedule_exactness")["holds"]
    assert "PASS" in capsys.readouterr().out
