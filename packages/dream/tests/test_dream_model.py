"""The estimator end to end (tiny data), its bad-input errors, the CLI and the benchmark's smoke run."""
import json

import numpy as np
import pytest
import torch
from iclr26_dream import DREAM, ConcatKMeans, make_semantic_structural_views, preprocess_view
from iclr26_dream.bench import MFEAT_BENCHMARK, SYNTHETIC_BENCHMARK, scores
from iclr26_dream.cli import main
from iclr26_shared.bench import run_and_save

TINY = {"pretrain_epochs": 2, "epochs": 7, "latent_dim": 8, "hidden_dims": (16,), "gcn_hidden": 16,
        "n_triplets": 64, "device": "cpu"}


@pytest.fixture(scope="module")
def data():
    torch.set_num_threads(1)
    return make_semantic_structural_views(n=80, n_clusters=4, random_state=3)


def test_pseudo_labels_refresh_only_every_third_epoch_and_fit_is_deterministic(data):
    Xs, y = data
    seen = []
    model = DREAM(4, random_state=0, callback=lambda m, epoch, info: seen.append((epoch, info["p"], info["pseudo"])),
                  **TINY).fit(Xs, y)
    assert model.history_["refresh_epochs"] == [0, 3, 6]
    for (_, p0, y0), (e1, p1, y1) in zip(seen[:-1], seen[1:]):
        if e1 % 3:
            assert torch.equal(p0, p1) and np.array_equal(y0, y1)
        else:
            assert not torch.equal(p0, p1)
    assert model.labels_.shape == (80,) and model.gate_values_.shape == (80, 2)
    assert np.allclose(model.view_weights_.sum(1), 1)
    assert np.isfinite(model.history_["total"]).all()
    again = DREAM(4, random_state=0, **TINY).fit(Xs, y)
    assert np.array_equal(model.labels_, again.labels_)
    assert np.allclose(model.transform(Xs), model.embedding_, atol=1e-5)
    # KL weight of view v: lambda1 (default 0.1) x 2 x the mean per-feature variance of its preprocessed input
    assert np.allclose(model.kl_weights_, [0.1 * 2 * preprocess_view(X).var(axis=0).mean() for X in Xs])
    assert [m.shape for m in model.semantic_means_] == [(80, 8), (80, 8)]
    assert np.allclose(model.predict_proba(Xs).sum(1), 1, atol=1e-5)


@pytest.mark.parametrize("kwargs", [{"use_semantic": False}, {"use_structure": False}, {"fusion": "average"},
                                    {"use_alignment": False}])
def test_ablations_run(data, kwargs):
    Xs, y = data
    model = DREAM(4, random_state=0, **{**TINY, "epochs": 3, **kwargs}).fit(Xs)
    assert model.labels_.shape == (80,)
    if kwargs.get("use_structure") is False:
        assert np.allclose(model.gate_values_, 1.0)


def test_fusion_lr_moves_the_gate(data):
    """The gate and view-weight nets get their own learning rate; at the joint lr the gate hardly leaves 0.5."""
    Xs, _ = data
    departure = [np.abs(DREAM(4, random_state=0, fusion_lr=rate, **TINY).fit(Xs).gate_values_.mean(0) - 0.5).max()
                 for rate in (None, 1e-1)]
    assert departure[1] > departure[0] + 0.02


@pytest.mark.parametrize("kwargs, match", [
    ({"n_clusters": 1}, "n_clusters"), ({"n_clusters": 80}, "n_clusters"), ({"k_neighbors": 80}, "k_neighbors"),
    ({"tau": 0.0}, "tau"), ({"margin": -1.0}, "margin"), ({"lr": 0}, "lr"), ({"fusion": "max"}, "fusion"),
    ({"use_semantic": False, "use_structure": False}, "use_semantic"), ({"graph_weighting": "bce"}, "graph_weighting"),
    ({"fusion_lr": 0.0}, "fusion_lr"),
])
def test_bad_hyperparameters(data, kwargs, match):
    Xs, _ = data
    params = {"n_clusters": 4, **TINY, **kwargs}
    with pytest.raises(ValueError, match=match):
        DREAM(**params).fit(Xs)


def test_bad_views(data):
    Xs, _ = data
    with pytest.raises(ValueError, match="same number of rows"):
        DREAM(4, **TINY).fit([Xs[0], Xs[1][:-1]])
    with pytest.raises(ValueError, match="at least 2 views"):
        DREAM(4, **TINY).fit([Xs[0]])
    bad = Xs[0].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DREAM(4, **TINY).fit([bad, Xs[1]])
    with pytest.raises(TypeError, match="Xs"):
        ConcatKMeans(4).fit(Xs[0])


def test_zero_variance_feature_gives_no_nan():
    X = np.random.default_rng(0).normal(size=(10, 3))
    X[:, 1] = 5.0
    assert np.isfinite(preprocess_view(X)).all()


def test_scores_invariant_to_label_permutation():
    y = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([1, 1, 2, 2, 0, 0])
    assert scores(y, pred) == {"acc": 1.0, "nmi": 1.0, "ari": 1.0, "pur": 1.0}


def test_cli_fit_and_inspect_round_trip(tmp_path, capsys, data):
    Xs, y = data
    path = tmp_path / "tiny.npz"
    np.savez(path, X0=Xs[0], X1=Xs[1], y=y)
    out = tmp_path / "run"
    args = ["fit", "--data", str(path), "--pretrain-epochs", "1", "--epochs", "2", "--device", "cpu",
            "--out", str(out), "--quiet"]
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0 <= metrics["acc"] <= 1 and metrics["n"] == 80 and metrics["n_views"] == 2
    assert np.load(out / "embedding.npy").shape == (80, 64)
    assert main(["evaluate", "--gates", str(out / "gates.csv")]) == 0
    assert "semantic share" in capsys.readouterr().out
    assert main(args) == 2
    assert "error: --out" in capsys.readouterr().err
    assert main(["fit", "--data", "nonexistent", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("error: --data: expected hw, uci3, synthetic")
    assert main(["inspect-gates", "--gates", str(out / "metrics.json")]) == 2
    assert capsys.readouterr().err.startswith("error: --gates: expected a gates.csv")
    assert not (tmp_path / "x").exists()


def test_bench_smoke_writes_the_json_contract(tmp_path):
    for bench in (SYNTHETIC_BENCHMARK, MFEAT_BENCHMARK):
        result, path, skipped = run_and_save(bench, "smoke", "cpu", 0, tmp_path)
        assert result.status == "ok", result.error
        d = json.loads(path.read_text())
        assert {"benchmark", "package", "paper", "scale", "seed", "device", "versions", "seconds", "metrics",
                "rows", "claims", "figures"} <= set(d)
        methods = {r["method"] for r in d["rows"]}
        assert "dream" in methods and "concat_km" in methods
