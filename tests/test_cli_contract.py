"""The CLI contract, driven through every package's console script with a matrix of bad inputs.

Every cell must end in one line ``error: ...`` on stderr, exit code 2, and no file written (in ``--out`` or
in the working directory). Each package names two commands in ``CASES``: ``reads``, a command that reads
the user file ``{file}`` (tried missing and malformed), and ``writes``, a fast command that writes into
``{out}`` (run once, then again without ``--force``, which must be refused and leave the files untouched).
"""
from __future__ import annotations

import os
import pathlib
import tomllib
from importlib import metadata

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SLUGS = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())

# slug -> {"reads": argv with {file} (and {out}), "writes": argv with {out}}
CASES: dict[str, dict[str, list[str]] | None] = {
    "active-gs": {"reads": ["render", "--model", "{file}", "--device", "cpu", "--out", "{out}"],
                  "writes": ["render", "--size", "16", "--device", "cpu", "--out", "{out}"]},
    "camel": {"reads": ["fit", "--data", "{file}", "--out", "{out}"],
              "writes": ["timing", "--n", "100,200", "--dim", "10", "--clusters", "3", "--anchors", "6",
                         "--iters", "2", "--out", "{out}"]},
    "cosmo-inr": {"reads": ["occupancy", "--shape", "{file}", "--device", "cpu", "--out", "{out}"],
                  "writes": ["spectrum", "--harmonics", "8", "--out", "{out}"]},
    "diffsda": {"reads": ["predict", "--ckpt", "{file}", "--device", "cpu", "--out", "{out}"],
                "writes": ["generate", "--n", "20", "--out", "{out}"]},
    "dream": {"reads": ["fit", "--data", "{file}", "--device", "cpu", "--out", "{out}"],
              "writes": ["sweep", "--methods", "concat_km", "--device", "cpu", "--out", "{out}"]},
    "energycp": {"reads": ["fit", "--cal-logits", "{file}", "--device", "cpu", "--out", "{out}"],
                 "writes": ["demo", "--device", "cpu", "--out", "{out}"]},
    "fractal-gd": {"reads": ["evaluate", "--npz", "{file}", "--out", "{out}"],
                   "writes": ["map", "--res", "64", "--steps", "100", "--device", "cpu", "--out", "{out}"]},
    "fsd": {"reads": ["evaluate", "--model", "{file}", "--device", "cpu", "--out", "{out}"],
            "writes": ["generate", "--split", "test_iid", "--n", "5", "--out", "{out}"]},
    "gfm": {"reads": ["sample", "--model", "{file}", "--device", "cpu", "--out", "{out}"],
            "writes": ["fit", "--target", "simplex-dirichlet", "--n", "200", "--steps", "5", "--hidden", "8",
                       "--device", "cpu", "--out", "{out}"]},
    "instance-noise": {"reads": ["estimate", "--in", "{file}", "--out", "{out}"],
                       "writes": ["generate", "--data", "breast_cancer", "--out", "{out}"]},
    "minpv": {"reads": ["fit", "--num", "{file}", "--out", "{out}"],
              "writes": ["path-variance", "--paths", "linear", "--out", "{out}"]},
    "osr-temperature": {"reads": ["evaluate", "--known-scores", "{file}", "--unknown-scores", "{file}",
                                  "--out", "{out}"],
                        "writes": ["fit", "--data", "blobs", "--epochs", "1", "--device", "cpu", "--out", "{out}"]},
    "perm-compress": {"reads": ["compress", "--in", "{file}", "--out", "{out}"],
                      "writes": ["error-scaling", "--m", "1", "--k", "1", "--d", "300", "600", "--trials", "1",
                                 "--out", "{out}"]},
    "pubench": {"reads": ["report", "{file}", "--out", "{out}"],
                "writes": ["split", "--dataset", "wine", "--c", "0.5", "--save", "--out", "{out}"]},
    "relu-geometry": {"reads": ["diagnose", "--run", "{file}", "--out", "{out}"],
                      "writes": ["generate", "--n", "50", "--out", "{out}"]},
    "smsn": {"reads": ["evaluate", "--ckpt", "{file}", "--device", "cpu", "--out", "{out}"],
             "writes": ["generate", "--n", "2", "--size", "16", "--out", "{out}"]},
    "socp-gnn": {"reads": ["fit", "--data", "{file}", "--out", "{out}"],
                 "writes": ["generate", "--task", "feasibility", "--n-instances", "4", "--n", "4", "--m", "2",
                            "--k", "2", "--out", "{out}"]},
    "stod": {"reads": ["gtc", "{file}", "--device", "cpu", "--out", "{out}"],
             "writes": ["fit", "--dataset", "bars", "--T", "2", "--epochs", "1", "--device", "cpu", "--quiet",
                        "--out", "{out}"]},
    "vit-token": {"reads": ["evaluate", "--ckpt", "{file}", "--device", "cpu", "--out", "{out}"],
                  "writes": ["fit", "--steps", "1", "--batch-size", "4", "--n-images", "8", "--device", "cpu",
                             "--quiet", "--out", "{out}"]},
}
GENERIC = {
    "cuda without CUDA": ["bench", "--scale", "smoke", "--device", "cuda", "--out", "{out}"],
    "unknown device": ["bench", "--scale", "smoke", "--device", "tpu", "--out", "{out}"],
    "negative seed": ["bench", "--scale", "smoke", "--seed", "-1", "--out", "{out}"],
    "missing data root": ["bench", "--scale", "smoke", "--data-root", "{missing}", "--out", "{out}"],
}


