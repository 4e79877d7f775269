"""PUL-CPBF (controlled probability boundary fence): asymmetric PU surrogate, fenced pseudo-labels, then
consistency training with mixed, sharpened targets."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .base import TorchPUEstimator, minibatches, set_params_from
from .teachers import jenks_two_classes, sharpen, strong_view, trend_scores

PSEUDO_RULES = ("alpha_range", "trend")


class PULCPBF(TorchPUEstimator):
    """Phase 1 (``epochs``, SGD Nesterov lr ``lr``, wd 5e-3): weighted logistic P-vs-U surrogate with weights
    alpha on L and (1 - alpha)(1 - prior) on U (inferred form of the asymmetric weighting). Pseudo-labels on U:
    ``"alpha_range"``: of the probability fences alpha in {0.1, ..., 0.9} on the min-max normalised U scores,
    the one whose positive share in U is closest to the prior (inferred), or ``"trend"`` as Holistic-PU.
    Phase 2 (``epochs_phase2``, Adam ``lr_phase2``): target = sharpen(0.5 current + 0.5 phase-1, T = 0.5); BCE on
    the weak view plus ``lambda_u`` x masked (confidence >= 0.9) BCE of the strong view on U.
    """

    def __init__(self, *, alpha=0.5, pseudo="alpha_range", epochs_phase2=50, lr_phase2=1e-3, lambda_u=0.85,
                 temperature=0.5, backbone="auto", epochs=20, batch_size=256, lr=2e-3, weight_decay=5e-3,
                 patience=None, device="auto", random_state=None, selection="proxy_acc", verbose=False):
        set_params_from(self, locals())

    def _train(self, X, s, prior) -> None:
        if self.pseudo not in PSEUDO_RULES:
            raise ValueError(f"pseudo: expected one of {list(PSEUDO_RULES)}, got {self.pseudo!r}")
        opt = torch.optim.SGD(self.model_.parameters(), lr=self.lr, momentum=0.9, nesterov=True,
                              weight_decay=self.weight_decay)
        u_idx = torch.nonzero(s == 0).reshape(-1)
        record = []
        for epoch in range(self.epochs):
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                g = self.model_(X[idx]).reshape(-1)
                sb = s[idx].float()
                w = torch.where(sb == 1, self.alpha, (1 - self.alpha) * (1 - prior))
                loss = (w * F.binary_cross_entropy_with_logits(g, sb, reduction="none")).sum() / w.sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
            record.append(torch.sigmoid(self._logits(X[u_idx])).cpu().numpy())
            self._end_epoch(epoch, X, s, prior)
        scores = record[-1]
        if self.pseudo == "trend":
            trend = trend_scores(np.stack(record)) if len(record) > 1 else scores
            pseudo_u = (trend > jenks_two_classes(trend)).astype(np.float32)
        else:
            z = (scores - scores.min()) / max(float(np.ptp(scores)), 1e-12)
            fences = np.arange(1, 10) / 10
            best = fences[np.argmin([abs((z > a).mean() - prior) for a in fences])]
            pseudo_u = (z > best).astype(np.float32)
        phase1 = s.float().clone()
        phase1[u_idx] = torch.as_tensor(pseudo_u, device=X.device)
        opt = self._optimizer(self.model_.parameters(), lr=self.lr_phase2)
        for epoch in range(self.epochs_phase2):
            current = torch.sigmoid(self._logits(X))
            target = torch.where(s == 1, 1.0, sharpen(0.5 * current + 0.5 * phase1, self.temperature))
            for idx in minibatches(len(X), self.batch_size, self._gen, X.device):
                g = self.model_(X[idx]).reshape(-1)
                loss = F.binary_cross_entropy_with_logits(g, target[idx])
                unl = s[idx] == 0
                if unl.any():
                    t = target[idx][unl]
                    mask = (torch.maximum(t, 1 - t) >= 0.9).float()
                    gs = self.model_(strong_view(X[idx][unl], self._gen)).reshape(-1)
                    loss = loss + self.lambda_u * (mask * F.binary_cross_entropy_with_logits(
                        gs, (t > 0.5).float(), reduction="none")).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            self._end_epoch(self.epochs + epoch, X, s, prior)
