"""SOC-OPF builder against PYPOWER's AC OPF on case9."""
import numpy as np
import pytest

pytest.importorskip("pypower")

from iclr26_socp_gnn import solve  # noqa: E402
from iclr26_socp_gnn.grid import bus_balance_residual, socp_opf  # noqa: E402


def test_case9_relaxation_bounds_ac_opf_cost():
    from pypower.api import case9, ppoption, runopf

    ac = runopf(case9(), ppoption(VERBOSE=0, OUT_ALL=0))["f"]
    P = socp_opf("case9", quadratic=True, line_limits=True)
    res = solve(P, min_norm=False)
    assert res.status == "optimal"
    assert res.obj <= ac + 1e-6 * ac
    assert res.obj >= 0.99 * ac
    assert np.max(np.abs(P.E @ res.x - P.h)) <= 1e-6
    assert bus_balance_residual(P, res.x) <= 1e-6


def test_loads_are_seeded_and_bad_case_refused():
    a, b = socp_opf("case9", seed=1), socp_opf("case9", seed=1)
    np.testing.assert_array_equal(a.h, b.h)
    assert not np.array_equal(a.h, socp_opf("case9", seed=2).h)
    with pytest.raises(ValueError, match="case"):
        socp_opf("case10")
