import json

import numpy as np
import pytest
import torch
from iclr26_smsn import SMSN, PhantomDataset, evaluate_subsets, fit, make_phantom
from iclr26_smsn.bench import BENCHMARK
from iclr26_smsn.cli import main


def test_evaluate_subsets_equals_forward():
    torch.manual_seed(0)
    model = SMSN(widths=(4, 8, 8)).eval()
    data = PhantomDataset.from_phantom(make_phantom(3, 16, seed=1))
    ev = evaluate_subsets(model, data)
    assert ev["dice"].shape == (15, 3) and ev["per_sample"].shape == (3, 15, 3)
    mask = torch.tensor([[False, True, False, True]]).expand(3, -1)
    with torch.no_grad():
        pred = model(data.images, mask).logits.argmax(1).numpy()
    from iclr26_smsn.metrics import region_dice_per_sample

    ref = region_dice_per_sample(np.where(pred == 3, 4, pred), data.labels.numpy())
    assert np.allclose(ev["per_sample"][:, ev["subsets"].index("T1ce+FLAIR")], ref)


def test_fit_reduces_loss():
    torch.manual_seed(0)
    data = PhantomDataset.from_phantom(make_phantom(16, 16, seed=2))
    hist = fit(SMSN(widths=(4, 8, 8)), data, epochs=4, batch_size=8, lr=3e-3, modality_dropout="none")
    assert hist.steps == 8 and hist.epochs[-1]["total"] < hist.epochs[0]["total"]
    with pytest.raises(ValueError, match="modality_dropout"):
        fit(SMSN(widths=(4, 8, 8)), data, modality_dropout="half")


def test_cli_round_trip(tmp_path, capsys):
    npz, ckpt, js = tmp_path / "p.npz", tmp_path / "m.pt", tmp_path / "e.json"
    assert main(["phantom", "--n", "3", "--size", "16", "--out", str(npz)]) == 0
    assert "flair" in capsys.readouterr().out.lower()
    assert np.load(npz)["images"].shape == (3, 4, 16, 16)
    with pytest.raises(SystemExit, match="force"):
        main(["phantom", "--n", "3", "--size", "16", "--out", str(npz)])
    assert main(["train", "--model", "concat", "--n-train", "8", "--size", "16", "--steps", "2", "--batch-size", "4",
                 "--widths", "4", "8", "8", "--device", "cpu", "--out", str(ckpt)]) == 0
    assert main(["eval", "--ckpt", str(ckpt), "--n-test", "2", "--device", "cpu", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "T1ce+FLAIR" in out and "overall" in out
    assert len(json.loads(js.read_text())["dice"]) == 15


def test_bench_smoke_schema(tmp_path):
    result = BENCHMARK.run(scale="smoke", device="cpu", seed=0, out_dir=tmp_path)
    d = result.to_dict()
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in d
    assert {r["method"] for r in d["rows"]} == {"smsn", "concat"}
    names = {c["name"] for c in d["claims"]}
    assert {"mask_no_leakage", "smsn_vs_parallel_overall", "smsn_vs_parallel_hard"} <= names
    assert all(isinstance(c["holds"], bool) for c in d["claims"])
    assert next(c for c in d["claims"] if c["name"] == "mask_no_leakage")["holds"]


def test_cli_says_claim_not_reproduced(tmp_path, capsys):
    from iclr26_shared.bench import result_path, write_json_atomic

    claims = [{"name": "smsn_vs_parallel_hard", "paper": "", "measured": -0.1, "criterion": "", "holds": False}]
    write_json_atomic(result_path(tmp_path, "smsn", "quick", 0, "cpu"), {"claims": claims, "status": "ok"})
    main(["bench", "--scale", "quick", "--device", "cpu", "--out", str(tmp_path)])
    assert "CLAIM NOT REPRODUCED (smsn_vs_parallel_hard)" in capsys.readouterr().out
