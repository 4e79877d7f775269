"""Renderer: closed form, ordering, conservation, tiled vs dense, gradients, quaternion invariance."""
import math

import pytest
import torch
from iclr26_active_gs import Camera, GaussianModel, contrib_by_gradient, lift_by_gradient, look_at, render
from iclr26_active_gs.render import resolve_backend


def _camera(size=8, f=10.0, dtype=torch.float64):
    K = torch.tensor([[f, 0, size / 2], [0, f, size / 2], [0, 0, 1]], dtype=dtype)
    return Camera(K, torch.eye(3, dtype=dtype), torch.zeros(3, dtype=dtype), size, size)


def _random_model(n, seed, dtype=torch.float64, spread=0.6):
    g = torch.Generator().manual_seed(seed)
    means = (torch.rand(n, 3, generator=g, dtype=dtype) - 0.5) * spread + torch.tensor([0, 0, 3.0], dtype=dtype)
    return GaussianModel.from_arrays(means, torch.log(0.05 + 0.1 * torch.rand(n, 3, generator=g, dtype=dtype)),
                                     torch.randn(n, 4, generator=g, dtype=dtype),
                                     torch.randn(n, generator=g, dtype=dtype),
                                     torch.randn(n, 3, generator=g, dtype=dtype))


def test_single_gaussian_matches_closed_form():
    s, z0, o, f = 0.1, 2.0, 0.7, 10.0
    model = GaussianModel.from_arrays(torch.tensor([[0.0, 0, z0]], dtype=torch.float64),
                                      torch.full((1, 3), math.log(s), dtype=torch.float64),
                                      torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64),
                                      torch.tensor([o], dtype=torch.float64), torch.zeros(1, 3, dtype=torch.float64))
    cam = _camera(16, f)
    out = render(model, cam, bg=(0.2, 0.4, 0.6), mode="dense")
    v, u = torch.meshgrid(torch.arange(16.0, dtype=torch.float64), torch.arange(16.0, dtype=torch.float64),
                          indexing="ij")
    r2 = (u + 0.5 - 8) ** 2 + (v + 0.5 - 8) ** 2
    alpha = torch.sigmoid(torch.tensor(o, dtype=torch.float64)) * torch.exp(-0.5 * r2 / (f**2 * s**2 / z0**2 + 0.3))
    alpha = alpha.clamp(max=0.99)
    alpha = torch.where(alpha >= 1 / 255, alpha, torch.zeros_like(alpha))
    assert torch.allclose(out["alpha"], alpha, atol=1e-5)
    bg = torch.tensor([0.2, 0.4, 0.6], dtype=torch.float64)
    expected = alpha[..., None] * 0.5 + (1 - alpha[..., None]) * bg
    assert torch.allclose(out["rgb"], expected, atol=1e-12)


def test_order_invariance_and_front_dominates():
    model = _random_model(20, 0)
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(1))
    permuted = GaussianModel.from_arrays(model.means[perm], model.log_scales[perm], model.quats[perm],
                                         model.opacity_logits[perm], model.color_logits[perm])
    cam = _camera(16, 12.0)
    a, b = render(model, cam, return_contrib=True), render(permuted, cam, return_contrib=True)
    assert torch.allclose(a["rgb"], b["rgb"], atol=1e-6)
    assert torch.allclose(a["contrib"][perm], b["contrib"], atol=1e-6)
    two = GaussianModel.from_arrays(torch.tensor([[0.0, 0, 4.0], [0.0, 0, 2.0]]), torch.full((2, 3), math.log(0.5)),
                                    torch.tensor([[1.0, 0, 0, 0]] * 2), torch.tensor([10.0, 10.0]),
                                    torch.tensor([[-8.0, 8.0, -8.0], [8.0, -8.0, -8.0]]))
    pix = render(two, _camera(9, 10.0, torch.float32))["rgb"][4, 4]  # pixel centre on the axis
    # alpha is clamped at 0.99, so 1% of the back colour always shows through
    assert torch.allclose(pix, torch.sigmoid(torch.tensor([8.0, -8.0, -8.0])), atol=1.5e-2)
    assert pix[0] > 0.95 and pix[1] < 0.015


@pytest.mark.parametrize("seed", [0, 1])
def test_conservation_and_tiled_equals_dense(seed):
    model = _random_model(40, seed)
    cam = _camera(20, 14.0)  # 20 px: tiles of 4 and 8 straddle and cross the image border
    dense = render(model, cam, mode="dense", return_contrib=True)
    assert torch.isclose(dense["contrib"].sum(), dense["alpha"].sum(), rtol=1e-5)
    for tile in (4, 8, 16):
        tiled = render(model, cam, mode="tiled", tile_size=tile, return_contrib=True)
        for key in ("rgb", "alpha", "depth", "contrib"):
            assert torch.allclose(dense[key], tiled[key], atol=1e-6), (tile, key)
    grads = []
    for mode in ("dense", "tiled"):
        model.zero_grad()
        out = render(model, cam, mode=mode, return_contrib=True)
        ((out["rgb"] ** 2).sum() + out["depth"].sum() + out["contrib"].sum()).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in (model.means, model.log_scales, model.quats,
                                                              model.opacity_logits, model.color_logits)]))
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_contrib_by_colour_gradient_equals_direct():
    model = _random_model(30, 3)
    cam = _camera(16, 12.0)
    direct = render(model, cam, return_contrib=True)["contrib"]
    assert torch.allclose(contrib_by_gradient(model, cam, backend="torch"), direct, atol=1e-6)


