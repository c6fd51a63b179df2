"""Issue 24 ("trust, second round"): each reproduction of the hostile-user probes, as a test
that fails on the code before its fix. Numbers in test names follow the issue's items."""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers import ProblemError, SolverSpec


# ------------------------------------------------------------------ 19: option ranges
@pytest.mark.parametrize("spec, words", [
    ("piqp[max_iter=-1]", "setting 'max_iter': expected an integer >= 1, got '-1'"),
    ("daqp[iter_limit=-5]", "setting 'iter_limit': expected an integer >= 1"),
    ("proxsuite[eps_abs=-1]", "setting 'eps_abs': expected a number > 0"),
    ("osqp[eps_abs=nan]", "setting 'eps_abs': expected a finite number"),
    ("highs[time_limit=inf]", "setting 'time_limit': expected a finite number"),
    ("highs[threads=-2]", "setting 'threads': expected an integer >= 0"),
    ("daqp[eps_prox=-0.5]", "setting 'eps_prox': expected a number >= 0 (or -1.0)"),
    ("linrax-hold[max_pivots=0]", "setting 'max_pivots': expected an integer >= 1"),
])
def test_19_a_solver_option_outside_its_range_is_refused(spec, words):
    name = spec.split("[")[0]
    if solvers.available().get(name):
        pytest.skip(solvers.available()[name])
    with pytest.raises(ProblemError) as err:
        SolverSpec.parse(spec)
    assert words in str(err.value)


def test_19_special_and_boundary_values_are_accepted():
    if not solvers.available().get("daqp"):
        assert SolverSpec.parse("daqp[eps_prox=-1]").settings["eps_prox"] == -1.0
        assert SolverSpec.parse("daqp[eps_prox=0]").settings["eps_prox"] == 0.0
    assert SolverSpec.parse("highs[threads=0]").settings["threads"] == 0


def test_19_every_numeric_option_of_every_adapter_declares_its_range():
    undeclared = [f"{name}.{key}" for name, cls in solvers.adapters().items()
                  for key, opt in cls.options().items()
                  if opt.numeric and opt.ge is None and opt.gt is None and opt.le is None]
    assert undeclared == []


# ------------------------------------------------------------------ 20: every direct solve ends
def test_20_mpax_direct_solve_of_an_unbounded_lp_ends():
    if solvers.available().get("mpax"):
        pytest.skip(solvers.available()["mpax"])
    from solvers.mpax_ import DEFAULT_MAX_ITER

    adapter = solvers.get("mpax")
    assert adapter.settings["max_iter"] == DEFAULT_MAX_ITER
    sol = adapter.solve(np.array([-1.0, 0, 0]), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), np.zeros(0))
    assert sol.status in (solvers.Status.MAX_ITER, solvers.Status.UNBOUNDED)
    assert 0 < sol.iterations <= DEFAULT_MAX_ITER + 1000  # (it checks its limit between restarts)


# ------------------------------------------------------------------ 1: an adapter cannot change what it is judged on
@pytest.mark.parametrize("how, words", [
    ("inplace", "read-only"),                 # the arrays it gets are read-only copies
    ("unlock", None),                         # made writeable: it changes its own copy, judged on the original
    ("batch", "changed the problem arrays"),  # reaches the caller's batch: caught by the content hash
])
def test_01_an_adapter_that_changes_its_input_is_judged_on_the_original(tmp_path, fake_plugins, how, words):
    """The issue's probe (A = 0, b = 1, then y_eq = 1 as a certificate) scored 47/96 exits and
    22/32, 20/32 quadruped QPs and SOCPs correct. Now its answers are judged on the problems
    generated, exactly as the same answers from an adapter that changes nothing."""
    from bench import runner
    from bench.grid import Cell

    fams = ("planar-box[kind=exit]", "quadruped[kind=qp]", "quadruped[kind=socp]")
    cells = [Cell.of(fam, 16, 0, f"fake-mutate[how={h}]", "float64", "cpu", 1) for h in (how, "none") for fam in fams]
    results = runner.run_cells(cells, tmp_path / "run", "m", timeout=120)
    for result, honest in zip(results[:3], results[3:]):
        assert honest.state == "done"
        rows, fair = result.rows, honest.rows
        if words is None:
            assert result.state == "done"
            assert rows["outcome"].tolist() == fair["outcome"].tolist()
        else:
            assert result.state == "failed" and words in rows["error"].iloc[0]
            assert (rows["outcome"] == "failed").all()
        assert (fair.loc[fair["outcome"] == "correct", "kind"] == "exit").all()  # only real certificates
