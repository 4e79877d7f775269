"""Second-order (and p-order) cone programs as objects, and their exact solution by Clarabel.

An instance with ``n`` variables and ``m`` cones, cone ``i`` having ``k_i`` norm rows::

    minimize    cᵀx + offset
    subject to  ‖A_i x + b_i‖_p ≤ f_iᵀx + g_i        i = 1..m      (A_i ∈ R^{k_i×n})
                E x ∘ h                               (∘ ∈ {'<=', '==', '>='} per row)
                lb ≤ x ≤ ub                           (entries may be ±inf)

``solve`` builds Clarabel's conic data directly (no CVXPY canonicalisation, a few milliseconds
per instance): second-order cones for ``p = 2``; for another ``p`` each cone gets ``k_i`` auxiliary
variables ``r ≥ 0`` with ``Σ_j r_j = t`` and ``|u_j| ≤ r_j^{1/p} t^{1-1/p}`` (one 3-d power cone per
row; linear rows for ``p = 1``), which is ``‖u‖_p ≤ t`` exactly.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

SENSES = ("<=", "==", ">=")


def _array(name: str, value, ndim: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-d array, got shape {arr.shape}")
    if np.isnan(arr).any() or (name not in ("lb", "ub") and not np.isfinite(arr).all()):
        raise ValueError(f"{name}: expected finite numbers, got NaN or inf")
    return arr


@dataclass
class SOCP:
    """One cone program (see the module docstring for the equations).

    Attributes:
        c: (n,) objective.
        A: list of m arrays (k_i, n), the norm part of each cone.
        b: list of m arrays (k_i,).
        f: list of m arrays (n,), the linear part of each cone.
        g: (m,) right-hand constants of the cones.
        E, h, sense: optional linear rows, (q, n), (q,), q strings among ``'<=' '==' '>='``.
        lb, ub: optional (n,) bounds; ``-inf``/``inf`` entries mean no bound (encoded by flags in the graph).
        p: the cone norm order, ``p >= 1`` (2 = second-order cone).
        offset: constant added to the objective (kept so ``from_cvxpy`` round-trips optimal values).
    """

    c: np.ndarray
    A: list
    b: list
    f: list
    g: np.ndarray
    E: np.ndarray | None = None
    h: np.ndarray | None = None
    sense: list | None = None
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None
    p: float = 2.0
    offset: float = 0.0
    meta: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.c = _array("c", self.c, 1)
        self.A = [_array(f"A[{i}]", a, 2) for i, a in enumerate(self.A)]
        self.b = [_array(f"b[{i}]", v, 1) for i, v in enumerate(self.b)]
        self.f = [_array(f"f[{i}]", v, 1) for i, v in enumerate(self.f)]
        self.g = _array("g", self.g, 1)
        if self.E is not None:
            self.E = _array("E", self.E, 2)
            self.h = _array("h", self.h if self.h is not None else np.zeros(0), 1)
            self.sense = list(self.sense) if self.sense is not None else ["<="] * len(self.h)
        for name in ("lb", "ub"):
            if getattr(self, name) is not None:
                setattr(self, name, _array(name, getattr(self, name), 1))

    @property
    def n(self) -> int:
        """Number of variables."""
        return int(self.c.shape[0])

    @property
    def m(self) -> int:
        """Number of cones."""
        return len(self.A)

    @property
    def q(self) -> int:
        """Number of linear rows."""
        return 0 if self.E is None else int(self.E.shape[0])

    @property
    def cone_dims(self) -> list[int]:
        """``[k_1, ..., k_m]``, the norm rows of each cone."""
        return [int(a.shape[0]) for a in self.A]

    def validate(self, strict: bool = False) -> SOCP:
        """Checks shapes and values; returns ``self`` (or a copy where zero-row cones became linear rows).

        A cone with ``k_i = 0`` is the linear constraint ``0 ≤ f_iᵀx + g_i``: it is moved to the
        linear rows with a warning, or refused when ``strict``.

        Raises:
            ValueError: naming the offending array and index (shape mismatch, p < 1, NaN/inf, lb > ub).
        """
        n, m = self.n, self.m
        if not (np.isfinite(self.p) and self.p >= 1):
            raise ValueError(f"p: expected a finite number >= 1, got {self.p}")
        if len(self.b) != m or len(self.f) != m:
            raise ValueError(f"b, f: expected {m} entries (one per cone), got {len(self.b)} and {len(self.f)}")
        if self.g.shape != (m,):
            raise ValueError(f"g: expected shape ({m},), got {self.g.shape}")
        for i in range(m):
            if self.A[i].shape[1] != n:
                raise ValueError(f"A[{i}]: expected {n} columns, got shape {self.A[i].shape}")
            if self.b[i].shape != (self.A[i].shape[0],):
                raise ValueError(f"b[{i}]: expected length k_{i} = {self.A[i].shape[0]}, got {self.b[i].shape}")
            if self.f[i].shape != (n,):
                raise ValueError(f"f[{i}]: expected length {n}, got {self.f[i].shape}")
        if self.E is not None:
            if self.E.shape[1] != n:
                raise ValueError(f"E: expected {n} columns, got shape {self.E.shape}")
            if self.h.shape != (self.E.shape[0],) or len(self.sense) != self.E.shape[0]:
                raise ValueError(f"h, sense: expected {self.E.shape[0]} entries, got {self.h.shape[0]} and "
                                 f"{len(self.sense)}")
            bad = [r for r, s in enumerate(self.sense) if s not in SENSES]
            if bad:
                raise ValueError(f"sense[{bad[0]}]: expected one of {SENSES}, got {self.sense[bad[0]]!r}")
        for name in ("lb", "ub"):
            v = getattr(self, name)
            if v is not None and v.shape != (n,):
                raise ValueError(f"{name}: expected shape ({n},), got {v.shape}")
        lb, ub = self.bounds()
        if (lb == np.inf).any() or (ub == -np.inf).any():
            raise ValueError("lb, ub: lb may not be +inf and ub may not be -inf")
        if (lb > ub).any():
            j = int(np.argmax(lb > ub))
            raise ValueError(f"lb, ub: lb[{j}] = {lb[j]} > ub[{j}] = {ub[j]}")
        empty = [i for i in range(m) if self.A[i].shape[0] == 0]
        if empty:
            if strict:
                raise ValueError(f"A[{empty[0]}]: cone {empty[0]} has zero rows (k_i = 0); it is a linear row")
            warnings.warn(f"cones {empty} have zero rows; converted to linear rows f_iᵀx + g_i >= 0", stacklevel=2)
            return self._cones_to_linear(empty)
        return self

    def _cones_to_linear(self, idx: list[int]) -> SOCP:
        keep = [i for i in range(self.m) if i not in idx]
        E = np.vstack([self.E if self.E is not None else np.zeros((0, self.n))] + [self.f[i][None] for i in idx])
        h = np.concatenate([self.h if self.h is not None else np.zeros(0), [-self.g[i] for i in idx]])
        sense = list(self.sense or []) + [">="] * len(idx)
        return replace(self, A=[self.A[i] for i in keep], b=[self.b[i] for i in keep],
                       f=[self.f[i] for i in keep], g=self.g[keep], E=E, h=h, sense=sense)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lb, ub) as (n,) arrays with ``-inf``/``inf`` where there is no bound."""
        lb = np.full(self.n, -np.inf) if self.lb is None else self.lb
        ub = np.full(self.n, np.inf) if self.ub is None else self.ub
        return lb, ub

    def permute(self, var_perm, cone_perm=None, row_perms=None, lin_perm=None) -> SOCP:
        """The same program with variables, cones, rows inside each cone and linear rows reordered.

        New variable ``j`` is old variable ``var_perm[j]``; new cone ``i`` is old cone ``cone_perm[i]``
        whose rows are reordered by ``row_perms[old index]``; new linear row ``r`` is old ``lin_perm[r]``.
        If ``x*`` solves ``self``, ``x*[var_perm]`` solves the result.
        """
        vp = np.asarray(var_perm)
        cp_ = np.arange(self.m) if cone_perm is None else np.asarray(cone_perm)
        rps = [np.arange(k) for k in self.cone_dims] if row_perms is None else [np.asarray(r) for r in row_perms]
        for name, perm, size in (("var_perm", vp, self.n), ("cone_perm", cp_, self.m)):
            if sorted(perm.tolist()) != list(range(size)):
                raise ValueError(f"{name}: expected a permutation of range({size}), got {perm.tolist()}")
        kw = dict(c=self.c[vp], A=[self.A[i][rps[i]][:, vp] for i in cp_], b=[self.b[i][rps[i]] for i in cp_],
                  f=[self.f[i][vp] for i in cp_], g=self.g[cp_],
                  lb=None if self.lb is None else self.lb[vp], ub=None if self.ub is None else self.ub[vp])
        if self.E is not None:
            lp = np.arange(self.q) if lin_perm is None else np.asarray(lin_perm)
            kw.update(E=self.E[lp][:, vp], h=self.h[lp], sense=[self.sense[r] for r in lp])
        return replace(self, **kw)

    def residuals(self, x) -> dict[str, float]:
        """Constraint violations of a point ``x`` (n,): max/mean cone violation ``max(0, ‖A_i x+b_i‖_p − f_iᵀx − g_i)``,
        max linear-row violation, max bound violation, and the objective ``cᵀx + offset``."""
        x = _array("x", x, 1)
        if x.shape != (self.n,):
            raise ValueError(f"x: expected shape ({self.n},), got {x.shape}")
        cone = np.array([max(0.0, np.linalg.norm(a @ x + bb, self.p) - ff @ x - gg)
                         for a, bb, ff, gg in zip(self.A, self.b, self.f, self.g)]) if self.m else np.zeros(1)
        lin = 0.0
        if self.E is not None and self.q:
            r = self.E @ x - self.h
            viol = [max(0.0, v) if s == "<=" else (abs(v) if s == "==" else max(0.0, -v))
                    for v, s in zip(r, self.sense)]
            lin = float(max(viol))
        lb, ub = self.bounds()
        bnd = float(max(0.0, np.max(lb - x), np.max(x - ub)))
        return {"cone_max": float(cone.max()), "cone_mean": float(cone.mean()), "linear_max": lin,
                "bound_max": bnd, "objective": float(self.c @ x + self.offset)}

    def to_cvxpy(self, objective=None):
        """``(problem, x)``: the instance as a CVXPY problem; ``objective(x)`` replaces ``cᵀx`` when given."""
        import cvxpy as cp

        x = cp.Variable(self.n)
        cons = [cp.norm(a @ x + bb, self.p) <= ff @ x + gg for a, bb, ff, gg in zip(self.A, self.b, self.f, self.g)]
        if self.E is not None:
            for r, s in enumerate(self.sense):
                lhs = self.E[r] @ x
                cons.append(lhs <= self.h[r] if s == "<=" else (lhs == self.h[r] if s == "==" else lhs >= self.h[r]))
        lb, ub = self.bounds()
        if np.isfinite(lb).any():
            j = np.flatnonzero(np.isfinite(lb))
            cons.append(x[j] >= lb[j])
        if np.isfinite(ub).any():
            j = np.flatnonzero(np.isfinite(ub))
            cons.append(x[j] <= ub[j])
        obj = self.c @ x + self.offset if objective is None else objective(x)
        return cp.Problem(cp.Minimize(obj), cons), x

    @classmethod
    def from_cvxpy(cls, problem) -> SOCP:
        """Converts a CVXPY problem (linear objective, SOC/linear constraints) to an ``SOCP``.

        Uses ``problem.get_problem_data(cp.CLARABEL)``: zero-cone rows become ``'=='`` rows, nonnegative
        rows ``'<='`` rows, each SOC block of size ``k+1`` a cone with ``k`` norm rows. The variables are
        CVXPY's canonical variables (the user's, stacked, plus any auxiliaries it introduced).

        Raises:
            ValueError: the problem needs cones other than zero, nonnegative or second-order.
        """
        import cvxpy as cp

        data, _, _ = problem.get_problem_data(cp.CLARABEL)
        dims = data["dims"]
        if dims.exp or dims.psd or dims.p3d or getattr(dims, "pnd", None):
            raise ValueError("problem: expected only linear and second-order cone constraints; it has exponential, "
                             "PSD or power cones")
        if np.any(data.get("lower_bounds") is not None) or np.any(data.get("upper_bounds") is not None):
            raise ValueError("problem: variable bounds as solver attributes are not supported")
        c, offset, _, _ = data["param_prob"].apply_parameters()
        A = sp.csr_matrix(data["A"]).toarray()
        bvec = np.asarray(data["b"], dtype=float)
        z, nn = dims.zero, dims.nonneg
        E = A[: z + nn]
        h = bvec[: z + nn]
        sense = ["=="] * z + ["<="] * nn
        As, bs, fs, gs = [], [], [], []
        start = z + nn
        for size in dims.soc:
            blk, rhs = A[start:start + size], bvec[start:start + size]
            fs.append(-blk[0])
            gs.append(rhs[0])
            As.append(-blk[1:])
            bs.append(rhs[1:])
            start += size
        return cls(c=np.asarray(c, float).reshape(-1), A=As, b=bs, f=fs, g=np.asarray(gs, float).reshape(-1),
                   E=E if len(h) else None, h=h if len(h) else None, sense=sense if len(h) else None,
                   offset=float(offset), p=2.0).validate()


