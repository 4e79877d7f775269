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
