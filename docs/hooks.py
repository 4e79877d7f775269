"""MkDocs hook: completes each member's page (``docs/<slug>.md``) from the member itself.

After the page's own text come the install lines, the README's first Python example, the ``--help`` of the
member's console script, the README's reproduction section (the measured claim tables) and the API reference,
which mkdocstrings renders from the source by static analysis (nothing is imported for it).
"""
import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"shared": ROOT / "shared", "bench": ROOT / "benchmarks"} | {
    p.name: p for p in sorted((ROOT / "packages").iterdir()) if (p / "pyproject.toml").exists()}
HELP: dict[str, str] = {}


def _project(slug: str) -> dict:
    return tomllib.loads((FOLDERS[slug] / "pyproject.toml").read_text())["project"]


def _help(script: str) -> str:
    exe = Path(sys.executable).with_name(script)
    run = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=300)
    if run.returncode:
        raise RuntimeError(f"{script} --help exited {run.returncode}:\n{run.stderr}")
    return run.stdout


def on_pre_build(config) -> None:
    """Capture every console script's ``--help`` once, a few at a time (most of the time is importing torch)."""
    scripts = {slug: next(iter(_project(slug)["scripts"])) for slug in FOLDERS}
    with ThreadPoolExecutor(4) as pool:
        HELP.update(zip(scripts, pool.map(_help, scripts.values())))


def _install(project: dict) -> str:
    name = project["name"]
    lines = f"```bash\npip install {name}\n```\n"
    if any(re.match(r"torch\b", dep) for dep in project["dependencies"]):
        lines += ("\nPyPI's torch wheels bundle CUDA (several GB); with the CPU build of torch the venv stays"
                  f" under 1.5 GB:\n\n```bash\nuv pip install {name} --torch-backend cpu\n"
                  "# or, with pip: torch from the CPU wheel index first\n"
                  f"pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install {name}\n```\n")
    return lines


def _section(readme: str, heading: str) -> str | None:
    """The README's level-2 section whose title starts with ``heading``, headings in code blocks ignored."""
    found, fenced, lines = False, False, []
    for line in readme.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            if found:
                break
            found = line[3:].startswith(heading)
        if found:
            lines.append(line)
    return "\n".join(lines) if lines else None


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    slug = Path(page.file.src_uri).stem
    if slug not in FOLDERS:
        return markdown
    project = _project(slug)
    readme = (FOLDERS[slug] / "README.md").read_text()
    parts = [markdown, "## Install", _install(project)]
    if example := re.search(r"^```python\n.*?^```$", readme, re.M | re.S):
        parts += ["## Quickstart", example.group(0)]
    script = next(iter(project["scripts"]))
    parts += ["## CLI reference", f"`{script} --help`:", f"```text\n{HELP[slug]}```"]
    if claims := _section(readme, "Reproduction"):
        parts.append(claims)
    parts += ["## API reference", f"::: {project['name'].replace('-', '_')}"]
    return "\n\n".join(parts) + "\n"
