"""Graph construction, WL colours, GNN equivariance, norm representability, gradient flow, the graph dataset."""
import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_socp_gnn import SOCP, SOCPGNN, FlatMLP, WeightedSum, from_heterodata, random_socp, to_heterodata, wl_colors
from iclr26_socp_gnn.data import GENERATOR_VERSION, SOCPDataset, SOCPGraphs, make_dataset
from iclr26_socp_gnn.graph import EDGE_TYPES
from torch_geometric.data import Batch, InMemoryDataset
from torch_geometric.loader import DataLoader


def with_linear_rows(P, seed):
    rng = np.random.default_rng(seed)
    q = 3
    E = (rng.random((q, P.n)) < 0.4) * rng.standard_normal((q, P.n))
    E[:, 0] += 1.0
    return SOCP(c=P.c, A=P.A, b=P.b, f=P.f, g=P.g, E=E, h=rng.standard_normal(q), sense=["<=", "==", ">="],
                lb=P.lb, ub=np.full(P.n, np.inf), p=P.p)


def instance(seed, n=7, m=3, k=2):
    return with_linear_rows(random_socp(n, m, k, g_shift=1.0, seed=seed), seed)


def random_perm(P, rng):
    vp = rng.permutation(P.n)
    return P.permute(vp, rng.permutation(P.m), [rng.permutation(k) for k in P.cone_dims], rng.permutation(P.q)), vp


def test_edge_counts_and_exact_reconstruction():
    P = instance(3)
    d = to_heterodata(P, dtype=torch.float64)
    total = sum(d[et].edge_index.shape[1] for et in EDGE_TYPES)
    nnz = sum(np.count_nonzero(a) for a in P.A) + sum(np.count_nonzero(f) for f in P.f)
    assert total == nnz + sum(P.cone_dims) + np.count_nonzero(P.E)
    Q = from_heterodata(d)
    for name in ("c", "g", "E", "h", "lb", "ub"):
        np.testing.assert_array_equal(getattr(Q, name), getattr(P, name))
    for i in range(P.m):
        np.testing.assert_array_equal(Q.A[i], P.A[i])
        np.testing.assert_array_equal(Q.b[i], P.b[i])
        np.testing.assert_array_equal(Q.f[i], P.f[i])
    assert Q.sense == P.sense and Q.p == P.p


def gnn(task, seed=0):
    torch.manual_seed(seed)
    return SOCPGNN(hidden=16, layers=3, task=task).double().eval()


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 10_000))
def test_gnn_invariance_and_equivariance(seed):
    P = instance(seed)
    Q, vp = random_perm(P, np.random.default_rng(seed + 1))
    for task in ("feasibility", "objective"):
        model = gnn(task)
        with torch.no_grad():
            a, b = model(to_heterodata(P, torch.float64)), model(to_heterodata(Q, torch.float64))
        assert torch.allclose(a, b, atol=1e-5, rtol=0)
    model = gnn("solution")
    with torch.no_grad():
        xa, xb = model(to_heterodata(P, torch.float64)), model(to_heterodata(Q, torch.float64))
    assert torch.allclose(xb, xa[torch.as_tensor(vp)], atol=1e-5, rtol=0)
    assert xa.std() > 0  # not a constant output that would pass trivially


def test_flat_mlp_is_not_equivariant_and_refuses_other_sizes():
    P = instance(4)
    Q, vp = random_perm(P, np.random.default_rng(0))
    torch.manual_seed(0)
    mlp = FlatMLP(P.n, P.cone_dims, P.q, hidden=(32, 32), task="solution").double().eval()
    with torch.no_grad():
        xa, xb = mlp(to_heterodata(P, torch.float64)), mlp(to_heterodata(Q, torch.float64))
    assert (xb - xa[torch.as_tensor(vp)]).abs().max() > 1e-3
    with pytest.raises(ValueError, match="var nodes"):
        mlp(to_heterodata(instance(4, n=8), torch.float64))


def test_flat_mlp_reads_the_instance_densely():
    P = instance(6)
    mlp = FlatMLP(P.n, P.cone_dims, P.q, hidden=(8,), task="feasibility").double()
    flat = mlp.flatten(Batch.from_data_list([to_heterodata(P, torch.float64)] * 2))[1].numpy()
    lb, ub = P.bounds()
    var = np.stack([P.c, np.where(np.isfinite(lb), lb, 0), np.where(np.isfinite(ub), ub, 0),
                    np.isfinite(lb), np.isfinite(ub)], 1)
    lin = np.zeros((P.q, 5))  # graph features, then the load z-score column (zero without per-variable scaling)
    lin[:, 0] = P.h
    lin[np.arange(P.q), [1, 2, 3]] = 1
    expected = np.concatenate([var.ravel(), np.vstack(P.A).ravel(), np.concatenate(P.b), np.vstack(P.f).ravel(),
                               P.g, P.E.ravel(), lin.ravel()])
    np.testing.assert_allclose(flat, expected)


def test_wl_colours_identical_for_equivalent_and_different_for_changed_instances():
    P = random_socp(6, 3, 2, g_shift=1.0, seed=11)
    dup = SOCP(c=P.c, A=P.A + [P.A[0]], b=P.b + [P.b[0]], f=P.f + [P.f[0]], g=np.append(P.g, P.g[0]),
               lb=P.lb, ub=P.ub)
    dup_rows = SOCP(c=P.c, A=P.A + [P.A[0][::-1]], b=P.b + [P.b[0][::-1]], f=P.f + [P.f[0]],
                    g=np.append(P.g, P.g[0]), lb=P.lb, ub=P.ub)
    hist = {t: sorted(v) for t, v in wl_colors(dup).items()}
    assert hist == {t: sorted(v) for t, v in wl_colors(dup_rows).items()}
    model = gnn("objective")
    with torch.no_grad():
        assert torch.allclose(model(to_heterodata(dup, torch.float64)), model(to_heterodata(dup_rows, torch.float64)),
                              atol=1e-10)
    A2 = [a.copy() for a in P.A]
    r, j = np.argwhere(A2[1] != 0)[0]
    A2[1][r, j] += 0.5
    other = SOCP(c=P.c, A=A2, b=P.b, f=P.f, g=P.g, lb=P.lb, ub=P.ub)
    assert {t: sorted(v) for t, v in wl_colors(P).items()} != {t: sorted(v) for t, v in wl_colors(other).items()}


