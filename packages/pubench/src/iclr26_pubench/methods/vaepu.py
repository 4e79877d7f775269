"""VAE-PU (Na et al., CIKM 2020): a VAE with a label code h_y and an observation code h_o generates the positives
hidden in U, and a PN classifier trains on L, the generated rows and U; as the benchmark trains it.

The benchmark's loop (PU-Bench ``train/vaepu``, after the authors' code byeonghu-na/vae-pu), for vector inputs:

1. Pre-training (``vae_epochs``): encoder/decoder on reconstruction, -1/2 sum (x' - x)^2, of L and U rows, each
   encoded with its observation one-hot o (L = [1, 0], U = [0, 1]).
2. A two-component diagonal GMM on the h_y means of U and L; the component under which the L rows score higher
   is the positive one.
3. Main training (``epochs``), per unlabeled batch with a cycled labeled batch: generated rows x_pu = decoder(h_y of
   L, the nearest h_o of U); the discriminator D learns U (1) against x_pu (0) with weight ``alpha_disc``; the
   VAE and the observation classifier minimise minus the ELBO (``losses.vaepu_vade_terms``) + ``alpha_gen``
   BCE(D(x_pu), 1) + ``alpha_gen2`` mean sigma(-g(x_pu)) (the last once the PN classifier trains); the PN
   classifier g minimises ``losses.vaepu_pn_loss``. ``schedule`` gives, as fractions of ``epochs``, the
   benchmark's stage boundaries (400, 500, 700 of 800 for the VAE; PN from 400, paused over 500-600).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_curve
from sklearn.mixture import GaussianMixture
from torch import nn

from ..losses import vaepu_pn_loss, vaepu_vade_terms
from .base import TorchPUEstimator, cycled_batches, minibatches, set_params_from

THRESHOLDS = ("zero", "youden")


def _mlp(d_in: int, hidden, norm: bool) -> tuple[nn.Sequential, int]:
    """Linear + (BatchNorm1d) + LeakyReLU(0.2) blocks (the discriminator: dropout 0.3 instead of batch norm)."""
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(d_in, h), nn.BatchNorm1d(h) if norm else nn.Identity(), nn.LeakyReLU(0.2)]
        if not norm:
            layers.append(nn.Dropout(0.3))
        d_in = h
    return nn.Sequential(*layers), d_in


class VAEPUNets(nn.Module):
    """The benchmark's VAE-PU networks for flat inputs of ``d`` features: encoders of h_y (from x) and h_o (from
    x and the 2-d observation one-hot) with mean and log-variance heads, the decoder (h_y, h_o) -> x, the
    discriminator on x and the linear observation classifier on h_o."""

    def __init__(self, d: int, n_h_y: int, n_h_o: int, hidden_enc, hidden_dec, hidden_disc):
        super().__init__()
        self.en_y, w = _mlp(d, hidden_enc, True)
        self.y_mu, self.y_lss = nn.Linear(w, n_h_y), nn.Linear(w, n_h_y)
        self.en_o, w = _mlp(d + 2, hidden_enc, True)
        self.o_mu, self.o_lss = nn.Linear(w, n_h_o), nn.Linear(w, n_h_o)
        dec, w = _mlp(n_h_y + n_h_o, hidden_dec, True)
        self.dec = nn.Sequential(*dec, nn.Linear(w, d))
        disc, w = _mlp(d, hidden_disc, False)
        self.disc = nn.Sequential(*disc, nn.Linear(w, 1))
        self.cl = nn.Linear(n_h_o, 1)

    def encode(self, x, o):
        """(h_y mean, h_y log-variance, h_o mean, h_o log-variance) of rows ``x`` ``(n, d)`` with codes ``o``."""
        hy, ho = self.en_y(x), self.en_o(torch.cat([x, o], dim=1))
        return self.y_mu(hy), self.y_lss(hy), self.o_mu(ho), self.o_lss(ho)

    def decode(self, h_y, h_o):
        return self.dec(torch.cat([h_y, h_o], dim=1))


class VAEPU(TorchPUEstimator):
    """VAE-PU with the benchmark's tabular configuration (encoder 512-256-128, decoder 128-256-512, discriminator
    256-128, h_y 64-d, h_o 32-d, alpha_gen = alpha_disc = 0.05, alpha_gen2 = 1, batches of 128 labeled and 256
    unlabeled rows, Adam lr 2e-4 for all networks, 100 pre-training and 800 main epochs). ``model_`` is the PN
    classifier (``backbone``); rows scoring above ``threshold_`` are positive.

    Args:
        vae_epochs: pre-training epochs. schedule: (VAE pause start, VAE resume, VAE stop, PN pause start, PN pause
            end) as fractions of ``epochs``; the PN classifier trains from the first boundary and model selection
            starts there. n_h_y, n_h_o, hidden_enc, hidden_dec, hidden_disc: network sizes. alpha_gen, alpha_disc,
            alpha_gen2: loss weights. batch_size_l: labeled rows per step (``batch_size``: unlabeled rows).
            lr_vae, lr_disc: Adam rates of the VAE (and observation classifier) and of D; ``lr`` is the PN rate.
            threshold: ``"zero"`` or ``"youden"`` (the benchmark: Youden's J on the validation rows' true labels,
            refreshed every epoch; needs ``y_val``).
        backbone, epochs, batch_size, lr, weight_decay, patience, device, random_state, selection, verbose: see
            ``TorchPUEstimator``.
    """

    def __init__(self, *, vae_epochs=100, schedule=(0.5, 0.625, 0.875, 0.625, 0.75), n_h_y=64, n_h_o=32,
                 hidden_enc=(512, 256, 128), hidden_dec=(128, 256, 512), hidden_disc=(256, 128), alpha_gen=0.05,
                 alpha_disc=0.05, alpha_gen2=1.0, batch_size_l=128, lr_vae=2e-4, lr_disc=2e-4, threshold="zero",
                 backbone="auto", epochs=800, batch_size=256, lr=2e-4, weight_decay=0.0, patience=None,
                 device="auto", random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        if self.threshold not in THRESHOLDS:
            raise ValueError(f"threshold: expected one of {list(THRESHOLDS)}, got {self.threshold!r}")
        if self.threshold == "youden" and (self._val is None or self._val[2] is None):
            raise ValueError("y_val: threshold='youden' needs validation rows with true labels (X_val, s_val, y_val)")
        bounds = [round(f * self.epochs) for f in self.schedule]
        if sorted(bounds[:3]) != bounds[:3] or bounds[3] > bounds[4]:
            raise ValueError(f"schedule: expected ordered fractions (a <= b <= c, d <= e), got {self.schedule!r}")
        Xf = X.reshape(len(X), -1)
        n = len(s)
        lab, unl = torch.nonzero(s == 1).reshape(-1), torch.nonzero(s == 0).reshape(-1)
        # the PN risk's weights: the shares of L, of the positives in U (pi_U |U|) and of U in the sample
        self.pi_ = (len(lab) / n, prior * len(unl) / n, len(unl) / n)
        nets = self.nets_ = VAEPUNets(Xf.shape[1], self.n_h_y, self.n_h_o, self.hidden_enc, self.hidden_dec,
                                      self.hidden_disc).to(X.device)
        opt_vae = torch.optim.Adam([*nets.en_y.parameters(), *nets.y_mu.parameters(), *nets.y_lss.parameters(),
                                    *nets.en_o.parameters(), *nets.o_mu.parameters(), *nets.o_lss.parameters(),
                                    *nets.dec.parameters()], lr=self.lr_vae)
        opt_cl = torch.optim.Adam(nets.cl.parameters(), lr=self.lr_vae)
        opt_disc = torch.optim.Adam(nets.disc.parameters(), lr=self.lr_disc)
        opt_pn = self._optimizer(self.model_.parameters())
        p_batches = cycled_batches(lab, self.batch_size_l, self._gen)
        nets.train()
        for _ in range(self.vae_epochs):
            for u_idx in self._u_batches(unl, X.device):
                xp, xu = Xf[next(p_batches)], Xf[u_idx]
                loss = self._reconstruction(xp, xu)
                opt_vae.zero_grad()
                loss.backward()
                opt_vae.step()
        self._fit_gmm(Xf, lab, unl)
        s1, s2, s3, pn1, pn2 = bounds
        for epoch in range(1, self.epochs + 1):
            nets.train()
            self.model_.train()
            vae_on = epoch <= s3 and not s1 < epoch <= s2
            pn_on = epoch > s1 and not pn1 < epoch <= pn2
            for u_idx in self._u_batches(unl, X.device):
                xp, xu = Xf[next(p_batches)], Xf[u_idx]
                if vae_on:
                    self._step(opt_disc, self._disc_loss(xp, xu))
                    self._step([opt_vae, opt_cl], self._vae_loss(xp, xu, gan2=epoch > s1))
                if pn_on:
                    with torch.no_grad():
                        x_pu = self._generate(xp, xu)
                    g = [self.model_(v.reshape(-1, *X.shape[1:])).reshape(-1) for v in (xp, x_pu, xu)]
                    self._step(opt_pn, vaepu_pn_loss(*g, *self.pi_)[0])
            if epoch > s1:
                self._end_epoch(epoch - 1, X, s, prior)

    def _u_batches(self, unl, device):
        return [b for b in minibatches(len(unl), self.batch_size, self._gen, device) if len(b) > 1 or len(unl) == 1]

    def _step(self, opts, loss) -> None:
        opts = opts if isinstance(opts, list) else [opts]
        for opt in opts:
            opt.zero_grad()
        loss.backward()
        for opt in opts:
            opt.step()

    def _codes(self, n_p: int, n_u: int, like: torch.Tensor) -> torch.Tensor:
        """Observation one-hots ``(n_p + n_u, 2)``: [1, 0] for the labeled rows, then [0, 1]."""
        return F.one_hot(torch.cat([torch.zeros(n_p), torch.ones(n_u)]).long(), 2).to(like)

    def _sample(self, mu, lss):
        return mu + torch.exp(lss / 2) * torch.randn(mu.shape, generator=self._gen).to(mu.device)

    def _reconstruction(self, xp, xu) -> torch.Tensor:
        x = torch.cat([xp, xu])
        y_mu, y_lss, o_mu, o_lss = self.nets_.encode(x, self._codes(len(xp), len(xu), x))
        recon = self.nets_.decode(self._sample(y_mu, y_lss), self._sample(o_mu, o_lss))
        return 0.5 * ((recon - x) ** 2).sum(1).mean()

    @torch.no_grad()
    def _fit_gmm(self, Xf, lab, unl) -> None:
        """The GMM prior of h_y: ``gmm_mu_``, ``gmm_var_`` ``(2, n_h_y)``, row 1 the positive component."""
        self.nets_.eval()
        codes = self._codes(0, len(unl), Xf), self._codes(len(lab), 0, Xf)
        mu_u, mu_l = (self.nets_.encode(Xf[i], c)[0].cpu().numpy() for i, c in zip((unl, lab), codes))
        self.nets_.train()
        seed = int(torch.randint(2**31, (1,), generator=self._gen))
        gmm = GaussianMixture(n_components=2, covariance_type="diag", random_state=seed).fit(np.vstack([mu_u, mu_l]))
        var = np.maximum(gmm.covariances_, 1e-9)
        fit = [np.mean(-0.5 * (mu_l - gmm.means_[k]) ** 2 / var[k] - 0.5 * np.log(var[k]), axis=1) for k in (0, 1)]
        order = [1, 0] if np.mean(fit[0] > fit[1]) > 0.5 else [0, 1]
        self.gmm_mu_ = torch.as_tensor(gmm.means_[order], dtype=Xf.dtype, device=Xf.device)
        self.gmm_var_ = torch.as_tensor(var[order], dtype=Xf.dtype, device=Xf.device)

    def _generate(self, xp, xu) -> torch.Tensor:
        """Rows ``(n_p, d)`` decoded from the sampled h_y of ``xp`` and, for each, the sampled h_o of ``xu`` nearest
        to its own sampled h_o."""
        y_mu, y_lss, o_mu, o_lss = self.nets_.encode(xp, self._codes(len(xp), 0, xp))
        h_y = self._sample(y_mu, y_lss)
        _, _, u_mu, u_lss = self.nets_.encode(xu, self._codes(0, len(xu), xu))
        h_o_u = self._sample(u_mu, u_lss)
        nearest = torch.cdist(self._sample(o_mu, o_lss), h_o_u).argmin(dim=1)
        return self.nets_.decode(h_y, h_o_u[nearest])

    def _disc_loss(self, xp, xu) -> torch.Tensor:
        with torch.no_grad():
            x_pu = self._generate(xp, xu)
        d_pu, d_u = self.nets_.disc(x_pu), self.nets_.disc(xu)
        return self.alpha_disc * (F.binary_cross_entropy_with_logits(d_pu, torch.zeros_like(d_pu))
                                  + F.binary_cross_entropy_with_logits(d_u, torch.ones_like(d_u)))

    def _vae_loss(self, xp, xu, gan2: bool) -> torch.Tensor:
        x = torch.cat([xp, xu])
        o = self._codes(len(xp), len(xu), x)
        y_mu, y_lss, o_mu, o_lss = self.nets_.encode(x, o)
        h_y, h_o = self._sample(y_mu, y_lss), self._sample(o_mu, o_lss)
        terms = vaepu_vade_terms(y_mu, y_lss, o_mu, o_lss, h_y, self.nets_.decode(h_y, h_o), x, self.nets_.cl(h_o),
                                 o[:, 0], self.gmm_mu_, self.gmm_var_, self.pi_[0] + self.pi_[1])
        x_pu = self._generate(xp, xu)
        d_pu = self.nets_.disc(x_pu)
        loss = -sum(terms.values()) + self.alpha_gen * F.binary_cross_entropy_with_logits(d_pu, torch.ones_like(d_pu))
        if gan2:
            g = self.model_(x_pu.reshape(-1, *self._shape)).reshape(-1)
            loss = loss + self.alpha_gen2 * torch.sigmoid(-g).mean()
        return loss

    def _make_model(self, shape):
        self._shape = tuple(shape)
        return super()._make_model(shape)

    def _current_threshold(self, g, s, prior) -> float:
        if self.threshold == "zero":
            return 0.0
        Xv, _, yv = self._val
        if len(np.unique(yv)) < 2:
            return 0.0
        fpr, tpr, thr = roc_curve(yv, self._logits(Xv).cpu().numpy())
        return float(thr[int(np.argmax(tpr - fpr))])

    def _finish(self, X, s, prior) -> None:
        self.threshold_ = self._current_threshold(None, s, prior)
