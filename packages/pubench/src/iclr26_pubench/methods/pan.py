"""PAN (Hu et al., AAAI 2021): predictive adversarial networks, as the benchmark trains them.

A discriminator D (same network as the recognizer) and the recognizer R play ``losses.pan_objective``: D ascends
it, R descends it, both from one forward pass per step. Batches mix labeled and unlabeled rows in the training
sample's proportion (at least one of each).
"""
from __future__ import annotations

import torch

from ..losses import pan_objective
from .base import IndexStream, TorchPUEstimator, set_params_from


class PAN(TorchPUEstimator):
    """Predictive adversarial networks; needs no prior. R = ``model_`` (a logit), D = ``discriminator_``.

    Args:
        eps: the objective's log floor (benchmark 1e-2). loss2_weight: weight of the recognizer term (1e-4).
        backbone, epochs, batch_size, lr, weight_decay, patience, device, random_state, selection, verbose: see
            ``TorchPUEstimator``; the defaults are the benchmark's (Adam lr 3e-4 for both networks, weight decay
            1e-3, batch 64, 120 epochs).
    """

    needs_prior = False

    def __init__(self, *, eps=1e-2, loss2_weight=1e-4, backbone="auto", epochs=120, batch_size=64, lr=3e-4,
                 weight_decay=1e-3, patience=None, device="auto", random_state=None, selection="proxy_acc",
                 verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        R = self.model_
        D = self.discriminator_ = self._make_model(X.shape[1:]).to(X.device)
        opt_r, opt_d = self._optimizer(R.parameters()), self._optimizer(D.parameters())
        lab = torch.nonzero(s == 1).reshape(-1)
        unl = torch.nonzero(s == 0).reshape(-1)
        p_stream, u_stream = IndexStream(lab, self._gen), IndexStream(unl, self._gen)
        bs = max(2, int(self.batch_size))
        u_share = len(unl) / len(s)
        for epoch in range(self.epochs):
            used_p = used_u = 0
            for _ in range(max(1, len(s) // bs)):
                n_u = min(bs - 1, max(1, round((used_p + used_u + bs) * u_share - used_u)))
                xp, xu = X[p_stream.take(bs - n_u)], X[u_stream.take(n_u)]
                used_p, used_u = used_p + bs - n_u, used_u + n_u
                loss = pan_objective(torch.sigmoid(R(xu).reshape(-1)), torch.sigmoid(D(xp).reshape(-1)),
                                     torch.sigmoid(D(xu).reshape(-1)), self.eps, self.loss2_weight)
                d_params, r_params = list(D.parameters()), list(R.parameters())
                d_grads = torch.autograd.grad(-loss, d_params, retain_graph=True, allow_unused=True)
                r_grads = torch.autograd.grad(loss, r_params, allow_unused=True)
                for opt, params, grads in ((opt_d, d_params, d_grads), (opt_r, r_params, r_grads)):
                    opt.zero_grad(set_to_none=True)
                    for param, grad in zip(params, grads):
                        param.grad = grad
                    opt.step()
            self._end_epoch(epoch, X, s, prior)
