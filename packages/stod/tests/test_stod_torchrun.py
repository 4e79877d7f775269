"""``fit`` under torchrun (2 CPU ranks, gloo) trains like one process on the global batch; only rank 0 writes."""
import json
import os
import subprocess
import sys

import pytest
import torch

# Runs the ``fit`` command with an audit hook recording every file this process creates or renames under --out.
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
from iclr26_stod.cli import main
code = main(["fit", "--encoding", "stod", "--dataset", "bars", "--T", "2", "--epochs", "2", "--batch-size", "45",
             "--kernel-lr", "0.1", "--device", "cpu", "--quiet", "--out", str(out)])
rank = os.environ.get("RANK", "0")
(log / f"writes-rank{rank}.json").write_text(json.dumps({"code": code, "writes": writes}))
'''


@pytest.mark.slow
def test_fit_on_two_ranks_matches_one_process_and_only_rank0_writes(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = {}
    for name, launcher in (("one", [sys.executable]),
                           ("two", [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                    "--nproc-per-node", "2"])):
        out, log = tmp_path / name / "out", tmp_path / name
        log.mkdir()
        subprocess.run([*launcher, str(script), str(out), str(log)], check=True, timeout=600, env=env)
        runs[name] = out, {p.name: json.loads(p.read_text()) for p in log.glob("writes-rank*.json")}
    (one, logs1), (two, logs2) = runs["one"], runs["two"]
    assert set(logs1) == {"writes-rank0.json"} and set(logs2) == {"writes-rank0.json", "writes-rank1.json"}
    assert all(v["code"] == 0 for v in (*logs1.values(), *logs2.values()))
    assert logs2["writes-rank1.json"]["writes"] == []  # rank 1 created nothing under --out
    assert any("model.pt" in w for w in logs2["writes-rank0.json"]["writes"])
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir()) == ["history.json",
                                                                                               "model.pt"]
    h1, h2 = (json.loads((d / "history.json").read_text())["history"] for d in (one, two))
    for key in ("loss", "ce", "gor", "acc", "val_acc"):
        assert h2[key] == pytest.approx(h1[key], rel=1e-5, abs=1e-6), key
    w1, w2 = (torch.load(d / "model.pt", weights_only=True)["state_dict"] for d in (one, two))
    for k in w1:
        assert torch.allclose(w1[k].double(), w2[k].double(), atol=1e-5), k
