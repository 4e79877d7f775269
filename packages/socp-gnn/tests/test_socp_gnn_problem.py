"""SOCP objects and labels: closed forms, min-norm targets, permutation identities, CVXPY round trip, bad input."""
import cvxpy as cp
import numpy as np
import pytest
from iclr26_socp_gnn import SOCP, CompiledSOCP, label_instance, project, random_socp, solve


def ball(c, t, p=2.0):
    n = len(c)
    return SOCP(c=c, A=[np.eye(n)], b=[np.zeros(n)], f=[np.zeros(n)], g=np.array([t]), p=p)


def test_single_cone_closed_form():
    c = np.array([1.0, -2.0, 0.5, 3.0])
    res = solve(ball(c, 1.7))
    assert res.status == "optimal"
    np.testing.assert_allclose(res.x, -1.7 * c / np.linalg.norm(c), atol=1e-7)
    assert abs(res.obj + 1.7 * np.linalg.norm(c)) < 1e-7


def test_infeasible_ball_is_labelled_infeasible():
    P = ball(np.ones(3), -1.0)
    assert solve(P).status == "infeasible"
    assert label_instance(P, "feasibility")[:2] == (0, "infeasible")
    assert label_instance(P, "solution")[:2] == (None, "infeasible")


@pytest.mark.parametrize("p", [1.0, 3.0])
def test_p_norm_ball_dual_norm(p):
    c = np.array([0.3, -1.2, 2.0])
    q = p / (p - 1) if p > 1 else np.inf
    res = solve(ball(c, 1.0, p))
    assert res.status == "optimal"
    assert abs(res.obj + np.linalg.norm(c, q)) < 1e-6


@pytest.mark.parametrize("p", [1.0, 1.5, 3.0])
def test_power_cone_form_matches_cvxpy_norm(p):
    # the direct power-cone form against CVXPY's own cp.norm(., p) canonicalisation, on random instances
    for i in range(4):
        P = random_socp(seed=[77, i], g_shift=2.0, p=p).validate()
        prob, x = P.to_cvxpy()
        prob.solve(solver=cp.CLARABEL)
        res = solve(P, min_norm=False)
        assert res.status == ("optimal" if prob.status == cp.OPTIMAL else "infeasible")
        if res.status == "optimal":
            assert abs(res.obj - prob.value) <= 1e-6 * (1 + abs(prob.value))
            assert P.residuals(res.x)["cone_max"] <= 1e-6


def test_min_norm_second_stage_on_a_face_of_optima():
    # min x1 over the box, with (x2, x3) in a disc around (1, 1): a whole face of optima at x1 = -1
    P = SOCP(c=np.array([1.0, 0, 0]), A=[np.array([[0, 1.0, 0], [0, 0, 1.0]])], b=[np.array([-1.0, -1.0])],
             f=[np.zeros(3)], g=np.array([1.0]), lb=-np.ones(3), ub=np.ones(3))
    res = solve(P)
    x = cp.Variable(3)
    cp.Problem(cp.Minimize(cp.sum_squares(x)), [cp.norm(x[1:] - 1) <= 1, x >= -1, x <= 1, x[0] == -1]).solve()
    np.testing.assert_allclose(res.x, x.value, atol=1e-5)
    np.testing.assert_allclose(res.x, [-1, 1 - 2**-0.5, 1 - 2**-0.5], atol=1e-5)


def test_solver_labels_obey_permutations():
    rng = np.random.default_rng(5)
    for i in range(6):
        P = random_socp(seed=[123, i], g_shift=2.0)
        vp = rng.permutation(P.n)
        Q = P.permute(vp, rng.permutation(P.m), [rng.permutation(k) for k in P.cone_dims])
        a, b = solve(P), solve(Q)
        assert a.status == b.status
        if a.status == "optimal":
            assert abs(a.obj - b.obj) < 1e-6 * (1 + abs(a.obj))
            np.testing.assert_allclose(b.x, a.x[vp], atol=1e-4)


def test_from_cvxpy_round_trip():
    x = cp.Variable(4)
    prob = cp.Problem(cp.Minimize(np.array([1.0, -2, 0.5, 1]) @ x + 3),
                      [cp.norm(x[:3] + 0.2) <= x[3] + 1, x >= -2, x <= 2, x[0] + x[1] == 0.3])
    prob.solve(solver=cp.CLARABEL)
    P = SOCP.from_cvxpy(prob)
    res = solve(P)
    assert abs(res.obj - prob.value) <= 1e-6 * abs(prob.value)


