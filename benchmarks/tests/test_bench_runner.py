"""The runner against a fake package registered through a real entry-point file on sys.path."""
import json
import textwrap

import pytest
from iclr26_bench.cli import main
from iclr26_bench.report import load_results

FAKE = '''
import pathlib
from iclr26_shared.bench import Benchmark, Claim, Result

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

def _boom(scale, device, seed, out_dir):
    raise ZeroDivisionError("fake failure")

ok = Benchmark("fake.ok", "Fake paper", "fake-pkg", _ok)
neg = Benchmark("fake.neg", "Fake paper", "fake-pkg", _neg)
boom = Benchmark("fake.boom", "Fake paper", "fake-pkg", _boom)
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
        fake.broken = fake_missing_module:nothing
        """))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


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
    assert data["claims"][0]["holds"] is True and data["figures"] == ["fake_fig.png"]
    main(["run", "fake.ok", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--quiet"])
    assert (fake / "calls.txt").read_text().count("ok") == 1  # resumed: not recomputed
    main(["run", "fake.ok", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--quiet", "--force"])
    assert (fake / "calls.txt").read_text().count("ok") == 2


def test_failures_are_recorded_and_do_not_stop_the_others(fake, tmp_path):
    out = tmp_path / "res"
    code = main(["run", "fake", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--jobs", "2", "--quiet"])
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
    main(["run", "fake", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--quiet", "--report"])
    text = (out / "REPORT.md").read_text()
    assert "| fake.ok | smoke | 0 | beats base | +0.1 |" in text
    assert "honest negative" in text and "**no**" in text
    assert "`fake.boom`" in text and "ZeroDivisionError" in text
    assert "![fake_fig.png](fake_fig.png)" in text
    assert "| ours | 0.9 |" in text


def test_unknown_name_is_a_clear_error(fake, tmp_path, capsys):
    assert main(["run", "nope", "--out", str(tmp_path)]) == 2
    assert "'nope' is not registered" in capsys.readouterr().err


def test_report_on_missing_folder_explains(tmp_path):
    with pytest.raises(FileNotFoundError, match="iclr26-bench run"):
        main(["report", str(tmp_path / "absent")])
