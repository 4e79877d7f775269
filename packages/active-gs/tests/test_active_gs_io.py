"""Data readers: Blender pose convention, missing files, feature extractors."""
import json

import numpy as np
import pytest
import torch
from iclr26_active_gs import HandcraftedFeatures, TorchvisionFeatures, load_blender, load_colmap_text, write_png
from iclr26_active_gs.features import _ResNet18Trunk


def test_blender_opengl_poses_become_opencv(tmp_path):
    write_png(tmp_path / "r_0.png", torch.full((8, 8, 3), 0.5))
    c2w = np.eye(4)
    c2w[:3, 3] = [0.0, 0.0, 4.0]  # OpenGL camera on +z looking down -z at the origin
    meta = {"camera_angle_x": 0.7, "frames": [{"file_path": "./r_0", "transform_matrix": c2w.tolist()}]}
    (tmp_path / "transforms_train.json").write_text(json.dumps(meta))
    images, cams = load_blender(tmp_path, "train")
    assert images[0].shape == (8, 8, 3)
    origin_in_camera = cams[0].R @ torch.zeros(3) + cams[0].t
    assert torch.allclose(origin_in_camera, torch.tensor([0.0, 0.0, 4.0]))  # in front: +z in OpenCV
    up_in_camera = cams[0].R @ torch.tensor([0.0, 1.0, 0.0])
    assert up_in_camera[1] < 0  # world up (GL +y) is image up (OpenCV -y)


def test_missing_dataset_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="transforms_test.json"):
        load_blender(tmp_path, "test")
    with pytest.raises(ValueError, match="cameras.txt"):
        load_colmap_text(tmp_path)
    with pytest.raises(ValueError, match="weights_path"):
        TorchvisionFeatures(tmp_path / "resnet18.pth")


def test_feature_extractors_shapes(tmp_path):
    img = np.random.default_rng(0).random((16, 16, 3))
    assert HandcraftedFeatures()(img).shape == (16, 16, 8)
    path = tmp_path / "resnet18.pth"
    torch.save(_ResNet18Trunk().state_dict(), path)
    feats = TorchvisionFeatures(path, layer="layer2", k=5)(img)
    assert feats.shape == (16, 16, 5) and np.isfinite(feats).all()


def test_colmap_scene_holds_out_every_nth_image(monkeypatch):
    import iclr26_active_gs.io as io
    from iclr26_active_gs import CapturedScene, SyntheticObjectScene

    cams = SyntheticObjectScene("toy-symmetric", image_size=8, n_candidates=10, n_test=0).candidates
    images = [torch.full((8, 8, 3), j / 10) for j in range(10)]
    monkeypatch.setattr(io, "load_colmap_text", lambda folder, downscale: (images, cams))
    scene = CapturedScene.from_colmap("colmap", test_every=4)
    assert [float(im[0, 0, 0]) for im in scene.test_images] == pytest.approx([0.0, 0.4, 0.8])
    assert len(scene.candidates) == 7 and scene.render_gt(scene.candidates[0]) is images[1]
