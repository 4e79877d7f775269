"""uPU (du Plessis et al. 2015): the unbiased PU risk, without the non-negativity correction."""
from __future__ import annotations

from .nnpu import NNPU


class UPU(NNPU):
    """Minimises prior R_p^+ + R_u^- - prior R_p^- (same arguments as ``NNPU``; ``gamma``/``beta`` unused)."""

    nonneg = False
