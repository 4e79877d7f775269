"""SE(3), feature variance, Fisher probes, region partition, SSIM: against independent computations."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_active_gs import (
    Camera,
    GaussianModel,
    fisher_diagonal,
    fisher_probe_gradients,
    partition_regions,
    se3_exp,
    se3_log,
    ssim,
)
from iclr26_active_gs.regions import knn_graph
from iclr26_active_gs.train import ssim_torch
from iclr26_active_gs.variance import variance_from_stats
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.transform import Rotation


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_se3_log_inverts_exp(values):
    xi = torch.tensor(values, dtype=torch.float64)
    xi[:3] *= 0.99 * math.pi / max(1.0, float(xi[:3].norm()) * math.sqrt(3))
    assert torch.allclose(se3_log(se3_exp(xi)), xi, atol=1e-8)
    rot = Rotation.from_rotvec(xi[:3].numpy()).as_matrix()
    assert np.allclose(se3_exp(xi)[:3, :3].numpy(), rot, atol=1e-10)


def test_se3_exp_of_zero_is_identity():
    assert torch.equal(se3_exp(torch.zeros(6, dtype=torch.float64)), torch.eye(4, dtype=torch.float64))


def test_variance_closed_forms():
    K, kappa, var0 = 4, 1.0, 0.7
    contrib = torch.tensor([[2.0, 0.0], [3.0, 0.0], [0.5, 0.0]], dtype=torch.float64)  # Gaussian 1 never seen
    feat = torch.tensor([0.3, -1.0, 2.0, 0.5], dtype=torch.float64)
    lifted = contrib[..., None] * feat  # identical features in every view
    var = variance_from_stats(contrib, lifted, var0, kappa)
    assert torch.isclose(var[0], torch.tensor(kappa * var0 / (5.5 + kappa), dtype=torch.float64), atol=1e-15)
    assert var[1] == var0
    assert var0 == pytest.approx(float(variance_from_stats(torch.zeros(2, 1), torch.zeros(2, 1, K), var0)[0]))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_adding_a_view_at_the_mean_never_increases_variance(seed):
    g = torch.Generator().manual_seed(seed)
    V, N, K = 3, 5, 4
    contrib = torch.rand(V, N, generator=g, dtype=torch.float64) * 3
    lifted = contrib[..., None] * torch.randn(V, N, K, generator=g, dtype=torch.float64)
    before = variance_from_stats(contrib, lifted, 1.0)
    mean = lifted.sum(0) / contrib.sum(0)[:, None]
    w_new = torch.rand(1, N, generator=g, dtype=torch.float64) * 2 + 0.01
    after = variance_from_stats(torch.cat([contrib, w_new]), torch.cat([lifted, w_new[..., None] * mean[None]]), 1.0)
    assert torch.all(after <= before + 1e-12)


def _two_gaussians():
    model = GaussianModel.from_arrays(torch.tensor([[0.05, 0.0, 2.0], [-0.1, 0.05, 2.4]], dtype=torch.float64),
                                      torch.log(torch.tensor([[0.12, 0.1, 0.08], [0.1, 0.14, 0.1]],
                                                             dtype=torch.float64)),
                                      torch.tensor([[1.0, 0.1, 0.0, 0.2], [0.9, 0.0, 0.3, 0.0]], dtype=torch.float64),
                                      torch.tensor([0.5, 1.0], dtype=torch.float64),
                                      torch.tensor([[0.2, -0.3, 0.5], [-0.4, 0.1, 0.3]], dtype=torch.float64))
    K = torch.tensor([[6.0, 0, 3], [0, 6.0, 3], [0, 0, 1]], dtype=torch.float64)
    return model, Camera(K, torch.eye(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64), 6, 6)


def test_fisher_probes_match_the_exact_diagonal():
    from iclr26_active_gs import render

    model, cam = _two_gaussians()
    names = ["means", "log_scales", "quats", "opacity_logits", "color_logits"]

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self):
            return render(self.m, cam, mode="dense")["rgb"].reshape(-1)

    wrapped = Wrapped()

    def f(*xs):
        return torch.func.functional_call(wrapped, {f"m.{n}": x for n, x in zip(names, xs, strict=True)}, ())

    jac = torch.autograd.functional.jacobian(f, tuple(getattr(model, n).detach().clone() for n in names))
    jac_parts = [j.reshape(108, -1) for j in jac]
    exact = (torch.cat(jac_parts, 1) ** 2).sum(0)
    onehot = torch.eye(108, dtype=torch.float64).reshape(108, 6, 6, 3)
    assert torch.allclose((fisher_probe_gradients(model, cam, onehot, render_kw={"mode": "dense"}) ** 2).sum(0),
                          exact, atol=1e-10, rtol=0)
    # spec: 4,096 probes; 1,024 keep the suite within its CI budget, bounds scaled with sqrt(2/n)
    n = 1024
    est = fisher_diagonal(model, cam, n_probes=n, generator=torch.Generator().manual_seed(0))
    keep = exact > 1e-12 * exact.max()
    assert float((est - exact).norm() / exact.norm()) < 2 * math.sqrt(2 / n)
    assert torch.all(((est - exact).abs() / exact)[keep] < 4 * math.sqrt(2 / n))


def _blob_model(seed=0, n=120):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.6, 0, 0], [-0.6, 0, 0], [0, 0.6, 0]])
    means = np.concatenate([c + 0.08 * rng.normal(size=(n // 3, 3)) for c in centres])
    opacity = np.full(len(means), 0.0)
    opacity[:3] = -8.0  # three nearly transparent Gaussians: excluded
    return GaussianModel.from_arrays(means, np.full((len(means), 3), np.log(0.05)), np.tile([1.0, 0, 0, 0], (n, 1)),
                                     opacity, rng.normal(size=(n, 3)))


def test_partition_is_deterministic_complete_and_knn_connected():
    from iclr26_active_gs import fibonacci_sphere_cameras

    model = _blob_model()
    cams = fibonacci_sphere_cameras(4, radius=3.0, width=16, height=16)
    a = partition_regions(model, cams, n_regions=6, seed=3)
    b = partition_regions(model, cams, n_regions=6, seed=3)
    assert np.array_equal(a, b)
    keep = model.opacity.detach().numpy() >= 0.01
    assert np.all(a[~keep] == -1) and np.all(a[keep] >= 0)
    pts = model.means.detach().numpy()[keep]
    ei, ej, _ = knn_graph(pts, 8)
    lab = a[keep]
    for r in np.unique(lab):
        idx = np.flatnonzero(lab == r)
        sel = np.isin(ei, idx) & np.isin(ej, idx)
        pos = {v: k for k, v in enumerate(idx)}
        graph = coo_matrix((np.ones(sel.sum()), ([pos[v] for v in ei[sel]], [pos[v] for v in ej[sel]])),
                           shape=(len(idx), len(idx)))
        assert connected_components(graph, directed=False)[0] == 1
    with pytest.raises(ValueError, match="n_regions"):
        partition_regions(model, cams, n_regions=1000)


def test_torch_ssim_equals_scikit_image():
    g = torch.Generator().manual_seed(0)
    a = torch.rand(20, 24, 3, generator=g, dtype=torch.float64)
    b = (a + 0.1 * torch.randn(20, 24, 3, generator=g, dtype=torch.float64)).clamp(0, 1)
    assert float(ssim_torch(a, b)) == pytest.approx(ssim(a, b), abs=1e-6)


def test_probes_are_seen_in_front_of_the_surface_only():
    """Never-observed space: a probe counts when it projects into the image no deeper than the surface."""
    from iclr26_active_gs import Camera, GaussianModel
    from iclr26_active_gs.unexplored import probe_footprint, probe_points

    cam = Camera(torch.tensor([[10.0, 0, 8], [0, 10.0, 8], [0, 0, 1]]), torch.eye(3), torch.zeros(3), 16, 16)
    alpha = torch.ones(16, 16)
    alpha[:, 8:] = 0.0  # right half: an empty ray
    rendered = {"alpha": alpha, "depth": 3.0 * alpha}  # left half: a surface at depth 3
    probes = np.array([[-0.1, 0, 2.0], [-0.1, 0, 5.0], [0.1, 0, 5.0], [5.0, 0, 2.0], [0, 0, -1.0]])
    fp = probe_footprint(probes, 0.5, cam, rendered, margin=0.1)
    assert fp[0] == pytest.approx((10 * 0.5 / 2.0) ** 2)  # in front of the surface
    assert fp[1] == 0 and fp[2] > 0  # behind the surface / along the empty ray
    assert fp[3] == 0 and fp[4] == 0  # outside the image / behind the camera
    pts, h = probe_points(GaussianModel(200, seed=0), grid=8)
    assert len(pts) > 100 and h > 0 and np.linalg.norm(pts - pts.mean(0), axis=1).max() <= 1.0 + 1e-9
