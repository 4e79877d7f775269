"""Every workspace member: README, console script, registered smoke benchmark, declared imports."""
import ast
import json
import pathlib
import re
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest
from iclr26_shared.bench import Benchmark, discover, run_and_save

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROOT_PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
MEMBERS = [ROOT / "shared", ROOT / "benchmarks"] + sorted(p.parent for p in ROOT.glob("packages/*/pyproject.toml"))
SCHEMA = {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds",
          "metrics", "rows", "claims", "figures"}


def project(member: pathlib.Path) -> dict:
    return tomllib.loads((member / "pyproject.toml").read_text())["project"]


def requirement_name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower().replace("_", "-")


@pytest.fixture(params=MEMBERS, ids=lambda p: p.name)
def member(request):
    return request.param


def test_member_has_readme_and_is_wired_into_the_root(member):
    assert (member / "README.md").stat().st_size > 200, f"{member.name}: README.md is missing or a stub"
    name = project(member)["name"]
    assert name in {requirement_name(d) for d in ROOT_PROJECT["project"]["dependencies"]}, \
        f"add {name!r} to the root pyproject's dependencies"
    assert ROOT_PROJECT["tool"]["uv"]["sources"].get(name) == {"workspace": True}, \
        f"add `{name} = {{ workspace = true }}` to the root [tool.uv.sources]"


def test_console_script_help_exits_zero(member):
    scripts = project(member).get("scripts", {})
    assert scripts, f"{member.name}: no console script"
    for script in scripts:
        exe = pathlib.Path(sys.executable).parent / script
        run = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stderr
        assert "usage" in run.stdout.lower()


def imported_modules(src: pathlib.Path) -> set[str]:
    names = set()
    for f in src.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_member_imports_only_what_it_declares(member):
    proj = project(member)
    declared = {requirement_name(d) for d in proj.get("dependencies", [])}
    for extra in proj.get("optional-dependencies", {}).values():
        declared |= {requirement_name(d) for d in extra}
    own = {p.name for p in (member / "src").iterdir() if p.is_dir()}
    providers = metadata.packages_distributions()
    undeclared = []
    for module in sorted(imported_modules(member / "src") - own - set(sys.stdlib_module_names)):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [module])}
        if not dists & declared:
            undeclared.append(f"{module} (from {sorted(dists)})")
    assert not undeclared, f"{proj['name']} imports but does not declare: {undeclared}"


BENCHMARKS = sorted(discover())


@pytest.mark.parametrize("name", BENCHMARKS)
def test_registered_benchmark_runs_at_smoke_scale(name, tmp_path):
    bench = discover()[name].load()
    assert isinstance(bench, Benchmark) and bench.name == name
    result, path, _ = run_and_save(bench, "smoke", "cpu", 0, tmp_path)
    assert result.status == "ok", result.error
    data = json.loads(path.read_text())
    assert SCHEMA <= set(data) and data["benchmark"] == name and data["scale"] == "smoke"
    for claim in data["claims"]:
        assert set(claim) == {"name", "paper", "measured", "criterion", "holds", "per_seed"}
        assert isinstance(claim["holds"], bool)
        if claim["per_seed"] is not None:  # a claim over seeds keeps every seed's number
            ps = claim["per_seed"]
            assert len(ps["seeds"]) == len(ps["values"]) == ps["n"] and 0 <= ps["wins"] <= ps["n"]
            assert ps["low"] <= ps["mean"] <= ps["high"]
    for fig in data["figures"]:
        assert (tmp_path / fig).exists(), fig


def test_every_paper_package_registers_a_benchmark():
    registered = {ep.dist.name for ep in discover().values() if ep.dist is not None}
    for member in MEMBERS:
        if member.parent.name == "packages":
            assert project(member)["name"] in registered


@pytest.mark.parametrize("member", [m for m in MEMBERS if m.parent.name == "packages"], ids=lambda p: p.name)
def test_every_paper_judges_a_central_claim_over_paired_seeds(member):
    """The protocol: a central method-vs-baseline claim is ``Claim.paired`` over seeds, never one draw."""
    sources = "\n".join(f.read_text(encoding="utf-8") for f in (member / "src").rglob("bench*.py"))
    assert "Claim.paired(" in sources and "derive_seeds(" in sources, \
        f"{member.name}: its benchmark has no Claim.paired over derive_seeds"
