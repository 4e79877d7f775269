"""The runner against a fake package registered through a real entry-point file on sys.path."""
import json
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from iclr26_bench.cli import main
from iclr26_bench.report import load_results
from joblib.externals.loky import get_reusable_executor

FAKE = '''
import os
import pathlib
import time
from iclr26_shared.bench import Benchmark, Claim, Result, derive_seeds

CALLS = pathlib.Path(__file__).with_name("calls.txt")

def _ok(scale, device, seed, out_dir):
    with CALLS.open("a") as fh:
        fh.write("ok\\n")
    fig = out_dir / "fake_fig.png"
    fig.write_bytes(b"png")
    return Result(metrics={"acc": 0.9}, rows=[{"method": "ours", "acc": 0.9}, {"method": "base", "acc": 0.8}],
                  claims=[Claim.at_least("beats base", "+0.1", 0.1, 0.05)], figures=[str(fig)])

def _neg(scale, device, seed, out_dir):
    return Result(claims=[Claim.at_least("honest negative", "0.9", 0.2, 0.5)])

def _paired(scale, device, seed, out_dir):
    seeds = derive_seeds(seed, 3)
    method = [2, 3, 2.5] if seed != 7 else [1, 1.2, 0.9]  # base seed 7: the method loses
    return Result(metrics={"acc": 0.5}, claims=[Claim.paired("gain", "+1", method, [1, 1.5, 1.2], seeds)])

def _slow(scale, device, seed, out_dir):
    with CALLS.with_name("slow.txt").open("a") as fh:
        fh.write("slow\\n")
    time.sleep(2)
    return Result()

def _hang(scale, device, seed, out_dir):
    with CALLS.with_name("pids.txt").open("a") as fh:
        fh.write(f"{os.getpid()}\\n")
    time.sleep(600)
    return Result()

def _boom(scale, device, seed, out_dir):
    raise ZeroDivisionError("fake failure")

ok = Benchmark("fake.ok", "Fake paper", "fake-pkg", _ok)
neg = Benchmark("fake.neg", "Fake paper", "fake-pkg", _neg)
boom = Benchmark("fake.boom", "Fake paper", "fake-pkg", _boom)
paired = Benchmark("fake.paired", "Fake paper", "fake-pkg", _paired)
slow = Benchmark("fake.slow", "Fake paper", "fake-pkg", _slow)
hang = Benchmark("fake.hang", "Fake paper", "fake-pkg", _hang)
hang2 = Benchmark("fake.hang2", "Fake paper", "fake-pkg", _hang)
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    site = tmp_path / "site"
    dist = site / "fake_pkg-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / "fake_bench_mod.py").write_text(FAKE)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-pkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""\
        [iclr26.benchmarks]
        fake.ok = fake_bench_mod:ok
        fake.neg = fake_bench_mod:neg
        fake.boom = fake_bench_mod:boom
        fake.paired = fake_bench_mod:paired
        fake.slow = fake_bench_mod:slow
        fake.hang = fake_bench_mod:hang
        fake.hang2 = fake_bench_mod:hang2
        fake.broken = fake_missing_module:nothing
        """))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "fake_bench_mod", raising=False)  # loaded by an earlier test from its site
    monkeypatch.setenv("PYTHONPATH", str(site))
    # joblib reuses its worker processes across calls: workers started before this test (by any earlier test in
    # this process) know neither this site nor its entry points, so start fresh ones, and leave none behind
    get_reusable_executor().shutdown(wait=True)
    yield site
    get_reusable_executor().shutdown(wait=True)


def test_list_discovers_entry_points(fake, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(n in out for n in ("fake.ok", "fake.neg", "fake.boom", "fake.broken"))


def test_run_writes_schema_json_and_resumes(fake, tmp_path):
    out = tmp_path / "res"
    assert main(["run", "fake.ok", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--quiet"]) == 0
    data = json.loads((out / "fake.ok__smoke__seed0__cpu.json").read_text())
    assert set(data) >= {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds",
                         "metrics", "rows", "claims", "figures"}
    assert data["claims"][0]["holds"] is True and data["figures"] == ["fake.ok__smoke__seed0__cpu__fake_fig.png"]
    main(["run", "fake.ok", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--quiet"])
    assert (fake / "calls.txt").read_text().count("ok") == 1  # resumed: not recomputed
    main(["run", "fake.ok", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--quiet", "--force"])
    assert (fake / "calls.txt").read_text().count("ok") == 2


def test_jobs_share_the_cores_and_threads_sets_each_benchmark(fake, tmp_path, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    threads = {}
    for name, extra in (("jobs2", ["--jobs", "2"]), ("jobs1", []), ("threads1", ["--threads", "1"])):
        out = tmp_path / name
        assert main(["run", "fake.ok", "fake.paired", "--scale", "smoke", "--device", "cpu", "--out", str(out),
                     "--quiet", *extra]) == 0
        threads[name] = {json.loads(p.read_text())["versions"]["threads"] for p in out.glob("*.json")}
    assert threads == {"jobs2": {"1"}, "jobs1": {"2"}, "threads1": {"1"}}


def test_failures_are_recorded_and_do_not_stop_the_others(fake, tmp_path):
    out = tmp_path / "res"
    code = main(["run", "fake.ok", "fake.neg", "fake.boom", "fake.broken", "--scale", "smoke", "--device", "cpu",
                 "--out", str(out), "--jobs", "2", "--quiet"])
    assert code == 1
    by_name = {r.benchmark: r for r in load_results(out)}
    assert set(by_name) == {"fake.ok", "fake.neg", "fake.boom", "fake.broken"}
    assert by_name["fake.boom"].status == "failed" and "fake failure" in by_name["fake.boom"].error
    assert by_name["fake.broken"].status == "failed" and "fake_missing_module" in by_name["fake.broken"].error
    assert by_name["fake.ok"].all_hold and not by_name["fake.neg"].all_hold


def test_exit_code_is_zero_only_when_every_claim_holds(fake, tmp_path):
    out = str(tmp_path / "res")
    assert main(["run", "fake.neg", "--scale", "smoke", "--device", "cpu", "--out", out, "--quiet"]) == 1


def test_report_tables_every_claim_and_lists_failures(fake, tmp_path):
    out = tmp_path / "res"
    main(["run", "fake.ok", "fake.neg", "fake.boom", "fake.broken", "fake.paired", "--scale", "smoke", "--device",
          "cpu", "--out", str(out), "--quiet", "--report"])
    text = (out / "REPORT.md").read_text()
    assert "| fake.ok | smoke | 0 | beats base | +0.1 |" in text
    assert "honest negative" in text and "**no**" in text
    assert "`fake.boom`" in text and "ZeroDivisionError" in text
    assert "![fake.ok__smoke__seed0__cpu__fake_fig.png](fake.ok__smoke__seed0__cpu__fake_fig.png)" in text
    assert "| fake.paired | smoke | 0 | gain |" in text and "| 3/3 |" in text
    assert "| ours | 0.9 |" in text
    assert "Across base seeds" not in text  # one base seed only


def test_report_judges_claims_across_base_seeds(fake, tmp_path):
    out = tmp_path / "res"
    for seed in ("0", "7", "9"):
        main(["run", "fake.paired", "fake.ok", "--scale", "smoke", "--device", "cpu", "--seed", seed, "--out",
              str(out), "--quiet"])
    assert main(["report", str(out)]) == 0
    text = (out / "REPORT.md").read_text()
    section = text.split("## Across base seeds")[1].split("\n## ")[0]
    paired = next(line for line in section.splitlines() if line.startswith("| fake.paired | smoke | gain |"))
    assert "0: 1.267 [" in paired and "7: -0.2 [" in paired and "0/3, fails" in paired and "3/3, holds" in paired
    assert paired.endswith("| 2/3 | fragile |")
    single = "| fake.ok | smoke | beats base | 0: 0.1, holds; 7: 0.1, holds; 9: 0.1, holds | 3/3 | holds at every"
    assert single in section


def test_unknown_name_is_a_clear_error(fake, tmp_path, capsys):
    assert main(["run", "nope", "--out", str(tmp_path)]) == 2
    assert "'nope' is not registered" in capsys.readouterr().err


def test_report_on_missing_folder_explains(tmp_path, capsys):
    assert main(["report", str(tmp_path / "absent")]) == 2
    assert "iclr26-bench run" in capsys.readouterr().err


def test_an_empty_or_truncated_result_is_recomputed_and_report_skips_junk(fake, tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "fake.ok__smoke__seed0__cpu.json").write_text("{}")
    with pytest.warns(UserWarning, match="fake.ok__smoke__seed0__cpu.json"):
        assert main(["run", "fake.ok", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--quiet"]) == 0
    assert (fake / "calls.txt").read_text().count("ok") == 1
    (out / "broken.json").write_text('{"benchmark": "x", "cla')
    (out / ".fake.ok__smoke__seed0__cpu.tmp.json").write_text("{}")
    with pytest.warns(UserWarning, match="broken.json"):
        assert [r.benchmark for r in load_results(out)] == ["fake.ok"]


def test_max_seconds_stops_starting_benchmarks(fake, tmp_path, capsys):
    out = tmp_path / "res"
    code = main(["run", "fake.ok", "fake.neg", "--scale", "smoke", "--device", "cpu", "--out", str(out),
                 "--quiet", "--max-seconds", "0"])
    assert code == 1 and "not run" in capsys.readouterr().out and not list(out.glob("*.json"))


def test_bad_options_are_one_line_errors(tmp_path, capsys):
    for argv in (["run", "--device", "cuda:7"], ["run", "--seed", "-1"], ["run", "--jobs", "0"],
                 ["run", "--device", "tpu"], ["run", "--data-root", str(tmp_path / "absent")]):
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1, (argv, err)
    assert not (tmp_path / "o").exists()


def test_two_runners_on_one_folder_compute_a_benchmark_once(fake, tmp_path):
    out = str(tmp_path / "res")
    argv = [sys.executable, "-m", "iclr26_bench.cli", "run", "fake.slow", "--scale", "smoke", "--device", "cpu",
            "--out", out, "--quiet"]
    procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert (fake / "slow.txt").read_text().count("slow") == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_the_runner(fake, tmp_path):
    argv = [sys.executable, "-m", "iclr26_bench.cli", "run", "fake.hang", "fake.hang2", "--scale", "smoke",
            "--device", "cpu", "--out", str(tmp_path / "res"), "--quiet", "--jobs", "2"]
    runner = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = fake / "pids.txt"
    deadline = time.time() + 90
    while time.time() < deadline and len(pids.read_text().split() if pids.exists() else []) < 2:
        time.sleep(0.2)
    workers = [int(p) for p in pids.read_text().split()]
    assert len(workers) == 2
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    time.sleep(10)

    def alive(pid):
        status = pathlib.Path(f"/proc/{pid}/status")
        return status.exists() and "State:\tZ" not in status.read_text()

    assert not [p for p in workers if alive(p)]


@pytest.mark.slow
def test_dask_backend_gives_the_local_results(fake, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", processes=True)
    try:
        names = ["fake.ok", "fake.neg", "fake.paired"]
        base = ["run", *names, "--scale", "smoke", "--device", "cpu", "--quiet"]
        main([*base, "--out", str(tmp_path / "local")])
        main([*base, "--out", str(tmp_path / "dask"), "--backend", "dask", "--address", cluster.scheduler_address])
    finally:
        cluster.close()
    local, dask = (load_results(tmp_path / f) for f in ("local", "dask"))
    assert [(r.benchmark, r.metrics, r.claims) for r in local] == [(r.benchmark, r.metrics, r.claims) for r in dask]


@pytest.mark.slow
def test_ray_backend_gives_the_local_results(fake, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed here (pip install 'iclr26-bench[ray]')")
    names = ["fake.ok", "fake.neg", "fake.paired"]
    base = ["run", *names, "--scale", "smoke", "--device", "cpu", "--quiet"]
    main([*base, "--out", str(tmp_path / "local")])
    main([*base, "--out", str(tmp_path / "ray"), "--backend", "ray"])
    local, ray = (load_results(tmp_path / f) for f in ("local", "ray"))
    assert [(r.benchmark, r.metrics, r.claims) for r in local] == [(r.benchmark, r.metrics, r.claims) for r in ray]
