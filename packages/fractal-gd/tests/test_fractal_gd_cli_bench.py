"""CLI round trip and a smoke run of the benchmark."""
import json

import numpy as np
from iclr26_fractal_gd.cli import main


def test_cli_round_trip(tmp_path, capsys):
    assert main(["predict", "--u", "1.0", "--v", "0.3", "--y", "1.0", "--eta", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "eta* = " in out and "inside" in out
    basin = ["map", "--res", "128", "--steps", "200", "--device", "cpu", "--out", str(tmp_path)]
    assert main(basin) == 0
    png, npz = tmp_path / "basin.png", tmp_path / "basin.npz"
    assert png.stat().st_size > 0 and npz.exists()
    capsys.readouterr()
    assert main(basin) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["evaluate", "--npz", str(npz), "--fit", "2", "32"]) == 0
    assert "D = 1." in capsys.readouterr().out
    assert main(["sweep", "--eta", "0.8", "--segment", "1.847", "-0.409", "1.848", "-0.4087", "--n", "50",
                 "--steps", "2000", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "sensitivity.png").is_file()
    assert main(["fit", "--n", "4", "--rank", "4", "--steps", "3000", "--out", str(tmp_path)]) == 0
    assert "converged" in capsys.readouterr().out and (tmp_path / "matrix_loss.png").is_file()
    assert main(["critical", "--u", "1", "--v", "1", "--y", "0"]) == 2
    capsys.readouterr()
    (tmp_path / "bad.npz").write_bytes(b"not an npz")
    assert main(["dimension", "--npz", str(tmp_path / "bad.npz")]) == 2
    assert capsys.readouterr().err.startswith("error: --npz: expected a basin.npz")
    np.save(tmp_path / "a.npy", np.zeros(3))
    np.savez(tmp_path / "nolabels.npz", extent=np.zeros(4))
    with np.load(npz) as good:
        arrays = dict(good)
    np.savez(tmp_path / "flat.npz", **{**arrays, "labels": arrays["labels"].ravel()})
    for name, why in (("a.npy", "not an .npz archive"), ("nolabels.npz", "no array labels"),
                      ("flat.npz", "expected 2-D integers"), ("missing.npz", "no such file")):
        try:
            code = main(["evaluate", "--npz", str(tmp_path / name)])
        except SystemExit as stop:  # a missing file is refused while parsing
            code = stop.code
        assert code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --npz: expected") and why in err and err.count("\n") == 1, err
    assert main(["sweep", "--eta", "0.8", "--segment", "1", "2", "1", "2", "--out", str(tmp_path / "z")]) == 2
    assert capsys.readouterr().err.startswith("error: --segment: expected two distinct end points")
    assert not (tmp_path / "z").exists()


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
