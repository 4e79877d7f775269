"""Encoder structure, loss limits, determinism, baseline KL, and bad input."""
import numpy as np
import pytest
import torch
from iclr26_diffsda import DiffSDA, LatentPrior, SequentialEncoder, SeqVAE
from iclr26_diffsda.baselines import gaussian_kl


def tiny(**kw):
    torch.manual_seed(0)
    return DiffSDA((6,), s_dim=3, d_dim=2, hidden_dim=5, mlp_hidden=2, **kw)


def seqs(n=3, v=4, f=6, seed=0):
    return torch.randn(n, v, f, generator=torch.Generator().manual_seed(seed)) * 0.5


def test_static_code_has_no_time_axis_and_ignores_padding_values():
    enc = SequentialEncoder((6,), s_dim=3, d_dim=2, hidden_dim=5, mlp_hidden=2).eval()
    x = seqs(v=5)
    lengths = torch.tensor([3, 5, 4])
    s1, d1 = enc(x, lengths)
    x2 = x.clone()
    x2[0, 3:] = 7.0
    x2[2, 4:] = -3.0
    s2, d2 = enc(x2, lengths)
    assert s1.shape == (3, 3) and d1.shape == (3, 5, 2)
    torch.testing.assert_close(s1, s2)
    torch.testing.assert_close(d1[0, :3], d2[0, :3])


def test_changing_one_element_changes_its_dynamic_code():
    enc = SequentialEncoder((6,), s_dim=3, d_dim=2, hidden_dim=5, mlp_hidden=2).eval()
    x = seqs()
    x2 = x.clone()
    x2[1, 2] += 1.0
    _, d1 = enc(x)
    _, d2 = enc(x2)
    assert (d1[1, 2] - d2[1, 2]).abs().max() > 1e-4
    torch.testing.assert_close(d1[0], d2[0])


def test_encoder_gradcheck_both_heads():
    enc = SequentialEncoder((3,), s_dim=2, d_dim=1, hidden_dim=2, mlp_hidden=1, dropout=0.0).double().eval()
    x = torch.randn(1, 3, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: enc(t)[0], (x,), eps=1e-6, atol=1e-5)
    assert torch.autograd.gradcheck(lambda t: enc(t)[1], (x,), eps=1e-6, atol=1e-5)


def test_static_code_changes_smoothly():
    enc = SequentialEncoder((6,), s_dim=3, d_dim=2, hidden_dim=5, mlp_hidden=2, dropout=0.0).double().eval()
    x = seqs().double()
    direction = torch.randn_like(x)
    s0, s1, s2 = (enc(x + h * direction)[0] for h in (0.0, 1e-4, 2e-4))
    assert (s1 - s0).abs().max() > 0
    torch.testing.assert_close(s2 - s1, s1 - s0, atol=1e-7, rtol=1e-2)


def test_denoiser_zero_noise_limit_and_finite_loss():
    model = tiny().eval()
    x = seqs().reshape(-1, 6)
    z = torch.randn(x.shape[0], 5)
    out = model.denoiser(x, torch.full((x.shape[0],), 1e-6), z)
    torch.testing.assert_close(out, x, atol=1e-5, rtol=0)
    for sigma in (1e-3, 1.0, 1e2):
        model.P_mean, model.P_std = float(np.log(sigma)), 1e-9
        assert torch.isfinite(model.loss(seqs()))


def test_masked_entries_do_not_enter_the_loss():
    model = tiny(dropout=0.0)
    x = seqs()
    mask = torch.ones_like(x)
    mask[:, :, 3:] = 0
    x2 = x.clone()
    x2[:, :, 3:] = 100.0
    torch.manual_seed(1)
    a = model.loss(x, mask)
    torch.manual_seed(1)
    b = model.loss(x2, mask)
    torch.testing.assert_close(a, b)


def test_decode_deterministic_with_generator_and_shared_noise():
    model = tiny()
    s, d = model.encode(seqs())
    outs = [model.decode(s, d, steps=3, shared_noise=True, generator=torch.Generator().manual_seed(7))
            for _ in range(2)]
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)
    x_T = model.noise(3, 4, shared_noise=True, generator=torch.Generator().manual_seed(7))
    torch.testing.assert_close(x_T[:, 0], x_T[:, 3])


def test_data_scale_warns_and_is_undone_on_decode():
    model = tiny()
    x = seqs() * 10 + 5
    with pytest.warns(UserWarning, match="rescaling"):
        shift, scale = model.set_data_scale(x)
    assert scale > 1
    s, d = model.encode(x)
    out = model.decode(s, d, steps=2, generator=torch.Generator().manual_seed(0))
    assert out.abs().max() > 2


def test_gaussian_kl_matches_torch_distributions():
    mq, lq, mp, lp = (torch.randn(5, 3) for _ in range(4))
    ref = torch.distributions.kl_divergence(torch.distributions.Normal(mq, (0.5 * lq).exp()),
                                            torch.distributions.Normal(mp, (0.5 * lp).exp()))
    torch.testing.assert_close(gaussian_kl(mq, lq, mp, lp), ref)


