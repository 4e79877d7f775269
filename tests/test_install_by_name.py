"""Every member installs by name from a real package index on 127.0.0.1, as someone outside the workspace would.

The wheels of all members are built and served as a PEP 503 simple index by ``python -m http.server``; the public
index is only a fallback for third-party dependencies, and a member's name must never resolve from it.
"""
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.request
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
UV = shutil.which("uv")
PYPI = "https://pypi.org/simple"
CPU_TORCH = "https://download.pytorch.org/whl/cpu"
FOLDERS = [ROOT / "shared", ROOT / "benchmarks", *sorted(p.parent for p in ROOT.glob("packages/*/pyproject.toml"))]
PROJECTS = {(p := tomllib.loads((f / "pyproject.toml").read_text())["project"])["name"]: (f, p) for f in FOLDERS}
TORCH_PACKAGE = "iclr26-gfm"  # numpy, scipy and torch: the smallest torch member
# The user's own pip and uv settings (extra indexes, find-links, a project's venv) stay out of these installs.
OWN_SETTINGS = ("PIP_", "UV_INDEX", "UV_EXTRA", "UV_DEFAULT", "UV_FIND", "VIRTUAL_ENV")
ENV = {k: v for k, v in os.environ.items() if not k.startswith(OWN_SETTINGS)} | {"PIP_CONFIG_FILE": os.devnull}

pytestmark = [pytest.mark.slow, pytest.mark.skipif(UV is None, reason="needs uv on PATH")]


def run(*cmd, cwd=None, timeout=900):
    done = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=ENV, cwd=cwd, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """Sdists and wheels of every member, built once into the index's file folder."""
    files = tmp_path_factory.mktemp("index") / "files"
    run(UV, "build", "-q", "--all-packages", "--out-dir", files, cwd=ROOT)
    return files


@pytest.fixture(scope="module")
def index(dists):
    """URL of a PEP 503 simple index of the member wheels, served on 127.0.0.1 at a free port."""
    simple = dists.parent / "simple"
    for wheel in dists.glob("*.whl"):
        page = simple / wheel.name.split("-")[0].replace("_", "-")
        page.mkdir(parents=True)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        (page / "index.html").write_text(f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a>\n')
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
                               str(dists.parent)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = re.search(r" port (\d+)", server.stdout.readline()).group(1)
    yield f"http://127.0.0.1:{port}/simple"
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="module")
def constraints(tmp_path_factory):
    """The lock's third-party versions, so uv installs what its cache already holds."""
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    run(UV, "export", "--frozen", "--no-hashes", "--no-emit-workspace", "--all-packages", "--all-groups",
        "--no-header", "-o", path, cwd=ROOT)
    return path


def readme_example(name):
    folder, _ = PROJECTS[name]
    return re.search(r"^```python\n(.*?)^```$", (folder / "README.md").read_text(), re.M | re.S).group(1)


def pip_venv(path):
    run(sys.executable, "-m", "venv", path)
    return path / "bin" / "python"


def test_dists_pass_twine_check_and_carry_complete_metadata(dists):
    run(sys.executable, "-m", "twine", "check", "--strict", *dists.glob("*.whl"), *dists.glob("*.tar.gz"))
    for name in PROJECTS:
        with zipfile.ZipFile(next(dists.glob(f"{name.replace('-', '_')}-*.whl"))) as whl:
            info = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
            metadata = whl.read(f"{info}/METADATA").decode()
            assert whl.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes(), name
        for field in ("License-Expression: MIT", "License-File: LICENSE", "Author: ", "Keywords: ", "Classifier: ",
                      "Project-URL: Repository, ", "Project-URL: Documentation, "):
            assert field in metadata, f"{name}: no {field!r}"
        assert name in {"iclr26-shared", "iclr26-bench"} or "Project-URL: Paper, " in metadata, name


def test_pip_installs_energycp_by_name_without_torch(index, tmp_path):
    python = pip_venv(tmp_path / "venv")
    report = tmp_path / "report.json"
    run(python, "-m", "pip", "install", "-q", "--index-url", index, "--extra-index-url", PYPI, "--report", report,
        "iclr26-energycp")
    members = [i for i in json.loads(report.read_text())["install"] if i["metadata"]["name"] in PROJECTS]
    assert {i["metadata"]["name"] for i in members} == {"iclr26-energycp", "iclr26-shared"}
    assert all(i["download_info"]["url"].startswith(index.rsplit("/", 1)[0]) for i in members)
    run(python, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)")
    run(python, "-c", readme_example("iclr26-energycp"), cwd=tmp_path)
    run(tmp_path / "venv" / "bin" / "iclr26-energycp", "--help")


def test_pip_installs_a_torch_package_with_cpu_torch_under_1_5_gb(index, tmp_path):
    try:
        urllib.request.urlopen(urllib.request.Request(f"{CPU_TORCH}/torch/", method="HEAD"), timeout=10)
    except OSError as error:
        pytest.skip(f"{CPU_TORCH} is not reachable from this machine ({error}), so the CPU build of torch cannot be "
                    "installed here")
    venv = tmp_path / "venv"
    python = pip_venv(venv)
    run(python, "-m", "pip", "install", "-q", "--index-url", CPU_TORCH, "torch")
    run(python, "-m", "pip", "install", "-q", "--index-url", index, "--extra-index-url", PYPI, TORCH_PACKAGE)
    run(python, "-c", "import torch; assert torch.__version__.endswith('+cpu'), torch.__version__")
    run(venv / "bin" / TORCH_PACKAGE, "--help")
    size = sum(f.lstat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    assert size < 1.5e9, f"{size / 1e9:.2f} GB"


def test_member_names_resolve_only_from_the_local_index(index, constraints, tmp_path):
    """uv's default first-index strategy with the local index first: a member name never comes from PyPI."""
    names = tmp_path / "requirements.in"
    names.write_text("\n".join(PROJECTS) + "\n")
    pinned = run(UV, "pip", "compile", "--no-config", "--python-version", "3.11", "--emit-index-annotation",
                 "--index", index, "--default-index", PYPI, "-c", constraints, names, cwd=tmp_path)
    sources = dict(re.findall(r"^(iclr26-[\w-]+)==.*\n(?:    # .*\n)*?    # from (\S+)", pinned, re.M))
    assert sources == {name: index for name in PROJECTS}


@pytest.mark.parametrize("name", sorted(set(PROJECTS) - {"iclr26-energycp"}))
def test_uv_installs_member_by_name_and_its_cli_runs(name, index, constraints, tmp_path):
    venv = tmp_path / "venv"
    run(UV, "venv", "-q", "--no-config", "--python", "3.11", venv, cwd=tmp_path)
    run(UV, "pip", "install", "-q", "--no-config", "--python", venv / "bin" / "python", "--index", index,
        "--default-index", PYPI, "-c", constraints, name, cwd=tmp_path)
    for script in PROJECTS[name][1]["scripts"]:
        run(venv / "bin" / script, "--help")
