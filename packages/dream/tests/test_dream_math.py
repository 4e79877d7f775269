"""The mathematics of DREAM's pieces against closed forms and independent computations."""
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_dream.graph import knn_graph, normalize_adjacency
from iclr26_dream.losses import (
    cluster_loss,
    dec_target,
    distill_loss,
    gaussian_kl,
    graph_recon_loss,
    inter_cluster_triplet,
    intra_sample_infonce,
    sample_triplets,
)
from iclr26_dream.nn import GatedFusion, StudentTClusterHead, ViewGCN, first_hop, student_t_assignment


def _views(n=6, z=4, V=3, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    mus = [torch.randn(n, z, generator=g, dtype=dtype) for _ in range(V)]
    hs = [torch.randn(n, z, generator=g, dtype=dtype) for _ in range(V)]
    return mus, hs


@pytest.mark.parametrize("bias, expect", [(50.0, "mu"), (-50.0, "h")])
def test_gate_saturated_gives_weighted_mean_of_one_branch(bias, expect):
    mus, hs = _views()
    for normalize in (True, False):
        fusion = GatedFusion(3, 4, normalize=normalize)
        with torch.no_grad():
            for gate in fusion.gates:
                gate.weight.zero_()
                gate.bias.fill_(bias)
        l, s, a = fusion(mus, hs)
        src = torch.stack(mus if expect == "mu" else hs, dim=1)
        if normalize:
            src = src / src.norm(dim=2, keepdim=True)
        assert torch.allclose(l, (a.unsqueeze(-1) * src).sum(1), atol=1e-5)
        assert torch.allclose(a.sum(1), torch.ones(6))


def test_average_fusion_is_plain_mean():
    mus, hs = _views()
    l, s, a = GatedFusion(3, 4, mode="average", normalize=False)(mus, hs)
    expected = torch.stack([(m + h) / 2 for m, h in zip(mus, hs)]).mean(0)
    assert torch.allclose(l, expected, atol=1e-6)
    unit = GatedFusion(3, 4, mode="average")(mus, hs)[0]
    expected = torch.stack([(m / m.norm(dim=1, keepdim=True) + h / h.norm(dim=1, keepdim=True)) / 2
                            for m, h in zip(mus, hs)]).mean(0)
    assert torch.allclose(unit, expected, atol=1e-6)


def test_student_t_hand_example_and_rows_sum_to_one():
    l = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    c = torch.tensor([[1.0, 0.0], [0.0, 2.0]])  # normalised: e1, e2
    q = student_t_assignment(l, c)
    # ‖e1 - e1‖² = 0, ‖e1 - e2‖² = 2 -> kernels 1 and 1/3 -> q = (3/4, 1/4)
    assert torch.allclose(q, torch.tensor([[0.75, 0.25], [0.25, 0.75]]))
    assert torch.allclose(q.sum(1), torch.ones(2))


def test_dec_target_closed_form_and_kl_zero():
    q = torch.tensor([[0.7, 0.3], [0.4, 0.6], [0.5, 0.5]])
    f = q.sum(0)
    w = q**2 / f
    assert torch.allclose(dec_target(q), w / w.sum(1, keepdim=True))
    p = dec_target(q)
    ent = -(p * p.log()).sum(1).mean()
    assert torch.allclose(cluster_loss(p, p, lambda3=1.0), ent, atol=1e-6)  # KL(P‖P) = 0
    onehot = torch.eye(3)
    assert cluster_loss(onehot, onehot, 1.0).abs() < 1e-6


def test_balance_term_is_zero_for_equal_masses_and_penalises_collapse():
    balanced = torch.tensor([[0.9, 0.1], [0.1, 0.9]])
    collapsed = torch.tensor([[0.9, 0.1], [0.8, 0.2]])
    for q in (balanced, collapsed):
        p = dec_target(q)
        extra = cluster_loss(q, p, 1.0, balance=2.0) - cluster_loss(q, p, 1.0)
        marginal = q.mean(0)
        expect = 2.0 * (np.log(2) + (marginal * marginal.log()).sum())
        assert torch.allclose(extra, expect, atol=1e-6)
    assert cluster_loss(balanced, balanced, 0.0, balance=1.0) == cluster_loss(balanced, balanced, 0.0)
    assert cluster_loss(collapsed, collapsed, 0.0, balance=1.0) > cluster_loss(collapsed, collapsed, 0.0) + 0.05


def test_distill_zero_for_identical_views_and_closed_form():
    e = torch.randn(5, 3)
    assert distill_loss([e, e.clone()]).abs() < 1e-6
    a, b = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 2.0]])
    # mean (.5, 1); squared distances 1.25 and 1.25
    assert torch.allclose(distill_loss([a, b]), torch.tensor(2.5))
    # the target is detached: the gradient is 2 (E^{(v)} - E*) / N per view
    x = a.clone().requires_grad_()
    distill_loss([x, b]).backward()
    assert torch.allclose(x.grad, 2 * (a - (a + b) / 2))


