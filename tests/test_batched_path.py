"""The batched path in arrays: statuses and native statuses as integer codes
(``Status`` codes, ``CodedText``) from the adapter to the row writer, no per-case Python on
a batched adapter's path, the checks that replaced per-case loops (magnitudes, warm-start
groups, the equality-consistency test of QP references), and ``bench.studies.overhead`` in worker
processes. Each test compares the vectorised code with a plain per-case computation or
breaks the per-case routes on purpose, so it fails if the batched path falls back to them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import problems
import solvers
from solvers import STATUS_TEXT, BatchSolution, CodedText, Status, check_standard_form
from solvers.types import _finite_magnitude_bound, finite_rows, status_codes

WORDS = st.sampled_from(["", "optimal", "converged=1", "feasible=True,bounded=False", "code 7", "é"])


def _jax_ready(name: str) -> None:
    if solvers.available().get(name):
        pytest.skip(solvers.available()[name])


# ------------------------------------------------------------------ status codes
def test_status_codes_and_words_round_trip():
    assert [s.text for s in Status] == ["optimal", "infeasible", "unbounded", "max_iter", "time_limit",
                                        "numerical_error", "error"]
    assert all(Status.from_text(s.text) is s for s in Status) and str(Status.MAX_ITER) == "max_iter"
    codes = status_codes(["optimal", "error", "optimal", "max_iter"])
    assert codes.dtype == np.int8 and list(codes) == [0, 6, 0, 3]
    assert list(STATUS_TEXT[codes]) == ["optimal", "error", "optimal", "max_iter"]
    with pytest.raises(solvers.ProblemError, match="status: expected one of"):
        status_codes(["optimal", "solved"])
    with pytest.raises(solvers.ProblemError, match=r"status: expected Status codes in \[0, 7\)"):
        status_codes(np.array([0, 9]))


@given(st.lists(WORDS, min_size=1, max_size=40), st.lists(WORDS, min_size=1, max_size=40), st.data())
def test_coded_text_is_the_text_it_was_made_of(left, right, data):
    a, b = CodedText.of(left), CodedText.of(np.array(right, dtype=object))
    assert list(a.text()) == left and list(b.text()) == right and len(a) == len(left)
    assert list(CodedText.concat([a, b]).text()) == left + right
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(left), max_size=len(left))))
    other = CodedText.of(data.draw(st.lists(WORDS, min_size=len(left), max_size=len(left))))
    assert list(a.where(mask, other).text()) == [o if m else t for t, o, m in zip(left, other.text(), mask)]
    word = data.draw(WORDS)
    assert list(a == word) == [t == word for t in left]
    index = np.array(data.draw(st.lists(st.integers(0, len(left) - 1), max_size=10)), dtype=int)
    assert list(a[index].text()) == [left[i] for i in index] and a[0] == left[0]


@given(st.lists(WORDS, max_size=6, unique=True), st.data())
def test_a_text_column_is_the_column_pandas_makes_of_the_strings(names, data):
    """``text_column`` (verdicts, statuses, a cell's constant columns): the dtype and values of a
    DataFrame column made of the NumPy str array ``names[codes]``, for any names, codes and
    length (no names: every case's text is empty, as ``CodedText.text`` gives)."""
    from solvers.types import text_column

    codes = np.array(data.draw(st.lists(st.integers(0, max(len(names) - 1, 0)), max_size=30)), dtype=np.int64)
    want = np.array(names, dtype=str)[codes] if names else np.full(len(codes), "", dtype=str)
    expected = pd.DataFrame({"text": want})["text"]
    got = pd.DataFrame({"text": text_column(names, codes)})["text"]
    assert got.dtype == expected.dtype
    pd.testing.assert_series_equal(got, expected)
    coded = CodedText(codes.astype(np.int32), np.array(names, dtype=object))
    pd.testing.assert_series_equal(pd.Series(coded.column(), name="text"), pd.Series(coded.text().astype(str),
                                                                                    name="text"))


@given(st.lists(WORDS, min_size=1, max_size=5, unique=True),
       st.lists(st.one_of(WORDS, st.just("not a name"), st.none()), max_size=30),
       st.sampled_from(["str", "string[pyarrow]", "string[python]", "object array"]))
def test_text_codes_are_each_values_index_among_the_names(names, values, kind):
    """``text_codes``: the index of each value in ``names``, -1 where it is none of them (None
    and NaN too), on Arrow-backed columns (pandas' ``str`` and ``string[pyarrow]``), other
    string columns and plain arrays alike."""
    from solvers.types import text_codes

    expected = [names.index(v) if v in names else -1 for v in values]
    given_values = np.array(values, dtype=object) if kind == "object array" else pd.Series(values, dtype=kind)
    assert list(text_codes(given_values, names)) == expected


VERDICT_WORDS = st.sampled_from(["supported", "unsupported", "uncertain", "failed", "verified", "infeasible",
                                 "nonsense", None])
TRUTHS = st.sampled_from(["supported", "unsupported"])
REF_VERDICTS = st.sampled_from(["verified", "infeasible", "uncertain", "failed", None])


@given(st.lists(st.tuples(VERDICT_WORDS, TRUTHS, REF_VERDICTS, st.booleans(),
                          st.sampled_from([0.0, 0.1, 0.2, 0.5, np.nan]), st.sampled_from([0.0, 0.1, 0.2, np.inf, np.nan])),
                min_size=1, max_size=40),
       st.booleans())
def test_outcomes_by_code_follow_the_rules_case_by_case(cases, as_series):
    """``lp1_outcomes`` / ``exit_outcomes`` (codes into ``OUTCOMES``, by ``text_codes``) give,
    for any verdict (the kind's, another kind's, none), truth, reference verdict, ambiguity and
    exit, what the kinds' rules say case by case."""
    from problems.kinds.checks import DEFAULT_TOLERANCES as tol
    from problems.kinds.exit import exit_outcomes
    from problems.kinds.lp1 import lp1_outcomes

    def lp1_rule(v, t, amb):
        if v == "failed" or v == "uncertain":
            return v
        if t not in ("supported", "unsupported"):
            return "uncertain"
        if v is not None and v == t or amb and v == "supported":
            return "correct"
        return "false_accept" if v == "supported" and t == "unsupported" else "false_reject"

    def exit_rule(v, e, r, rv):
        band = tol.exit_abs + tol.exit_rel * abs(r)
        if v in ("failed", "uncertain"):
            return v
        if rv not in ("verified", "infeasible"):
            return "uncertain"
        if v == "verified":
            return "correct" if abs(e - r) <= band else "false_accept" if e > r + band else "false_reject"
        if v == "infeasible":
            return "correct" if r <= band else "false_reject"
        return "uncertain"

    verdict, truth, ref_verdict, amb, exit_value, ref_exit = (list(column) for column in zip(*cases))
    wrap = (lambda values: pd.Series(values, dtype="str")) if as_series else (lambda v: np.array(v, dtype=object))
    assert list(lp1_outcomes(wrap(verdict), wrap(truth), np.array(amb))) == [
        lp1_rule(v, t, a) for v, t, a in zip(verdict, truth, amb)]
    assert list(exit_outcomes(wrap(verdict), pd.Series(exit_value), pd.Series(ref_exit), wrap(ref_verdict))) == [
        exit_rule(v, e, r, rv) for v, e, r, rv in zip(verdict, exit_value, ref_exit, ref_verdict)]


QP_WORDS = st.sampled_from(["feasible", "infeasible", "unbounded", "uncertain", "failed", "nonsense", None])


@given(st.lists(st.tuples(QP_WORDS, st.sampled_from(["optimal", "infeasible", "max_iter", None]),
                          st.sampled_from(["feasible", "infeasible", "unbounded", "unknown"]),
                          st.sampled_from([0.0, 1.0, 1.00001, 2.0, np.nan, -np.inf]),
                          st.sampled_from([0.0, 1.0, np.nan, -np.inf]), st.sampled_from([0.0, 1e-3, np.nan, np.inf]),
                          st.sampled_from([0.0, 1.0, -1.0, np.nan])),
                min_size=1, max_size=40),
       st.booleans())
def test_qp_outcomes_by_code_follow_the_rule_case_by_case(cases, as_series):
    """``qp_outcomes`` (codes by ``text_codes``): for any verdict, status said, truth, objective
    and residual, the outcome its docstring's rule gives case by case, and the gap to the
    reference where the reference is feasible."""
    from problems.kinds.checks import DEFAULT_TOLERANCES as tol
    from problems.kinds.qp import qp_outcomes

    def rule(v, said, t, objective, ref_objective, primal, bound):
        gap = (objective - ref_objective) / (1.0 + abs(ref_objective))
        proven = (ref_objective - bound) / (1.0 + abs(ref_objective)) <= tol.qp_gap
        if t == "unknown":
            return "uncertain"
        if t == "feasible" and v == "feasible":
            if gap < -tol.qp_gap:
                return "false_accept" if proven else "uncertain"
            return "correct" if gap <= tol.qp_gap else "suboptimal"
        if v == t and v in ("infeasible", "unbounded"):
            return "correct"
        if v in ("infeasible", "failed"):
            return "false_reject" if v == "infeasible" else "failed"
        if t == "infeasible" and v in ("feasible", "unbounded"):
            return "false_accept"
        if t == "unbounded" and v == "feasible" and said == "optimal":
            return "suboptimal"
        return "false_accept" if said == "optimal" and v == "uncertain" and np.isfinite(primal) else "uncertain"

    verdict, said, truth, objective, ref_objective, primal, bound = (list(column) for column in zip(*cases))
    text = (lambda values: pd.Series(values, dtype="str")) if as_series else (lambda v: np.array(v, dtype=object))
    checked = pd.DataFrame({"verdict": text(verdict), "said": text(said), "qp_objective": objective,
                            "primal_residual": primal})
    ref = pd.DataFrame({"truth": text(truth), "ref_objective": ref_objective, "ref_dual_bound": bound})
    with np.errstate(invalid="ignore"):
        out = qp_outcomes(checked, ref)
        expected_gap = [(o - r) / (1.0 + abs(r)) if t == "feasible" else np.nan
                        for o, r, t in zip(objective, ref_objective, truth)]
    assert list(out["outcome"]) == [rule(*case) for case in zip(verdict, said, truth, objective, ref_objective, primal,
                                                                bound)]
    np.testing.assert_array_equal(out["rel_gap"].to_numpy(), np.array(expected_gap, dtype=float))


def _solution(statuses, natives, x=None, objective=None) -> BatchSolution:
    n = len(statuses)
    return BatchSolution(x=np.zeros((n, 2)) if x is None else x, y_eq=np.zeros((n, 0)), y_ub=np.zeros((n, 0)),
                         objective=np.zeros(n) if objective is None else objective, status=statuses,
                         iterations=np.full(n, -1), native_status=natives, message="")


def test_a_batch_solution_holds_codes_and_gives_the_per_case_view():
    s = _solution([Status.OPTIMAL, Status.INFEASIBLE, Status.OPTIMAL], ["ok", "no", "ok"])
    assert s.status.dtype == np.int8 and list(s.status_text()) == ["optimal", "infeasible", "optimal"]
    assert isinstance(s.native_status, CodedText) and list(s.native_status.names) == ["no", "ok"]
    one = s[1]
    assert one.status is Status.INFEASIBLE and one.native_status == "no" and one.message == ""
    both = BatchSolution.concat([s.take(np.array([2, 1])), _solution(["max_iter"], ["cap"])])
    assert list(both.status_text()) == ["optimal", "infeasible", "max_iter"]
    assert list(both.native_status.text()) == ["ok", "no", "cap"]
    # statuses given as words or as codes mean the same
    assert np.array_equal(_solution(["optimal", "error"], "x").status, _solution(np.array([0, 6]), "x").status)


@given(st.lists(st.tuples(st.sampled_from(list(Status)), st.booleans(), st.booleans(), WORDS), min_size=1,
                max_size=30))
def test_finish_turns_optimal_without_finite_answers_into_numerical_error_case_by_case(cases):
    """``Adapter.finish`` (array code) against the contract written out per case."""
    statuses, x_bad, obj_bad, messages = zip(*cases)
    n = len(cases)
    x = np.where(np.array(x_bad)[:, None], np.nan, np.ones((n, 2)))
    objective = np.where(np.array(obj_bad), np.inf, 1.0)
    raw = BatchSolution(x=x, y_eq=np.zeros((n, 0)), y_ub=np.zeros((n, 0)), objective=objective,
                        status=list(statuses), iterations=np.full(n, -1), native_status="fake", message=list(messages))

    class Collecting(solvers.Adapter):
        NAME = "collecting"

        def collect(self, raw, prepared):
            return raw

    out = Collecting().finish(raw, None)
    for i, (status, xb, ob, msg) in enumerate(cases):
        broken = status is Status.OPTIMAL and (xb or ob)
        assert out[i].status is (Status.NUMERICAL_ERROR if broken else status)
        if broken:
            what = "x" if xb else "objective"
            assert out[i].message == (f"solver reported optimal with a non-finite {what}; recorded as "
                                      f"numerical_error" + (f" ({msg})" if msg else ""))
        else:
            assert out[i].message == msg


def test_a_batched_adapter_builds_no_per_case_object_from_validate_to_the_rows(monkeypatch):
    """linrax (a JAX batched adapter): validate, prepare, run, finish, verification and the
    row columns of a cell, with every per-case route made to fail."""
    _jax_ready("linrax")
    from bench.engine import verify
    from bench.engine.cell import jax_matmul_precision  # noqa: F401  (the cell module imports cleanly)
    from bench.engine.reference import reference

    batch = problems.generate("planar-box", 64, 0)
    ref = reference(batch)  # (the reference is a loop solver: computed before the traps)

    def trap(*_a, **_k):
        raise AssertionError("a per-case route was taken on the batched path")

    monkeypatch.setattr(solvers.StandardForm, "case", trap)
    monkeypatch.setattr(BatchSolution, "__getitem__", trap)
    monkeypatch.setattr(BatchSolution, "stack", classmethod(trap))
    monkeypatch.setattr(solvers.types.Solution, "__init__", trap)
    adapter = solvers.get("linrax", dtype="float32")
    problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    solution = adapter.solve_batch_checked(problem)
    rows = verify.judge(batch, solution, ref)
    assert solution.status.dtype == np.int8 and isinstance(solution.native_status, CodedText)
    assert set(solution.native_status.names) <= {"feasible=False,bounded=False", "feasible=False,bounded=True",
                                                 "feasible=True,bounded=False", "feasible=True,bounded=True"}
    assert len(rows) == 64 and (rows["outcome"] == "correct").sum() >= 48


def test_cell_rows_write_the_status_words_of_the_codes(tmp_path):
    _jax_ready("linrax")
    from bench.engine import runner
    from bench.engine.grid import Cell

    cells = [Cell.of("planar-box", 16, 0, "linrax", "float32", "cpu", 1)]
    (result,) = runner.run_cells(cells, tmp_path / "run", "codes", timeout=300)
    rows = result.rows
    assert set(rows["status"]) <= {s.text for s in Status} and rows["status"].notna().all()
    assert set(rows["native_status"]) <= {"feasible=False,bounded=False", "feasible=False,bounded=True",
                                          "feasible=True,bounded=False", "feasible=True,bounded=True"}
    assert (rows["message"] == "").all()
    assert rows["env_malloc"].iloc[0].startswith("MALLOC_MMAP_THRESHOLD_=")


# --------------------------------------------------------- checks that replaced loops
FLOATS = st.floats(-1e39, 1e39, allow_nan=False, allow_infinity=False)


@given(st.lists(FLOATS, min_size=1, max_size=12), st.sampled_from(["float32", "float64"]))
@example([9.9e19] * 12, "float64")  # the recorded bound (sqrt(12) * 9.9e19) reaches HiGHS's 1e20, the values do not
@example([9.9e19] * 12, "float32")  # (every adapter's infinity is 1e20, below float32's largest value)
@example([1e20], "float64")
@example([3.5e38], "float32")
def test_validate_refuses_exactly_the_values_an_elementwise_cast_overflows(values, dtype):
    """``Adapter.validate`` reads the bound on the largest magnitude that ``check_standard_form``
    recorded, and the exact largest magnitude where the bound reaches a threshold; it must
    refuse exactly what a cast of every value would overflow (or the solver's infinity)."""
    b = np.array(values)
    n = len(values)
    problem = check_standard_form(np.zeros(n), np.zeros((1, n)), [0.0], b[None, :], [1.0])
    if dtype == "float32":
        _jax_ready("linrax")  # skipped with the reason where linrax is missing, never a silent pass
    adapter = solvers.get("highs") if dtype == "float64" else solvers.get("linrax", dtype="float32")
    with np.errstate(over="ignore"):
        overflow = not np.all(np.isfinite(b.astype(dtype)))
    too_big = np.max(np.abs(b)) >= adapter.INFINITY
    if overflow or too_big:
        with pytest.raises(solvers.ProblemError, match="A_ub: |value|"):
            adapter.validate(problem)
    else:
        adapter.validate(problem)


ENTRIES = st.one_of(st.floats(-10.0, 10.0), st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308, 3e38, 1e-320]))


