"""Opt-in cross-checks against peer libraries (each test skips when its library is not installed):
snnTorch's ``Leaky`` neuron, torchattacks' FGSM/PGD/APGD and geoopt's Riemannian SGD on the Stiefel manifold.
SpikingJelly's ``LIFNode`` is checked in ``test_stod_neurons.py``."""
import pytest
import torch
from iclr26_stod import LIF, DirectEncoder, EncodedSNN, RiemannianSGD, SpikingConvNet, apgd, fgsm, pgd, qr_retraction


def _snn(T=3):
    torch.manual_seed(0)
    return EncodedSNN(DirectEncoder(T), SpikingConvNet(width=(4, 8))).eval()


def test_lif_matches_snntorch_leaky_reset_to_zero():
    snn = pytest.importorskip("snntorch")
    tau = 2.0
    current = torch.rand(12, 3, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3
    spikes, h = LIF(tau=tau)(current, return_membrane=True)
    # beta = 1 - 1/tau, input scaled by 1/tau; reset_delay=False resets in the step that fires, as LIF does
    leaky = snn.Leaky(beta=1 - 1 / tau, threshold=1.0, reset_mechanism="zero", reset_delay=False)
    mem = torch.zeros_like(current[0])
    ours_after_reset = h * (1 - spikes)
    for t in range(len(current)):
        spk, mem = leaky(current[t] / tau, mem)
        assert torch.equal(spk.to(spikes.dtype), spikes[t])
        assert torch.allclose(mem, ours_after_reset[t], atol=1e-6)
    assert spikes.sum() > 0 and (spikes == 0).any()  # both regimes were exercised


def test_fgsm_and_pgd_match_torchattacks():
    torchattacks = pytest.importorskip("torchattacks")
    model = _snn()
    gen = torch.Generator().manual_seed(1)
    x, y = torch.rand(16, 1, 8, 8, generator=gen), torch.randint(0, 10, (16,), generator=gen)
    theirs = torchattacks.FGSM(model, eps=0.1)(x, y)
    assert torch.allclose(fgsm(model, x, y, 0.1), theirs, atol=1e-6)
    theirs = torchattacks.PGD(model, eps=0.1, alpha=0.03, steps=5, random_start=False)(x, y)
    ours = pgd(model, x, y, 0.1, steps=5, alpha=0.03, random_start=False)
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert (ours != x).any()


def _procrustes(d=6, seed=0):
    """min_O ||A O − B||_F² over orthogonal O: optimum O* = U Vᵀ for Aᵀ B = U Σ Vᵀ."""
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(20, d, generator=gen, dtype=torch.float64)
    B = A @ qr_retraction(torch.randn(d, d, generator=gen, dtype=torch.float64)) + 0.1 * torch.randn(
        20, d, generator=gen, dtype=torch.float64)
    U, _, Vh = torch.linalg.svd(A.T @ B)
    return A, B, U @ Vh


def test_riemannian_sgd_matches_geoopt_and_reaches_the_procrustes_optimum():
    geoopt = pytest.importorskip("geoopt")
    A, B, optimum = _procrustes()
    start = torch.eye(A.shape[1], dtype=torch.float64)
    start[0, 0] = torch.linalg.det(optimum).sign()  # the optimum's component of O(d) (a retraction stays in it)
    ours = torch.nn.Parameter(start.clone())
    theirs = geoopt.ManifoldParameter(start.clone(), manifold=geoopt.EuclideanStiefel())
    opts = [RiemannianSGD([ours], lr=0.01), geoopt.optim.RiemannianSGD([theirs], lr=0.01)]
    for _ in range(300):
        for O, opt in zip((ours, theirs), opts, strict=True):
            opt.zero_grad()
            (A @ O - B).pow(2).sum().backward()
            opt.step()
    # same projection (u − x·sym(xᵀu)) and QR retraction with positive diag(R): the same iterates
    assert torch.allclose(ours.detach(), theirs.detach(), atol=1e-10)
    assert torch.allclose(ours.detach(), optimum, atol=1e-6)


@pytest.mark.parametrize("loss", ["ce", "dlr"])
def test_apgd_matches_torchattacks(loss, trained_direct):
    torchattacks = pytest.importorskip("torchattacks")
    model, x, y = trained_direct
    y = y.clone()
    y[:4] = (y[:4] + 1) % 10  # four images start misclassified: both return them unchanged
    # torchattacks seeds the global RNG with `seed`; a fresh generator with the same seed gives the same draws
    theirs = torchattacks.APGD(model, eps=0.1, steps=12, n_restarts=2, seed=0, loss=loss)(x, y)
    ours = apgd(model, x, y, 0.1, steps=12, loss=loss, restarts=2, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(ours, theirs, atol=1e-6)
    with torch.no_grad():
        fooled = model(ours).argmax(1) != y
    assert fooled[4:].any() and not fooled[4:].all()  # the attack did something, and not everything