def test_gaussian_kl_zero_and_monte_carlo():
    assert gaussian_kl(torch.zeros(2, 3), torch.zeros(2, 3)).abs().max() < 1e-7
    mu, logvar = torch.tensor([[0.5, -1.0]], dtype=torch.float64), torch.tensor([[0.3, -0.7]], dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    std = (0.5 * logvar).exp()
    z = mu + std * torch.randn(100_000, 2, generator=g, dtype=torch.float64)
    log_q = torch.distributions.Normal(mu, std).log_prob(z).sum(1)
    log_p = torch.distributions.Normal(0.0, 1.0).log_prob(z).sum(1)
    mc = (log_q - log_p).mean()
    assert abs(float(mc) / float(gaussian_kl(mu, logvar)) - 1) < 0.01


@settings(max_examples=5, deadline=None)
@given(st.integers(20, 60), st.integers(1, 5), st.integers(0, 1000))
def test_knn_graph_properties(n, k, seed):
    X = np.random.default_rng(seed).normal(size=(n, 5))
    A = knn_graph(X, k=k)
    assert (A != A.T).nnz == 0
    assert set(np.unique(A.data)) == {1.0}
    assert A.diagonal().sum() == 0
    assert np.all(np.asarray(A.sum(1)).ravel() >= k)
    a_hat = normalize_adjacency(A, dtype=torch.float64).to_dense().numpy()
    assert np.allclose(a_hat, a_hat.T)
    assert abs(np.linalg.eigvalsh(a_hat).max() - 1) < 1e-6


def test_normalize_adjacency_isolated_node_keeps_self_loop():
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    a_hat = normalize_adjacency(A).to_dense()
    assert a_hat[2, 2] == 1.0 and torch.isfinite(a_hat).all()


def test_graph_recon_sampled_matches_dense_in_expectation():
    X = np.random.default_rng(0).normal(size=(500, 8))
    A = knn_graph(X, k=10)
    adj = torch.as_tensor(A.toarray(), dtype=torch.float32)
    H = torch.randn(500, 8, generator=torch.Generator().manual_seed(0)) * 0.5
    dense = graph_recon_loss(H, adj, sampled=False)
    g = torch.Generator().manual_seed(3)
    est = torch.stack([graph_recon_loss(H, adj.to_sparse(), sampled=True, generator=g) for _ in range(50)]).mean()
    assert abs(float(est) / float(dense) - 1) < 0.05


def test_graph_recon_balanced_weighting_and_row_batches_match_closed_forms():
    X = np.random.default_rng(1).normal(size=(60, 4))
    adj = torch.as_tensor(knn_graph(X, k=5).toarray(), dtype=torch.float32)
    H = torch.randn(60, 4, generator=torch.Generator().manual_seed(1))
    err = (torch.sigmoid(H @ H.T) - adj).pow(2)
    balanced = 0.5 * err[adj == 1].mean() + 0.5 * err[adj == 0].mean()
    assert torch.allclose(graph_recon_loss(H, adj, sampled=False, weighting="balanced"), balanced)
    rows = torch.tensor([3, 7, 11])
    assert torch.allclose(graph_recon_loss(H, adj, sampled=False, rows=rows), err[rows].mean())
    g = torch.Generator().manual_seed(3)
    est = torch.stack([graph_recon_loss(H, adj.to_sparse(), sampled=True, generator=g, weighting="balanced")
                       for _ in range(200)]).mean()
    assert abs(float(est) / float(balanced) - 1) < 0.05
    with pytest.raises(ValueError, match="weighting"):
        graph_recon_loss(H, adj, weighting="bce")


def _naive_infonce(l, mus, hs, tau):
    total, n, V = 0.0, l.shape[0], len(mus)
    cos = torch.nn.functional.cosine_similarity
    for v in range(V):
        for i in range(n):
            num = torch.exp(cos(l[i], mus[v][i], dim=0) / tau) + torch.exp(cos(l[i], hs[v][i], dim=0) / tau)
            den = sum(torch.exp(cos(l[i], mus[v][j], dim=0) / tau) + torch.exp(cos(l[i], hs[v][j], dim=0) / tau)
                      for j in range(n))
            total += -torch.log(num / den)
    return total / (n * V)


def test_infonce_identical_embeddings_equals_log_n_and_matches_loop():
    n = 20
    same = [torch.ones(n, 4)] * 2
    assert torch.allclose(intra_sample_infonce(torch.ones(n, 4), same, same, 0.5), torch.tensor(np.log(n)).float())
    mus, hs = _views(n=n, V=2, dtype=torch.float64)
    l = torch.randn(n, 4, dtype=torch.float64)
    assert torch.allclose(intra_sample_infonce(l, mus, hs, 0.5), _naive_infonce(l, mus, hs, 0.5))
    aligned = [m.clone() for m in mus]
    better = intra_sample_infonce(aligned[0], aligned, aligned, 0.5)
    assert better < intra_sample_infonce(l, mus, hs, 0.5)


def test_triplet_zero_when_separated_and_closed_form():
    l = torch.tensor([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [-1.0, 0.0]])
    assert inter_cluster_triplet(l, np.array([0, 0, 1, 1]), 64, margin=1.0, generator=np.random.default_rng(0)) == 0
    l3 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # anchor 0, positive 1, negative 2 (same point)
    pseudo = np.array([0, 0, 1])
    loss = inter_cluster_triplet(l3, pseudo, 256, margin=1.0, generator=np.random.default_rng(0))
    a, p, n = sample_triplets(pseudo, 256, np.random.default_rng(0))
    lt = torch.nn.functional.normalize(l3, dim=1)
    expect = torch.relu((lt[a] - lt[p]).norm(dim=1) - (lt[a] - lt[n]).norm(dim=1) + 1.0).mean()
    assert torch.allclose(loss, expect, atol=1e-5)
    # anchor 0 -> p 1, n 2: sqrt(2) - 0 + 1; anchor 1 -> p 0, n 2: sqrt(2) - sqrt(2) + 1
    closed = np.where(a == 0, np.sqrt(2) + 1, 1.0)
    assert np.isclose(float(loss), closed.mean(), atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=40), st.integers(0, 100))
