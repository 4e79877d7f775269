"""The block-model community set, user-supplied graphs (DREAM and the Â²X baseline) and its claims."""
import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from iclr26_dream import (
    DREAM,
    PropagatedKMeans,
    check_graphs,
    load_graph_views,
    load_views,
    make_community_views,
    preprocess_view,
)
from iclr26_dream.bench import synthetic_claims
from iclr26_dream.cli import main
from iclr26_shared.bench import derive_seeds


def test_community_views_are_deterministic_and_have_the_asked_degrees():
    Xs, y, graphs = make_community_views(n=400, n_clusters=4, within_degree=9.0, between_degree=1.0, random_state=5)
    again = make_community_views(n=400, n_clusters=4, within_degree=9.0, between_degree=1.0, random_state=5)
    assert all(np.array_equal(a, b) for a, b in zip(Xs, again[0])) and (graphs[1] != again[2][1]).nnz == 0
    other = make_community_views(n=400, n_clusters=4, random_state=6)[2][1]
    assert (graphs[1] != other).nnz > 0
    A = graphs[1]
    assert graphs[0] is None and Xs[0].shape == (400, 20) and np.array_equal(Xs[1], np.eye(400))
    assert (A != A.T).nnz == 0 and set(np.unique(A.data)) == {1.0} and A.diagonal().sum() == 0
    same = y[:, None] == y[None, :]
    dense = A.toarray()
    within, between = (dense * same).sum(1).mean(), (dense * ~same).sum(1).mean()
    assert 8.0 < within < 10.0 and 0.6 < between < 1.4          # expected 9 and 1 (sampling error ~0.15, 0.05)
    assert np.bincount(y).tolist() == [100] * 4


@pytest.mark.parametrize("kwargs, match", [({"within_degree": -1.0}, "within_degree"),
                                           ({"between_degree": 1e4}, "between_degree"), ({"dim": 0}, "dim"),
                                           ({"sep": 0.0}, "sep"), ({"n_clusters": 1}, "n_clusters")])
def test_community_views_refuse_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_community_views(n=40, **kwargs)


def test_check_graphs_binarises_and_refuses_bad_graphs():
    A = np.array([[1.0, 2.0, 0.0], [2.0, 0.0, 0.5], [0.0, 0.5, 0.0]])
    (none, G) = check_graphs([None, A], 3, 2)
    assert none is None and G.toarray().tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    with pytest.raises(ValueError, match=r"graphs\[1\]: expected shape \(3, 3\)"):
        check_graphs([None, np.zeros((2, 2))], 3, 2)
    with pytest.raises(ValueError, match="symmetric"):
        check_graphs([np.triu(np.ones((3, 3))), None], 3, 2)
    with pytest.raises(ValueError, match="non-negative"):
        check_graphs([-A, None], 3, 2)
    with pytest.raises(ValueError, match="list of 2 entries"):
        check_graphs([A], 3, 2)


def test_supplied_graph_is_the_one_dream_and_the_baseline_propagate_over():
    torch.set_num_threads(1)
    Xs, y, graphs = make_community_views(n=80, n_clusters=4, random_state=1)
    model = DREAM(4, pretrain_epochs=1, epochs=1, latent_dim=8, hidden_dims=(16,), gcn_hidden=16, n_triplets=32,
                  device="cpu", random_state=0).fit(Xs, graphs=graphs)
    assert (model.graphs_[1] != graphs[1]).nnz == 0 and model.graphs_[0].shape == (80, 80)
    assert np.allclose(model.transform(Xs, graphs=graphs), model.embedding_, atol=1e-5)
    with pytest.raises(ValueError, match="graphs"):
        DREAM(4, pretrain_epochs=1, epochs=1, device="cpu").fit(Xs, graphs=[graphs[1]])
    # the baseline on the supplied graph equals k-means on the hand-propagated, row-normalised features
    from sklearn.cluster import KMeans

    parts = []
    for X, G in zip(Xs, [None, graphs[1]]):
        Z = preprocess_view(X)
        from iclr26_dream import knn_graph

        A = (knn_graph(Z, k=10) if G is None else G).toarray() + np.eye(80)
        d = 1 / np.sqrt(A.sum(1))
        H = np.linalg.matrix_power(d[:, None] * A * d[None, :], 2) @ Z
        parts.append(H / np.linalg.norm(H, axis=1, keepdims=True))
    expected = KMeans(4, n_init=10, random_state=0).fit_predict(np.hstack(parts))
    assert np.array_equal(PropagatedKMeans(4, random_state=0).fit(Xs, graphs=graphs).labels_, expected)
    assert not sp.issparse(Xs[1])


