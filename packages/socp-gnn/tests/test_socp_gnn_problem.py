"""SOCP objects and labels: closed forms, min-norm targets, permutation identities, CVXPY round trip, bad input."""
import cvxpy as cp
import numpy as np
import pytest
from iclr26_socp_gnn import SOCP, label_instance, random_socp, solve


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
