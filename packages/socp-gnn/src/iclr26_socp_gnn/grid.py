"""Power-grid SOCPs: the Jabr second-order-cone relaxation of AC optimal power flow on PYPOWER's IEEE cases.

Needs the optional extra ``[grid]`` (``pypower``, whose wheel ships the case files; nothing downloads).

Variables (per unit), stacked as ``x = [P_g (ng), Q_g (ng), v (nb), c (npair), s (npair)]`` with
``v_i = |V_i|²``, and per connected bus pair ``i < j`` (parallel branches share one pair)
``c_ij ≈ |V_i||V_j|cos θ_ij``, ``s_ij ≈ |V_i||V_j|sin θ_ij`` (``c_ji = c_ij``, ``s_ji = −s_ij``):

    bus balance   Σ_g P_g − P_d,i = G_ii v_i + Σ_j (G_ij c_ij + B_ij s_ij)
                  Σ_g Q_g − Q_d,i = −B_ii v_i + Σ_j (G_ij s_ij − B_ij c_ij)        (Y = G + jB, makeYbus)
    Jabr cones    ‖(2c_ij, 2s_ij, v_i − v_j)‖₂ ≤ v_i + v_j
    bounds        Vmin² ≤ v ≤ Vmax², generator limits; c, s free (infinite bounds)
    objective     Σ_g c1_g · baseMVA · P_g  (linear part of gencost model 2)
``quadratic=True`` adds ``t_g ≥ c2_g (baseMVA P_g)²`` as ``‖(2√c2_g baseMVA P_g, t_g − 1)‖ ≤ t_g + 1`` and the
constants ``c0_g``; ``line_limits=True`` adds ``P_l² + Q_l² ≤ rateA_l²`` at both ends of every rated branch.
"""
from __future__ import annotations

import numpy as np

from .problem import SOCP, SOCPDataset, solve

OPF_SLACK = 1e-6  # relative slack of the min-norm stage; 1e-8 made ~70% of case14 second stages infeasible
CASES = ("case9", "case14", "case30", "case39", "case57", "case118", "case300")


def _pypower():
    try:
        import pypower.api as pp
    except ImportError as err:
        raise ImportError("socp_opf needs the grid extra: pip install 'iclr26-socp-gnn[grid]' (pypower)") from err
    return pp


def load_case(case: str) -> dict:
    """The PYPOWER case in internal (consecutive) bus numbering."""
    if case not in CASES:
        raise ValueError(f"case: expected one of {CASES}, got {case!r}")
    pp = _pypower()
    return pp.ext2int(getattr(pp, case)())


