"""CLI round trip and a smoke run of the benchmark."""
import json

import pytest
from iclr26_fractal_gd.cli import main


def test_cli_round_trip(tmp_path, capsys):
    assert main(["critical", "--u", "1.0", "--v", "0.3", "--y", "1.0", "--eta", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "eta* = " in out and "inside" in out
    png, npz = tmp_path / "b.png", tmp_path / "b.npz"
    assert main(["basin", "--res", "128", "--steps", "200", "--out", str(png), "--npz", str(npz)]) == 0
    assert png.stat().st_size > 0 and npz.exists()
    with pytest.raises(SystemExit, match="--force"):
        main(["basin", "--res", "128", "--out", str(png)])
    assert main(["dimension", "--npz", str(npz), "--fit", "2", "32"]) == 0
    assert "D = 1." in capsys.readouterr().out
    assert main(["sensitivity", "--eta", "0.8", "--segment", "1.847", "-0.409", "1.848", "-0.4087", "--n", "50",
                 "--steps", "2000", "--out", str(tmp_path / "s.png")]) == 0
    assert main(["matrix", "--n", "4", "--rank", "4", "--steps", "3000", "--out", str(tmp_path)]) == 0
    assert "converged" in capsys.readouterr().out
    assert main(["critical", "--u", "1", "--v", "1", "--y", "0"]) == 2


def test_bench_smoke_writes_the_json_contract(tmp_path):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path), "--quiet"]) == 0
    files = list(tmp_path.glob("fractal-gd__smoke__seed0__cpu.json"))
    assert len(files) == 1
    d = json.loads(files[0].read_text())
    assert d["status"] == "ok" and d["benchmark"] == "fractal-gd"
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in d
    names = {c["name"] for c in d["claims"]}
    assert {"fractal_boundary_dimension", "threshold_below", "matrix_decoupling"} <= names
    assert all(isinstance(c["holds"], bool) for c in d["claims"])
    assert all((tmp_path / f).exists() for f in d["figures"])