class SOCPDataset(list):
    """A list of ``(SOCP, label)`` pairs with ``meta``: generation settings and statistics.

    Labels: ``feasibility`` -> 1 feasible / 0 infeasible; ``objective`` -> optimal value;
    ``solution`` -> the minimum-norm optimal solution, an (n,) array.
    """

    def __init__(self, items=(), meta: dict | None = None):
        super().__init__(items)
        self.meta = dict(meta or {})


@dataclass
class SolveResult:
    """Outcome of ``solve``.

    Attributes:
        status: ``"optimal"``, ``"infeasible"``, ``"unbounded"`` or ``"other:<solver status>"`` (never labelled);
            ``project`` adds ``"optimal_inaccurate"``.
        x: (n,) solution (the minimum-norm one when asked) or ``None``.
        obj: optimal value ``cᵀx* + offset`` or ``None``.
        time: seconds spent inside the solver (all stages).
    """

    status: str
    x: np.ndarray | None
    obj: float | None
    time: float


def conic_data(P: SOCP, extra_rows: tuple[np.ndarray, float] | None = None):
    """Clarabel's form ``A x̃ + s = b, s ∈ K``: ``(A (rows, n + n_aux) csc, b (rows,), cones)``.

    ``x̃ = [x; r]``: for ``p = 2`` there are no auxiliary variables and each cone is one second-order
    cone ``[f_iᵀx + g_i; A_i x + b_i]`` of size ``k_i + 1``; otherwise ``r`` holds ``Σ k_i`` auxiliary
    variables (``_p_cone_rows``). Rows are ordered zero cone, nonnegative cone (linear rows, bounds, the
    optional ``extra_rows`` ``aᵀx ≤ β``), then the cones.
    """
    import clarabel

    n = P.n
    eq_A, eq_b, in_A, in_b = [], [], [], []
    if P.E is not None:
        for r, s in enumerate(P.sense):
            if s == "==":
                eq_A.append(P.E[r])
                eq_b.append(P.h[r])
            else:
                sign = 1.0 if s == "<=" else -1.0
                in_A.append(sign * P.E[r])
                in_b.append(sign * P.h[r])
    lb, ub = P.bounds()
    eye = np.eye(n)
    for j in np.flatnonzero(np.isfinite(ub)):
        in_A.append(eye[j])
        in_b.append(ub[j])
    for j in np.flatnonzero(np.isfinite(lb)):
        in_A.append(-eye[j])
        in_b.append(-lb[j])
    if extra_rows is not None:
        in_A.append(extra_rows[0])
        in_b.append(extra_rows[1])
    n_aux = 0 if P.p == 2.0 else sum(a.shape[0] for a in P.A)
    blocks = [np.pad(np.asarray(rows).reshape(-1, n), ((0, 0), (0, n_aux))) for rows in (eq_A, in_A)]
    rhs = [np.asarray(eq_b, float), np.asarray(in_b, float)]
    cones = []
    if eq_A:
        cones.append(clarabel.ZeroConeT(len(eq_A)))
    if in_A:
        cones.append(clarabel.NonnegativeConeT(len(in_A)))
    if P.p == 2.0:
        for a, bb, ff, gg in zip(P.A, P.b, P.f, P.g):
            blocks.append(-np.vstack([ff[None], a]))
            rhs.append(np.concatenate([[gg], bb]))
            cones.append(clarabel.SecondOrderConeT(a.shape[0] + 1))
    else:
        _p_cone_rows(P, n_aux, blocks, rhs, cones)
    return sp.csc_matrix(np.vstack(blocks)), np.concatenate(rhs), cones


