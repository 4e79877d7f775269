"""The command line, in process, and one smoke run of the registered benchmark."""
import csv
import json

import numpy as np
import pytest
from iclr26_camel import make_incomplete_multiview_blobs
from iclr26_camel.bench import CAMEL_BENCHMARK
from iclr26_camel.cli import main


@pytest.fixture()
def npz_views(tmp_path):
    Xs, y = make_incomplete_multiview_blobs(n=120, n_clusters=3, n_views=2, dims=(8, 6), random_state=0)
    path = tmp_path / "views.npz"
    np.savez(path, X0=Xs[0], X1=Xs[1], y=y)
    return path


def test_fit_round_trip_and_no_silent_overwrite(tmp_path, npz_views, capsys):
    out = tmp_path / "fit"
    args = ["fit", "--data", str(npz_views), "--missing-rate", "0.3", "--out", str(out), "--hyper", "max_iter=15"]
    assert main(args) == 0
    line = capsys.readouterr().out
    assert line.startswith("ACC=") and "iters=" in line
    labels = np.loadtxt(out / "labels.csv", dtype=int)
    assert labels.shape == (120,)
    assert np.load(out / "embedding.npy").shape == (120, 6)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["acc"] == pytest.approx(float(line.split()[0].split("=")[1]), abs=1e-4)
    assert len(json.loads((out / "history.json").read_text())["objective"]) == metrics["n_iter"]
    capsys.readouterr()
    assert main(args) == 2
    assert "--force" in capsys.readouterr().err
    assert main(args + ["--force"]) == 0


def test_sweep_writes_one_row_per_run(tmp_path, npz_views):
    out = tmp_path / "sweep"
    assert main(["sweep", "--data", str(npz_views), "--missing-rates", "0.2,0.4", "--seeds", "0,1",
                 "--methods", "camel,concat", "--hyper", "max_iter=10", "--out", str(out), "--quiet"]) == 0
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 2 * 2
    assert {r["method"] for r in rows} == {"camel", "concat"}


def test_cli_rejects_bad_input(tmp_path, capsys):
    out = tmp_path / "out"
    for argv, option in ((["fit", "--data", "synthetic", "--hyper", "lambda3=1"], "--hyper"),
                         (["fit", "--data", str(tmp_path / "absent.npz")], "--data"),
                         (["sweep", "--data", "synthetic", "--methods", "kmeans"], "--methods")):
        assert main(argv + ["--out", str(out)]) == 2
        assert capsys.readouterr().err.startswith(f"error: {option}: expected ")
    with pytest.raises(SystemExit):
        main(["sweep", "--seeds", "0,x", "--out", str(out)])
    assert capsys.readouterr().err.startswith("error: --seeds: expected comma-separated integers")
    assert not out.exists()


def test_timing_writes_both_degree_modes(tmp_path):
    assert main(["timing", "--n", "100,200", "--dim", "10", "--clusters", "3", "--anchors", "6", "--iters", "2",
                 "--out", str(tmp_path)]) == 0
    with open(tmp_path / "timing.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted((int(r["n"]), r["degree"]) for r in rows) == [(100, "constant"), (100, "normalized"),
                                                                (200, "constant"), (200, "normalized")]


def test_smoke_benchmark_writes_the_result_contract(tmp_path, capsys):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path)]) == 0
    files = list(tmp_path.glob("camel__smoke__seed0__cpu.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
                "claims", "figures"):
        assert key in data
    assert data["benchmark"] == CAMEL_BENCHMARK.name and data["status"] == "ok"
    assert {"camel", "camel_noconn", "bsv", "concat"} <= {r["method"] for r in data["rows"]}
    for claim in data["claims"]:
        assert {"name", "paper", "measured", "criterion", "holds"} <= set(claim)
        assert isinstance(claim["holds"], bool)
    assert "camel [smoke, seed 0" in capsys.readouterr().out
