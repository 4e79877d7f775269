"""CLI round trip and a smoke run of the benchmark."""
import json

import numpy as np
import pytest
from iclr26_gfm import make_target
from iclr26_gfm.cli import main


def test_cli_round_trip(tmp_path, capsys):
    X, C = make_target("hexagon-rings", 300, seed=0)
    data = tmp_path / "hex.npz"
    np.savez(data, X=X.numpy(), A=C.A.numpy(), b=C.b.numpy())
    assert main(["check", "--data", str(data)]) == 0
    assert "violation rate 0" in capsys.readouterr().out
    model = tmp_path / "m.pt"
    assert main(["fit", "--data", str(data), "--steps", "5", "--hidden", "8", "8", "--device", "cpu",
                 "--model", str(model)]) == 0
    with pytest.raises(SystemExit, match="--force"):
        main(["fit", "--data", str(data), "--model", str(model)])
    samples = tmp_path / "s.npy"
    assert main(["sample", "--model", str(model), "-n", "200", "--steps", "5", "--device", "cpu",
                 "--samples", str(samples)]) == 0
    assert "violation rate 0," in capsys.readouterr().out
    S = np.load(samples)
    assert S.shape == (200, 2) and (S @ C.A.numpy().T - C.b.numpy()).max() <= 1e-9
    bad = tmp_path / "bad.npz"
    np.savez(bad, X=X.numpy() * 3, A=C.A.numpy(), b=C.b.numpy())
    assert main(["check", "--data", str(bad)]) == 2
    assert "violate" in capsys.readouterr().err


def test_bench_smoke_writes_the_json_contract(tmp_path):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path), "--quiet"]) == 0
    files = list(tmp_path.glob("gfm__smoke__seed0__cpu.json"))
    assert len(files) == 1
    d = json.loads(files[0].read_text())
    assert d["status"] == "ok" and d["benchmark"] == "gfm"
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in d
    names = {c["name"] for c in d["claims"]}
    assert {"strict_feasibility", "problem_is_real", "no_boundary_atoms", "ablation_boundary_exercised"} <= names
    assert all(isinstance(c["holds"], bool) for c in d["claims"])
    methods = {r["method"] for r in d["rows"]}
    assert {"GFM(reflect)", "PlainFM", "ProjectedFM", "RejectionFM", "ReflectedFM"} <= methods
    assert next(c for c in d["claims"] if c["name"] == "strict_feasibility")["holds"] is True
