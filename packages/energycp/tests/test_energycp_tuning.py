"""Tuning of (T_energy, beta) on a tuning split."""
import numpy as np
import pytest
from iclr26_energycp import EnergyConformalClassifier, conformal_quantile, tune_energy


def data(seed=0, n=120, K=5):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, K)) * rng.uniform(0.3, 3, (n, 1))
    return z, rng.integers(0, K, n)


def test_table_covers_grid_in_row_major_order_and_picks_the_minimum():
    z, y = data()
    res = tune_energy(z, y, "raps", alpha=0.1, T_grid=(0.5, 2.0), beta_grid=(0.1, 1.0, 10.0), n_repeats=5)
    assert [(r["T_energy"], r["beta"]) for r in res.table] == [(0.5, 0.1), (0.5, 1.0), (0.5, 10.0),
                                                             (2.0, 0.1), (2.0, 1.0), (2.0, 10.0)]
    best = min(res.table, key=lambda r: r["objective"])
    assert (res.T_energy, res.beta) == (best["T_energy"], best["beta"])
    assert all(r["gain"] == pytest.approx(res.base_size - r["size"]) and r["gain_sd"] > 0 for r in res.table)
    assert res.shows_gain(z=0.0) == (best["gain"] > 0) and not res.shows_gain(z=1e9)


def test_objective_matches_an_independent_recomputation():
    z, y = data(1)
    res = tune_energy(z, y, "lac", alpha=0.2, T_grid=(1.0,), beta_grid=(1.0,), n_repeats=3, random_state=4)
    rng = np.random.default_rng(4)
    sizes = []
    for _ in range(3):
        perm = rng.permutation(len(y))
        rng.random(60), rng.random((60, 5))  # the u draws every score makes
        cal, ev = perm[:60], perm[60:]
        m = EnergyConformalClassifier("lac", alpha=0.2, T_energy=1.0, beta=1.0).fit(z[cal], y[cal])
        sizes.append(m.predict_set(z[ev]).sum(1).mean())
    assert res.table[0]["size"] == pytest.approx(np.mean(sizes))
    assert conformal_quantile(np.arange(5.0), 0.5) == 2.0


def test_same_seed_same_choice():
    z, y = data(2)
    a = tune_energy(z, y, "saps", n_repeats=4, random_state=1)
    b = tune_energy(z, y, "saps", n_repeats=4, random_state=1)
    assert a.table == b.table


@pytest.mark.parametrize("kwargs, match", [({"objective": "acc"}, "objective"), ({"T_grid": ()}, "T_grid"),
                                           ({"beta_grid": (0.0,)}, "beta_grid"), ({"n_repeats": 0}, "n_repeats")])
def test_bad_tuning_arguments(kwargs, match):
    z, y = data()
    with pytest.raises(ValueError, match=match):
        tune_energy(z, y, **kwargs)
