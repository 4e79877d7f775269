"""Selectors' contracts, the CLI round trip, and smoke runs of the benchmarks (JSON schema)."""
import json
import math

import numpy as np
import pytest
import torch
from iclr26_active_gs import (
    FarthestViewSelector,
    GaussianModel,
    RandomSelector,
    SemanticVarianceSelector,
    Trainer,
    fibonacci_sphere_cameras,
    render,
    write_png,
)
from iclr26_active_gs.bench import BENCHMARK, NOISY_POSE_BENCHMARK
from iclr26_active_gs.cli import main
from iclr26_shared.bench import run_and_save


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(0)
    model = GaussianModel(120, seed=0)
    cams = fibonacci_sphere_cameras(8, radius=3.0, width=16, height=16)
    with torch.no_grad():
        model.color_logits.normal_()
        images = [render(model, c)["rgb"].clamp(0, 1) for c in cams[:3]]
    return model, images, cams


def test_selectors_contracts(small):
    model, images, cams = small
    sel = SemanticVarianceSelector(n_regions=4)
    picks = sel.select(model, images, cams[:3], cams[3:], n=2)
    assert len(set(picks)) == 2 and all(0 <= k < 5 for k in picks)
    assert np.all(np.isfinite(sel.scores_)) and np.all(sel.scores_ >= 0)
    dup = [cams[4], cams[4], cams[5]]  # duplicate candidates: tie broken by the lowest index
    assert FarthestViewSelector().select(model, images, cams[:3], dup)[0] in (0, 2)
    assert sel.select(model, images, cams[:3], dup)[0] in (0, 2)
    for bad_n, cands in ((3, cams[3:5]), (0, cams[3:5]), (1, [])):
        with pytest.raises(ValueError, match="n|candidate"):
            RandomSelector(0).select(model, images, cams[:3], cands, n=bad_n)


def test_trainer_reduces_the_loss_and_converts_uint8(small):
    model, images, cams = small
    student = GaussianModel(120, seed=1)
    u8 = [(im * 255).round().to(torch.uint8) for im in images]
    history = Trainer(student, lr_scale=5.0).fit(u8, cams[:3], 40)
    assert np.mean(history[-10:]) < np.mean(history[:10])
    with pytest.raises(ValueError, match="does not match"):
        Trainer(student).fit([torch.zeros(8, 8, 3)], cams[:1], 1)


