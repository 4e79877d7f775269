"""Sweeps: grid expansion, identical results across backends, resume, the Dask path on a local cluster.

The fan-out is the shared ``iclr26_shared.parallel.parallel_map``; these tests check pubench's use of it.
"""
import json

import pytest
from iclr26_pubench import RunSpec, expand_grid, run_sweep
from iclr26_pubench.sweep import read_jsonl, timing_path

SIX = [RunSpec("digits", m, 0.5, seed=s, budget="smoke") for m in ("nnpu", "upu", "naive") for s in (0, 1)]


def _lines(path):
    return sorted(path.read_text().splitlines())


def test_paper20_grid_has_twenty_unique_specs():
    specs = expand_grid(["digits"], ["nnpu"], preset="paper20", seeds=[0])
    assert len(specs) == len(set(specs)) == len({s.key() for s in specs}) == 20
    assert RunSpec("digits", "nnpu", 0.1).key() == RunSpec("digits", "nnpu", 0.1).key()
    assert RunSpec("digits", "nnpu", 0.1).key() != RunSpec("digits", "nnpu", 0.1, seed=1).key()


def test_serial_and_joblib_agree_and_resume(tmp_path):
    serial, par = tmp_path / "serial.jsonl", tmp_path / "joblib.jsonl"
    recs = run_sweep(SIX, backend="local", jobs=1, out=serial)
    run_sweep(SIX, backend="local", jobs=2, out=par)
    assert _lines(serial) == _lines(par) and len(_lines(serial)) == 6
    assert all(r["status"] == "ok" and r["timing"]["fit_time"] > 0 for r in recs)
    seen = []
    again = run_sweep(SIX + [SIX[0]], backend="local", out=serial, on_result=seen.append)
    assert seen == [] and len(again) == 6  # every key finished: nothing recomputed
    lines = serial.read_text().splitlines()
    serial.write_text("\n".join(lines[:4]) + "\n" + lines[4][:20])  # a crash mid-write
    run_sweep(SIX, backend="local", out=serial, on_result=seen.append)
    assert len(seen) == 2 and len(read_jsonl(serial)) == 6
    assert sorted(json.dumps(r, sort_keys=True) for r in read_jsonl(serial)) == _lines(par)
    assert timing_path(serial).exists()
    with pytest.raises(ValueError, match="exists"):
        run_sweep(SIX, backend="local", out=serial, resume=False)


def test_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc):
        recs = run_sweep(SIX[:2], backend="dask", address=lc.scheduler_address, out=tmp_path / "dask.jsonl")
    serial = run_sweep(SIX[:2], backend="local", out=tmp_path / "serial.jsonl")
    assert [r["test_f1"] for r in recs] == [r["test_f1"] for r in serial]
    # two workers in one process would run two seeded runs there at once: refused, nothing run
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc):
        with pytest.raises(ValueError, match="one thread per process"):
            run_sweep(SIX[:2], backend="dask", address=lc.scheduler_address, out=tmp_path / "threaded.jsonl")
    assert not (tmp_path / "threaded.jsonl").exists() or read_jsonl(tmp_path / "threaded.jsonl") == []


def test_sweep_bad_input(tmp_path):
    with pytest.raises(ValueError, match="backend"):
        run_sweep(SIX[:1], backend="mpi", out=tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="backend"):
        run_sweep(SIX[:1], backend="serial", out=tmp_path / "x.jsonl")  # serial is local with jobs=1
    with pytest.raises(ValueError, match="jobs"):
        run_sweep(SIX[:1], jobs=0, out=tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="dataset"):
        RunSpec("imagenet", "nnpu", 0.1)
    with pytest.raises(ValueError, match="preset"):
        expand_grid(["digits"], ["nnpu"], preset="huge")
    rec = run_sweep([RunSpec("mnist", "nnpu", 0.1)], backend="local", out=tmp_path / "m.jsonl",
                    data_dir=str(tmp_path))[0]
    assert rec["status"] == "failed" and "DatasetNotFoundError" in rec["error"]
