"""Every available adapter on small LPs with known optimum, primal and duals (project sign convention)."""

import numpy as np
import pytest

import solvers
from solvers import Status

from conftest import ATOL, real_adapter_params

E = np.zeros((0, 2))
# (name, (c, A_eq, b_eq, A_ub, b_ub), objective, x or None when not unique, y_eq, y_ub)
KNOWN = [
    ("eq_and_ub", ([-1.0, -2.0], [[1.0, -1.0]], [1.0], [[1.0, 1.0]], [4.0]), -5.5, [2.5, 1.5], [0.5], [-1.5]),
    ("negative_eq_rhs", ([-1.0, -2.0], [[-1.0, 1.0]], [-1.0], [[1.0, 1.0]], [4.0]), -5.5, [2.5, 1.5], [-0.5], [-1.5]),
    ("negative_ub_rhs", ([1.0, 1.0], np.zeros((0, 2)), np.zeros(0), [[-1.0, -1.0], [1.0, 0.0]], [-2.0, 3.0]),
     2.0, None, [], [-1.0, 0.0]),
    ("two_eq_rows", ([1.0, 2.0, 3.0], [[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]], [3.0, 1.0], np.zeros((0, 3)), np.zeros(0)),
     4.0, [2.0, 1.0, 0.0], [1.5, -0.5], []),
]


def check_kkt(problem, s, atol):
    c, A_eq, b_eq, A_ub, b_ub = (np.asarray(a, float) for a in problem)
    # primal feasibility
    assert np.all(s.x >= -atol)
    np.testing.assert_allclose(A_eq @ s.x, b_eq, atol=atol)
    assert np.all(A_ub @ s.x <= b_ub + atol)
    # dual feasibility in the project convention: y_ub <= 0, reduced costs >= 0
    assert np.all(s.y_ub <= atol)
    rc = c - A_eq.T @ s.y_eq - A_ub.T @ s.y_ub
    assert np.all(rc >= -atol)
    # strong duality and complementary slackness
    assert c @ s.x == pytest.approx(b_eq @ s.y_eq + b_ub @ s.y_ub, abs=10 * atol)
    np.testing.assert_allclose(s.x * rc, 0.0, atol=10 * atol)
    np.testing.assert_allclose(s.y_ub * (A_ub @ s.x - b_ub), 0.0, atol=10 * atol)


@pytest.mark.parametrize("name, dtype", real_adapter_params())
@pytest.mark.parametrize("case", KNOWN, ids=[k[0] for k in KNOWN])
def test_known_lp(name, dtype, case):
    _, problem, objective, x, y_eq, y_ub = case
    s = solvers.get(name, dtype=dtype).solve(*problem)
    atol = ATOL[dtype]
    assert s.status is Status.OPTIMAL
    assert s.objective == pytest.approx(objective, abs=atol)
    if x is not None:
        np.testing.assert_allclose(s.x, x, atol=atol)
    np.testing.assert_allclose(s.y_eq, y_eq, atol=atol)
    np.testing.assert_allclose(s.y_ub, y_ub, atol=atol)
    check_kkt(problem, s, atol)


@pytest.mark.parametrize("name, dtype", real_adapter_params())
def test_batch_equals_single_solves(name, dtype):
    adapter = solvers.get(name, dtype=dtype)
    problem = KNOWN[0][1]
    rhs = np.array([[1.0], [0.5], [2.0]])
    batch = adapter.solve_batch(*(np.stack([np.asarray(a, float)] * 3) for a in problem[:2]), rhs,
                                *(np.stack([np.asarray(a, float)] * 3) for a in problem[3:]))
    assert len(batch) == 3
    for i in range(3):
        single = adapter.solve(problem[0], problem[1], rhs[i], problem[3], problem[4])
        np.testing.assert_allclose(batch.x[i], single.x, atol=ATOL[dtype])
        np.testing.assert_allclose(batch.objective[i], single.objective, atol=ATOL[dtype])
    # x1 - x2 = b, x1 + x2 <= 4, maximise x1 + 2 x2: x = ((4 + b)/2, (4 - b)/2)
    np.testing.assert_allclose(batch.x[:, 0], (4 + rhs[:, 0]) / 2, atol=ATOL[dtype])


@pytest.mark.parametrize("name, dtype", real_adapter_params())
def test_infeasible_and_unbounded_statuses(name, dtype):
    adapter = solvers.get(name, dtype=dtype)
    infeasible = adapter.solve([1.0, 1.0], [[1.0, 1.0]], [-1.0], E, np.zeros(0))
    assert infeasible.status is Status.INFEASIBLE
    assert infeasible.native_status  # the native code is kept
    unbounded = adapter.solve([-1.0, 0.0], [[1.0, -1.0]], [0.0], E, np.zeros(0))
    assert unbounded.status is Status.UNBOUNDED


def test_linrax_dtype_is_honoured_within_one_process():
    """float32 and float64 solves in one process compute in their own precision."""
    problem = ([1.0], [[3.0]], [1.0], np.zeros((0, 1)), np.zeros(0))  # x = 1/3
    s32 = solvers.get("linrax", dtype="float32").solve(*problem)
    s64 = solvers.get("linrax", dtype="float64").solve(*problem)
    assert s64.x[0] == pytest.approx(1.0 / 3.0, abs=1e-15)
    assert s32.x[0] == float(np.float32(1.0) / np.float32(3.0))  # rounded to float32
    assert s32.x[0] != s64.x[0]
