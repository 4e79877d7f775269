"""CLI round trip (generate, train, eval) and one smoke run of the benchmark with the JSON schema."""
import json

import pytest
import torch
from iclr26_shared.bench import run_and_save
from iclr26_socp_gnn import SOCPGNN
from iclr26_socp_gnn.bench import SOLUTION
from iclr26_socp_gnn.cli import main


def test_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "out"
    data, model = out / "dataset.json", out / "model.pt"
    assert main(["generate", "--task", "solution", "--n-instances", "16", "--seed", "3", "--out", str(out)]) == 0
    assert "feasible fraction" in capsys.readouterr().out
    assert main(["generate", "--task", "solution", "--n-instances", "16", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["fit", "--data", str(data), "--model", "gnn", "--hidden", "8", "--layers", "1", "--epochs", "2",
                 "--out", str(out), "--quiet"]) == 0
    assert "parameters" in capsys.readouterr().out
    assert main(["evaluate", "--model", str(model), "--data", str(data), "--n-timing", "2", "--out", str(out)]) == 0
    metrics = json.loads((out / "evaluation.json").read_text())
    assert {"rel_mse", "objective_gap", "timing_clarabel_ms", "timing_forward_ms"} <= set(metrics)
    assert main(["evaluate", "--model", str(model), "--data", str(data), "--n-timing", "2", "--project",
                 "--out", str(out), "--force"]) == 0
    metrics = json.loads((out / "evaluation.json").read_text())
    assert metrics["projection_failures"] == 0 and metrics["projected_violation_max"] <= 1e-6
    assert metrics["timing_pipeline_ms"] > metrics["timing_projection_ms"] > 0
    assert metrics["projected_cone_violation_max"] <= 1e-6 < metrics["cone_violation_max"]
    assert main(["evaluate", "--model", str(model), "--data", str(data), "--n-timing", "2", "--prox-step", "1",
                 "--out", str(out), "--force"]) == 0
    metrics = json.loads((out / "evaluation.json").read_text())
    assert metrics["prox_failures"] == 0 and metrics["prox_violation_max"] <= 1e-6
    with pytest.raises(SystemExit) as refused:
        main(["evaluate", "--model", str(model), "--data", str(data), "--prox-step", "-1", "--out", str(out)])
    assert refused.value.code == 2 and "--prox-step: expected a finite number >= 0, got '-1'" in capsys.readouterr().err
    feas = tmp_path / "feasibility.pt"
    torch.save({"kind": "gnn", "config": SOCPGNN(hidden=4, layers=1).config,
                "state": SOCPGNN(hidden=4, layers=1).state_dict()}, feas)
    assert main(["evaluate", "--model", str(feas), "--data", str(data), "--project", "--out", str(tmp_path / "p")]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: --project: expected a solution model")
    with pytest.raises(SystemExit) as refused:
        main(["evaluate", "--model", str(tmp_path / "missing.pt"), "--data", str(data)])
    assert refused.value.code == 2 and "--model: expected an existing file" in capsys.readouterr().err
    assert main(["evaluate", "--model", str(data), "--data", str(data), "--out", str(tmp_path / "e")]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: --model: expected a model.pt")
    assert main(["fit", "--data", str(model), "--out", str(tmp_path / "f")]) == 2
    assert capsys.readouterr().err.startswith("error: --data: expected a dataset.json")
    with pytest.raises(SystemExit) as refused:
        main(["fit", "--data", str(data), "--hidden", "0", "--out", str(tmp_path / "h")])
    assert refused.value.code == 2 and "--hidden: expected a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["opf", "--hidden", "0", "--out", str(tmp_path / "o")])
    assert refused.value.code == 2 and "--hidden: expected a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="hidden, layers: expected positive integers, got 0, 4"):
        SOCPGNN(hidden=0, layers=4)


def test_smoke_benchmark_writes_the_json_contract(tmp_path):
    result, path, skipped = run_and_save(SOLUTION, scale="smoke", device="cpu", seed=0, out_dir=tmp_path)
    assert not skipped and result.status == "ok", result.error
    d = json.loads(path.read_text())
    assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
            "claims", "figures"} <= set(d)
    assert d["benchmark"] == "socp-gnn.solution" and d["scale"] == "smoke"
    assert {r["method"] for r in d["rows"]} >= {"gnn", "mlp", "gnn-coneblind", "timing"}
    assert all({"name", "paper", "measured", "criterion", "holds"} <= set(c) for c in d["claims"])
    perm = next(c for c in d["claims"] if c["name"] == "permutation_equivariance_solution")
    assert perm["holds"] is True
    # the projection restores feasibility at any training budget (the smoke models are barely trained)
    feasible = next(c for c in d["claims"] if c["name"] == "projected_solution_feasible")
    assert feasible["holds"] is True and d["metrics"]["projection_failures"] == 0
    gnn = [r for r in d["rows"] if r["method"] == "gnn"]
    assert all(r["projected_cone_violation_max"] <= 1e-6 < r["cone_violation_max"] for r in gnn)
    timing = next(r for r in d["rows"] if r["method"] == "timing")
    assert timing["pipeline_ms"] == pytest.approx(timing["graph_build_ms"] + timing["forward_ms"]
                                                  + timing["projection_ms"])
