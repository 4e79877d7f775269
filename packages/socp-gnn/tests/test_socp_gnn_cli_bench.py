"""CLI round trip (generate, train, eval) and one smoke run of the benchmark with the JSON schema."""
import json

import pytest
from iclr26_shared.bench import run_and_save
from iclr26_socp_gnn.bench import SOLUTION
from iclr26_socp_gnn.cli import main


def test_cli_round_trip(tmp_path, capsys):
    data, model = tmp_path / "data.pkl", tmp_path / "model.pt"
    assert main(["generate", "--task", "solution", "--n-instances", "16", "--seed", "3", "--out", str(data)]) == 0
    assert "feasible fraction" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--force"):
        main(["generate", "--task", "solution", "--n-instances", "16", "--out", str(data)])
    assert main(["train", "--data", str(data), "--model", "gnn", "--hidden", "8", "--layers", "1", "--epochs", "2",
                 "--out", str(model), "--quiet"]) == 0
    assert "parameters" in capsys.readouterr().out
    assert main(["eval", "--model", str(model), "--data", str(data), "--n-timing", "2", "--out", str(tmp_path)]) == 0
    metrics = json.loads((tmp_path / "eval.json").read_text())
    assert {"rel_mse", "objective_gap", "timing_clarabel_ms", "timing_forward_ms"} <= set(metrics)
    assert main(["eval", "--model", str(tmp_path / "missing.pt"), "--data", str(data)]) == 2


def test_smoke_benchmark_writes_the_json_contract(tmp_path):
    result, path, skipped = run_and_save(SOLUTION, scale="smoke", device="cpu", seed=0, out_dir=tmp_path)
    assert not skipped and result.status == "ok", result.error
    d = json.loads(path.read_text())
    assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
            "claims", "figures"} <= set(d)
    assert d["benchmark"] == "socp-gnn.solution" and d["scale"] == "smoke"
    assert {r["method"] for r in d["rows"]} >= {"gnn", "mlp", "gnn-coneblind", "timing"}
    assert all(set(c) == {"name", "paper", "measured", "criterion", "holds"} for c in d["claims"])
    perm = next(c for c in d["claims"] if c["name"] == "permutation_equivariance_solution")
    assert perm["holds"] is True