def _p_cone_rows(P: SOCP, n_aux: int, blocks: list, rhs: list, cones: list) -> None:
    """Appends the rows of ``‖A_i x + b_i‖_p ≤ f_iᵀx + g_i`` (``p ≠ 2``) over ``x̃ = [x; r]``.

    Per cone ``i`` with ``t = f_iᵀx + g_i`` and ``u = A_i x + b_i``: one zero-cone row ``Σ_j r_j = t``, then
    per row ``j`` the power cone ``(r_j, t, u_j) ∈ K_{1/p}`` (``r_j^{1/p} t^{1-1/p} ≥ |u_j|``), or for
    ``p = 1`` the two rows ``r_j ∓ u_j ≥ 0``. Summing ``|u_j|^p ≤ r_j t^{p-1}`` gives ``‖u‖_p^p ≤ t^p``.
    """
    import clarabel

    start = 0
    for a, bb, ff, gg in zip(P.A, P.b, P.f, P.g):
        k = a.shape[0]
        R = np.zeros((k, P.n + n_aux))  # row j picks r_j out of x̃
        R[:, P.n + start:P.n + start + k] = np.eye(k)
        start += k
        fx = np.concatenate([ff, np.zeros(n_aux)])
        ax = np.hstack([a, np.zeros((k, n_aux))])
        blocks.append((R.sum(0) - fx)[None])
        rhs.append(np.array([gg]))
        cones.append(clarabel.ZeroConeT(1))
        if P.p == 1.0:
            blocks += [ax - R, -(ax + R)]
            rhs += [-bb, bb]
            cones.append(clarabel.NonnegativeConeT(2 * k))
            continue
        for j in range(k):
            blocks.append(-np.vstack([R[j], fx, ax[j]]))
            rhs.append(np.array([0.0, gg, bb[j]]))
            cones.append(clarabel.PowerConeT(1.0 / P.p))