@given(st.integers(0, 6), st.integers(0, 5), st.data(), st.sampled_from([np.float32, np.float64]))
def test_finite_rows_is_the_entrywise_test(cases, width, data, dtype):
    """``finite_rows`` (one product with ones, the entrywise test only where a case's sum is
    not finite) against ``isfinite`` entry by entry: huge finite values whose sum overflows
    (1e308 twice; 3e38 in float32) are finite cases, NaN and infinities are not."""
    values = data.draw(st.lists(ENTRIES, min_size=cases * width, max_size=cases * width))
    with np.errstate(over="ignore"):
        a = np.array(values, dtype=dtype).reshape(cases, width)
    assert np.array_equal(finite_rows(a), np.all(np.isfinite(a), axis=1))
    assert np.array_equal(finite_rows(a.reshape(cases, width, 1)[:, ::-1]), np.all(np.isfinite(a), axis=1))


def test_finite_rows_of_known_cases():
    """The cases a sum alone gets wrong (finite values whose sum overflows) and right."""
    a = np.array([[1e308, 1e308, 0.0], [1.0, np.nan, 0.0], [np.inf, -np.inf, 0.0], [1.0, 2.0, 3.0],
                  [-1e308, -1e308, np.inf]])
    assert list(finite_rows(a)) == [True, False, False, True, False]
    assert list(finite_rows(np.array([[3e38, 3e38], [3e38, np.inf]], dtype=np.float32))) == [True, False]
    assert finite_rows(np.zeros((3, 0))).tolist() == [True] * 3 and finite_rows(np.zeros((0, 4))).shape == (0,)