def test_lifting_by_gradient_equals_the_direct_sum():
    """The gradient trick the gsplat backend lifts with, checked on the torch backend against the direct sum."""
    model = _random_model(30, 5)
    cam = _camera(16, 12.0)
    feats = torch.randn(16, 16, 5, generator=torch.Generator().manual_seed(0), dtype=model.means.dtype)
    direct = render(model, cam, lift=feats)["lifted"]
    assert direct.abs().max() > 1e-2
    for mode in ("tiled", "dense"):
        assert torch.allclose(lift_by_gradient(model, cam, feats, backend="torch", mode=mode), direct, atol=1e-6)
    with pytest.raises(ValueError, match="lift"):
        lift_by_gradient(model, cam, feats[:8])


def test_gradcheck_parameters_and_camera_twist():
    model = _random_model(3, 4, spread=0.3)
    cam = _camera(8, 8.0)
    xi = torch.zeros(6, dtype=torch.float64, requires_grad=True)
    leaves = [model.means, model.log_scales, model.quats, model.opacity_logits, model.color_logits, xi]

    def f(*_):  # gradcheck perturbs the leaves in place; the model reads them
        out = render(model, cam.perturbed(xi), mode="dense")
        return out["rgb"], out["depth"]

    assert torch.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-5, fast_mode=True)


def test_quaternion_sign_and_scale_invariance():
    model = _random_model(10, 5)
    cam = _camera(12, 10.0)
    ref = render(model, cam)["rgb"]
    for factor in (-1.0, 3.0):
        other = GaussianModel.from_arrays(model.means, model.log_scales, model.quats * factor, model.opacity_logits,
                                          model.color_logits)
        assert torch.allclose(render(other, cam)["rgb"], ref, atol=1e-10)


def test_everything_behind_camera_gives_background_and_finite_gradients():
    model = _random_model(5, 6)
    with torch.no_grad():
        model.means[:, 2] = -2.0
        model.means[0, 2] = 0.01  # exactly at the near plane: dropped
    out = render(model, _camera(8), return_contrib=True, bg=(0.1, 0.2, 0.3))
    assert torch.allclose(out["rgb"], torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64).expand(8, 8, 3))
    assert torch.all(out["contrib"] == 0)
    out["rgb"].sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in (model.means, model.log_scales, model.quats))


def test_bad_inputs_raise_clear_errors():
    model = _random_model(3, 7)
    cam = _camera(8)
    with pytest.raises(ValueError, match="backend"):
        render(model, cam, backend="vulkan")
    with pytest.raises(ValueError, match="gsplat"):
        resolve_backend("gsplat", torch.device("cpu"))
    with pytest.raises(ValueError, match="means"):
        GaussianModel.from_arrays(torch.full((2, 3), math.nan), torch.zeros(2, 3), torch.ones(2, 4), torch.zeros(2),
                                  torch.zeros(2, 3))
    with pytest.raises(ValueError, match="quats"):
        GaussianModel.from_arrays(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2),
                                  torch.zeros(2, 3))
    with pytest.raises(ValueError, match="focal"):
        Camera(torch.diag(torch.tensor([0.0, 1.0, 1.0])), torch.eye(3), torch.zeros(3), 8, 8)
    with pytest.raises(ValueError, match="lift"):
        render(model, cam, lift=torch.zeros(4, 4, 2))


@pytest.mark.cuda
def test_gsplat_matches_torch_renderer_on_toy_scene():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    pytest.importorskip("gsplat")
    from iclr26_active_gs import SyntheticObjectScene, psnr

    scene = SyntheticObjectScene(n_test=0)
    gt = scene.gt.to("cuda")
    for cam in scene.candidates[:4]:
        a = render(gt, cam.to("cuda"), backend="torch")["rgb"]
        b = render(gt, cam.to("cuda"), backend="gsplat")["rgb"]
        assert psnr(a.clamp(0, 1), b.clamp(0, 1)) >= 40.0


@pytest.mark.cuda
def test_gsplat_lifting_and_pick_match_the_torch_backend():
    """Issue 28 item 3: lifted features within 1e-3 relative and the same top-1 pick on the toy scene."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    pytest.importorskip("gsplat")
    from iclr26_active_gs import HandcraftedFeatures, SemanticVarianceSelector, SyntheticObjectScene

    scene = SyntheticObjectScene(n_test=0)
    gt = scene.gt.to("cuda")
    train = scene.candidates[::12]
    images = [scene.render_gt(c) for c in train]
    feats = torch.as_tensor(HandcraftedFeatures()(images[0]), dtype=gt.means.dtype, device="cuda")
    a = render(gt, train[0].to("cuda"), backend="torch", lift=feats)["lifted"]
    b = render(gt, train[0].to("cuda"), backend="gsplat", lift=feats)["lifted"]
    assert (a - b).norm() <= 1e-3 * a.norm()
    cams = [c.to("cuda") for c in scene.candidates]
    picks = [SemanticVarianceSelector(render_kw={"backend": be}).select(gt, images, [c.to("cuda") for c in train],
                                                                       cams, 1) for be in ("torch", "gsplat")]
    assert picks[0] == picks[1]


def test_look_at_points_the_camera_at_the_target():
    cam = look_at((0.0, -3.0, 1.0), width=16, height=16)
    assert torch.allclose(cam.R @ torch.zeros(3) + cam.t, torch.tensor([0.0, 0.0, math.sqrt(10.0)]), atol=1e-5)


def test_look_at_keeps_up_at_the_top_of_the_image():
    cam = look_at((3.0, 0.0, 0.0))
    assert torch.allclose(cam.R[1], torch.tensor([0.0, 0.0, -1.0]), atol=1e-6)  # image y (down) = world -z
    assert torch.linalg.det(cam.R) > 0