def _run_clarabel(Pm, q, A, b, cones, n: int, tol: float):
    """Clarabel on ``min ½x̃ᵀPm x̃ + qᵀx̃ s.t. A x̃ + s = b, s ∈ cones`` at tolerance ``tol``; (status, x̃[:n], seconds)."""
    import clarabel

    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    sol = clarabel.DefaultSolver(Pm, q, A, b, cones, settings).solve()
    status = str(sol.status)
    name = ("optimal" if status == "Solved" else "infeasible" if status == "PrimalInfeasible"
            else "unbounded" if status == "DualInfeasible" else f"other:{status}")
    return name, np.asarray(sol.x, float)[:n], float(sol.solve_time)


def _clarabel(P: SOCP, q: np.ndarray, quad: float, extra_rows=None, tol: float = 1e-8):
    """One Clarabel solve of ``min ½·quad·‖x‖² + qᵀx`` over ``P``'s feasible set; (status, x, seconds)."""
    A, b, cones = conic_data(P, extra_rows)
    n_all = A.shape[1]  # x and, for p != 2, the auxiliary variables
    Pm = sp.csc_matrix(sp.diags(np.r_[np.full(P.n, float(quad)), np.zeros(n_all - P.n)]))
    return _run_clarabel(Pm, np.concatenate([q, np.zeros(n_all - P.n)]), A, b, cones, P.n, tol)