def socp_opf(case: str = "case14", load_scale=(0.85, 1.15), seed=None, quadratic: bool = False,
             line_limits: bool = False) -> SOCP:
    """The SOC relaxation of AC OPF for ``case`` (see the module docstring).

    ``seed=None`` keeps the nominal loads; otherwise each bus's ``P_d, Q_d`` is scaled by one factor drawn
    from ``U(load_scale)``. ``meta`` records the variable layout (slices) and the load factors.
    """
    lo, hi = load_scale
    if not 0 < lo <= hi:
        raise ValueError(f"load_scale: expected 0 < low <= high, got {load_scale}")
    pp = _pypower()
    ppc = load_case(case)
    base = float(ppc["baseMVA"])
    bus, gen, branch, gencost = ppc["bus"], ppc["gen"], ppc["branch"], ppc["gencost"]
    gen = gen[gen[:, 7] > 0]
    gencost = gencost[: len(ppc["gen"])][ppc["gen"][:, 7] > 0]
    if np.any(gencost[:, 0] != 2):
        raise ValueError(f"case: {case} has non-polynomial generator costs; only gencost model 2 is supported")
    branch = branch[branch[:, 10] > 0]
    nb, ng = len(bus), len(gen)
    scale = np.ones(nb) if seed is None else np.random.default_rng(seed).uniform(lo, hi, nb)
    Pd, Qd = bus[:, 2] * scale / base, bus[:, 3] * scale / base
    Ybus, Yf, Yt = pp.makeYbus(base, bus, branch)
    Y = Ybus.toarray()
    G, B = Y.real, Y.imag
    pairs = sorted({(min(int(f), int(t)), max(int(f), int(t))) for f, t in branch[:, :2]})
    pair_id = {pq: i for i, pq in enumerate(pairs)}
    npair = len(pairs)
    nt = ng if quadratic else 0
    iPg, iQg, iv = np.arange(ng), ng + np.arange(ng), 2 * ng + np.arange(nb)
    ic, is_ = 2 * ng + nb + np.arange(npair), 2 * ng + nb + npair + np.arange(npair)
    it = 2 * ng + nb + 2 * npair + np.arange(nt)
    n = 2 * ng + nb + 2 * npair + nt

    E = np.zeros((2 * nb, n))
    gbus = gen[:, 0].astype(int)
    E[gbus, iPg] = 1.0
    E[nb + gbus, iQg] = 1.0
    E[np.arange(nb), iv] -= np.diag(G)
    E[nb + np.arange(nb), iv] -= -np.diag(B)
    for (i, j), k in pair_id.items():
        for a, b_, sign in ((i, j, 1.0), (j, i, -1.0)):  # s_ba = −s_ab
            E[a, ic[k]] -= G[a, b_]
            E[a, is_[k]] -= sign * B[a, b_]
            E[nb + a, is_[k]] -= sign * G[a, b_]
            E[nb + a, ic[k]] -= -B[a, b_]
    h = np.concatenate([Pd, Qd])

    A, bvec, f, g = [], [], [], []
    for (i, j), k in pair_id.items():
        Ai = np.zeros((3, n))
        Ai[0, ic[k]], Ai[1, is_[k]], Ai[2, iv[i]], Ai[2, iv[j]] = 2.0, 2.0, 1.0, -1.0
        fi = np.zeros(n)
        fi[iv[i]] = fi[iv[j]] = 1.0
        A.append(Ai)
        bvec.append(np.zeros(3))
        f.append(fi)
        g.append(0.0)

    c = np.zeros(n)
    c[iPg] = gencost[:, 5] * base
    offset = 0.0
    if quadratic:
        c[it] = 1.0
        offset = float(gencost[:, 6].sum())
        for gi in range(ng):
            Ai = np.zeros((2, n))
            Ai[0, iPg[gi]] = 2.0 * np.sqrt(gencost[gi, 4]) * base
            Ai[1, it[gi]] = 1.0
            fi = np.zeros(n)
            fi[it[gi]] = 1.0
            A.append(Ai)
            bvec.append(np.array([0.0, -1.0]))
            f.append(fi)
            g.append(1.0)
    if line_limits:
        Yf, Yt = Yf.toarray(), Yt.toarray()
        for l_, (fb, tb) in enumerate(branch[:, :2].astype(int)):
            rate = branch[l_, 5] / base
            if rate <= 0:
                continue
            k = pair_id[(min(fb, tb), max(fb, tb))]
            orient = 1.0 if fb < tb else -1.0  # s_{fb,tb} = orient · s_pair
            for a, yself, ymut, sgn in ((fb, Yf[l_, fb], Yf[l_, tb], orient), (tb, Yt[l_, tb], Yt[l_, fb], -orient)):
                # S_a = conj(y_self) v_a + conj(y_mut)(c_ab + j s_ab), with s_ab = sgn · s_pair
                ys, ym = np.conj(yself), np.conj(ymut)
                Ai = np.zeros((2, n))
                Ai[0, iv[a]], Ai[1, iv[a]] = ys.real, ys.imag
                Ai[0, ic[k]], Ai[0, is_[k]] = ym.real, -ym.imag * sgn
                Ai[1, ic[k]], Ai[1, is_[k]] = ym.imag, ym.real * sgn
                A.append(Ai)
                bvec.append(np.zeros(2))
                f.append(np.zeros(n))
                g.append(rate)

    lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
    lb[iPg], ub[iPg] = gen[:, 9] / base, gen[:, 8] / base
    lb[iQg], ub[iQg] = gen[:, 4] / base, gen[:, 3] / base
    lb[iv], ub[iv] = bus[:, 12] ** 2, bus[:, 11] ** 2
    if quadratic:
        lb[it] = 0.0
    sense = ["=="] * (2 * nb)
    P = SOCP(c=c, A=A, b=bvec, f=f, g=np.array(g), E=E, h=h, sense=sense, lb=lb, ub=ub, offset=offset)
    P.meta.update(case=case, n_bus=nb, n_gen=ng, n_pair=npair, load_factors=scale,
                  layout={"Pg": iPg, "Qg": iQg, "v": iv, "c": ic, "s": is_, "t": it})
    return P.validate(strict=True)


def bus_balance_residual(P: SOCP, x) -> float:
    """Mean absolute bus-balance residual (p.u.) of a point ``x`` (n,) of an OPF instance."""
    x = np.asarray(x, float)
    if P.E is None or x.shape != (P.n,):
        raise ValueError(f"x: expected shape ({P.n},) for an OPF instance, got {x.shape}")
    return float(np.mean(np.abs(P.E @ x - P.h)))


def _opf_chunk(case, seeds, load_scale):
    out = []
    for s in seeds:
        P = socp_opf(case, load_scale, seed=s)
        res = solve(P, slack=OPF_SLACK)
        out.append((P, res.x if res.status == "optimal" else None, res.time))
    return out


def opf_dataset(case: str = "case14", n_instances: int = 500, seed: int = 0, load_scale=(0.85, 1.15),
                n_jobs: int = 1):
    """``n_instances`` solved SOC-OPF instances of ``case`` (random loads): an ``SOCPDataset`` of ``(SOCP, x*)``.

    Load draws use the seeds ``[seed, i]``; instances whose relaxation is not solved to optimality are
    discarded and counted in ``meta``.
    """
    if isinstance(n_instances, bool) or not isinstance(n_instances, int) or n_instances < 1:
        raise ValueError(f"n_instances: expected a positive integer, got {n_instances!r}")
    seeds = [[seed, i] for i in range(n_instances)]
    if n_jobs == 1:
        results = _opf_chunk(case, seeds, load_scale)
    else:
        from joblib import Parallel, delayed

        parts = [seeds[j::n_jobs] for j in range(n_jobs)]
        results = [r for part in Parallel(n_jobs=n_jobs)(delayed(_opf_chunk)(case, p_, load_scale) for p_ in parts)
                   for r in part]
    items = [(P, x) for P, x, _ in results if x is not None]
    meta = dict(task="solution", case=case, seed=seed, candidates=n_instances, discarded=n_instances - len(items),
                mean_solve_ms=1e3 * float(np.mean([t for *_, t in results])))
    return SOCPDataset(items, meta)