def _rows(seeds, dream, prop, ckm, gate_graph_view):
    rows = [{"data": "communities", "method": "dream", "seed": s, "acc": a, "gate": [0.3, g]}
            for s, a, g in zip(seeds, dream, gate_graph_view)]
    rows += [{"data": "communities", "method": m, "seed": s, "acc": a}
             for m, vals in (("prop_km", prop), ("concat_km", ckm)) for s, a in zip(seeds, vals)]
    rows += [{"data": "synthetic", "method": m, "seed": s, "acc": 0.27}
             for m in ("concat_km", "concat_spec", "prop_km", "dream_nostruct") for s in seeds]
    return rows


def test_community_claims_hold_on_planted_good_rows_and_fail_on_planted_bad_ones():
    seeds = derive_seeds(7, 3)
    good = {c.name: c for c in synthetic_claims(_rows(seeds, [0.99, 0.98, 0.97], [0.4, 0.38, 0.45],
                                                      [0.33, 0.34, 0.35], [0.2, 0.25, 0.3]), "quick", 7)}
    names = ("communities_dream_acc", "communities_propagated_kmeans_acc", "communities_concat_kmeans_acc",
             "communities_featureless_view_gate")
    assert all(good[n].holds for n in names)
    # a DREAM that follows the noisy view (0.5), a baseline that already solves the set, a gate stuck at 0.5
    bad = {c.name: c for c in synthetic_claims(_rows(seeds, [0.5, 0.52, 0.49], [0.99, 0.98, 0.97],
                                                     [0.6, 0.62, 0.7], [0.5, 0.5, 0.5]), "quick", 7)}
    assert not any(bad[n].holds for n in names)
    assert synthetic_claims([], "smoke", 7) == []


def test_the_supplied_graph_carries_the_classes_dream_finds():
    # tiny networks on 200 nodes; without the block-model graph (kNN graphs on the features only) DREAM sees no
    # class (0.32-0.39 at data seeds 1-3), with it 0.55-0.64
    from iclr26_shared.metrics import clustering_accuracy

    torch.set_num_threads(1)
    Xs, y, graphs = make_community_views(n=200, random_state=2)
    kw = {"latent_dim": 16, "hidden_dims": (32,), "gcn_hidden": 32, "n_triplets": 128, "pretrain_epochs": 30,
          "epochs": 6, "graph_weighting": "balanced", "batch_size": 50, "pretrain_batch_size": 50, "device": "cpu",
          "random_state": 0}
    with_graph = clustering_accuracy(y, DREAM(4, **kw).fit(Xs, graphs=graphs).labels_)
    features_only = clustering_accuracy(y, DREAM(4, **kw).fit(Xs).labels_)
    assert with_graph >= 0.5 and with_graph >= features_only + 0.15


def test_load_graph_views_gives_the_supplied_graphs(tmp_path):
    Xs, y, graphs = load_graph_views("communities", random_state=3)
    ref = make_community_views(random_state=3)
    assert np.array_equal(y, ref[1]) and graphs[0] is None and (graphs[1] != ref[2][1]).nnz == 0
    with pytest.raises(ValueError, match="load_graph_views"):
        load_views("communities")
    Xs, y, graphs = make_community_views(n=80, random_state=1)
    path = tmp_path / "views.npz"
    np.savez(path, X0=Xs[0], X1=Xs[1], y=y, A1=graphs[1].toarray())
    _, y2, got = load_graph_views(path)
    assert np.array_equal(y2, y) and got[0] is None and np.array_equal(got[1], graphs[1].toarray())
    assert load_graph_views("synthetic")[2] == [None, None]
    np.savez(path, X0=Xs[0], X1=Xs[1], y=y, A2=graphs[1].toarray())
    with pytest.raises(ValueError, match=r"graph keys \['A2'\]"):
        load_graph_views(path)


def test_cli_fit_reads_a_graph_from_the_npz(tmp_path, capsys):
    Xs, y, graphs = make_community_views(n=80, random_state=1)
    A = graphs[1].toarray()
    path = tmp_path / "views.npz"
    np.savez(path, X0=Xs[0], X1=Xs[1], y=y, A1=A)
    args = ["fit", "--data", str(path), "--pretrain-epochs", "1", "--epochs", "1", "--graph-weighting", "balanced",
            "--device", "cpu", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "ok")]) == 0
    assert json.loads((tmp_path / "ok" / "metrics.json").read_text())["n"] == 80
    A[0, 1], A[1, 0] = 1.0, 0.0  # an asymmetric adjacency reaches check_graphs and is refused
    np.savez(path, X0=Xs[0], X1=Xs[1], y=y, A1=A)
    assert main([*args, "--out", str(tmp_path / "bad")]) == 2
    assert "graphs[1]" in capsys.readouterr().err