def solve(P: SOCP, solver: str = "CLARABEL", min_norm: bool = True, tol: float = 1e-8,
          regularise: float = 0.0, slack: float | None = None) -> SolveResult:
    """Solves ``P`` exactly.

    Args:
        P: the instance (any ``p``: Clarabel's conic interface, see ``conic_data``).
        solver: only ``"CLARABEL"`` (the spec's labeller; ECOS is no longer shipped with CVXPY).
        min_norm: add the second stage ``min ‖x‖²`` s.t. the constraints and ``cᵀx ≤ obj* + tol·(1+|obj*|)``,
            so the returned solution is the minimum-norm optimum (well defined on degenerate instances).
        tol: Clarabel's tolerances (and the second stage's slack unless ``slack`` is given).
        slack: the second stage's relative optimality slack (``None`` = ``tol``); larger objectives such as
            OPF costs need ≈1e-6 because the first stage's value is only accurate to Clarabel's tolerance.
        regularise: if > 0, solve ``min cᵀx + regularise·‖x‖²`` instead (used for the uniqueness check).

    Returns:
        ``SolveResult``; only ``status == "optimal"`` carries ``x`` and ``obj``.
    """
    if solver.upper() != "CLARABEL":
        raise ValueError(f"solver: expected 'CLARABEL', got {solver!r}")
    if not tol > 0:
        raise ValueError(f"tol: expected a positive number, got {tol}")
    P = P.validate()
    status, x, secs = _clarabel(P, P.c, 2.0 * regularise, tol=tol)
    if status != "optimal":
        return SolveResult(status, None, None, secs)
    obj = float(P.c @ x)
    if min_norm and not regularise:
        extra = (P.c, obj + (tol if slack is None else slack) * (1.0 + abs(obj)))
        st2, x2, s2 = _clarabel(P, np.zeros(P.n), 2.0, extra_rows=extra, tol=tol)
        secs += s2
        if st2 != "optimal":
            return SolveResult(f"other:min_norm_{st2}", None, None, secs)
        x = x2
    return SolveResult("optimal", x, float(P.c @ x + P.offset), secs)


