"""Probe, EER and generation metrics on hand-built inputs; CLI round trip; benchmark smoke run."""
import json

import numpy as np
import pytest
from iclr26_diffsda import eer, generation_scores, probe_leakage
from iclr26_diffsda.cli import main
from iclr26_diffsda.evaluate import Judge


def test_probes_on_perfectly_disentangled_codes():
    rng = np.random.default_rng(0)
    n, v = 240, 6
    static = rng.integers(0, 4, n)
    dynamic = rng.integers(0, 3, n)
    s = np.eye(4)[static] + 0.01 * rng.normal(size=(n, 4))
    d = np.repeat(np.eye(3)[dynamic][:, None, :], v, 1) + 0.01 * rng.normal(size=(n, v, 3))
    out = probe_leakage(s, d, {"static": static, "dynamic": dynamic}, folds=3)
    assert out["s->static"] == 1.0 and out["d->dynamic"] == 1.0
    assert out["s->dynamic"] < 0.5 and out["d->static"] < 0.4


def test_eer_closed_forms():
    labels = np.array([0, 0, 1, 1])
    assert eer(np.array([0.1, 0.2, 0.8, 0.9]), labels) == 0.0
    assert eer(np.array([0.9, 0.8, 0.2, 0.1]), labels) == 1.0
    with pytest.raises(ValueError, match="labels"):
        eer(np.ones(3), np.ones(3))


class _Fixed:
    def __init__(self, p):
        self.p = p

    def predict_proba(self, x):
        return self.p


def test_generation_scores_uniform_confident():
    p = np.eye(4)[np.arange(8) % 4]
    judge = Judge({}, {"k": _Fixed(p)})
    out = generation_scores(judge, np.zeros((8, 2, 1)), "k")
    assert out["IS"] == pytest.approx(4.0, rel=1e-6) and out["H_y_given_x"] == pytest.approx(0, abs=1e-9)


def test_cli_round_trip(tmp_path, capsys):
    out = str(tmp_path)
    assert main(["data", "--kind", "tones", "--n", "40", "--out", out]) == 0
    assert main(["fit", "--data", f"{out}/data.npz", "--epochs", "1", "--batch-size", "20", "--hidden-dim", "8",
                 "--mlp-hidden", "4", "--out", out, "--device", "cpu", "--quiet"]) == 0
    assert main(["encode", "--ckpt", f"{out}/model.pt", "--data", f"{out}/data.npz", "--out", out,
                 "--device", "cpu"]) == 0
    codes = np.load(f"{out}/codes.npz")
    assert codes["static"].shape == (40, 16) and codes["dynamic"].shape == (40, 16, 4)
    assert main(["sample", "--ckpt", f"{out}/model.pt", "--data", f"{out}/data.npz", "--pairs", "2", "--steps", "2",
                 "--out", out, "--device", "cpu", "--png"]) == 0
    assert np.load(f"{out}/swaps.npz")["swaps"].shape == (2, 2, 16, 32) and (tmp_path / "swaps.png").is_file()
    capsys.readouterr()
    assert main(["generate", "--n", "5", "--out", out]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["predict", "--ckpt", f"{out}/data.npz", "--out", str(tmp_path / "new"), "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith("error: --ckpt: expected a model.pt")
    assert main(["fit", "--data", f"{out}/model.pt", "--out", str(tmp_path / "new"), "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith("error: --data: expected an .npz")
    assert not (tmp_path / "new").exists()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_bench_smoke_json_schema(tmp_path):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path), "--quiet"]) == 0
    (path,) = tmp_path.glob("diffsda__smoke__seed0__cpu.json")
    result = json.loads(path.read_text())
    assert result["status"] == "ok", result["error"]
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in result
    assert {r["method"] for r in result["rows"]} == {"DiffSDA", "SeqVAE"}
    assert all(isinstance(c["holds"], bool) for c in result["claims"]) and len(result["claims"]) >= 2
