"""CLI round trip and a smoke run of the benchmark."""
import json

import numpy as np
from iclr26_gfm import make_target
from iclr26_gfm.cli import main


def test_cli_round_trip(tmp_path, capsys):
    X, C = make_target("hexagon-rings", 300, seed=0)
    data = tmp_path / "hex.npz"
    np.savez(data, X=X.numpy(), A=C.A.numpy(), b=C.b.numpy())
    assert main(["evaluate", "--data", str(data)]) == 0
    assert "violation rate 0" in capsys.readouterr().out
    run = tmp_path / "run"
    fit = ["fit", "--data", str(data), "--steps", "5", "--hidden", "8", "8", "--device", "cpu", "--out", str(run)]
    assert main(fit) == 0 and (run / "model.pt").is_file()
    capsys.readouterr()
    assert main(fit) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["sample", "--model", str(run / "model.pt"), "-n", "200", "--steps", "5", "--device", "cpu",
                 "--out", str(run)]) == 0
    assert "violation rate 0," in capsys.readouterr().out
    S = np.load(run / "samples.npy")
    assert S.shape == (200, 2) and (S @ C.A.numpy().T - C.b.numpy()).max() <= 1e-9
    bad = tmp_path / "bad.npz"
    np.savez(bad, X=X.numpy() * 3, A=C.A.numpy(), b=C.b.numpy())
    assert main(["check", "--data", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --data: expected ") and "violate" in err
    assert main(["sample", "--model", str(data), "--out", str(tmp_path / "new")]) == 2
    assert capsys.readouterr().err.startswith("error: --model: expected a model.pt")
    assert not (tmp_path / "new").exists()


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