def test_cli_round_trip(tmp_path, capsys):
    gt = tmp_path / "gt"
    assert main(["render", "--scene", "toy-symmetric", "--view", "3", "--size", "16", "--out", str(gt),
                 "--device", "cpu"]) == 0
    assert (gt / "render.png").stat().st_size > 0 and "16x16" in capsys.readouterr().out
    assert main(["render", "--view", "3", "--size", "16", "--out", str(gt)]) == 2  # no --force: refused
    assert "--force" in capsys.readouterr().err
    folder = tmp_path / "imgs"
    folder.mkdir()
    cams = fibonacci_sphere_cameras(3, radius=3.0, width=16, height=16)
    poses = {}
    for k in range(2):
        assert main(["render", "--view", str(k), "--size", "16", "--out", str(tmp_path / f"r{k}"),
                     "--device", "cpu"]) == 0
        (tmp_path / f"r{k}" / "render.png").rename(folder / f"v{k}.png")
        poses[f"v{k}"] = _camera_json(k)
    (tmp_path / "poses.json").write_text(json.dumps(poses))
    (tmp_path / "cands.json").write_text(json.dumps([cams[2].to_dict(), _camera_json(7)]))
    run = tmp_path / "run"
    assert main(["fit", "--images", str(folder), "--poses", str(tmp_path / "poses.json"), "--iters", "5",
                 "--n", "80", "--out", str(run), "--device", "cpu"]) == 0
    model = run / "model.npz"
    assert GaussianModel.load(model).means.shape == (80, 3)
    capsys.readouterr()
    assert main(["select", "--model", str(model), "--images", str(folder), "--poses", str(tmp_path / "poses.json"),
                 "--candidates", str(tmp_path / "cands.json"), "--method", "fvs", "--device", "cpu"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"][0] in (0, 1) and len(out["scores"]) == 1
    (tmp_path / "noisy.json").write_text(json.dumps(_camera_json(0)))
    assert main(["refine-pose", "--model", str(model), "--image", str(folder / "v0.png"), "--pose",
                 str(tmp_path / "noisy.json"), "--steps", "2", "--device", "cpu", "--out", str(run)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed["viewmat"]) == 4 and isinstance(printed["accepted"], bool)
    assert len(json.loads((run / "pose.json").read_text())["viewmat"]) == 4
    assert main(["render", "--model", str(tmp_path / "poses.json"), "--out", str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err.startswith("error: --model: expected a Gaussian model .npz")
    assert main(["refine-pose", "--model", str(model), "--image", str(model), "--pose", str(tmp_path / "noisy.json"),
                 "--out", str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err.startswith("error: --image: expected a PNG/JPEG image")
    assert not (tmp_path / "bad").exists()


def _camera_json(k):
    from iclr26_active_gs import SyntheticObjectScene

    return SyntheticObjectScene("toy-symmetric", image_size=16, n_test=0).candidates[k].to_dict()


@pytest.mark.parametrize("bench", [BENCHMARK, NOISY_POSE_BENCHMARK], ids=lambda b: b.name)
def test_smoke_benchmark_writes_the_result_contract(tmp_path, bench):
    result, path, skipped = run_and_save(bench, "smoke", "cpu", 0, tmp_path)
    assert not skipped and result.status == "ok", result.error
    data = json.loads(path.read_text())
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in data
    assert data["benchmark"] == bench.name and data["scale"] == "smoke"
    assert all(set(c) >= {"name", "paper", "measured", "criterion", "holds"} for c in data["claims"])
    assert data["claims"] and all(isinstance(c["holds"], bool) for c in data["claims"])
    assert (tmp_path / data["figures"][0]).stat().st_size > 0
    methods = {r["method"] for r in data["rows"]}
    if bench is BENCHMARK:
        assert {"SemanticVariance (ours)", "FarthestView", "Fisher", "AllViews"} <= methods
    else:
        assert {"robust refinement", "L2 refinement", "no refinement", "noise-free"} <= methods


def _write_blender(folder, scene, cams, split):
    """Renders ``cams`` of ``scene`` into the NeRF-Synthetic layout (OpenGL camera-to-world poses)."""
    frames = []
    for k, cam in enumerate(cams):
        write_png(folder / split / f"r_{k}.png", scene.render_gt(cam))
        w2c = np.eye(4)
        w2c[:3, :3], w2c[:3, 3] = cam.R.double().numpy(), cam.t.double().numpy()
        frames.append({"file_path": f"./{split}/r_{k}", "transform_matrix": (np.linalg.inv(w2c) @ np.diag(
            [1.0, -1.0, -1.0, 1.0])).tolist()})
    fov = 2 * math.atan(cams[0].width / (2 * float(cams[0].K[0, 0])))
    (folder / f"transforms_{split}.json").write_text(json.dumps({"camera_angle_x": fov, "frames": frames}))


def test_real_benchmark_on_a_captured_blender_scene(tmp_path, monkeypatch):
    from iclr26_active_gs import CapturedScene, SyntheticObjectScene
    from iclr26_active_gs.bench import REAL_BENCHMARK

    result, _, _ = run_and_save(REAL_BENCHMARK, "smoke", "cpu", 0, tmp_path / "none")
    assert result.metrics == {"skipped": 1.0} and "ICLR26_DATA" in result.rows[0]["note"]
    toy = SyntheticObjectScene("toy-symmetric", image_size=16, n_candidates=6, n_test=0)
    lego = tmp_path / "data" / "nerf_synthetic" / "lego"
    _write_blender(lego, toy, toy.candidates, "train")
    _write_blender(lego, toy, toy.candidates[:2], "test")
    scene = CapturedScene.from_blender(lego)
    assert len(scene.candidates) == 6 and len(scene.test_cameras) == 2
    assert abs(scene.extent - toy.extent) < 1e-4 and abs(scene.object_radius - 1.0) < 1e-4
    for cam, ref in zip(scene.candidates, toy.candidates, strict=True):
        assert torch.allclose(cam.R, ref.R, atol=1e-5) and torch.allclose(cam.t, ref.t, atol=1e-5)
    image, reported = scene.capture(scene.candidates[1])
    assert reported is scene.candidates[1] and (image - toy.render_gt(toy.candidates[1])).abs().max() < 1 / 255
    with pytest.raises(ValueError, match="candidate"):
        scene.render_gt(toy.candidates[0])
    monkeypatch.setenv("ICLR26_DATA", str(tmp_path / "data"))
    result, path, _ = run_and_save(REAL_BENCHMARK, "smoke", "cpu", 0, tmp_path / "out")
    assert result.status == "ok", result.error
    methods = {r["method"] for r in result.rows}
    assert {"SemanticVariance (ours)", "FarthestView", "Random (draw 0)", "Random (draw 1)"} <= methods
    assert all(np.isfinite(r["psnr"]) and len(r["views"]) == 3 for r in result.rows)
    assert [c.name for c in result.claims] == ["real scene: ours final PSNR - Random",
                                               "real scene: ours - FarthestView"]
