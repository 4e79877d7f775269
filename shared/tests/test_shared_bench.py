import json
import os
import stat

import pytest
from iclr26_shared.bench import (
    Benchmark,
    Claim,
    Result,
    atomic_path,
    result_path,
    run_and_save,
    select,
    write_json_atomic,
)


def _func(scale, device, seed, out_dir):
    fig = out_dir / "fig.txt"
    fig.write_text("x")
    value = 0.5 + seed
    return Result(metrics={"acc": value}, rows=[{"method": "m", "acc": value}],
                  claims=[Claim.at_least("acc", "0.5", value, 0.6)], figures=[str(fig)])


BENCH = Benchmark("toy", "A paper", "iclr26-shared", _func)


def test_claim_helpers_compute_holds():
    assert Claim.at_least("c", "p", 1.0, 0.5).holds and not Claim.at_least("c", "p", 0.4, 0.5).holds
    assert Claim.at_most("c", "p", 0.4, 0.5).holds and not Claim.at_most("c", "p", 0.6, 0.5).holds


def test_run_fills_configuration_and_relative_figures(tmp_path):
    r = BENCH.run("smoke", "cpu", 1, tmp_path)
    assert (r.benchmark, r.scale, r.seed, r.paper) == ("toy", "smoke", 1, "A paper")
    assert r.device.startswith("cpu") and r.figures == ["fig.txt"] and r.all_hold
    assert set(r.to_dict()) >= {"benchmark", "package", "paper", "scale", "seed", "device", "versions",
                                "seconds", "metrics", "rows", "claims", "figures"}
    assert Result.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_unknown_scale_is_refused(tmp_path):
    with pytest.raises(ValueError, match="scale"):
        BENCH.run("huge", "cpu", 0, tmp_path)


def test_run_and_save_skips_then_forces(tmp_path):
    r1, path, skipped = run_and_save(BENCH, "smoke", "cpu", 0, tmp_path)
    assert not skipped and path == result_path(tmp_path, "toy", "smoke", 0, "cpu")
    assert json.loads(path.read_text())["claims"][0]["holds"] is False
    _, _, skipped = run_and_save(BENCH, "smoke", "cpu", 0, tmp_path)
    assert skipped
    _, _, skipped = run_and_save(BENCH, "smoke", "cpu", 0, tmp_path, force=True)
    assert not skipped


def test_a_raising_benchmark_is_recorded_as_failed(tmp_path):
    def boom(*_):
        raise ArithmeticError("kaboom")

    r, path, _ = run_and_save(Benchmark("bad", "P", "iclr26-shared", boom), "smoke", "cpu", 0, tmp_path)
    saved = json.loads(path.read_text())
    assert r.status == saved["status"] == "failed" and "kaboom" in saved["error"] and not r.all_hold


def test_interrupted_atomic_write_leaves_previous_file_intact(tmp_path):
    target = tmp_path / "r.json"
    write_json_atomic(target, {"v": 1})
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_text('{"v": 2, "trunc')
        raise KeyboardInterrupt
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_json_is_strict_with_non_finite_numbers(tmp_path):
    path = write_json_atomic(tmp_path / "x.json", {"a": float("nan"), "b": [1.0, float("inf")]})
    assert json.loads(path.read_text()) == {"a": None, "b": [1.0, None]}


def test_select_expands_slugs_and_rejects_unknown():
    registered = {"a": 0, "a.x": 0, "ab": 0, "b": 0}
    assert select(["a"], registered) == ["a", "a.x"]
    assert select(None, registered) == ["a", "a.x", "ab", "b"]
    with pytest.raises(ValueError, match="zzz"):
        select(["zzz"], registered)


def test_bench_command_forwards_data_root_and_exit_codes(tmp_path, monkeypatch, capsys):
    import argparse
    import os

    from iclr26_shared.cli import add_bench_command
    from iclr26_shared.datasets import DATA_ENV

    monkeypatch.delenv(DATA_ENV, raising=False)
    seen = {}

    def func(scale, device, seed, out_dir):
        seen["root"] = os.environ.get(DATA_ENV)
        return Result(claims=[Claim.at_least("c", "p", 0.0, 1.0)])

    parser = argparse.ArgumentParser()
    add_bench_command(parser.add_subparsers(dest="cmd"), [Benchmark("x", "P", "iclr26-shared", func)])
    base = ["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path), "--data-root", "/data"]
    args = parser.parse_args(base)
    assert args.handler(args) == 0 and seen["root"] == "/data"
    args = parser.parse_args([*base, "--strict", "--force"])
    assert args.handler(args) == 1
    assert "FAIL  c" in capsys.readouterr().out


def test_atomic_write_gets_the_umask_permissions_not_mkstemps(tmp_path):
    umask = os.umask(0o022)
    try:
        path = write_json_atomic(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
