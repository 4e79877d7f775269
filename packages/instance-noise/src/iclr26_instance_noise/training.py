"""The torch training loop shared by ``CorrectedMLP`` and the GPU protocol: the corrected loss,
Adam with weight decay, and early stopping on the held-out backward-corrected loss."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .torch_losses import InstanceCorrectedBCE


def train_corrected(net: torch.nn.Module, Z: torch.Tensor, y: torch.Tensor, rho: torch.Tensor, mode: str,
                    train: np.ndarray, val: np.ndarray, epochs: int, lr: float, weight_decay: float,
                    batch_size: int, seed: int = 0,
                    augment: Callable[[torch.Tensor], torch.Tensor] | None = None) -> tuple[torch.nn.Module, list]:
    """Trains ``net`` (one logit per instance) on rows ``train`` and returns it with the best held-out weights.

    Args:
        Z: inputs ``(n, ...)`` on the training device; y: noisy labels ``(n,)``; rho: ``(n,)`` already
            clipped below 1/2 (zeros and ``mode="backward"`` give plain CE).
        train, val: row indices; with an empty ``val`` the last epoch's weights are kept.
        augment: optional batch transform applied to training inputs.

    Returns:
        ``(net in eval mode, held-out backward-corrected loss per epoch)``.
    """
    dev = Z.device
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    train_loss = InstanceCorrectedBCE(mode=mode, rho_max=None)
    val_loss = InstanceCorrectedBCE(mode="backward", rho_max=None)
    gen = torch.Generator().manual_seed(int(seed))
    train_t, val_t = torch.as_tensor(train, device=dev), torch.as_tensor(val, device=dev)
    best, best_state, history = np.inf, None, []
    for _ in range(epochs):
        net.train()
        for batch in train_t[torch.randperm(len(train), generator=gen).to(dev)].split(batch_size):
            inputs = Z[batch] if augment is None else augment(Z[batch])
            opt.zero_grad()
            train_loss(net(inputs).reshape(-1), y[batch], rho[batch]).backward()
            opt.step()
        if len(val):
            net.eval()
            with torch.no_grad():
                logits = torch.cat([net(Z[b]).reshape(-1) for b in val_t.split(4 * batch_size)])
                loss = float(val_loss(logits, y[val_t], rho[val_t]))
            history.append(loss)
            if loss < best:
                best, best_state = loss, {k: v.detach().clone() for k, v in net.state_dict().items()}
    if best_state is not None:
        net.load_state_dict(best_state)
    return net.eval(), history
