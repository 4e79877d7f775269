"""Training on a user's own records (``load_jsonl`` -> ``fit`` / ``fit --data``), and their errors."""
import json

import matplotlib.image
import numpy as np
import pytest
from iclr26_fsd import FSDTiny, TableTop2D, load_jsonl
from iclr26_fsd.cli import main

SMALL = dict(d_model=16, n_layers=1, n_heads=2, d_mlp=32)
SIZES = ["--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-mlp", "32"]


def write_records(folder, n, seed=7, refs=True, **override):
    """``n`` records of a test split as 128x128 PNGs (2x upscaled scenes) + ``records.jsonl``; returns the env."""
    env = TableTop2D("test_iid", n, seed=seed)
    lines = []
    for i, (img, text, a) in enumerate(zip(env.images, env.instructions, env.aids, strict=True)):
        matplotlib.image.imsave(folder / f"{i}.png", np.repeat(np.repeat(img, 2, 0), 2, 1))
        rec = {"image": f"{i}.png", "instruction": text, "box": list(a.box), "points": [list(p) for p in a.points],
               "trace": [list(p) for p in a.trace]}
        if refs:
            rec |= {"refs": [[name, list(b)] for name, b in a.refs], "relations": [list(r) for r in a.relations]}
        lines.append(json.dumps(rec | override))
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    return env


def test_fine_tuning_on_records_lowers_their_loss_and_predict_works(tmp_path):
    env = write_records(tmp_path, 200)
    data = load_jsonl(tmp_path / "records.jsonl")  # images relative to the file's folder
    assert np.array_equal(data.images, env.images)  # 128 px PNGs padded/resized back to the 64 px scenes
    assert data.aids[0] == env.aids[0] and data.lines[:2] == [1, 2]
    model = FSDTiny(seed=0, **SMALL)
    model.fit(TableTop2D("train", 40, seed=1), steps=5, batch_size=8)  # a (briefly) pre-trained model
    before = model.loss(data)
    hist = model.fit(data, steps=40, batch_size=16, lr=3e-3)
    after = model.loss(data)
    assert len(hist["loss"]) == 40 and after < before - 0.5, (before, after)
    aids = model.predict(data.images[:4], data.instructions[:4])
    assert all(a is not None and len(a.trace) == 8 and len(a.points) == 3 for a in aids)
    assert all(a.box[0] <= a.box[2] and a.box[1] <= a.box[3] for a in aids)


def test_records_the_model_cannot_learn_are_refused_with_their_line(tmp_path):
    write_records(tmp_path, 3, refs=False)
    data = load_jsonl(tmp_path / "records.jsonl")
    with pytest.raises(ValueError, match="line 1: .*fsd-nocot"):
        FSDTiny(seed=0, **SMALL).check_records(data)  # SrCoT model, records without refs
    nocot = FSDTiny(cot=False, seed=0, **SMALL)
    assert len(nocot.check_records(data)[2]) == 3
    data.aids[1] = data.aids[1].__class__((50, 60, 40, 70), data.aids[1].points, data.aids[1].trace)
    with pytest.raises(ValueError, match="line 2: .*x1 <= x2"):  # an inverted box is not a target either
        nocot.check_records(data)
    data.instructions[2] = "pick up the red square"
    data.aids[1] = data.aids[0]
    with pytest.raises(ValueError, match="line 3: .*unknown word"):
        nocot.check_records(data)


def test_cli_fit_on_records_and_its_one_line_errors(tmp_path, capsys):
    write_records(tmp_path, 16)
    run, tuned = tmp_path / "run", tmp_path / "tuned"
    assert main(["fit", "--data", str(tmp_path / "records.jsonl"), "--steps", "30", "--batch-size", "8",
                 "--lr", "3e-3", *SIZES, "--out", str(run), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    before = float(out.split("loss on the records before: ")[1].split()[0])
    after = float(out.split("loss on the records after: ")[1].split()[0])
    assert "16 records from records.jsonl" in out and after < before
    assert main(["train", "--data", str(tmp_path / "records.jsonl"), "--init", str(run / "model.pt"), "--steps", "3",
                 "--batch-size", "4", "--out", str(tuned), "--device", "cpu"]) == 0
    assert "(from model.pt)" in capsys.readouterr().out
    assert main(["predict", "--model", str(tuned / "model.pt"), "--image", str(tmp_path / "0.png"), "--instruction",
                 TableTop2D("test_iid", 1, seed=7).instructions[0], "--device", "cpu"]) == 0
    assert "in pixels of the 128x128 image" in capsys.readouterr().out

    def error(*argv, records=None):
        if records is not None:
            (tmp_path / "bad.jsonl").write_text(json.dumps(records) + "\n")
        code = main(["fit", *argv, "--steps", "1", *SIZES, "--out", str(tmp_path / "bad"), "--device", "cpu"])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        return err

    rec = json.loads((tmp_path / "records.jsonl").read_text().splitlines()[0])
    bad = str(tmp_path / "bad.jsonl")
    assert error("--data", bad, records=rec | {"image": "records.jsonl"}).startswith(
        "error: --data: expected a JSON-lines file")  # not an image
    assert "expected a PNG or JPEG image" in error("--data", bad, records=rec | {"image": "records.jsonl"})
    err = error("--data", bad, records=rec | {"image": "gone.png"})
    assert err.startswith("error: --data:") and "line 1" in err and "gone.png not found" in err
    assert error("--data", bad, records={k: v for k, v in rec.items() if k != "refs"}).startswith(
        "error: --data: expected records this model can learn")
    assert error("--data", bad, "--model", "direct", records=rec).startswith("error: --model:")
    assert error("--data", bad, "--init", str(tmp_path / "0.png"), records=rec).startswith(
        "error: --init: expected a model.pt")  # not a model
    assert "a fsd model" in error("--data", bad, "--model", "fsd-nocot", "--init", str(run / "model.pt"),
                                  records=rec)
    with pytest.raises(SystemExit) as exit_info:  # a missing file is refused at parse time, naming the option
        main(["fit", "--data", str(tmp_path / "missing.jsonl")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("error: --data: expected an existing file") \
        and err.count("\n") == 1
    assert not (tmp_path / "bad").exists()