def test_residuals_measure_violation():
    P = ball(np.ones(2), 1.0)
    r = P.residuals(np.array([3.0, 4.0]))
    assert r["cone_max"] == pytest.approx(4.0)
    assert P.residuals(np.array([0.6, 0.0]))["cone_max"] == 0.0


def good():
    return dict(c=np.ones(3), A=[np.eye(3)], b=[np.zeros(3)], f=[np.zeros(3)], g=np.array([1.0]))


@pytest.mark.parametrize("change, match", [
    (dict(A=[np.eye(3)[:, :2]]), r"A\[0\]"),
    (dict(b=[np.zeros(2)]), r"b\[0\]"),
    (dict(f=[np.zeros(3), np.zeros(3)]), "b, f"),
    (dict(p=0.5), "p"),
    (dict(g=np.array([np.nan])), "g"),
    (dict(lb=np.array([0.0, 2, 0]), ub=np.ones(3)), r"lb\[1\]"),
    (dict(c=np.array([1.0, np.inf, 0])), "c"),
])
def test_bad_input_names_the_argument(change, match):
    with pytest.raises(ValueError, match=match):
        SOCP(**{**good(), **change}).validate()


def test_zero_row_cone_is_converted_or_refused():
    P = SOCP(c=np.ones(2), A=[np.eye(2), np.zeros((0, 2))], b=[np.zeros(2), np.zeros(0)],
             f=[np.zeros(2), np.array([1.0, 0])], g=np.array([1.0, 0.5]))
    with pytest.raises(ValueError, match=r"A\[1\]"):
        P.validate(strict=True)
    with pytest.warns(UserWarning, match="zero rows"):
        Q = P.validate()
    assert Q.m == 1 and Q.q == 1 and Q.sense == [">="]


def test_solver_status_other_than_optimal_or_infeasible_is_never_labelled():
    # unbounded: no bounds, no cone touching x[1]
    P = SOCP(c=np.array([0.0, 1.0]), A=[np.array([[1.0, 0]])], b=[np.zeros(1)], f=[np.zeros(2)], g=np.array([1.0]))
    label, outcome, _ = label_instance(P, "feasibility")
    assert (label, outcome) == (None, "discarded")


def feasible_instances(count, seed=11):
    """Feasible random instances with their min-norm optima (the solution task's data)."""
    out, i = [], 0
    while len(out) < count:
        P = random_socp(seed=[seed, i])
        res = solve(P)
        if res.status == "optimal":
            out.append((P, res.x))
        i += 1
    return out


def test_projection_leaves_feasible_points_in_place():
    for P, x_star in feasible_instances(12):
        # the optimum lies on the boundary (active cones and bounds); the midpoint with an interior point is inside
        for x in (x_star, 0.5 * (x_star + project(P, np.zeros(P.n)).x)):
            res = project(P, x)
            assert res.status in ("optimal", "optimal_inaccurate")
            assert np.max(np.abs(res.x - x)) <= 1e-6


@pytest.mark.parametrize("p", [2.0, 3.0])
def test_projection_is_feasible_and_matches_cvxpy(p):
    rng = np.random.default_rng(4)
    for i in range(5):
        P = random_socp(p=p, seed=[12, i])
        if solve(P, min_norm=False).status != "optimal":
            continue
        x_hat = 2.0 * rng.standard_normal(P.n)  # far outside the box [-1, 1]^n and the cones
        res = project(P, x_hat)
        r = P.residuals(res.x)
        assert max(r["cone_max"], r["bound_max"]) <= 1e-6
        prob, x = P.to_cvxpy(objective=lambda v, x_hat=x_hat: cp.sum_squares(v - x_hat))
        prob.solve(solver=cp.CLARABEL)
        dist = np.linalg.norm(res.x - x_hat)
        assert abs(dist - np.sqrt(prob.value)) <= 1e-6 * (1 + dist)
        np.testing.assert_allclose(res.x, x.value, atol=1e-4)
        assert np.linalg.norm(res.x - x_hat) > 0.1  # the point did move