@given(st.lists(st.one_of(st.floats(-1e300, 1e300), st.sampled_from([1e-320, -2e-160, 0.0])), min_size=1,
                max_size=40), st.booleans())
def test_the_recorded_magnitude_bound_bounds_the_largest_value(values, strided):
    """``check_standard_form`` records, from one sum of squares, a bound on each array's largest
    ``|value|``: never below it (values above 1e154 overflow the squares: then the exact
    maximum), at most ``sqrt(size)`` times it and a little; an array that is not contiguous
    is read by its max and min."""
    arr = np.array(values)
    if strided:
        arr = np.repeat(arr, 2)[::2]
    biggest = float(np.max(np.abs(arr)))
    bound, exact = _finite_magnitude_bound("b_ub", arr)
    assert bound >= biggest and bound <= biggest * np.sqrt(arr.size) * (1 + 1e-9) + 1e-149
    if not arr.flags.c_contiguous:
        assert exact
    elif biggest < 1e150:  # the sum of at most 40 squares stays finite: one pass, a bound
        assert not exact
    if exact:
        assert bound == biggest
    form = check_standard_form(np.zeros(arr.size), np.zeros((0, arr.size)), np.zeros(0), arr[None, :], [1.0])
    assert form.magnitude("A_ub") == biggest and form.magnitude_bound("A_ub") >= biggest


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_value_is_refused_naming_its_argument_contiguous_or_not(bad):
    values = np.array([1.0, 2.0, bad, 4.0])
    for arr in (values, np.repeat(values, 2)[::2]):
        with pytest.raises(solvers.ProblemError, match="^b_ub: expected finite values; found 1 NaN or inf"):
            check_standard_form(np.zeros(1), np.zeros((0, 1)), np.zeros(0), np.ones((4, 1)), arr)


