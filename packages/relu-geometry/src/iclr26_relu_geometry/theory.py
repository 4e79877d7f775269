"""The rate exponents of the paper, as reported by secondary summaries (verify against the paper's PDF)."""
from __future__ import annotations

from ._checks import positive_int, real


def theory_rates(d: int, alpha: float | None = None, m: int | None = None) -> dict:
    """Exponents e of ``Gap ≍ n^{e}`` (negative: the gap decays).

    - ``beta_upper`` (Thm 3.4, isotropic Beta(α)): ``−α(d+3) / (2(d² + 4αd + 3α))``.
    - ``beta_lower`` (Thm 3.5, some BEoS solution does no better): ``−2α / (d − 1 + 2α)``.
    - ``mixture_upper`` (mixture of m-dimensional balls): ``−1/(2m + 4)``, independent of the ambient d.

    Raises:
        ValueError: ``d < 1``, ``alpha < 0``, ``m < 1`` or ``m >= d``.
    """
    d = positive_int("d", d)
    out: dict[str, float] = {}
    if alpha is not None:
        a = real("alpha", alpha, nonnegative=True)
        out["beta_upper"] = -a * (d + 3) / (2 * (d**2 + 4 * a * d + 3 * a))
        out["beta_lower"] = -2 * a / (d - 1 + 2 * a) if d - 1 + 2 * a > 0 else 0.0
    if m is not None:
        m = positive_int("m", m)
        if m >= d:
            raise ValueError(f"m: expected 1 <= m < d = {d}, got {m}")
        out["mixture_upper"] = -1.0 / (2 * m + 4)
    return out
