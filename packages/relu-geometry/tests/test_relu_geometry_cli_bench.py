"""Rates, slope fits, the CLI round trip and one smoke run of the registered benchmark."""
import json

import numpy as np
import pytest
from iclr26_relu_geometry import RunConfig, fit_loglog_slope, theory_rates
from iclr26_relu_geometry.cli import main


def test_theory_rates_match_the_reported_exponents():
    r = theory_rates(5, alpha=5.0, m=1)
    assert r["beta_upper"] == pytest.approx(-5 * 8 / (2 * (25 + 100 + 15)))
    assert r["beta_lower"] == pytest.approx(-10 / 14)
    assert r["mixture_upper"] == pytest.approx(-1 / 6)
    assert theory_rates(5, alpha=0.0)["beta_upper"] == 0.0
    with pytest.raises(ValueError, match="m"):
        theory_rates(3, m=3)


def test_slope_fit_recovers_a_power_law_and_refuses_bad_input():
    ns = np.array([128, 256, 512, 1024])
    fit = fit_loglog_slope(ns, 3.0 * ns ** -0.4)
    assert fit["slope"] == pytest.approx(-0.4) and fit["r2"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="3 distinct"):
        fit_loglog_slope([128, 256], [0.1, 0.05])
    with pytest.warns(RuntimeWarning, match="excluded"):
        fit = fit_loglog_slope(ns, [0.1, float("nan"), 0.05, -0.01])
    assert np.isnan(fit["slope"]) and fit["excluded"] == [256.0, 1024.0]


def test_run_config_refuses_bad_values():
    with pytest.raises(ValueError, match="family"):
        RunConfig(family="torus")
    with pytest.raises(ValueError, match="eta"):
        RunConfig(eta=-1.0)
    with pytest.raises(ValueError, match="m"):
        RunConfig(family="mixture", m=5, d=5)


