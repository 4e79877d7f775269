"""Test helpers for the packages: a training script run once in one process and once under ``torchrun``.

A data-parallel training loop is correct when ``torchrun --nproc-per-node N`` on the global batch gives the same
losses and weights as one process, and only rank 0 writes. :func:`one_and_two_ranks` runs a script both ways;
the script body (Python source) sees ``out`` (the ``--out`` folder to write into), ``log`` (a folder for what the
test compares) and ``rank`` (``"0"``, ``"1"``, ...), and every file it creates or renames under ``out`` is recorded
by an audit hook::

    one, two = one_and_two_ranks(tmp_path, BODY)
    assert_only_rank0_wrote(one, two, ["model.pt"])
    assert two.logs["history.json"] == pytest.approx(one.logs["history.json"])
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
import sys

# Records every file this process opens for writing, creates or renames under ``out``; at exit each rank leaves
# ``log/writes-rank<rank>.json`` with the names (``"<event> <file name>"``).
_PRELUDE = '''
import atexit, json, os, pathlib, sys
out, log = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2])
rank = os.environ.get("RANK", "0")
_writes = []

def _audit(event, args):
    named = args and isinstance(args[0], (str, os.PathLike))
    if event in ("open", "tempfile.mkstemp", "os.rename", "os.mkdir") and named:
        path = pathlib.Path(os.fsdecode(args[1] if event == "os.rename" else args[0])).resolve()
        writing = event != "open" or (isinstance(args[1], str) and any(c in args[1] for c in "wax+"))
        if writing and (path == out or out in path.parents):
            _writes.append(f"{event} {path.name}")

sys.addaudithook(_audit)
atexit.register(lambda: (log / f"writes-rank{rank}.json").write_text(json.dumps(_writes)))
'''


@dataclasses.dataclass
class Launch:
    """What one launch left behind.

    Attributes:
        out: the ``--out`` folder the script wrote into.
        writes: rank (``"0"``, ``"1"``, ...) -> the writes under ``out`` its audit hook saw.
        logs: file name -> parsed JSON, for every other ``*.json`` the script put in ``log``.
    """

    out: pathlib.Path
    writes: dict[str, list[str]]
    logs: dict[str, object]


def one_and_two_ranks(tmp_path: pathlib.Path, body: str, nproc: int = 2, timeout: float = 600) -> tuple[Launch, Launch]:
    """Run ``body`` in one process, then under ``torchrun --standalone --nproc-per-node nproc`` (gloo on the CPU).

    Each process runs with one OpenMP thread. Raises ``subprocess.CalledProcessError`` when a launch fails.

    Returns:
        ``(one, many)``: the :class:`Launch` of each.
    """
    script = tmp_path / "train_script.py"
    script.write_text(_PRELUDE + body)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launches = []
    for name, launcher in (("one", [sys.executable]),
                           ("many", [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                     "--nproc-per-node", str(nproc)])):
        log = tmp_path / name
        out = log / "out"
        log.mkdir()
        subprocess.run([*launcher, str(script), str(out), str(log)], check=True, timeout=timeout, env=env)
        files = {p.name: json.loads(p.read_text()) for p in log.glob("*.json")}
        writes = {k[len("writes-rank"):-len(".json")]: files.pop(k) for k in list(files) if k.startswith("writes-rank")}
        launches.append(Launch(out, writes, files))
    return launches[0], launches[1]


def assert_only_rank0_wrote(one: Launch, many: Launch, files: list[str]) -> None:
    """Both launches left exactly ``files`` under ``--out``; in ``many`` every rank but 0 wrote nothing there."""
    assert set(one.writes) == {"0"}, one.writes
    assert len(many.writes) > 1 and set(many.writes) == {str(r) for r in range(len(many.writes))}, many.writes
    assert all(not w for rank, w in many.writes.items() if rank != "0"), many.writes
    assert all(any(name in w for w in many.writes["0"]) for name in files), many.writes["0"]
    for launch in (one, many):
        assert sorted(p.name for p in launch.out.iterdir()) == sorted(files), launch.out