def test_proximal_projection_minimises_the_objective_plus_the_distance():
    # project(P, x̂, step) = argmin cᵀx + ‖x − x̂‖² / (2·step) over the feasible set (checked against CVXPY); large steps
    # tend to the optimum, step 0 is the plain projection
    rng = np.random.default_rng(8)
    checked = 0
    for i in range(6):
        P = random_socp(seed=[13, i])
        opt = solve(P, min_norm=False)
        if opt.status != "optimal":
            continue
        x_hat = rng.uniform(-1, 1, P.n)
        for step in (0.3, 1.0):
            res = project(P, x_hat, step=step)
            assert max(P.residuals(res.x)[k] for k in ("cone_max", "bound_max")) <= 1e-6
            prob, x = P.to_cvxpy(objective=lambda v, s=step, c=P.c, x0=x_hat: c @ v + cp.sum_squares(v - x0) / (2 * s))
            prob.solve(solver=cp.CLARABEL)
            np.testing.assert_allclose(res.x, x.value, atol=1e-4)
        far = project(P, x_hat, step=1e4)
        assert P.c @ far.x - opt.obj <= 1e-3 * (1 + abs(opt.obj))
        np.testing.assert_array_equal(project(P, x_hat, step=0.0).x, project(P, x_hat).x)
        checked += 1
    assert checked >= 2


def test_projection_with_linear_rows_and_a_closed_form():
    # the unit ball with x_0 == 0.5: the projection of (3, 0, 0) is (0.5, 0, 0), of (0.5, 2, 0) is (0.5, √0.75, 0)
    P = SOCP(c=np.zeros(3), A=[np.eye(3)], b=[np.zeros(3)], f=[np.zeros(3)], g=np.array([1.0]),
             E=np.array([[1.0, 0.0, 0.0]]), h=np.array([0.5]), sense=["=="])
    np.testing.assert_allclose(project(P, np.array([3.0, 0.0, 0.0])).x, [0.5, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(project(P, np.array([0.5, 2.0, 0.0])).x, [0.5, np.sqrt(0.75), 0.0], atol=1e-7)
    assert project(ball(np.ones(3), -1.0), np.zeros(3)).status == "infeasible"


def test_projection_refuses_bad_points():
    P = ball(np.ones(3), 1.0)
    with pytest.raises(ValueError, match=r"x_hat: expected shape \(3,\), got \(4,\)"):
        project(P, np.zeros(4))
    with pytest.raises(ValueError, match="x_hat: expected finite numbers"):
        project(P, np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="tol: expected a positive number"):
        project(P, np.zeros(3), tol=0.0)
    with pytest.raises(ValueError, match="step: expected a finite number >= 0, got -1"):
        project(P, np.zeros(3), step=-1)


def test_compiled_cvxpy_problem_agrees_with_clarabel_and_refuses_other_layouts():
    items = feasible_instances(3, seed=13)
    compiled = CompiledSOCP(items[0][0])
    for P, _ in items:
        direct = solve(P, min_norm=False)
        res = compiled.solve(P)
        assert res.status == "optimal" and abs(res.obj - direct.obj) <= 1e-6 * (1 + abs(direct.obj))
    assert compiled.solve(random_socp(seed=[13, 99], g_shift=-20.0)).status == "infeasible"  # same layout
    with pytest.raises(ValueError, match="P: expected an instance of layout"):
        compiled.solve(random_socp(n=8, seed=1))


def test_projection_retries_in_the_squared_form_after_a_numerical_error(monkeypatch):
    import iclr26_socp_gnn.problem as problem

    P, x_star = feasible_instances(1, seed=14)[0]
    x_hat = x_star + 1.5
    expected = project(P, x_hat)
    real, calls = problem._run_clarabel, []

    def fails_first(*args):
        calls.append(args)
        return ("other:NumericalError", None, 0.0) if len(calls) == 1 else real(*args)

    monkeypatch.setattr(problem, "_run_clarabel", fails_first)
    res = project(P, x_hat)
    assert res.status == "optimal_squared" and len(calls) == 2
    np.testing.assert_allclose(res.x, expected.x, atol=1e-4)
    assert max(P.residuals(res.x)[k] for k in ("cone_max", "bound_max")) <= 1e-6
