import json
import os
import stat

import numpy as np
import pytest
from iclr26_shared.bench import (
    Benchmark,
    Claim,
    Result,
    atomic_path,
    derive_seeds,
    format_measured,
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
    assert r.device.startswith("cpu") and r.figures == ["toy__smoke__seed1__cpu__fig.txt"] and r.all_hold
    assert (tmp_path / r.figures[0]).read_text() == "x" and r.versions["threads"].isdigit()
    assert BENCH.run("smoke", "cpu", 2, tmp_path).figures != r.figures  # another seed: another figure
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
    from iclr26_shared.cli import Parser, add_bench_command, run
    from iclr26_shared.datasets import DATA_ENV

    monkeypatch.delenv(DATA_ENV, raising=False)
    seen = {}

    def func(scale, device, seed, out_dir):
        seen["root"] = os.environ.get(DATA_ENV)
        return Result(claims=[Claim.at_least("c", "p", 0.0, 1.0)])

    parser = Parser()
    add_bench_command(parser.add_subparsers(dest="cmd"), [Benchmark("x", "P", "iclr26-shared", func)])
    base = ["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path / "o"), "--data-root", str(tmp_path)]
    assert run(parser, base) == 0 and seen["root"] == str(tmp_path)
    assert run(parser, [*base, "--strict", "--force"]) == 1
    assert "FAIL  c" in capsys.readouterr().out


def test_atomic_write_gets_the_umask_permissions_not_mkstemps(tmp_path):
    umask = os.umask(0o022)
    try:
        path = write_json_atomic(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_paired_claim_is_computed_from_the_per_seed_numbers():
    seeds = derive_seeds(3, 5)
    assert seeds == [3000, 3001, 3002, 3003, 3004] and not set(seeds) & set(derive_seeds(4, 5))
    method, baseline = [0.80, 0.82, 0.79, 0.85, 0.81], [0.70, 0.75, 0.74, 0.72, 0.76]
    c = Claim.paired("gain", "+5", method, baseline, seeds)
    diff = np.subtract(method, baseline)
    half = 2.131846786 * diff.std(ddof=1) / np.sqrt(5)  # t(0.95, df=4)
    ps = c.per_seed
    assert c.measured == pytest.approx(diff.mean()) and ps["values"] == pytest.approx(diff.tolist())
    assert (ps["low"], ps["high"]) == pytest.approx((diff.mean() - half, diff.mean() + half), rel=1e-6)
    assert ps["wins"] == 5 and ps["seeds"] == seeds and c.holds
    worse = Claim.paired("gain", "+5", baseline, method, seeds)  # a planted worse method
    assert not worse.holds and worse.per_seed["wins"] == 0 and worse.measured < 0
    noisy = Claim.paired("gain", "+5", [0.9, 0.6, 0.8], [0.7, 0.75, 0.74], seeds[:3])
    assert noisy.per_seed["wins"] == 2 and not noisy.holds  # the mean is positive, the interval is not
    lower = Claim.paired("err", "-", [0.1, 0.12, 0.11], [0.2, 0.21, 0.19], seeds[:3], higher_is_better=False)
    assert lower.holds and lower.measured == pytest.approx(0.09)
    assert Claim.paired("ni", "", [0.7, 0.71, 0.69], [0.71, 0.7, 0.7], seeds[:3], margin=-0.05).holds
    with pytest.raises(ValueError, match="equal lengths"):
        Claim.paired("x", "", [1, 2], [1, 2, 3], [0, 1, 2])


def test_mean_claims_over_seeds_and_their_json_round_trip():
    c = Claim.mean_at_least("cov", "0.9", [0.91, 0.89, 0.92], [0, 1, 2], 0.9)
    assert c.holds and c.per_seed["wins"] == 2 and c.per_seed["low"] < 0.9 < c.per_seed["high"]
    assert not Claim.mean_at_most("err", "", [0.3, 0.2, 0.25], [0, 1, 2], 0.2).holds
    r = Result(claims=[c], benchmark="b")
    assert Result.from_dict(json.loads(json.dumps(r.to_dict()))).claims[0] == c
    assert "[" in format_measured(c) and "2/3 seeds" in format_measured(c)


def test_cached_results_are_reused_only_when_valid_and_of_this_configuration(tmp_path):
    _, path, _ = run_and_save(BENCH, "smoke", "cpu", 0, tmp_path)
    for bad in ("{}", '{"benchmark": "toy", "trunc', json.dumps({**json.loads(path.read_text()), "seed": 5})):
        path.write_text(bad)
        with pytest.warns(UserWarning, match=str(path.name)):
            _, _, skipped = run_and_save(BENCH, "smoke", "cpu", 0, tmp_path)
        assert not skipped and json.loads(path.read_text())["seed"] == 0
    data = json.loads(path.read_text())
    data["versions"]["iclr26-shared"] = "0.0.0-other"
    path.write_text(json.dumps(data))
    with pytest.warns(UserWarning, match="versions"):
        assert not run_and_save(BENCH, "smoke", "cpu", 0, tmp_path)[2]


def test_a_failed_result_is_retried_by_default(tmp_path):
    calls = []

    def flaky(scale, device, seed, out_dir):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first time")
        return Result()

    bench = Benchmark("flaky", "P", "iclr26-shared", flaky)
    assert run_and_save(bench, "smoke", "cpu", 0, tmp_path)[0].status == "failed"
    with pytest.warns(UserWarning, match="failed"):
        assert run_and_save(bench, "smoke", "cpu", 0, tmp_path)[0].status == "ok"
    assert run_and_save(bench, "smoke", "cpu", 0, tmp_path)[2] and len(calls) == 2


def test_the_cli_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys, iclr26_shared.cli; "
            "print(sorted(m for m in ('torch', 'sklearn', 'scipy', 'tqdm') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