def test_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "out"
    x_path, run_path = out / "X.npy", out / "run.json"
    assert main(["generate", "--family", "beta", "--alpha", "0.3", "--d", "5", "--n", "100", "--out", str(out)]) == 0
    assert np.load(x_path).shape == (100, 5)
    assert main(["generate", "--n", "100", "--out", str(out)]) == 2 and "--force" in capsys.readouterr().err
    assert main(["fit", "--alpha", "sphere", "--n", "64", "--n-test", "100", "--width", "32", "--steps", "50",
                 "--sharpness-every", "25", "--device", "cpu", "--out", str(out)]) == 0
    run = json.loads(run_path.read_text())
    assert run["config"]["n"] == 64 and len(run["history"]["sharpness"]) == 2
    text = capsys.readouterr().out
    assert "gap" in text and "2/η" in text
    assert main(["evaluate", "--run", str(run_path), "--device", "cpu"]) == 0
    lam = float(capsys.readouterr().out.split()[1])
    assert lam == pytest.approx(run["row"]["sharpness"], rel=1e-3)
    assert main(["diagnose", "--run", str(run_path), "--device", "cpu", "--out", str(out)]) == 0
    assert (out / "diagnose.png").stat().st_size > 0
    assert "n_shattering" in json.loads((out / "diagnose.json").read_text())["activation_report"]
    assert main(["generate", "--alpha", "-1", "--out", str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err.startswith("error: alpha: expected")
    assert main(["evaluate", "--run", str(x_path), "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith("error: --run: expected a run.json")


def test_cli_fits_a_users_own_arrays_and_reads_them_back(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X, X_test = rng.uniform(-1, 1, (60, 3)), rng.uniform(-1, 1, (30, 3))
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    np.save(tmp_path / "y.npy", X.sum(1))
    np.save(tmp_path / "Xt.npy", X_test)
    np.savetxt(tmp_path / "yt.csv", X_test.sum(1)[:, None], delimiter=",")
    out = tmp_path / "run"
    assert main(["train", "--X", str(tmp_path / "X.csv"), "--y", str(tmp_path / "y.npy"), "--X-test",
                 str(tmp_path / "Xt.npy"), "--y-test", str(tmp_path / "yt.csv"), "--width", "32", "--steps", "300",
                 "--device", "cpu", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["family"] == "user" and run["config"]["n"] == 60 and run["config"]["d"] == 3
    assert run["row"]["train_mse"] < 0.5 * np.var(X.sum(1)) and "noisy gap" in text
    assert main(["evaluate", "--run", str(out / "run.json"), "--device", "cpu"]) == 0
    assert float(capsys.readouterr().out.split()[1]) == pytest.approx(run["row"]["sharpness"], rel=1e-3)


@pytest.mark.parametrize("make, option, message", [
    (lambda d: np.save(d / "y.npy", np.zeros(59)), "--y", "expected 60 targets, one per row of --X, got 59"),
    (lambda d: np.save(d / "y.npy", np.zeros((60, 2))), "--y", "expected an array of shape (n,), got shape (60, 2)"),
    (lambda d: np.save(d / "y.npy", np.full(60, np.nan)), "--y", "expected finite values, got 60 NaN/inf"),
])
def test_cli_refuses_bad_user_arrays_in_one_line(tmp_path, capsys, make, option, message):
    np.save(tmp_path / "X.npy", np.zeros((60, 3)))
    make(tmp_path)
    assert main(["fit", "--X", str(tmp_path / "X.npy"), "--y", str(tmp_path / "y.npy"), "--device", "cpu",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option}: {message}") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_cli_refuses_other_suffixes_and_a_lone_y(tmp_path, capsys):
    (tmp_path / "X.txt").write_text("1,2\n3,4\n")
    np.save(tmp_path / "y.npy", np.zeros(2))
    assert main(["fit", "--X", str(tmp_path / "X.txt"), "--y", str(tmp_path / "y.npy"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --X: expected a .npy or .csv file, got")
    assert main(["fit", "--y", str(tmp_path / "y.npy"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --X: expected a design file")


def test_cli_depth_of_a_users_points_is_the_exact_tukey_depth(tmp_path, capsys):
    grid = np.array([[x, y] for x in range(-2, 3) for y in range(-2, 3)], dtype=float)  # 5 × 5 lattice
    np.savetxt(tmp_path / "X.csv", grid, delimiter=",")
    np.save(tmp_path / "q.npy", np.array([[0.0, 0.0], [2.0, 2.0], [9.0, 9.0]]))
    assert main(["depth", "--X", str(tmp_path / "X.csv"), "--points", str(tmp_path / "q.npy"),
                 "--out", str(tmp_path)]) == 0
    # the lattice is symmetric about its centre: a line through it missing the other points leaves 12 on each side,
    # so the closed half-plane holds 12 + 1 = 13 of 25; the corner has 1/25, a point outside the hull 0.
    assert np.load(tmp_path / "depth.npy") == pytest.approx([13 / 25, 1 / 25, 0.0])
    assert "exact" in capsys.readouterr().out
    np.save(tmp_path / "q3.npy", np.zeros((1, 3)))
    assert main(["depth", "--X", str(tmp_path / "X.csv"), "--points", str(tmp_path / "q3.npy"),
                 "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith("error: --points: expected 2 columns as --X, got shape (1, 3)")


def test_cli_sweeps_write_csv_plots_and_summary(tmp_path):
    tiny = ["--width", "16", "--steps", "20", "--n-test", "50", "--device", "cpu", "--quiet"]
    assert main(["sweep-alpha", "--alphas", "sphere,5", "--ns", "32,48,64", "--out", str(tmp_path / "a"), *tiny]) == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert set(summary["slopes"]) <= {"0.0", "5.0"} and (tmp_path / "a" / "gap_vs_n.png").exists()
    assert len((tmp_path / "a" / "sweep_alpha.csv").read_text().splitlines()) == 7
    assert main(["sweep-intrinsic", "--ds", "3,6", "--ns", "32,64", "--out", str(tmp_path / "i"), *tiny]) == 0
    assert (tmp_path / "i" / "gap_vs_d.png").exists()
    assert main(["real-vs-gaussian", "--n", "100", "--out", str(tmp_path / "r"), *tiny]) == 0
    assert len((tmp_path / "r" / "real_vs_gaussian.csv").read_text().splitlines()) == 3


def test_benchmark_smoke_writes_the_json_contract(tmp_path):
    assert main(["bench", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path), "--quiet"]) == 0
    (path,) = tmp_path.glob("relu-geometry__smoke__seed0__cpu.json")
    res = json.loads(path.read_text())
    assert res["status"] == "ok", res["error"]
    for key in ("benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics", "rows",
                "claims", "figures"):
        assert key in res
    assert {r["method"] for r in res["rows"]} == {"sphere", "alpha=5", "sphere@width=128"}
    assert {c["name"] for c in res["claims"]} >= {"beos_holds", "geometry_ordering", "memorisation_contrast",
                                                  "memorisation_self_influence", "wide_edge_of_stability"}
    sphere = next(r for r in res["rows"] if r["method"] == "sphere")
    assert sphere["gap_sigma"] == pytest.approx(sphere["test_mse_clean"] + 0.25 - sphere["train_mse"])
    assert sphere["gap"] == pytest.approx(sphere["test_mse_clean"] + 0.25 * (1 - sphere["train_over_noise"]))
    assert sphere["train_over_noise"] == pytest.approx(sphere["train_mse"] / sphere["noise_energy"])
    assert 0 < sphere["self_influence"] <= 1
    assert all(isinstance(c["holds"], bool) for c in res["claims"])
    assert all((tmp_path / f).exists() for f in res["figures"])