def test_triplet_sampler_respects_pseudo_labels(labels, seed):
    pseudo = np.asarray(labels)
    a, p, n = sample_triplets(pseudo, 50, np.random.default_rng(seed))
    if a.size:
        assert np.all(pseudo[a] == pseudo[p]) and np.all(a != p) and np.all(pseudo[n] != pseudo[a])
    else:
        counts = np.bincount(pseudo)
        assert (counts > 0).sum() < 2 or counts.max() < 2


def test_gradcheck_fusion_head_infonce():
    torch.manual_seed(0)
    mus, hs = _views(n=4, z=3, V=2, dtype=torch.float64)
    mus = [m.requires_grad_() for m in mus]
    hs = [h.requires_grad_() for h in hs]
    fusion = GatedFusion(2, 3).double()
    assert torch.autograd.gradcheck(lambda *t: fusion(list(t[:2]), list(t[2:]))[0], (*mus, *hs), fast_mode=True)
    head = StudentTClusterHead(3, 3).double()
    l = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(head, (l,), fast_mode=True)
    assert torch.autograd.gradcheck(lambda x: intra_sample_infonce(x, [m.detach() for m in mus],
                                                                   [h.detach() for h in hs], 0.5), (l,))


def test_propagated_kmeans_matches_dense_propagation_and_zero_hops_is_concat_kmeans():
    from iclr26_dream.baselines import ConcatKMeans, PropagatedKMeans
    from iclr26_dream.data import preprocess_view
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(4)
    Xs = [rng.normal(size=(60, 5)) + np.repeat(np.eye(3, 5) * 3, 20, axis=0), rng.normal(size=(60, 4))]
    parts = []
    for X in Xs:
        Z = preprocess_view(X)
        A = knn_graph(Z, k=10).toarray() + np.eye(60)
        d = 1 / np.sqrt(A.sum(1))
        H = np.linalg.matrix_power(d[:, None] * A * d[None, :], 2) @ Z
        parts.append(H / np.linalg.norm(H, axis=1, keepdims=True))
    expected = KMeans(3, n_init=10, random_state=0).fit_predict(np.hstack(parts))
    assert np.array_equal(PropagatedKMeans(3, random_state=0).fit(Xs).labels_, expected)
    assert np.array_equal(PropagatedKMeans(3, hops=0, random_state=0).fit(Xs).labels_,
                          ConcatKMeans(3, random_state=0).fit(Xs).labels_)
    with pytest.raises(ValueError, match="hops"):
        PropagatedKMeans(3, hops=-1).fit(Xs)


def test_gcn_with_precomputed_first_hop_equals_the_two_layer_formula():
    """H = Â · ReLU(Â (X W₁ᵀ + b₁)) W₂ᵀ + ..., written densely, with and without the cached (ÂX, Â1)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 7))
    a_hat = normalize_adjacency(knn_graph(X, k=4))
    x = torch.as_tensor(X, dtype=torch.float64)
    gcn = ViewGCN(7, hidden=5, latent=3).double()
    dense = a_hat.to_dense().double()
    hidden = torch.relu(dense @ (x @ gcn.lin1.weight.T + gcn.lin1.bias))
    expected = dense @ (hidden @ gcn.lin2.weight.T + gcn.lin2.bias)
    a_hat = a_hat.double()
    torch.testing.assert_close(gcn(x, a_hat), expected)
    torch.testing.assert_close(gcn(x, a_hat, first_hop(x, a_hat)), expected)