def test_membership_edges_represent_the_norm():
    P = random_socp(8, 4, 3, g_shift=1.0, seed=2)
    x = np.random.default_rng(0).standard_normal(P.n)
    d = to_heterodata(P, torch.float64)
    h_row = torch.as_tensor(np.concatenate([a @ x + b for a, b in zip(P.A, P.b)]))[:, None]
    ei, w = d[EDGE_TYPES[2]].edge_index, d[EDGE_TYPES[2]].edge_weight
    out = WeightedSum(phi=lambda h: h**2)(h_row, ei, w, size=(len(h_row), P.m)).squeeze(-1).numpy()
    np.testing.assert_allclose(out, [np.sum((a @ x + b) ** 2) for a, b in zip(P.A, P.b)], rtol=1e-12)


def test_every_parameter_gets_gradient_with_linear_rows():
    torch.manual_seed(0)
    for task in ("feasibility", "solution"):
        model = SOCPGNN(hidden=8, layers=2, task=task).double()
        batch = Batch.from_data_list([to_heterodata(instance(s), torch.float64) for s in range(4)])
        (model(batch) ** 2).sum().backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_cone_blind_ablation_ignores_membership():
    P = instance(9)
    torch.manual_seed(1)
    blind = SOCPGNN(hidden=8, layers=2, task="objective", membership=False).double().eval()
    d = to_heterodata(P, torch.float64)
    changed = d.clone()
    changed[EDGE_TYPES[2]].edge_weight = 3.0 * changed[EDGE_TYPES[2]].edge_weight
    with torch.no_grad():
        assert torch.equal(blind(d), blind(changed))
        full = gnn("objective")
        assert not torch.allclose(full(d), full(changed))


def test_to_heterodata_refuses_non_socp():
    with pytest.raises(TypeError, match="P"):
        to_heterodata({"c": [1.0]})


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gnn_on_cuda_matches_cpu():
    model = gnn("solution")
    d = to_heterodata(instance(1), torch.float64)
    with torch.no_grad():
        cpu = model(d)
        gpu = model.to("cuda")(d.to("cuda")).cpu()
    assert torch.allclose(cpu, gpu, atol=1e-8)


def same_instance(P, Q):
    for name in ("c", "g", "lb", "ub"):
        np.testing.assert_array_equal(getattr(Q, name), getattr(P, name))
    for i in range(P.m):
        for name in ("A", "b", "f"):
            np.testing.assert_array_equal(getattr(Q, name)[i], getattr(P, name)[i])
    assert (Q.p, Q.offset, Q.q, Q.sense) == (P.p, P.offset, P.q, P.sense)


@pytest.mark.parametrize("task", ["feasibility", "solution"])
def test_graph_dataset_round_trips_through_tensors_and_refuses_pickles(tmp_path, task):
    items = [(dataclasses.replace(random_socp(6, 3, 2, g_shift=1.0, p=3.0, seed=s), offset=0.25 * s),
              s % 2 if task == "feasibility" else np.arange(6.0) * s) for s in range(5)]
    items.append((instance(7), 1 if task == "feasibility" else np.ones(7)))  # linear rows of every sense, inf bounds
    ds = SOCPGraphs.from_items(SOCPDataset(items, {"task": task, "seed": 3}))
    assert len(ds) == len(items) and isinstance(ds, InMemoryDataset)
    back = SOCPGraphs.read(ds.write(tmp_path / "cache")).to_items()
    assert back.meta == {"task": task, "seed": 3}
    for (P, y), (Q, z) in zip(items, back):
        same_instance(P, Q)
        np.testing.assert_array_equal(z, y)
    # graphs from the dataset batch with PyG's DataLoader like freshly built ones
    batch = next(iter(DataLoader(ds, batch_size=len(ds))))
    assert batch.num_graphs == len(items) and batch["var"].x.shape[0] == sum(P.n for P, _ in items)
    torch.save({"obj": Fraction(1, 3)}, tmp_path / "cache" / "graphs.pt")  # needs the full unpickler
    with pytest.raises(ValueError, match="graphs.pt is not a socp-gnn graph dataset"):
        SOCPGraphs.read(tmp_path / "cache")
    with pytest.raises(FileNotFoundError, match="folder: expected"):
        SOCPGraphs.read(tmp_path / "missing")


def test_dataset_cache_is_reused_only_when_it_matches_the_request(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    kw = dict(n=4, m=2, k=2, seed=5, g_shift=3.0, cache=True)
    first = make_dataset("solution", 3, **kw)
    assert first.meta["generator"] == GENERATOR_VERSION and first.meta["n_instances"] == 3
    (folder,) = (tmp_path / "socp-gnn").glob("graphs_solution_*")
    again = make_dataset("solution", 3, **kw)  # read back from the tensors, exactly
    for (P, y), (Q, z) in zip(first, again):
        same_instance(P, Q)
        np.testing.assert_array_equal(z, y)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "generator": GENERATOR_VERSION - 1}))
    with pytest.raises(ValueError, match="does not hold the requested dataset.*generator"):
        make_dataset("solution", 3, **kw)