def test_seqvae_loss_and_swap_shapes():
    torch.manual_seed(0)
    vae = SeqVAE((6,), s_dim=3, d_dim=2, hidden_dim=5, mlp_hidden=2)
    assert torch.isfinite(vae.loss(seqs()))
    assert vae.swap(seqs(), seqs(seed=1)).shape == (3, 4, 6)


def test_latent_prior_samples_shape():
    prior = LatentPrior(3, steps=20).fit(torch.randn(64, 3) + 2.0, epochs=2)
    out = prior.sample(5, ddim_steps=5, generator=torch.Generator().manual_seed(0))
    assert out.shape == (5, 3) and torch.isfinite(out).all()


@pytest.mark.parametrize("call, match", [
    (lambda m: m.loss(torch.zeros(2, 1, 6)), "V >= 2"),
    (lambda m: m.loss(torch.zeros(2, 3, 5)), "elements of shape"),
    (lambda m: m.loss(torch.full((2, 3, 6), float("nan"))), "NaN"),
    (lambda m: m.loss(torch.zeros(2, 3, 6), torch.ones(2, 3, 5)), "mask"),
    (lambda m: m.decode(torch.zeros(2, 4), torch.zeros(2, 3, 2)), "s:"),
    (lambda m: m.decode(torch.zeros(2, 3), torch.zeros(2, 3, 1)), "d:"),
    (lambda m: m.decode(torch.zeros(2, 3), torch.zeros(2, 3, 2), steps=1), "steps"),
    (lambda m: m.swap(torch.zeros(2, 3, 6), torch.zeros(2, 4, 6)), "x_dynamic"),
    (lambda m: m.loss([[1.0]]), "numpy array or torch tensor"),
])
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(tiny())


@pytest.mark.parametrize("kw", [{"d_dim": 0}, {"s_dim": 0}, {"backbone": "rnn"}])
def test_bad_hyperparameters(kw):
    with pytest.raises(ValueError):
        DiffSDA((6,), **kw)


@pytest.mark.cuda
def test_decode_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    model = tiny().cuda()
    s, d = model.encode(seqs())
    assert model.decode(s, d, steps=2).device.type == "cuda"


def test_conv_backbone_runs_on_sprite_frames():
    from iclr26_diffsda import make_sprites

    torch.manual_seed(0)
    x = make_sprites(2, seed=0).x[:, :3]
    model = DiffSDA((3, 16, 16), s_dim=4, d_dim=2, hidden_dim=4, mlp_hidden=2, backbone="conv", unet_channels=8)
    assert torch.isfinite(model.loss(x))
    s, d = model.encode(x)
    assert model.decode(s, d, steps=2).shape == (2, 3, 3, 16, 16)
    vae = SeqVAE((3, 16, 16), s_dim=4, d_dim=2, hidden_dim=4, mlp_hidden=2, backbone="conv")
    assert torch.isfinite(vae.loss(x)) and vae.reconstruct(x).shape == x.shape


class _OptimalDenoiser(torch.nn.Module):
    """D*(x; sigma) = sigma_d^2 / (sigma^2 + sigma_d^2) x, the ideal denoiser of N(0, sigma_d^2) data."""

    def forward(self, x, sigma, z):
        return 0.25 / (sigma[:, None] ** 2 + 0.25) * x


def test_weighted_loss_of_the_optimal_denoiser_is_one_with_repeats():
    # lambda(sigma) E||D* - x0||^2 = lambda sigma^2 sigma_d^2 / (sigma^2 + sigma_d^2) = 1 for every sigma, so the
    # weighting is right iff the loss of D* on N(0, 0.5^2) data is 1 (for any P_mean, P_std and repeat count)
    for repeats, p_mean, p_std in ((1, -0.4, 1.0), (3, -1.2, 1.2)):
        model = tiny(noise_repeats=repeats, P_mean=p_mean, P_std=p_std)
        model.denoiser = _OptimalDenoiser()
        torch.manual_seed(1)
        x = 0.5 * torch.randn(4000, 4, 6)
        assert model.loss(x).item() == pytest.approx(1.0, abs=0.03)


def test_train_model_clips_the_gradient_norm():
    from iclr26_diffsda import train_model

    norms = []
    model = tiny()
    x = 0.5 * seqs(n=8)

    def record(step, m):  # after the step the gradients are still those the optimiser used
        norms.append(float(torch.nn.utils.get_total_norm([p.grad for p in m.parameters() if p.grad is not None])))

    train_model(model, x, steps=3, batch_size=8, lr=1e-3, warmup=1, clip_grad=1e-3, callback=record)
    assert max(norms) <= 1e-3 * (1 + 1e-4)
    with pytest.raises(ValueError, match="clip_grad"):
        train_model(model, x, steps=1, clip_grad=0.0)
