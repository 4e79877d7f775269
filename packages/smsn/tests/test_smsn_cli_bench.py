import json

import numpy as np
import pytest
import torch
from iclr26_smsn import SMSN, PhantomDataset, evaluate_subsets, fit, make_phantom, subset_masks
from iclr26_smsn.bench import BENCHMARK, phantom_throughput
from iclr26_smsn.cli import main


def test_evaluate_subsets_equals_forward():
    torch.manual_seed(0)
    model = SMSN(widths=(4, 8, 8)).eval()
    data = PhantomDataset.from_phantom(make_phantom(3, 16, seed=1))
    ev = evaluate_subsets(model, data)
    assert ev["dice"].shape == (15, 3) and ev["per_sample"].shape == (3, 15, 3)
    from iclr26_smsn.metrics import region_dice_per_sample

    for j, avail in enumerate(torch.as_tensor(subset_masks())):  # the plain forward of each subset
        with torch.no_grad():
            pred = model(data.images, avail.expand(3, -1)).logits.argmax(1).numpy()
        ref = region_dice_per_sample(np.where(pred == 3, 4, pred), data.labels.numpy())
        assert np.allclose(ev["per_sample"][:, j], ref), ev["subsets"][j]


def test_fit_reduces_loss():
    torch.manual_seed(0)
    data = PhantomDataset.from_phantom(make_phantom(16, 16, seed=2))
    hist = fit(SMSN(widths=(4, 8, 8)), data, epochs=4, batch_size=8, lr=3e-3, modality_dropout="none")
    assert hist.steps == 8 and hist.epochs[-1]["total"] < hist.epochs[0]["total"]
    with pytest.raises(ValueError, match="modality_dropout"):
        fit(SMSN(widths=(4, 8, 8)), data, modality_dropout="half")


def test_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["generate", "--n", "3", "--size", "16", "--png", "--out", str(out)]) == 0
    assert "flair" in capsys.readouterr().out.lower()
    assert np.load(out / "phantom.npz")["images"].shape == (3, 4, 16, 16)
    assert sorted(p.name for p in out.glob("case*.png")) == ["case0.png", "case1.png", "case2.png"]
    assert main(["generate", "--n", "3", "--size", "16", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["fit", "--model", "concat", "--n-train", "8", "--size", "16", "--steps", "2", "--batch-size", "4",
                 "--widths", "4", "8", "8", "--device", "cpu", "--out", str(out)]) == 0
    assert main(["evaluate", "--ckpt", str(out / "model.pt"), "--n-test", "2", "--device", "cpu",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "T1ce+FLAIR" in text and "overall" in text
    assert len(json.loads((out / "evaluation.json").read_text())["dice"]) == 15
    assert main(["evaluate", "--ckpt", str(out / "phantom.npz"), "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --ckpt: expected a checkpoint")
    (tmp_path / "notes.txt").write_text("not a checkpoint\n")
    assert main(["evaluate", "--ckpt", str(tmp_path / "notes.txt"), "--device", "cpu", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --ckpt: expected a checkpoint") and "Traceback" not in err and err.count("\n") == 1


def test_bench_smoke_schema(tmp_path, monkeypatch):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        d = BENCHMARK.run(scale="smoke", device="cpu", seed=0, out_dir=tmp_path).to_dict()
        # two single-thread worker processes (a budget of 2 threads) give the same rows in the same order
        from iclr26_shared import parallel
        from iclr26_smsn import bench

        used, real_map = [], parallel.parallel_map
        monkeypatch.setattr(parallel, "parallel_map",
                            lambda fn, items, jobs: used.append(jobs) or real_map(fn, items, jobs=jobs))
        monkeypatch.setitem(bench.CONFIGS["smoke"], "workers", 2)
        torch.set_num_threads(2)
        rows2 = BENCHMARK.run(scale="smoke", device="cpu", seed=0, out_dir=tmp_path / "w2").to_dict()["rows"]
    finally:
        torch.set_num_threads(threads)
    assert used == [2]
    assert [{k: v for k, v in r.items() if k != "train_seconds"} for r in rows2] == \
        [{k: v for k, v in r.items() if k != "train_seconds"} for r in d["rows"]]
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in d
    assert {r["method"] for r in d["rows"]} == {"smsn", "concat"}
    assert all(r["seg_loss_100pct"] > 0 and r["seg_loss_10pct"] >= r["seg_loss_100pct"] for r in d["rows"])
    names = {c["name"] for c in d["claims"]}
    assert "mask_no_leakage" in names
    assert {n.rsplit("_", 1)[1] for n in names if n.startswith("smsn_vs_")} == {"overall", "hard"}
    assert all(isinstance(c["holds"], bool) for c in d["claims"])
    assert next(c for c in d["claims"] if c["name"] == "mask_no_leakage")["holds"]


def test_phantom_throughput_counts_slices_per_cpu_second(monkeypatch):
    """The throughput divides the slices by the CPU seconds make_phantom took (here a clock that advances 0.5 s)."""
    from iclr26_smsn import bench

    ticks = iter([10.0, 10.5])
    monkeypatch.setattr(bench.time, "process_time", lambda: next(ticks))
    assert phantom_throughput(n=4, size=16) == pytest.approx(8.0)


def test_cli_says_claim_not_reproduced(tmp_path, capsys):
    import argparse

    from iclr26_shared.bench import result_path, write_json_atomic
    from iclr26_smsn.cli import _report_central_claim

    claims = [{"name": "smsn_vs_parallel_hard", "paper": "", "measured": -0.1, "criterion": "", "holds": False}]
    write_json_atomic(result_path(tmp_path, "smsn", "quick", 0, "cpu"), {"claims": claims, "status": "ok"})
    _report_central_claim(argparse.Namespace(out=str(tmp_path), scale="quick", seed=0, device="cpu"))
    assert "CLAIM NOT REPRODUCED (smsn_vs_parallel_hard)" in capsys.readouterr().out


def test_evaluate_subsets_hd95():
    torch.manual_seed(0)
    from iclr26_smsn.data import classes_to_labels
    from iclr26_smsn.metrics import region_hd95

    model = SMSN(widths=(4, 8, 8)).eval()
    data = PhantomDataset.from_phantom(make_phantom(3, 16, seed=1))
    ev = evaluate_subsets(model, data, with_hd95=True)
    assert ev["hd95_per_sample"].shape == (3, 15, 3)
    with torch.no_grad():
        pred = classes_to_labels(model(data.images, torch.ones(3, 4, dtype=torch.bool)).logits.argmax(1)).numpy()
    for i in range(3):
        assert np.allclose(ev["hd95_per_sample"][i, -1], list(region_hd95(pred[i], data.labels[i].numpy()).values()))
