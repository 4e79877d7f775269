"""The central claims are paired over seeds, and a planted worse method fails them."""
import numpy as np
from iclr26_shared.bench import derive_seeds
from iclr26_socp_gnn.bench import FEASIBILITY, ratio_claim


def test_ratio_claim_holds_for_a_better_method_and_fails_when_swapped():
    seeds = derive_seeds(7, 4)
    mlp = np.array([0.90, 1.00, 0.95, 1.10])
    gnn = np.array([0.30, 0.36, 0.31, 0.40])
    good = ratio_claim("c", "p", gnn, mlp, seeds, 0.8, ("GNN", "MLP"))
    assert good.holds and good.per_seed["n"] == 4 and good.per_seed["wins"] == 4
    assert good.per_seed["seeds"] == seeds
    assert not ratio_claim("c", "p", mlp, gnn, seeds, 0.8, ("GNN", "MLP")).holds
    # 0.9 x the baseline is better, but not by the required factor 0.8
    assert not ratio_claim("c", "p", 0.9 * mlp, mlp, seeds, 0.8, ("GNN", "MLP")).holds
    # non-inferiority within 1.5x: 1.2x the baseline passes, 2x fails
    assert ratio_claim("c", "p", 1.2 * mlp, mlp, seeds, 1.5, ("a", "b")).holds
    assert not ratio_claim("c", "p", 2.0 * mlp, mlp, seeds, 1.5, ("a", "b")).holds


def test_smoke_feasibility_claim_is_paired_over_derived_seeds(tmp_path):
    result = FEASIBILITY.run(scale="smoke", device="cpu", seed=3, out_dir=tmp_path)
    central = next(c for c in result.claims if c.name == "gnn_feasibility_error_vs_mlp")
    ps = central.per_seed
    assert ps["n"] == 2 and ps["seeds"] == derive_seeds(3, 2)
    assert np.allclose(ps["values"], np.subtract(ps["baseline"], ps["method"]))
    rows = [r for r in result.rows if r["method"] == "gnn"]
    assert [r["error_rate"] for r in rows] == ps["method"]
