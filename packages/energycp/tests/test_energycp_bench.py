"""One smoke run of the registered benchmark, checking the JSON contract."""
import json
from importlib import metadata

import pytest
from iclr26_energycp.cli import main


def test_bench_smoke_writes_the_result_json(tmp_path, capsys):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path)]) == 0
    files = list(tmp_path.glob("energycp__smoke__seed0__cpu.json"))
    assert len(files) == 1
    d = json.loads(files[0].read_text())
    assert d["status"] == "ok", d["error"]
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in d
    assert d["benchmark"] == "energycp" and d["scale"] == "smoke"
    assert all(isinstance(v, (int, float)) for v in d["metrics"].values())
    methods = {r["method"] for r in d["rows"]}
    assert {"raps", "energy-raps", "entropy-raps", "lac", "energy-lac"} <= methods
    assert all({"name", "paper", "measured", "criterion", "holds"} <= set(c) for c in d["claims"])
    assert any(c["name"].startswith("2.efficiency") for c in d["claims"])
    assert "PASS" in capsys.readouterr().out


def test_benchmark_is_registered():
    names = {ep.name: ep.value for ep in metadata.entry_points(group="iclr26.benchmarks")}
    assert names.get("energycp") == "iclr26_energycp.bench:BENCHMARK"


@pytest.mark.filterwarnings("ignore:conformal quantile")
def test_paper_protocol_runs_on_user_logits(tmp_path, monkeypatch):
    import numpy as np
    from iclr26_energycp import bench

    folder = tmp_path / "energycp"
    folder.mkdir()
    monkeypatch.setenv("ICLR26_DATA", str(tmp_path))
    proto = bench.Protocol(2, 3, (1.0,), (1.0,), (), (0.9, 1.0))
    with pytest.raises(FileNotFoundError, match="at least one of"):
        bench._paper(proto, "cpu", 0)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 6, 260)
    z = rng.normal(size=(260, 6)) + 3 * np.eye(6)[y]
    np.savez(folder / bench.PAPER_FILES["cifar100_resnet56"][0], logits=z, labels=y)  # one user file only
    np.savez(folder / bench.PAPER_OOD[1], logits=rng.normal(size=(50, 6)))
    small = {name: (spec[0], 60, 100, 100) for name, spec in bench.PAPER_FILES.items()}
    monkeypatch.setattr(bench, "PAPER_FILES", small)
    result = bench._paper(proto, "cpu", 0)
    assert {r["method"].split("@")[0] for r in result.rows} == {"cifar100_resnet56"}
    assert any(r["method"].startswith("cifar100_resnet56@0.1:energy-raps") for r in result.rows)
    assert "ood_size" in next(r for r in result.rows if r["method"].startswith("cifar100_resnet56@"))
    assert any(".ood." in c.name for c in result.claims)


def test_ood_and_sscv_claims_are_paired_over_seeds():
    from iclr26_energycp import bench

    proto = bench.Protocol(2, 3, (0.3, 1.0), (0.1, 1.0), (), (0.9, 1.0), n_seeds=3)
    result = bench._digits(proto, "cpu", 7)
    paired = {c.name: c for c in result.claims if c.per_seed}
    assert set(paired) == {f"4.ood.{s}_ratio_of_ratios" for s in ("raps", "saps", "lac", "aps")} | {
        "5.sscv.raps", "5.sscv.saps", "2.efficiency.raps_size_paired", "2.efficiency.saps_size_paired"}
    for claim in paired.values():
        per = claim.per_seed
        assert per["seeds"] == [7000, 7001, 7002] and per["n"] == 3
        diffs = [m - b for m, b in zip(per["method"], per["baseline"])]
        if claim.name.startswith("5."):  # lower is better: the difference is baseline - method
            diffs = [-d for d in diffs]
        assert per["values"] == pytest.approx(diffs)
        assert claim.holds == (per["low"] > float(claim.criterion.rsplit("> ", 1)[1]))