def test_a_recorded_magnitude_counts_only_for_the_array_it_was_taken_from():
    from dataclasses import replace

    problem = check_standard_form([1.0, 1.0], np.zeros((0, 2)), np.zeros(0), [[1.0, 2.0]], [3.0])
    assert problem.magnitude("A_ub") == 2.0 and problem.magnitude("lb") == 0.0
    bigger = replace(problem, A_ub=np.array([[1.0, 1e39]]))
    assert bigger.magnitude("A_ub") == 1e39  # recomputed: not the stale 2.0
    free = check_standard_form([1.0, 1.0], np.zeros((0, 2)), np.zeros(0), [[1.0, 2.0]], [3.0], lb=[-np.inf, -5.0])
    assert free.magnitude("lb") == 5.0


ROW_VALUES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, 1e308, -5e-324, np.inf, -np.inf, np.nan])


@given(st.integers(1, 5), st.integers(0, 70), st.data(), st.sampled_from([None, 0.0, -np.inf, np.inf]), st.booleans())
def test_row_max_and_row_min_are_numpys_reductions_of_each_row(cases, width, data, initial, strided):
    """``row_max`` / ``row_min`` (the verifiers' reductions of a case's few values): NumPy's
    ``max`` / ``min`` along axis 1, NaN where a row holds one, on rows narrower and wider than
    ``ROW_COLUMNS_MAX``, contiguous or not, with and without ``initial`` (required for empty
    rows, as NumPy requires it)."""
    from problems.kinds.checks import row_max, row_min

    values = data.draw(st.lists(ROW_VALUES, min_size=cases * width * 2, max_size=cases * width * 2))
    whole = np.array(values, dtype=float).reshape(cases, 2 * width)
    a = whole[:, ::2] if strided else np.ascontiguousarray(whole[:, :width])
    for ours, numpys in ((row_max, np.max), (row_min, np.min)):
        if width == 0 and initial is None:
            with pytest.raises(ValueError, match="needs an initial value"):
                ours(a)
            continue
        options = {} if initial is None else {"initial": initial}
        np.testing.assert_array_equal(ours(a, initial), numpys(a, axis=1, **options))  # (NaN matches NaN)
    with pytest.raises(ValueError, match=r"a: expected a \(cases, values\) array"):
        row_max(a.reshape(-1))


