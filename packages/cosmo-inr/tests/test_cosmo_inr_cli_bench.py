"""CLI round trip and a smoke run of the benchmark (JSON schema)."""
import json

import pytest
from iclr26_cosmo_inr.bench import BENCHMARK
from iclr26_cosmo_inr.cli import main
from iclr26_shared.bench import run_and_save


def test_spectrum_cli_writes_json_and_refuses_overwrite(tmp_path, capsys):
    argv = ["spectrum", "--activation", "sin", "--harmonics", "8", "--out", str(tmp_path)]
    assert main(argv) == 0
    data = json.loads((tmp_path / "spectrum.json").read_text())
    assert data["support_ratio"] < 1e-12 and len(data["abs_coeffs"]) == 8
    assert "E_even" in capsys.readouterr().out
    assert main(argv) == 2
    assert "--force" in capsys.readouterr().err


def test_fit_cli_round_trip(tmp_path):
    argv = ["fit", "--image", "camera", "--size", "16", "--iters", "10", "--width", "8", "--layers", "1",
            "--model", "cosmo_rc", "--prior", "none", "--device", "cpu", "--quiet", "--out", str(tmp_path)]
    assert main(argv) == 0
    data = json.loads((tmp_path / "fit.json").read_text())
    assert data["model"] == "cosmo_rc" and data["best_psnr"] > 0 and (tmp_path / "fit.png").stat().st_size > 0


def test_bad_cli_value_is_a_clean_exit(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["inpaint", "--keep", "2", "--size", "8", "--iters", "1", "--width", "4", "--prior", "none",
                 "--out", str(out)]) == 2
    assert "error: " in (err := capsys.readouterr().err) and "keep" in err
    (tmp_path / "grid.npy").write_bytes(b"garbage")
    assert main(["occupancy", "--shape", str(tmp_path / "grid.npy"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("error: --shape: expected ")
    (tmp_path / "img.png").write_bytes(b"garbage")
    assert main(["fit", "--image", str(tmp_path / "img.png"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("error: --image: expected ")
    with pytest.raises(SystemExit):
        main(["evaluate", "--models", "siren,nope", "--out", str(out)])
    assert capsys.readouterr().err.startswith("error: --models: expected ")
    assert not out.exists()


def test_smoke_benchmark_writes_the_result_contract(tmp_path):
    result, path, skipped = run_and_save(BENCHMARK, "smoke", "cpu", 0, tmp_path)
    assert not skipped and result.status == "ok", result.error
    data = json.loads(path.read_text())
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"):
        assert key in data
    assert data["benchmark"] == "cosmo-inr" and data["scale"] == "smoke"
    assert {"COSMO-RC", "SIREN", "RC no-mod"} <= {r["method"] for r in data["rows"]}
    assert all(set(c) >= {"name", "paper", "measured", "criterion", "holds"} for c in data["claims"])
    assert all(c["holds"] for c in data["claims"])  # the spectral identities hold at every scale


@pytest.mark.parametrize("argv,option", [(["--width", "-3"], "--width"), (["--layers", "-1"], "--layers")])
def test_negative_sizes_are_a_one_line_error_naming_the_option(tmp_path, capsys, argv, option):
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", *argv, "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and err[-1].startswith(f"error: {option}: ") and "Traceback" not in "".join(err)


def test_text_file_named_png_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "notes.png").write_text("this is text, not an image\n")
    assert main(["fit", "--image", str(tmp_path / "notes.png"), "--iters", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --image: expected ")
