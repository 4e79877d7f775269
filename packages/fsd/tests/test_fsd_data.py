import json

import matplotlib.image
import numpy as np
import pytest
from iclr26_fsd import load_jsonl
from iclr26_fsd.grammar import to_pixels


def _record(**over):
    rec = {"image": "a.png", "instruction": "put the red square left of the blue circle",
           "trace": [[100 * i, 500] for i in range(8)], "box": [10, 20, 30, 40], "points": [[15, 25]]}
    rec.update(over)
    return json.dumps(rec)


def test_load_jsonl_pads_non_square_images(tmp_path):
    img = np.zeros((30, 60, 3), dtype=np.uint8)
    img[:, :, 0] = 255
    matplotlib.image.imsave(tmp_path / "a.png", img)
    (tmp_path / "d.jsonl").write_text(_record() + "\n\n" + _record() + "\n")
    data = load_jsonl(tmp_path / "d.jsonl", tmp_path)
    assert data.images.shape == (2, 64, 64, 3) and data.sizes == [(60, 30)] * 2
    assert data.aids[0].trace[7] == (700, 500) and data.aids[0].box == (10, 20, 30, 40)
    # the padded bands (15 px of 60 above and below) are black, the image red
    assert data.images[0, 2, 32, 0] == 0 and data.images[0, 32, 32, 0] == 255
    np.testing.assert_allclose(to_pixels([[500, 500]], 60, 30), [[30, 15]])


@pytest.mark.parametrize("line, match", [
    ("{not json", "line 1"),
    (_record(trace=[[0, 0]] * 7), "8 points"),
    (_record(box=[0, 0, 0, 1200]), r"\[0, 1000\]"),
    (json.dumps({"image": "a.png"}), "missing"),
])
def test_load_jsonl_names_the_bad_line(tmp_path, line, match):
    (tmp_path / "d.jsonl").write_text(line + "\n")
    with pytest.raises(ValueError, match=match):
        load_jsonl(tmp_path / "d.jsonl", tmp_path)


def test_load_jsonl_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no JSON-lines"):
        load_jsonl(tmp_path / "none.jsonl", tmp_path)
    (tmp_path / "d.jsonl").write_text(_record(image="missing.png") + "\n")
    with pytest.raises(FileNotFoundError, match="missing.png"):
        load_jsonl(tmp_path / "d.jsonl", tmp_path)


def test_single_object_grounding_shows_the_named_object_alone():
    from iclr26_fsd import TableTop2D
    from iclr26_fsd.env import CURRICULUM

    env = TableTop2D("train", 1, seed=4)  # one scene of 3-5 objects
    batch = env.sample_tasks(12, ("level0",), [1.0], rng=np.random.default_rng(0))
    for img, prompt, target in zip(batch.images, batch.prompts, batch.targets, strict=True):
        name = " ".join(prompt[2:])
        i = 0
        assert target[:len(name.split()) + 2] == ["<ref>", *name.split(), "</ref>"]
        x1, y1, x2, y2 = (int(t[2:-1]) for t in target[-5:-1])  # 64 bins: one per pixel
        inside = np.zeros((64, 64), dtype=bool)
        inside[y1:y2 + 1, x1:x2 + 1] = True
        differs = np.any(img != env.images[i], axis=-1)
        assert differs[inside].mean() < 0.1  # the named object is drawn as in the full scene (a neighbour may touch)
        assert differs[~inside].sum() > 40  # the other objects (at least 2) are gone
    first = CURRICULUM[0][1]
    assert first["level0"] > 0 and first["level0"] + first["level1"] == sum(first.values())  # grounding first
