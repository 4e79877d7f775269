import json

import numpy as np
import pytest
import torch
from iclr26_vit_token import SpecViT, ln_dimension_specialisation, make_shapes_seg, pretrain, token_cosine_stats
from iclr26_vit_token.cli import main


def test_params_table(capsys):
    assert main(["params", "--preset", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "25,728" in out and "307,392" in out and "8.37%" in out


def test_fit_evaluate_analyze_round_trip(tmp_path, capsys):
    ckpt = tmp_path / "model.pt"
    args = ["fit", "--variant", "spec", "--steps", "3", "--batch-size", "8", "--n-images", "32",
            "--log-every", "1", "--out", str(tmp_path), "--device", "cpu"]
    assert main(args) == 0
    assert "step     3/3" in capsys.readouterr().out
    assert main(args) == 2 and "--force" in capsys.readouterr().err
    assert main(["evaluate", "--ckpt", str(ckpt), "--n-train", "40", "--n-test", "16", "--epochs", "1",
                 "--out", str(tmp_path), "--device", "cpu"]) == 0
    result = json.loads((tmp_path / "evaluation.json").read_text())
    assert 0 <= result["cls_acc"] <= 1 and 0 <= result["miou"] <= 1
    assert main(["analyze", "--ckpt", str(ckpt), "--block", "3", "--n-images", "8", "--device", "cpu"]) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(stats) == {"cls_patch_pre", "cls_patch_post", "patch_patch_pre", "patch_patch_post"}
    assert main(["analyze", "--ckpt", str(tmp_path / "evaluation.json"), "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith("error: --ckpt: expected a model.pt")


def test_cosine_stats_against_a_direct_computation():
    torch.manual_seed(0)
    model = SpecViT().eval()
    data = make_shapes_seg(4, seed=1)
    stats = token_cosine_stats(model, data.images, 1)
    from iclr26_vit_token.pretrain import to_tensor

    with torch.no_grad():
        t = model.prepare_tokens(to_tensor(data.images))
        t = model.blocks[0](t)
        post = model.blocks[1].norm1(t)
    cos = torch.nn.functional.cosine_similarity(post[:, :1], post[:, 1:], dim=-1).mean()
    assert stats["cls_patch_post"] == pytest.approx(float(cos), abs=1e-5)
    s = ln_dimension_specialisation(model, data.images, 1)
    assert s.shape == (64,) and np.all(np.abs(s) <= 1)
    with pytest.raises(ValueError, match="block"):
        token_cosine_stats(model, data.images, 6)


def test_pretrain_bad_input():
    data = make_shapes_seg(8)
    with pytest.raises(ValueError, match="objective"):
        pretrain(SpecViT(), data, steps=1, objective="dino")
    with pytest.raises(ValueError, match="steps"):
        pretrain(SpecViT(), data, steps=0)


def _write_pairs(root, n, n_classes, rng):
    from PIL import Image

    for part in ("train", "test"):
        (root / part / "images").mkdir(parents=True)
        (root / part / "masks").mkdir()
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(root / part / "images" / f"{i}.png")
            mask = rng.integers(0, n_classes, (32, 32), dtype=np.uint8)
            mask[:2] = 255
            Image.fromarray(mask).save(root / part / "masks" / f"{i}.png")


def test_evaluate_reads_user_segmentation_pairs_with_13_classes(tmp_path, capsys):
    pytest.importorskip("PIL")
    data = tmp_path / "data"
    _write_pairs(data, 6, 13, np.random.default_rng(0))
    assert main(["fit", "--steps", "1", "--batch-size", "4", "--n-images", "8", "--out", str(tmp_path),
                 "--device", "cpu", "--quiet"]) == 0
    ckpt = str(tmp_path / "model.pt")
    args = ["evaluate", "--ckpt", ckpt, "--data-root", str(data), "--epochs", "1", "--out", str(tmp_path),
            "--device", "cpu"]
    assert main(args + ["--n-classes", "13", "--ignore-index", "255"]) == 0
    result = json.loads((tmp_path / "evaluation.json").read_text())
    assert result["cls_acc"] is None and 0 <= result["miou"] <= 1 and result["data_root"] == str(data)
    capsys.readouterr()
    assert main(args + ["--n-classes", "13", "--force"]) == 2  # 255 is outside [0, 13) without --ignore-index
    assert capsys.readouterr().err.startswith("error: train.masks: expected labels in [0, 13)")
    assert main(["evaluate", "--ckpt", ckpt, "--data-root", str(tmp_path), "--out", str(tmp_path), "--force"]) == 2
    assert "train/images/*.png" in capsys.readouterr().err
    assert main(["analyze", "--ckpt", ckpt, "--data-root", str(data), "--n-images", "4", "--device", "cpu"]) == 0
    assert "over 4 images" in capsys.readouterr().out
    assert main(["fit", "--data-root", str(data), "--out", str(tmp_path / "f")]) == 2
    assert capsys.readouterr().err.startswith("error: --data-root: expected no folder for 'fit'")