DUAL_VALUES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, -3.0, 1e300, -1e300, np.inf, -np.inf, np.nan])


@given(st.integers(1, 4), st.integers(0, 3), st.integers(0, 3), st.integers(0, 9), st.data())
def test_a_farkas_check_with_zero_bounds_is_the_general_checks(cases, m_eq, m_ub, n, data):
    """``farkas_check`` where every bound is 0 and there are no cones (LPs, exits) takes a
    shorter path; its columns are those of the general path given the zero bounds as an
    array, for duals and matrices with zeros of both signs, infinities, NaN and products
    that overflow."""
    from problems.kinds.checks import DEFAULT_TOLERANCES, farkas_check

    def draw(*shape):
        size = int(np.prod(shape))
        return np.array(data.draw(st.lists(DUAL_VALUES, min_size=size, max_size=size)), dtype=float).reshape(shape)

    A_eq, A_ub = np.nan_to_num(draw(cases, m_eq, n)), np.nan_to_num(draw(cases, m_ub, n))  # inputs are finite
    b_eq, b_ub = np.nan_to_num(draw(cases, m_eq)), np.nan_to_num(draw(cases, m_ub))
    y_eq, y_ub = draw(cases, m_eq), draw(cases, m_ub)
    short = farkas_check(A_eq, b_eq, A_ub, b_ub, None, None, None, y_eq, y_ub, DEFAULT_TOLERANCES)
    general = farkas_check(A_eq, b_eq, A_ub, b_ub, np.zeros((cases, n)), None, None, y_eq, y_ub, DEFAULT_TOLERANCES)
    pd.testing.assert_frame_equal(short, general, check_exact=True)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), min_size=1, max_size=12), st.integers(0, 3))
def test_warm_start_groups_are_the_runs_of_lps_equal_but_for_their_last_column(runs, seed):
    """``linrax-hold``'s grouping (neighbour comparison) against a per-LP comparison. Four LP
    bodies: 0 and 1 differ in A_eq, 2 only in A_ub, 3 only in b_eq (a grouping that read the
    matrices alone, or the right-hand sides alone, merges two of them)."""
    _jax_ready("linrax-hold")
    rng = np.random.default_rng(seed)
    A_body = rng.normal(size=(2, 2, 3))[[0, 1, 0, 0]]  # A_eq without its last column
    b_body = np.ones((4, 2))
    b_body[3] = 2.0
    U_body = np.ones((4, 1, 4))
    U_body[2, 0, 0] = -1.0
    A_eq, b_eq, A_ub, labels = [], [], [], []
    for body, count in runs:
        for _ in range(count):
            A_eq.append(np.concatenate([A_body[body], rng.normal(size=(2, 1))], axis=1))
            b_eq.append(b_body[body])
            U = U_body[body].copy()
            U[0, -1] = rng.normal()  # the last column may differ inside a group
            A_ub.append(U)
            labels.append(body)
    B = len(A_eq)
    problem = check_standard_form(np.ones((B, 4)), np.array(A_eq), np.array(b_eq), np.array(A_ub),
                                  np.ones((B, 1)), batched=True)
    groups = solvers.get("linrax-hold", dtype="float64")._warm_groups(problem)
    expected = np.cumsum([True] + [labels[i] != labels[i - 1] for i in range(1, B)]) - 1
    if 2 * (expected[-1] + 1) > B:
        assert groups is None
    else:
        assert np.array_equal(groups[1], expected)


