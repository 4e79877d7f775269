"""The documentation site builds with warnings as errors, a page per member with its API reference."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_site_builds_strict_with_a_page_per_member(tmp_path):
    site = tmp_path / "site"
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", ROOT / "mkdocs.yml", "-d", site]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(build, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-5000:]
    members = ["shared", "bench", *(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))]
    for slug in members:
        page = (site / slug / "index.html").read_text()
        assert 'id="api-reference"' in page and 'id="cli-reference"' in page, slug
