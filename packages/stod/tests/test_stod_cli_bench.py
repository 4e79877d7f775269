import json

import pytest
import torch
from iclr26_stod import (
    TensorBatches,
    build_model,
    fit,
    gradient_temporal_collinearity,
    load_images,
    load_model,
    remap_intensity,
)
from iclr26_stod.bench import BENCHMARK
from iclr26_stod.cli import main


def test_training_is_deterministic():
    data = load_images("bars", seed=0)

    def run():
        torch.manual_seed(0)
        model = build_model("stod", T=2)
        hist = fit(model, TensorBatches(data.x_train[:128], data.y_train[:128], 64, shuffle=True, seed=0),
                   epochs=1, device="cpu", seed=0)
        return model.state_dict(), hist

    (a, ha), (b, hb) = run(), run()
    assert ha.to_dict() == hb.to_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_fit_bad_input():
    model = build_model("direct", T=2)
    with pytest.raises(ValueError, match="eps_train"):
        fit(model, [], epochs=1, adv_train="fgsm")
    with pytest.raises(ValueError, match="epochs"):
        fit(model, [], epochs=0)
    with pytest.raises(ValueError, match="encoding"):
        build_model("poisson")


def test_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "res"
    model = out / "model.pt"
    args = ["fit", "--encoding", "stod", "--dataset", "bars", "--T", "2", "--epochs", "1", "--out", str(out),
            "--device", "cpu", "--quiet"]
    assert main(args) == 0
    history = json.loads((out / "history.json").read_text())
    assert len(history["history"]["gor"]) == 1 and history["history"]["gor"][0] > 0
    assert main(args) == 2 and "--force" in capsys.readouterr().err
    assert main(["evaluate", str(model), "--eps", "0.1", "--pgd-steps", "2", "--n-test", "32", "--out", str(out),
                 "--device", "cpu"]) == 0
    res = json.loads((out / "evaluation.json").read_text())["results"]
    assert {r["model"] for r in res} == {"kernels removed", "kernels kept"}
    assert {r["attack"] for r in res} == {"clean", "fgsm", "pgd"}
    assert main(["evaluate", str(model), "--attacks", "apgd-ce,apgd-dlr", "--apgd-steps", "2", "--apgd-restarts", "2",
                 "--n-test", "32", "--eps", "0.1", "--out", str(out), "--device", "cpu", "--force"]) == 0
    res = json.loads((out / "evaluation.json").read_text())["results"]
    assert {r["attack"] for r in res} == {"apgd-ce", "apgd-dlr"} and all(0 <= r["accuracy"] <= 1 for r in res)
    assert main(["gtc", str(model), "--n-test", "32", "--out", str(out), "--device", "cpu"]) == 0
    gtc = json.loads((out / "gtc.json").read_text())
    assert len(gtc["matrix"]) == 2 and -1 <= gtc["mean"] <= 1
    assert "GTC (wrt=input" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main(["evaluate", str(model), "--attacks", "clean,cw", "--out", str(tmp_path / "x")])
    assert refused.value.code == 2
    assert capsys.readouterr().err.startswith("error: --attacks: expected")
    assert main(["gtc", str(out / "history.json"), "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.startswith("error: model: expected a model.pt")


def test_bench_smoke_json_schema(tmp_path):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path), "--quiet"]) == 0
    (path,) = tmp_path.glob("stod__smoke__seed0__cpu.json")
    d = json.loads(path.read_text())
    assert d["status"] == "ok", d["error"]
    assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
            "claims", "figures"} <= set(d)
    assert d["benchmark"] == BENCHMARK.name == "stod"
    methods = {"direct", "stod_removed", "stod_kept"}
    assert {r["method"].split("/")[0] for r in d["rows"]} == methods | {f"sibling:{m}" for m in methods}
    names = {c["name"] for c in d["claims"]}
    central = next(c for c in d["claims"] if c["name"] == "stod_more_robust")
    assert central["per_seed"]["n"] == 2 and central["per_seed"]["seeds"] == [0, 1]
    assert {r["seed"] for r in d["rows"]} == {0, 1}
    assert all(0 <= r["apgd_dlr@0.1"] <= r["clean"] for r in d["rows"])  # the judged attack, on every deployment
    sibling = next(c for c in d["claims"] if c["name"] == "stod_more_robust_sibling")
    assert sibling["per_seed"]["seeds"] == [0, 1]
    assert {"direct_gtc_input", "stod_kernels_decorrelate", "gor_minimised", "kernels_orthogonal"} <= names
    for c in d["claims"]:
        assert {"name", "paper", "measured", "criterion", "holds"} <= set(c) and isinstance(c["holds"], bool)


def test_remap_option_maps_train_and_test_and_refuses_bad_values(tmp_path, capsys):
    plain, mid = load_images("digits"), load_images("digits", remap=(0.25, 0.5))
    assert torch.equal(mid.x_train, 0.25 + 0.5 * plain.x_train) and torch.equal(mid.x_test, 0.25 + 0.5 * plain.x_test)
    assert torch.equal(mid.y_train, plain.y_train) and float(mid.x_train.min()) == 0.25
    assert float(mid.x_train.max()) == 0.75
    for bad in [(0.5, 0.6), (0.2, 0.0), (-0.1, 0.5), (0.25,), "0.25,0.5"]:
        with pytest.raises(ValueError, match=r"^remap: expected \(offset, scale\) with offset >= 0.*, got "):
            load_images("bars", remap=bad)
    with pytest.raises(ValueError, match="^remap: expected"):
        remap_intensity(plain.x_test, (0.25, 0.5, 0.1))
    out = tmp_path / "remapped"
    assert main(["fit", "--encoding", "direct", "--dataset", "bars", "--T", "2", "--epochs", "1", "--remap",
                 "0.25,0.5", "--out", str(out), "--device", "cpu", "--quiet"]) == 0
    assert json.loads((out / "history.json").read_text())["config"]["remap"] == [0.25, 0.5]
    model, _ = load_model(out / "model.pt")
    x = load_images("bars", remap=(0.25, 0.5)).x_test[:16]
    assert main(["gtc", str(out / "model.pt"), "--n-test", "16", "--out", str(out), "--device", "cpu"]) == 0
    assert json.loads((out / "gtc.json").read_text())["mean"] == pytest.approx(
        gradient_temporal_collinearity(model.eval(), x, load_images("bars").y_test[:16]), abs=1e-9)
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main(["fit", "--remap", "0.5,0.8", "--out", str(tmp_path / "x")])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --remap: expected OFFSET,SCALE") and "'0.5,0.8'" in err and err.count("\n") == 1
