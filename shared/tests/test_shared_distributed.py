"""DistributedContext under torchrun (2 CPU ranks, gloo) trains exactly like one process on the global batch."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

SCRIPT = '''
import json, pathlib, sys
import torch
from torch.utils.data import DataLoader, TensorDataset
from iclr26_shared.distributed import DistributedContext, unwrap

out = pathlib.Path(sys.argv[1])
torch.manual_seed(0)
X, y = torch.randn(64, 5), torch.randn(64, 1)
model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
with DistributedContext("cpu") as dist:
    model = dist.wrap(model)
    ds = TensorDataset(X, y)
    loader = DataLoader(ds, batch_size=16 // dist.world_size, sampler=dist.sampler(ds, shuffle=False))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
    full = dist.mean(torch.nn.functional.mse_loss(model(X), y).item())
    dist.save(unwrap(model).state_dict(), out / "model.pt")
    if dist.is_main:
        (out / "loss.json").write_text(json.dumps({"loss": full, "world": dist.world_size}))
'''


@pytest.mark.slow
def test_two_ranks_match_one_process_and_only_rank0_writes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    subprocess.run([sys.executable, str(script), str(one)], check=True, timeout=300)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    subprocess.run([*torchrun, str(script), str(two)], check=True, timeout=300,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})
    a, b = (json.loads((d / "loss.json").read_text()) for d in (one, two))
    assert (a["world"], b["world"]) == (1, 2)
    assert b["loss"] == pytest.approx(a["loss"], rel=1e-5, abs=1e-7)
    wa, wb = (torch.load(d / "model.pt", weights_only=True) for d in (one, two))
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)
    assert sorted(p.name for p in two.iterdir()) == ["loss.json", "model.pt"]  # rank 1 wrote nothing
