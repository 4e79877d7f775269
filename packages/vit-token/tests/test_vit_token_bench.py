import json

from iclr26_shared.bench import run_and_save
from iclr26_vit_token.bench import BENCHMARK


def test_smoke_benchmark_writes_the_json_contract(tmp_path):
    result, path, skipped = run_and_save(BENCHMARK, scale="smoke", device="cpu", seed=0, out_dir=tmp_path)
    assert not skipped and result.status == "ok", result.error
    d = json.loads(path.read_text())
    assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
            "claims", "figures"} <= set(d)
    assert d["benchmark"] == "vit-token" and d["scale"] == "smoke"
    assert {r["method"] for r in d["rows"]} == {"base", "spec", "random_init"}
    assert all(isinstance(c["holds"], bool) for c in d["claims"])
    claims = {c["name"]: c for c in d["claims"]}
    assert claims["structure_params_flops"]["holds"] and claims["function_preservation"]["holds"]
    assert d["metrics"]["extra_params"] == 25_728
