"""shared and energycp install alone into a fresh virtual environment (from uv's cache when warm) and import."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
UV = shutil.which("uv")

CASES = {
    "shared": (["shared"], "import iclr26_shared.datasets as d, iclr26_shared.bench, iclr26_shared.cli; "
                           "import sys; d.load('digits'); assert 'torch' not in sys.modules"),
    "energycp": (["shared", "packages/energycp"],
                 "import sys, iclr26_energycp; assert 'torch' not in sys.modules, 'core must not need torch'"),
}


@pytest.mark.slow
@pytest.mark.skipif(UV is None, reason="needs uv on PATH")
@pytest.mark.parametrize("case", sorted(CASES))
def test_installs_alone_and_imports(case, tmp_path):
    paths, check = CASES[case]
    if not all((ROOT / p / "pyproject.toml").exists() for p in paths):
        pytest.skip(f"{case} is not in this checkout")
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "-q", "--python", "3.11", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    install = subprocess.run([UV, "pip", "install", "-q", "--python", python, *[str(ROOT / p) for p in paths]],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    run = subprocess.run([python, "-c", check], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    script = venv / "bin" / f"iclr26-{case}"
    assert subprocess.run([str(script), "--help"], capture_output=True, timeout=120).returncode == 0
