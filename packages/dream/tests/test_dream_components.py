"""Each learning component alone, where the answer is known (issue 30): the gate and the view weights follow
the clean input under the clustering loss, the intra-sample InfoNCE pulls the gate the other way, the VAE
clusters a clean view, and the benchmark's rows do not depend on how many workers ran them."""
import numpy as np
import pytest
import torch
from iclr26_dream.bench import SCHEDULE, Job, run_jobs
from iclr26_dream.data import preprocess_view
from iclr26_dream.losses import cluster_loss, dec_target, intra_sample_infonce, vae_loss
from iclr26_dream.nn import GatedFusion, StudentTClusterHead, ViewVAE
from iclr26_shared.metrics import clustering_accuracy
from sklearn.cluster import KMeans
from torch.nn import functional as F


def _blobs(seed: int, n: int = 600, k: int = 4, d: int = 16):
    """Labels (n,), a clean view (4 Gaussian blobs, centres ~ N(0, 4 I)) and a pure-noise view, both (n, d)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    clean = (rng.normal(size=(k, d)) * 2.0)[y] + rng.normal(size=(n, d))
    noise = rng.normal(size=(n, d))
    return y, torch.tensor(clean, dtype=torch.float32), torch.tensor(noise, dtype=torch.float32)


def _train_fusion(mus, hs, k: int, seed: int, infonce: bool = False, steps: int = 30):
    """Trains GatedFusion + the Student-t head on fixed branch outputs (lists of V ``(n, z)``) with L_Cluster
    (k-means start, DEC target refreshed every step; + the intra-sample InfoNCE when ``infonce``), Adam lr 1e-2
    (DREAM's ``fusion_lr``). Returns (mean semantic share per view (V,), mean view weight per view (V,), labels)."""
    torch.manual_seed(seed)
    fusion, head = GatedFusion(len(mus), mus[0].shape[1]), StudentTClusterHead(k, mus[0].shape[1])
    with torch.no_grad():
        l0 = F.normalize(fusion(mus, hs)[0], dim=1).numpy()
        head.centres.copy_(torch.as_tensor(KMeans(k, n_init=10, random_state=seed).fit(l0).cluster_centers_,
                                           dtype=torch.float32))
    opt = torch.optim.Adam([*fusion.parameters(), *head.parameters()], lr=1e-2)
    for _ in range(steps):
        with torch.no_grad():
            p = dec_target(head(fusion(mus, hs)[0]))
        l, _, _ = fusion(mus, hs)
        loss = cluster_loss(head(l), p) + (intra_sample_infonce(l, mus, hs, 0.5) if infonce else 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        l, s, alpha = fusion(mus, hs)
        return s.mean(dim=(0, 2)).numpy(), alpha.mean(dim=0).numpy(), head(l).argmax(dim=1).numpy()


@pytest.mark.parametrize("seed", [0, 1])
def test_gate_moves_to_the_clean_branch_under_the_clustering_loss(seed):
    y, clean, noise = _blobs(seed)
    share, _, labels = _train_fusion([noise], [clean], 4, seed)  # μ noise, h clean: the gate goes to h
    assert share[0] < 0.4 and clustering_accuracy(y, labels) > 0.95
    share, _, labels = _train_fusion([clean], [noise], 4, seed)  # μ clean, h noise: the gate goes to μ
    assert share[0] > 0.6 and clustering_accuracy(y, labels) > 0.95


def test_view_weights_move_to_the_clean_view():
    y, clean, noise = _blobs(2)
    _, alpha, labels = _train_fusion([clean, noise], [clean, noise], 4, 2)
    assert alpha[0] > 0.8 and clustering_accuracy(y, labels) > 0.95


def test_intra_sample_infonce_pulls_the_gate_to_the_noise_branch():
    """The spec's InfoNCE (l against its own μ and h, all samples' in the denominator) rewards whatever makes a
    sample unique, and pure noise is the most unique: with it the gate goes to the noise branch (README)."""
    _, clean, noise = _blobs(0)
    share, _, _ = _train_fusion([noise], [clean], 4, 0, infonce=True)
    assert share[0] > 0.6


def test_vae_clusters_a_clean_view():
    y, clean, _ = _blobs(3)
    torch.manual_seed(3)
    x = torch.as_tensor(preprocess_view(clean.numpy()), dtype=torch.float32)
    vae = ViewVAE(x.shape[1], (64, 32), 8)
    opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
    weight = 0.1 * 2.0 * float(x.var(dim=0).mean())  # DREAM's variance-scaled KL weight, λ₁ = 0.1
    for _ in range(25):
        for rows in torch.randperm(x.shape[0]).split(128):
            mu, logvar, x_hat = vae(x[rows])
            loss = vae_loss(x[rows], x_hat, mu, logvar, weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
    vae.eval()
    with torch.no_grad():
        mu = vae(x)[0].numpy()
    assert clustering_accuracy(y, KMeans(4, n_init=10, random_state=0).fit_predict(mu)) > 0.95


@pytest.mark.slow
def test_rows_are_the_same_in_one_process_and_in_two_workers():
    jobs = [Job("uci3_small", "prop_km", 4), Job("uci3_small", "dream", 4, SCHEDULE["smoke"])]
    pool = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        alone = run_jobs(jobs, "cpu", n_jobs=1)
        torch.set_num_threads(2)
        workers = run_jobs(jobs, "cpu", n_jobs=2)
    finally:
        torch.set_num_threads(pool)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in alone]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in workers]
    assert [r["method"] for r in alone] == ["prop_km", "dream"]  # the order of jobs, not the run order