def project(P: SOCP, x_hat, tol: float = 1e-8, step: float = 0.0) -> SolveResult:
    """Feasibility restoration: the point of ``P``'s feasible set nearest to ``x_hat`` (Euclidean), one Clarabel call
    (two in the rare case that the first stops with a numerical error).

    Solves ``min ‖x − x̂‖₂`` subject to every constraint of ``P`` (cones of any ``p``, linear rows, bounds), written
    as ``min t`` s.t. ``(t, x − x̂)`` in a second-order cone of size ``n + 1``: the same unique minimiser as
    ``min ‖x − x̂‖²``, but with a linear objective the solver's duality gap (``tol``) bounds the distance itself,
    not its square. In the squared form a feasible ``x̂`` (optimum 0) came back moved by up to 6e-5 at
    ``tol = 1e-8``; in this form by 6e-10 (20 random instances, measured).

    With ``step > 0`` the objective enters: the point projected is ``x̂ − step·c``, whose projection is the
    minimiser of ``cᵀx + ‖x − x̂‖² / (2·step)`` over the feasible set (one projected-gradient step of length ``step``
    on the objective from ``x̂``; the proximal restoration). ``step = 0`` is the nearest feasible point; as ``step``
    grows the answer tends to an optimum of ``P`` and forgets ``x̂``.

    Args:
        P: the instance. x_hat: (n,) the point to restore (a network's prediction). tol: Clarabel's tolerances.
        step: the objective step (>= 0, in the units of ``x`` per unit of ``c``).

    Returns:
        ``SolveResult``: ``x`` the projection (n,), ``obj`` its objective ``cᵀx + offset``, ``time`` the solver's
        seconds. ``status`` is ``"optimal"``; ``"optimal_inaccurate"`` (Clarabel's ``AlmostSolved``: only its
        reduced tolerances were met, which happens when ``x̂`` is feasible and the new cone sits at its apex,
        1 in 90 such points; ``x`` is still returned, check ``P.residuals(x)``); ``"optimal_squared"`` (the norm
        form stopped with a numerical error and the retry in the squared form solved it); ``"infeasible"`` (``P``
        has no feasible point) or ``"other:..."`` (both forms failed), with ``x`` ``None``.

    Raises:
        ValueError: ``x_hat`` is not a finite (n,) array, ``tol`` is not positive or ``step`` is negative.
    """
    import clarabel

    if not tol > 0:
        raise ValueError(f"tol: expected a positive number, got {tol}")
    if not (np.isfinite(step) and step >= 0):
        raise ValueError(f"step: expected a finite number >= 0, got {step}")
    P = P.validate()
    x_hat = _array("x_hat", x_hat, 1)
    if x_hat.shape != (P.n,):
        raise ValueError(f"x_hat: expected shape ({P.n},), got {x_hat.shape}")
    x_hat = x_hat - step * P.c
    A, b, cones = conic_data(P)
    n, n_all = P.n, A.shape[1]
    # x̃ = [x; aux; t]; the new cone's slack is b − A x̃ = (t, x − x̂). Stacked densely, as conic_data does:
    # scipy's sparse stacking cost twice the solve on these small instances
    rows = A.shape[0]
    A_t = np.zeros((rows + 1 + n, n_all + 1))
    A_t[:rows, :n_all] = A.toarray()
    A_t[rows, n_all] = -1.0
    A_t[rows + 1:, :n] = -np.eye(n)
    q = np.zeros(n_all + 1)
    q[-1] = 1.0
    status, x, secs = _run_clarabel(sp.csc_matrix((n_all + 1, n_all + 1)), q, sp.csc_matrix(A_t),
                                    np.concatenate([b, [0.0], -x_hat]),
                                    [*cones, clarabel.SecondOrderConeT(n + 1)], n, tol)
    status = "optimal_inaccurate" if status == "other:AlmostSolved" else status
    if status.startswith("other:"):
        # Clarabel stopped with a numerical error on the norm form (1 of 1,800 GNN predictions at quick, a point at
        # distance 1.9): one retry in the squared form, whose accuracy is ample that far from the feasible set
        status, x, more = _clarabel(P, -2.0 * x_hat, 2.0, tol=tol)
        secs += more
        status = "optimal_squared" if status == "optimal" else status
    if status not in ("optimal", "optimal_inaccurate", "optimal_squared"):
        return SolveResult(status, None, None, secs)
    return SolveResult(status, x, float(P.c @ x + P.offset), secs)