def _main(slug: str):
    name = f"iclr26-{slug}"
    scripts = tomllib.loads((ROOT / "packages" / slug / "pyproject.toml").read_text())["project"]["scripts"]
    (script,) = [s for s in scripts if s == name]
    return next(ep for ep in metadata.entry_points(group="console_scripts") if ep.name == script).load()


def _call(main, argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    return code, capsys.readouterr().err


def _fill(argv: list[str], **values: str) -> list[str]:
    return [a.format(**values) for a in argv]


def _files(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def _assert_refused(code: int, err: str, cell: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), f"{cell}: exit {code}, stderr {err!r}"


def test_every_package_names_its_cases():
    assert sorted(CASES) == SLUGS
    missing = [slug for slug, case in CASES.items() if case is None]
    assert not missing, f"no bad-input cases declared for {missing}"


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize("cell", sorted(GENERIC))
def test_generic_bad_options_are_refused_before_anything_is_written(slug, cell, workdir, capsys):
    if cell == "cuda without CUDA":
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
    out = workdir / "out"
    code, err = _call(_main(slug), _fill(GENERIC[cell], out=str(out), missing=str(workdir / "absent")), capsys)
    _assert_refused(code, err, f"{slug} {cell}")
    assert _files(workdir) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_missing_and_malformed_input_files_are_refused(slug, workdir, capsys):
    case = CASES.get(slug) or pytest.fail(f"{slug}: no cases declared")
    out, file = workdir / "out", workdir / "input.bin"
    code, err = _call(_main(slug), _fill(case["reads"], out=str(out), file=str(file)), capsys)
    _assert_refused(code, err, f"{slug} missing file")
    assert _files(workdir) == []
    file.write_bytes(os.urandom(64) + b"\x00not,a;valid{file")
    code, err = _call(_main(slug), _fill(case["reads"], out=str(out), file=str(file)), capsys)
    _assert_refused(code, err, f"{slug} malformed file")
    assert _files(workdir) == [file]


@pytest.mark.parametrize("slug", SLUGS)
def test_existing_outputs_are_not_overwritten_without_force(slug, workdir, capsys):
    case = CASES.get(slug) or pytest.fail(f"{slug}: no cases declared")
    out = workdir / "out"
    argv = _fill(case["writes"], out=str(out))
    code, err = _call(_main(slug), argv, capsys)
    assert code == 0, f"{slug} {argv}: exit {code}, stderr {err!r}"
    written = {p: p.stat().st_mtime_ns for p in _files(workdir)}
    assert written and all(out in p.parents for p in written), f"{slug}: outputs outside --out: {list(written)}"
    code, err = _call(_main(slug), argv, capsys)
    _assert_refused(code, err, f"{slug} existing output")
    assert {p: p.stat().st_mtime_ns for p in _files(workdir)} == written
