"""Pretraining under torchrun (2 CPU ranks, gloo) equals one process on the global batch; only rank 0 writes."""
import json
import os
import subprocess
import sys

import pytest
import torch

# Pretrains twice per process: ``pretrain`` itself (its loss history goes to the log folder, from rank 0) and
# the ``fit`` command, with an audit hook recording every file this process creates or renames under --out.
SCRIPT = '''
import json, os, pathlib, sys
out, log = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2])
writes = []

def audit(event, args):
    named = args and isinstance(args[0], (str, os.PathLike))
    if event in ("open", "tempfile.mkstemp", "os.rename", "os.mkdir") and named:
        path = pathlib.Path(os.fsdecode(args[1] if event == "os.rename" else args[0])).resolve()
        writing = event != "open" or (isinstance(args[1], str) and any(c in args[1] for c in "wax+"))
        if writing and (path == out or out in path.parents):
            writes.append(f"{event} {path.name}")

sys.addaudithook(audit)
import torch
from iclr26_shared.distributed import DistributedContext
from iclr26_vit_token.cli import main
from iclr26_vit_token.data import shapes_seg_splits
from iclr26_vit_token.model import SpecViT, vit_cpu_config
from iclr26_vit_token.pretrain import pretrain

rank = os.environ.get("RANK", "0")
with DistributedContext("cpu") as dist:
    torch.manual_seed(0)
    data = shapes_seg_splits({"pretrain": 48}, seed=0)["pretrain"]
    result = pretrain(SpecViT(**vit_cpu_config()), data, steps=3, batch_size=9, seed=0, dist=dist)
    if dist.is_main:
        (log / "history.json").write_text(json.dumps(result.history))
    code = main(["fit", "--steps", "3", "--batch-size", "9", "--n-images", "48", "--device", "cpu", "--quiet",
                 "--out", str(out)])
(log / f"writes-rank{rank}.json").write_text(json.dumps({"code": code, "writes": writes}))
'''


@pytest.mark.slow
def test_pretrain_on_two_ranks_matches_one_process_and_only_rank0_writes(tmp_path):
    script = tmp_path / "pretrain.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = {}
    for name, launcher in (("one", [sys.executable]),
                           ("two", [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                    "--nproc-per-node", "2"])):
        out, log = tmp_path / name / "out", tmp_path / name
        log.mkdir()
        subprocess.run([*launcher, str(script), str(out), str(log)], check=True, timeout=600, env=env)
        runs[name] = out, {p.name: json.loads(p.read_text()) for p in log.glob("*.json")}
    (one, logs1), (two, logs2) = runs["one"], runs["two"]
    assert set(logs1) == {"history.json", "writes-rank0.json"}
    assert set(logs2) == {"history.json", "writes-rank0.json", "writes-rank1.json"}
    assert logs2["writes-rank0.json"]["code"] == logs2["writes-rank1.json"]["code"] == 0
    assert logs2["writes-rank1.json"]["writes"] == []  # rank 1 created nothing under --out
    assert any("model.pt" in w for w in logs2["writes-rank0.json"]["writes"])
    assert [p.name for p in two.iterdir()] == [p.name for p in one.iterdir()] == ["model.pt"]
    h1, h2 = logs1["history.json"], logs2["history.json"]
    assert len(h1) == len(h2) == 3
    for a, b in zip(h1, h2, strict=True):
        assert b == pytest.approx(a, rel=1e-5, abs=1e-6)  # loss, CE and MSE of each step's global batch
    w1, w2 = (torch.load(d / "model.pt", weights_only=True)["state_dict"] for d in (one, two))
    for k in w1:
        a, b = w1[k], w2[k]
        if k.endswith("attn.qkv.bias"):
            # the key bias has gradient 0 (softmax is shift-invariant): AdamW normalises its rounding noise into
            # steps that differ between any two reductions, so only the query and value biases are compared
            dim = len(a) // 3
            a, b = torch.cat([a[:dim], a[2 * dim:]]), torch.cat([b[:dim], b[2 * dim:]])
        assert torch.allclose(a, b, atol=1e-5), k
