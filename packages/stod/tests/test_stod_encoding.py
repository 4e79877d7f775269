import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_stod import (
    PFD,
    DirectEncoder,
    RateEncoder,
    STODEncoder,
    gor_loss,
    householder_kernels,
    orthogonality_error,
    patchify,
    unpatchify,
)


@given(st.integers(1, 3), st.sampled_from([1, 2, 4]), st.integers(1, 3), st.integers(1, 3), st.integers(0, 10**6))
@settings(max_examples=15, deadline=None)
def test_patchify_roundtrip_exact(C, p, nh, nw, seed):
    x = torch.rand(2, C, nh * p, nw * p, generator=torch.Generator().manual_seed(seed))
    patches = patchify(x, p)
    assert patches.shape == (2, nh * nw, C * p * p)
    assert torch.equal(unpatchify(patches, p, C, nh * p, nw * p), x)


def test_patch_vector_layout():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    assert patchify(x, 2)[0, 1].tolist() == [2.0, 3.0, 6.0, 7.0]  # the top-right 2x2 patch


def test_pfd_preserves_norm_per_step():
    pfd = PFD(4, 3, patch_size=2, init="householder_random")
    x = torch.rand(5, 3, 4, 6)
    out = pfd(x)
    assert out.shape == (4, 5, 3, 4, 6)
    assert torch.allclose(out.flatten(2).norm(dim=2), x.flatten(1).norm(dim=1).expand(4, 5), atol=1e-5)


def test_identity_init_is_direct_encoding():
    x = torch.rand(3, 1, 8, 8)
    assert torch.equal(PFD(4, 1, 4, init="identity")(x), DirectEncoder(4)(x))


def test_householder_init_negates_entry_t_of_every_patch():
    k = householder_kernels(4, 16)
    for t in range(4):
        expected = torch.eye(16)
        expected[t, t] = -1
        assert torch.equal(k[t], expected)
    x = torch.rand(2, 1, 8, 8)
    out = PFD(4, 1, 4)(x)
    for t in range(4):
        ref = patchify(x, 4).clone()
        ref[:, :, t] *= -1
        assert torch.allclose(out[t], unpatchify(ref, 4, 1, 8, 8))


def test_householder_needs_T_le_d():
    with pytest.raises(ValueError, match="T <= C\\*p\\^2"):
        PFD(5, 1, patch_size=2)
    assert orthogonality_error(PFD(5, 1, patch_size=2, init="householder_random").kernels.detach()) < 1e-5


def test_indivisible_image_is_refused():
    with pytest.raises(ValueError, match="divisible"):
        PFD(2, 1, patch_size=3)(torch.rand(1, 1, 8, 8))


def test_gor_identical_and_orthogonal():
    x = torch.rand(3, 2, 5)
    assert float(gor_loss(x[:1].expand(4, 3, 2, 5))) == pytest.approx(6.0, abs=1e-5)
    eye = torch.eye(4).reshape(4, 1, 4).expand(4, 2, 4)
    assert float(gor_loss(eye)) == pytest.approx(0.0, abs=1e-12)


def test_gor_matches_numpy_double_loop():
    x = torch.randn(5, 3, 2, 4, dtype=torch.float64)
    flat = x.reshape(5, 3, -1).numpy()
    ref = np.mean([sum((flat[i, b] @ flat[j, b] / np.linalg.norm(flat[i, b]) / np.linalg.norm(flat[j, b])) ** 2
                       for i, j in itertools.combinations(range(5), 2)) for b in range(3)])
    assert float(gor_loss(x)) == pytest.approx(ref, abs=1e-6)


def test_gor_needs_two_steps():
    with pytest.raises(ValueError, match="T >= 2"):
        gor_loss(torch.rand(1, 2, 3))
    with pytest.warns(UserWarning):
        assert float(gor_loss(torch.rand(1, 2, 3), allow_single_step=True)) == 0.0


def test_rate_encoder_mean_and_ste_gradient():
    x = torch.rand(2, 1, 3, 3)
    enc = RateEncoder(10_000, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(enc(x).mean(0), x, atol=0.02)
    xg = x.clone().requires_grad_(True)
    seq = RateEncoder(5)(xg)
    w = torch.randn(5, 2, 1, 3, 3)
    (seq * w).sum().backward()
    assert torch.allclose(xg.grad, w.sum(0))


def test_rate_encoder_refuses_unnormalised_input():
    with pytest.raises(ValueError, match="normalisation belongs inside EncodedSNN"):
        RateEncoder(4)(torch.rand(1, 1, 2, 2) * 3)
    with pytest.raises(ValueError, match="gradient"):
        RateEncoder(4, gradient="exact")


def test_stod_keep_kernels_switch():
    x = torch.rand(2, 1, 8, 8)
    enc = STODEncoder(4, 1, patch_size=4, keep_kernels=False)
    train_out = enc.train()(x)
    assert not torch.equal(train_out, DirectEncoder(4)(x))
    assert float(enc.regularizer().detach()) > 0
    assert torch.equal(enc.eval()(x), DirectEncoder(4)(x))
    enc.keep_kernels = True
    assert torch.equal(enc(x), train_out)


def test_parametrization_backend_stays_orthogonal():
    pfd = PFD(3, 1, patch_size=2, kernel_backend="parametrization")
    assert torch.allclose(pfd.kernels, householder_kernels(3, 4), atol=1e-6)
    opt = torch.optim.SGD(pfd.parameters(), lr=0.5)
    for _ in range(5):
        opt.zero_grad()
        pfd(torch.rand(2, 1, 4, 4)).pow(3).sum().backward()
        opt.step()
    assert pfd.orthogonality_error() < 1e-4  # float32 matrix exponential, not a retraction


def test_fitted_stod_model_holds_no_graph_and_deep_copies():
    import copy

    from iclr26_stod import TensorBatches, build_model, fit

    x, y = torch.rand(16, 1, 8, 8), torch.randint(0, 2, (16,))
    model = build_model("stod", T=4, patch_size=4, in_channels=1, num_classes=2, image_size=8)
    fit(model, TensorBatches(x, y, 8), epochs=1, device="cpu")
    assert model.encoder._last is None
    twin = copy.deepcopy(model)
    assert torch.equal(twin(x), model(x))
    enc = model.encoder.train()
    enc(x)
    assert enc.regularizer().requires_grad and enc._last is None  # handed over once, then released
    enc(x)
    enc.eval()
    assert enc._last is None


def test_fit_with_the_sibling_repositories_training_convention():
    from iclr26_stod import TensorBatches, build_model, fit

    x = torch.rand(32, 1, 8, 8)
    y = (x.mean((1, 2, 3)) > x.mean()).long()
    kw = {"neuron_kw": {"tau": 1.1, "v_reset": None, "decay_input": False, "surrogate": "triangle",
                        "detach_membrane": True}}
    model = build_model("stod", T=4, patch_size=4, in_channels=1, num_classes=2, image_size=8, **kw)
    hist = fit(model, TensorBatches(x, y, 8, shuffle=True), epochs=3, optimizer="sgd", lr=0.1, per_step_ce=True,
               device="cpu")
    assert all(np.isfinite(hist.loss)) and hist.ce[-1] < hist.ce[0]
    with pytest.raises(ValueError, match="optimizer"):
        fit(model, TensorBatches(x, y, 8), epochs=1, optimizer="rmsprop")