class CompiledSOCP:
    """A CVXPY problem over one instance layout with every number a ``cp.Parameter``, compiled once and re-solved.

    The layout is ``(n, cone_dims, p, sense, which bounds are finite)`` of ``example``; ``solve(P)`` copies ``P``'s
    numbers into the parameters and calls Clarabel through CVXPY. The first call compiles the problem (DPP); later
    calls only re-apply the parameters, the fair CVXPY baseline for repeated solves of instances of one shape.
    """

    def __init__(self, example: SOCP):
        import cvxpy as cp

        P = example.validate()
        self.layout = instance_layout(P)
        n = P.n
        self.x = x = cp.Variable(n)
        self.c = cp.Parameter(n)
        self.A = [cp.Parameter(a.shape) for a in P.A]
        self.b = [cp.Parameter(len(v)) for v in P.b]
        self.f = [cp.Parameter(n) for _ in P.f]
        self.g = cp.Parameter(P.m) if P.m else None
        cons = [cp.norm(A @ x + b, P.p) <= f @ x + self.g[i] for i, (A, b, f) in enumerate(zip(self.A, self.b, self.f))]
        self.E, self.h = {}, {}
        for s in SENSES:
            rows = [r for r, t in enumerate(P.sense or []) if t == s]
            if rows:
                self.E[s], self.h[s] = cp.Parameter((len(rows), n)), cp.Parameter(len(rows))
                lhs = self.E[s] @ x
                cons.append(lhs <= self.h[s] if s == "<=" else lhs == self.h[s] if s == "==" else lhs >= self.h[s])
        lb, ub = P.bounds()
        self.lo, self.hi = np.flatnonzero(np.isfinite(lb)), np.flatnonzero(np.isfinite(ub))
        self.lb = cp.Parameter(len(self.lo)) if len(self.lo) else None
        self.ub = cp.Parameter(len(self.hi)) if len(self.hi) else None
        if self.lb is not None:
            cons.append(x[self.lo] >= self.lb)
        if self.ub is not None:
            cons.append(x[self.hi] <= self.ub)
        self.problem = cp.Problem(cp.Minimize(self.c @ x), cons)

    def solve(self, P: SOCP) -> SolveResult:
        """Solves ``P`` (of the example's layout); ``time``: wall seconds of the CVXPY ``solve`` call.

        Raises:
            ValueError: ``P``'s layout differs from the example's.
        """
        import cvxpy as cp

        if instance_layout(P) != self.layout:
            raise ValueError(f"P: expected an instance of layout {self.layout}, got {instance_layout(P)}")
        self.c.value = P.c
        for i in range(P.m):
            self.A[i].value, self.b[i].value, self.f[i].value = P.A[i], P.b[i], P.f[i]
        if self.g is not None:
            self.g.value = P.g
        for s, E in self.E.items():
            rows = [r for r, t in enumerate(P.sense) if t == s]
            E.value, self.h[s].value = P.E[rows], P.h[rows]
        lb, ub = P.bounds()
        if self.lb is not None:
            self.lb.value = lb[self.lo]
        if self.ub is not None:
            self.ub.value = ub[self.hi]
        start = time.perf_counter()
        self.problem.solve(solver=cp.CLARABEL)
        secs = time.perf_counter() - start
        status = self.problem.status
        if status != "optimal":
            return SolveResult(status if status in ("infeasible", "unbounded") else f"other:{status}", None, None, secs)
        x = np.asarray(self.x.value, float)
        return SolveResult("optimal", x, float(P.c @ x + P.offset), secs)


def instance_layout(P: SOCP) -> tuple:
    """What a ``CompiledSOCP`` fixes: (n, cone dims, p, senses, finite-lb mask, finite-ub mask)."""
    lb, ub = P.bounds()
    return (P.n, tuple(P.cone_dims), P.p, tuple(P.sense or ()), tuple(np.isfinite(lb).tolist()),
            tuple(np.isfinite(ub).tolist()))
