import json

import matplotlib.image
import numpy as np
import pytest
from iclr26_fsd import TableTop2D
from iclr26_fsd.cli import main

TINY = ["--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-mlp", "32", "--n-train", "40"]


def test_cli_round_trip(tmp_path, capsys):
    assert main(["generate", "--split", "test_iid", "--n", "5", "--out", str(tmp_path)]) == 0
    with np.load(tmp_path / "data.npz") as arrays:
        assert arrays["images"].shape == (5, 64, 64, 3) and arrays["traces"].shape == (5, 8, 2)
        assert str(arrays["fsd_text"][0]).startswith("<ref>")
    assert main(["generate", "--split", "test_iid", "--n", "5", "--out", str(tmp_path)]) == 2  # no --force
    assert "--force" in capsys.readouterr().err

    run = tmp_path / "fsd"
    assert main(["fit", "--model", "fsd", "--steps", "3", "--batch-size", "4", *TINY, "--out", str(run),
                 "--device", "cpu"]) == 0
    assert "parameters" in capsys.readouterr().out
    model = run / "model.pt"

    image = tmp_path / "scene.png"
    env = TableTop2D("test_iid", 1, seed=0)
    matplotlib.image.imsave(image, np.pad(env.images[0], ((8, 8), (0, 0), (0, 0))))  # non-square 64 x 80
    assert main(["predict", "--model", str(model), "--image", str(image), "--instruction", env.instructions[0],
                 "--draw", "--out", str(run), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "<Answer>" in out and "in pixels of the 64x80 image" in out and (run / "aids.png").exists()
    assert main(["predict", "--model", str(model), "--image", str(image), "--instruction",
                 "put the pink hexagon left of the red square", "--device", "cpu"]) == 2
    assert "known colours" in capsys.readouterr().err

    assert main(["evaluate", "--model", str(model), "--split", "test_compositional", "--n", "4", "--arm", "alt",
                 "--out", str(run), "--device", "cpu"]) == 0
    rep = json.loads((run / "evaluation.json").read_text())
    assert rep["n"] == 4 and 0 <= rep["success_rate"] <= 1

    direct = tmp_path / "direct"
    assert main(["train", "--model", "direct", "--steps", "2", "--batch-size", "4", *TINY, "--out", str(direct),
                 "--device", "cpu"]) == 0
    assert main(["eval", "--model", str(direct / "model.pt"), "--split", "test_iid", "--n", "3", "--out",
                 str(direct), "--device", "cpu"]) == 0

    capsys.readouterr()
    assert main(["evaluate", "--model", str(image), "--out", str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err.startswith("error: --model: expected a model.pt")
    assert main(["predict", "--model", str(model), "--image", str(model), "--instruction", "x",
                 "--out", str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err.startswith("error: --image: expected a PNG image")
    with pytest.raises(SystemExit) as exit_info:  # a missing file is refused at parse time, naming the option
        main(["predict", "--model", str(model), "--image", str(tmp_path / "missing.png"), "--instruction", "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --image: expected an existing file") and "missing.png" in err and "\n" not in err
    assert not (tmp_path / "bad").exists()


def test_bench_smoke_writes_the_result_contract(tmp_path, capsys):
    assert main(["benchmark", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "oracle_success" in out
    (path,) = tmp_path.glob("fsd__smoke__seed0__cpu.json")
    d = json.loads(path.read_text())
    assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
            "claims", "figures"} <= set(d)
    assert d["status"] == "ok" and d["benchmark"] == "fsd" and d["package"] == "iclr26-fsd"
    names = {c["name"] for c in d["claims"]}
    assert {"oracle_success", "direct_oracle_success", "fsd_parse_failure", "seeing_to_doing_beats_direct_action"} \
        <= names
    for c in d["claims"]:
        assert {"name", "paper", "measured", "criterion", "holds"} <= set(c) and isinstance(c["holds"], bool)
    assert d["metrics"]["oracle_min_success"] == 1.0
    assert any(r["method"].startswith("Direct [comp") for r in d["rows"])


@pytest.mark.cuda
def test_cuda_decoding_matches_cpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    from iclr26_fsd import FSDTiny

    env = TableTop2D("test_iid", 4, seed=0)
    cpu = FSDTiny(d_model=16, n_layers=1, n_heads=2, d_mlp=32, seed=0)
    gpu = FSDTiny(d_model=16, n_layers=1, n_heads=2, d_mlp=32, seed=0, device="cuda")
    assert cpu.predict(env.images, env.instructions) == gpu.predict(env.images, env.instructions)