@given(st.lists(st.integers(0, 5), min_size=1, max_size=30), st.integers(0, 30), st.integers(0, 3))
def test_neighbour_marks_with_a_limit_are_the_full_comparisons(bodies, most, seed):
    """``_mark_unlike_neighbours`` with ``most`` compares each block's first value per LP
    before the rest: it must still return False exactly when the full comparison marks more
    than ``most`` LPs, and else mark what the full comparison marks. The LP bodies agree in
    their first values (1 and 2 differ only later, 3 only in the second block), so a probe
    that decided alone would be wrong."""
    from solvers.linrax_hold_ import Leading, _mark_unlike_neighbours

    rng = np.random.default_rng(seed)
    matrices = np.repeat(rng.normal(size=(1, 2, 3)), 6, axis=0)
    matrices[1, 1, 2] += 1.0
    matrices[2, 0, 1] -= 1.0
    matrices[4:, 0, 0] = [5.0, 6.0]  # bodies 4 and 5 differ in the first value
    rhs = np.zeros((6, 2))
    rhs[3, 1] = 1.0
    blocks = (rhs[bodies], matrices[bodies])
    full = np.zeros(len(bodies), dtype=bool)
    full[0] = True
    for block in blocks:
        full[1:] |= np.any(block[1:] != block[:-1], axis=tuple(range(1, block.ndim)))
    with_last = np.concatenate([matrices, rng.normal(size=(6, 2, 1))], axis=2)  # a last column never compared
    for given_blocks in (blocks, (rhs[bodies], Leading(with_last[bodies], 3))):
        marks = np.zeros(len(bodies), dtype=bool)
        marks[0] = True
        kept = _mark_unlike_neighbours(marks, given_blocks, most=most)
        assert kept == (np.count_nonzero(full) <= most)
        if kept:
            assert np.array_equal(marks, full)


@given(st.integers(0, 12), st.lists(st.integers(1, 7), min_size=0, max_size=2), st.data(), st.integers(0, 3))
def test_neighbours_compared_in_their_leading_columns_are_the_views_compared(cases, inner, data, seed):
    """``_unlike_previous`` / ``Leading``: an LP differs from the one before it exactly where
    the view of its compared values does (``np.any`` over every value but the batch axis),
    for blocks of any rank, with LPs narrower and wider than ``NEIGHBOUR_VALUES_MAX`` and
    any number of leading columns, including none and all."""
    from solvers.linrax_hold_ import Leading, _mark_unlike_neighbours, _unlike_previous

    rng = np.random.default_rng(seed)
    bodies = np.repeat(rng.integers(0, 3, size=(1, *inner)), 3, axis=0).astype(float)
    if inner:  # body 1 differs from body 0 in the last column only, body 2 in the first value only
        bodies[1, ..., -1] += 1.0
        bodies[2][(0,) * len(inner)] += 1.0
    else:
        bodies[1:] += [1.0, 2.0]
    which = np.array(data.draw(st.lists(st.integers(0, 2), min_size=cases, max_size=cases)), dtype=int)
    array = bodies[which] if cases else np.zeros((0, *inner))
    columns = data.draw(st.integers(0, inner[-1])) if inner else None
    block = Leading(array, columns) if columns is not None else array
    view = array[..., :columns] if columns is not None else array
    expected = np.zeros(cases, dtype=bool)
    if cases > 1 and view[0].size:
        expected[1:] = np.any(view[1:] != view[:-1], axis=tuple(range(1, view.ndim)))
        assert np.array_equal(_unlike_previous(block), expected[1:])
    marks = np.zeros(cases, dtype=bool)
    assert _mark_unlike_neighbours(marks, (block,)) and np.array_equal(marks, expected)
    probed = np.zeros(cases, dtype=bool)  # with a limit never reached (the first-value probe runs too; also on 0 LPs)
    assert _mark_unlike_neighbours(probed, (block,), most=cases) and np.array_equal(probed, expected)


