"""``fit`` under torchrun (2 CPU ranks, gloo) trains like one process on the global batch; only rank 0 writes."""
import json

import pytest
import torch
from iclr26_shared.testing import assert_only_rank0_wrote, one_and_two_ranks

BODY = '''
from iclr26_stod.cli import main
raise SystemExit(main(["fit", "--encoding", "stod", "--dataset", "bars", "--T", "2", "--epochs", "2",
                       "--batch-size", "45", "--kernel-lr", "0.1", "--device", "cpu", "--quiet", "--out", str(out)]))
'''


@pytest.mark.slow
def test_fit_on_two_ranks_matches_one_process_and_only_rank0_writes(tmp_path):
    one, two = one_and_two_ranks(tmp_path, BODY)
    assert_only_rank0_wrote(one, two, ["history.json", "model.pt"])
    h1, h2 = (json.loads((d.out / "history.json").read_text())["history"] for d in (one, two))
    for key in ("loss", "ce", "gor", "acc", "val_acc"):
        assert h2[key] == pytest.approx(h1[key], rel=1e-5, abs=1e-6), key
    w1, w2 = (torch.load(d.out / "model.pt", weights_only=True)["state_dict"] for d in (one, two))
    for k in w1:
        assert torch.allclose(w1[k].double(), w2[k].double(), atol=1e-5), k
