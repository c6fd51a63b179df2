"""Input validation: every bad input raises ProblemError naming the argument and the expectation."""

import numpy as np
import pytest

import solvers
from solvers import ProblemError, check_standard_form

GOOD = dict(c=[1.0, 2.0], A_eq=[[1.0, 1.0]], b_eq=[1.0], A_ub=np.zeros((0, 2)), b_ub=np.zeros(0))


def call(**changes):
    args = {**GOOD, **changes}
    return check_standard_form(args["c"], args["A_eq"], args["b_eq"], args["A_ub"], args["b_ub"], args.get("P"))


def test_good_input_becomes_float64_arrays():
    p = call()
    assert p.c.dtype == np.float64 and p.A_eq.shape == (1, 2) and p.m_ub == 0 and p.batch is None


@pytest.mark.parametrize("changes, words", [
    ({"A_eq": [[1.0, 1.0, 1.0]]}, ["A_eq", "n=2"]),
    ({"b_eq": [1.0, 2.0]}, ["A_eq", "m_eq=2"]),
    ({"A_ub": np.zeros((1, 3)), "b_ub": [1.0]}, ["A_ub", "n=2"]),
    ({"c": [[1.0, 2.0]]}, ["c", "dimension"]),
    ({"b_eq": 1.0}, ["b_eq", "dimension"]),
    ({"c": [1.0, np.nan]}, ["c", "NaN or inf"]),
    ({"A_eq": [[np.inf, 1.0]]}, ["A_eq", "NaN or inf"]),
    ({"c": ["a", "b"]}, ["c", "numeric"]),
    ({"A_ub": None}, ["A_ub", "never None"]),
    ({"P": np.eye(3)}, ["P", "n=2"]),
])
def test_bad_input_names_argument(changes, words):
    with pytest.raises(ProblemError) as err:
        call(**changes)
    for word in words:
        assert word in str(err.value)


def test_batched_sizes_must_agree():
    with pytest.raises(ProblemError, match="b_eq: expected batch size 3"):
        check_standard_form(np.zeros((3, 2)), np.zeros((3, 1, 2)), np.zeros((2, 1)), np.zeros((3, 0, 2)),
                            np.zeros((3, 0)), batched=True)


def test_adapter_rejects_bad_input_before_solving():
    with pytest.raises(ProblemError, match="b_eq"):
        solvers.get("highs").solve([1.0], [[1.0]], [np.nan], np.zeros((0, 1)), np.zeros(0))


def test_lp_only_adapter_rejects_P():
    with pytest.raises(ProblemError, match=r"P: adapter 'highs' does not solve QPs \(pass P=None for an LP\)"):
        solvers.get("highs").solve([1.0], [[1.0]], [1.0], np.zeros((0, 1)), np.zeros(0), P=np.eye(1))


def test_error_hierarchy_has_one_root():
    for exc in (solvers.ProblemError, solvers.SolverNotAvailable, solvers.SolverError):
        assert issubclass(exc, solvers.BenchError)
    assert issubclass(solvers.ProblemError, ValueError)