@given(st.integers(1, 40), st.integers(0, 48), st.booleans())
def test_a_batch_solved_in_pieces_is_the_batch_solved_at_once(n, chunk, bucket):
    """``JaxBatchedAdapter.chunked``: every piece has ``piece_size(n, chunk)`` cases (the last
    one overlaps the one before it and keeps only its new cases), a batch in one piece ``n``
    cases, or with ``bucket`` ``batch_bucket(n)`` (its last case repeated, at most ``chunk``);
    each row of every output comes from its own case, once, in order, whatever ``n`` and
    ``chunk``."""
    _jax_ready("linrax-hold")
    import jax
    import jax.numpy as jnp

    from solvers._jax import JaxBatchedAdapter, batch_bucket, piece_size

    sizes = []

    def solve(a, b):
        sizes.append(a.shape[0])
        return jax.vmap(lambda x, y: (x * 2.0 + y, jnp.sum(x) - y))(a, b)

    a = jnp.arange(3.0 * n).reshape(n, 3)
    b = jnp.arange(float(n)) * 10.0
    whole = solve(a, b)
    sizes.clear()
    adapter = JaxBatchedAdapter.__new__(JaxBatchedAdapter)
    adapter.settings = {"chunk": chunk}
    pieces = adapter.chunked(solve, (a, b), bucket=bucket)
    for got, want in zip(pieces, whole):
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    at_once = n if not bucket else batch_bucket(n) if chunk == 0 else min(batch_bucket(n), chunk)
    assert set(sizes) == ({at_once} if chunk == 0 or n <= chunk else {piece_size(n, chunk)})  # one compiled shape
    assert len(sizes) == (1 if chunk == 0 or n <= chunk else -(-n // chunk))


@given(st.lists(st.integers(0, 5), min_size=0, max_size=3), st.integers(0, 15),
       st.sampled_from(["float64", "float32", "int64", "int32"]), st.sampled_from(["float32", "float64", "int32"]),
       st.booleans())
@example(shape=[3, 5], offset=4, source="float32", target="float32", strided=False)  # float32 off the boundary
def test_a_host_cast_is_the_cast_aligned_for_the_device(shape, offset, source, target, strided):
    """``host_cast``: the values of ``np.asarray(a, dtype)``, C-contiguous, starting on a
    ``HOST_ALIGNMENT``-byte boundary (unless empty), whatever the source's dtype, alignment and
    strides; the source itself only where it already is such an array, else no memory shared."""
    from solvers._jax import HOST_ALIGNMENT, host_cast

    size = int(np.prod(shape)) * (2 if strided else 1)
    item = np.dtype(source).itemsize
    raw = np.zeros(size * item + 64 + offset * item, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + offset * item  # the source starts ``offset`` items past a boundary
    flat = raw[start:start + size * item].view(source)
    flat[:] = np.arange(size) * 7 % 251 - 100
    a = flat[::2].reshape(shape) if strided else flat.reshape(shape)
    out = host_cast(a, target)
    np.testing.assert_array_equal(out, np.asarray(a, dtype=target))
    assert out.dtype == np.dtype(target) and out.flags.c_contiguous
    assert out.size == 0 or out.ctypes.data % HOST_ALIGNMENT == 0  # (an empty array has no data to align)
    if out is not a:
        assert not np.shares_memory(out, a)
    already = a.flags.c_contiguous and (a.size == 0 or a.ctypes.data % HOST_ALIGNMENT == 0)
    assert (out is a) == (source == target and already)


@given(st.integers(2, 300_000), st.integers(1, 4096))
def test_pieces_cover_a_batch_once_with_less_than_a_quantum_solved_twice_per_piece(n, chunk):
    """``piece_size`` / ``piece_bounds``: as many pieces as ``chunk`` needs, none larger than
    ``chunk``, covering every case once after their skips; the cases solved twice (the last
    piece's overlap) stay under ``PIECE_QUANTUM`` per piece, where pieces of ``chunk`` itself
    solved up to ``chunk - 1`` twice (1,560 exit LPs in pieces of 1,024: 2,048 solved)."""
    from solvers._jax import PIECE_QUANTUM, piece_bounds, piece_size

    if n <= chunk:
        assert piece_size(n, chunk) == n
        return
    size = piece_size(n, chunk)
    bounds = piece_bounds(n, size)
    assert size <= chunk and len(bounds) == -(-n // chunk)
    kept = np.concatenate([np.arange(begin + skip, begin + size) for begin, skip in bounds])
    np.testing.assert_array_equal(kept, np.arange(n))
    if size < chunk:
        assert size % PIECE_QUANTUM == 0
        assert len(bounds) * size - n < len(bounds) * PIECE_QUANTUM
    assert piece_size(1560, 1024) * len(piece_bounds(1560, piece_size(1560, 1024))) == 1664


@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 5))
def test_equality_consistency_of_a_batch_equals_each_case_least_squares(seed, m, n):
    from problems.kinds.qp import equalities_consistent

    rng = np.random.default_rng(seed)
    B = 6
    A = rng.normal(size=(B, m, n))
    A[::2, -1] = A[::2, 0]  # rank-deficient rows in every other case
    b = np.einsum("bmn,bn->bm", A, rng.normal(size=(B, n)))  # consistent ...
    b[1::3] += rng.normal(size=(len(b[1::3]), m))  # ... but a third of them perturbed
    batch = problems.ProblemBatch(family="test", kind="qp", c=np.zeros((B, n)), A_eq=A, b_eq=b,
                                  A_ub=np.zeros((B, 0, n)), b_ub=np.zeros((B, 0)), meta=pd.DataFrame(index=range(B)))
    expected = []
    for i in range(B):
        x = np.linalg.lstsq(A[i], b[i], rcond=None)[0]
        expected.append(np.max(np.abs(A[i] @ x - b[i])) <= 1e-9 * (1 + np.max(np.abs(b[i]))))
    assert list(equalities_consistent(batch)) == expected


# ---------------------------------------------------------------- bench.studies.overhead
def test_overhead_refuses_bad_arguments_naming_them(capsys):
    from bench.studies import overhead

    for argv, words in ((["--sizes", "0"], "--sizes: expected"), (["--sizes", "a,b"], "--sizes: expected"),
                        (["--rounds", "0"], "--rounds: expected"), (["--timeout", "-1"], "--timeout: expected")):
        assert overhead.main(argv) == 2
        assert words in capsys.readouterr().err


@pytest.mark.parametrize("family", ["planar-box", "cube-3d"])
def test_the_hold_verifiers_make_one_frame_of_the_checks_columns(family):
    """``verify_lp1`` and ``verify_exit`` build one frame from the checks' columns
    (``witness_columns``, ``certificate_columns``, ``farkas_columns``) instead of joining three
    frames (0.35 -> 0.10 ms a call at 1,272 exits): the same columns, values and dtypes as the
    frames of the checks (``witness_check``, ...) joined, on answers made wrong on purpose too."""
    from problems.kinds.checks import DEFAULT_TOLERANCES, farkas_check
    from problems.kinds.exit import verify_exit
    from problems.kinds.lp1 import certificate_check, verify_lp1
    from problems.kinds._hold import witness_check

    rng = np.random.default_rng(7)
    for kind in ("lp1", "exit"):
        batch = problems.generate(family, 24, 0, kind=kind)
        sol = solvers.get("highs").solve_batch(*batch.arrays())
        x, y_eq = sol.x.copy(), sol.y_eq.copy()
        x[::5] += rng.normal(0, 1e-3, x[::5].shape)
        x[::7] = np.nan
        y_eq[1::6] *= -1.0
        sol = BatchSolution(x=x, y_eq=y_eq, y_ub=sol.y_ub, objective=sol.objective, status=sol.status,
                            iterations=sol.iterations, native_status=sol.native_status, message=sol.message)
        k, tol = batch.W.shape[2], DEFAULT_TOLERANCES
        if kind == "lp1":
            got = verify_lp1(batch, sol)
            L = batch.limit_B.shape[1]
            parts = [witness_check(batch, x[:, :k], None, tol), certificate_check(batch, y_eq, sol.y_ub[:, :L], tol)]
            head = got[["verdict", "delta"]]
        else:
            got = verify_exit(batch, sol)
            parts = [witness_check(batch, x[:, :k], x[:, k], tol),
                     farkas_check(batch.A_eq, batch.b_eq, batch.A_ub, batch.b_ub, None, None, None, y_eq, sol.y_ub,
                                  tol)]
            head = got[["verdict", "t", "exit"]]
        assert set(got["verdict"]) - {"supported", "verified"}  # the wrong answers were judged so
        pd.testing.assert_frame_equal(got, pd.concat([head, *parts], axis=1), check_exact=True)


@given(st.integers(0, 1 << 40))
def test_a_batch_at_once_is_padded_to_one_of_eight_sizes_per_doubling(n):
    """``batch_bucket``: never fewer cases than the batch, at most 1/8 more (none up to 16 and
    at a power of two), non-decreasing, and eight sizes at most between two powers of two, so
    batches whose sizes vary share their compiled programs."""
    from solvers._jax import BUCKETS_PER_OCTAVE, batch_bucket

    size = batch_bucket(n)
    assert n <= size <= n + n // BUCKETS_PER_OCTAVE
    if n <= 16 or n & (n - 1) == 0:  # small batches and powers of two are not padded
        assert size == n
    assert batch_bucket(n + 1) >= size and batch_bucket(size) == size
    low = 1 << max(n.bit_length() - 1, 0)  # the octave [low, 2 low) that n is in
    sizes = {batch_bucket(m) for m in range(low, 2 * low)} if low <= 1 << 12 else \
        {batch_bucket(low + (low * i) // 64) for i in range(64)}
    assert len(sizes - {2 * low}) <= BUCKETS_PER_OCTAVE  # (the top of an octave rounds up to the next power)


@given(st.integers(1, 1 << 20), st.integers(-1, 1 << 16), st.booleans())
def test_a_batch_padded_to_its_at_once_size_is_solved_as_it_is(n, chunk, bucket):
    """``at_once_size``: None exactly where ``chunked`` cuts the batch in pieces; otherwise at
    least the batch, at most ``chunk``, the bucket only with ``bucket``, and a batch already of
    that size keeps it: linrax-hold pads its lean exits on the host to it, and ``chunked``
    must then solve them as they are (no padding program compiled on the device per count)."""
    from solvers._jax import at_once_size, batch_bucket

    size = at_once_size(n, chunk, bucket)
    if chunk > 0 and n > chunk:
        assert size is None
        return
    assert n <= size and (chunk <= 0 or size <= chunk)
    expected = batch_bucket(n) if bucket else n
    if chunk > 0:
        expected = min(expected, chunk)
    assert size == expected
    assert at_once_size(size, chunk, bucket) == size


@pytest.mark.parametrize("name", ["linrax", "linrax-hold"])
def test_a_new_adapter_with_the_settings_of_an_earlier_one_traces_nothing(name, own_programs):
    """``check_batch(scenes, name)`` makes a new adapter per call: the second call traces
    (and so compiles) no program, while an adapter with other settings traces its own."""
    _jax_ready(name)
    import jax

    from bench.hold import check_batch
    from bench.studies.margins import scenes_of
    traced = []

    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/jaxpr_trace_duration":
            traced.append(duration)

    scenes = scenes_of("planar-box", {"disk": True}, 24)
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        first = check_batch(scenes, name, margin=False)
        after_first = len(traced)
        again = check_batch(scenes, name, margin=False)
        after_again = len(traced)
        check_batch(scenes, solvers.get(name, dtype="float64"), margin=False)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert after_first > 0 and after_again == after_first and len(traced) > after_again
    np.testing.assert_array_equal(first.verdict, again.verdict)
