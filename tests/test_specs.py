"""Specs parsed once (SolverSpec, FamilySpec), the one capability filter and the one
timed-solve routine."""

from __future__ import annotations

import numpy as np
import pytest

import problems
import solvers
from bench.engine import grid
from bench.hold import check
from problems import FamilySpec, planar_box
from solvers import Capabilities, ProblemError, ProblemTraits, SolverSpec
from solvers.timing import timed_solve


def test_get_and_hold_check_take_the_cli_spec_syntax():
    adapter = solvers.get("highs[fast]")
    assert adapter.profile == "fast" and adapter.label == "highs[fast]"
    assert solvers.get("highs[fast]", time_limit=5).settings["time_limit"] == 5.0  # keywords win, typed
    assert check(planar_box.scene(mu=0.2), "highs[fast]").verdict == "supported"
    assert check(planar_box.scene(corners="A"), "highs[fast]").verdict == "unsupported"


@pytest.mark.parametrize("spec, words", [
    ("highs[nope]", "profile: adapter 'highs' has profiles"),
    ("highs[fast,high_accuracy]", "two bare words"),
    ("highs[speed=3]", "does not accept ['speed']"),
    ("osqp[max_iter=lots]", "setting 'max_iter': expected a int"),
    ("nosuch", "solver: expected one of"),
    ("highs[", "expected name or name[key=value,...]"),
])
def test_a_bad_solver_spec_names_what_is_wrong(spec, words):
    with pytest.raises(ProblemError) as err:
        SolverSpec.parse(spec)
    assert words in str(err.value)


def test_solver_spec_is_canonical_and_round_trips():
    spec = SolverSpec.parse("osqp[ max_iter=8000 , high_accuracy ]")
    assert str(spec) == "osqp[high_accuracy,max_iter=8000]" and spec.settings == {"max_iter": 8000}
    assert SolverSpec.parse(str(spec)) == spec
    assert spec.with_settings(dtype="float64").label == "osqp[high_accuracy,max_iter=8000]"


def test_a_cell_carries_parsed_specs_and_survives_its_manifest_form():
    cells, _ = grid.expand(["planar-box[kind=exit,disk=True]"], ["highs[fast]"], ["float64"], ["cpu"], [4], 0, 1)
    cell = cells[0]
    assert isinstance(cell.family, FamilySpec) and isinstance(cell.solver, SolverSpec)
    assert cell.params == {"kind": "exit", "disk": True} and cell.family_label == "planar-box[disk=True]"
    assert grid.Cell.from_dict(cell.to_dict()) == cell
    assert cell.adapter_spec.settings == {"dtype": "float64"}  # highs takes no device option


def test_family_spec_validates_once_and_generate_takes_it():
    spec = FamilySpec.parse("planar-box[kind=exit,mu=(0.2, 0.3)]")
    assert spec.params == {"kind": "exit", "mu": (0.2, 0.3)}
    batch = problems.generate(spec, 3, 0)
    assert batch.kind == "exit" and len(batch) == 18
    with pytest.raises(ProblemError, match="give them in the FamilySpec"):
        problems.generate(spec, 3, 0, mu=(0.1, 0.2))
    with pytest.raises(ProblemError, match="kind: family 'planar-box' generates"):
        FamilySpec.parse("planar-box[kind=qp]")


@pytest.mark.parametrize("traits, kwargs, reason", [
    (ProblemTraits("qp"), {}, "does not solve QPs"),
    (ProblemTraits("lp", "hold-d6-lp1"), {}, "decides only ['hold-d3-lp1']"),
    (ProblemTraits("lp", "hold-d3-lp1", general_bounds=True), {}, "takes x >= 0 only"),
    (ProblemTraits("lp", "hold-d3-lp1"), {"dtype": "float16"}, "computes in ['float64'] only"),
    (ProblemTraits("lp", "hold-d3-lp1"), {"device": "gpu"}, "runs on ['cpu'] only"),
    (ProblemTraits("lp", "hold-d3-lp1"), {"dtype": "float64", "device": "cpu"}, None),
])
def test_capabilities_accepts_is_the_one_filter_with_reasons(traits, kwargs, reason):
    caps = Capabilities(lp=True, structures=("hold-d3-lp1",), general_bounds=False)
    assert caps.accepts(traits, **kwargs) == reason


def test_timed_solve_times_each_repeat_and_returns_the_verified_shape():
    batch = problems.generate("planar-box", 8, 0)
    problem = solvers.check_standard_form(*batch.arrays(), batched=True)
    timed = timed_solve(solvers.get("highs"), problem, 3)
    assert timed.times_s.shape == (3,) and np.all(timed.times_s > 0) and timed.first_s > 0
    # end to end = validate + prepare + run + finish of the same repeat: never shorter than its run
    assert timed.end_to_end_s.shape == (3,) and np.all(timed.end_to_end_s >= timed.times_s)
    assert timed.solution.x.shape == batch.c.shape
    with pytest.raises(ProblemError, match="repeats: expected an integer from 1 to"):
        timed_solve(solvers.get("highs"), problem, 0)


def test_highs_with_its_own_thread_count_works_after_another_highs_ran_in_the_process():
    """Found while testing the spec syntax: ``highs[fast]`` (threads=1) answered ERROR on every
    case once any default HiGHS had run in the same process (HiGHS' global scheduler), which a
    reused worker process does."""
    batch = problems.generate("planar-box", 4, 0)
    first = solvers.get("highs").solve_batch(*batch.arrays())
    fast = solvers.get("highs[fast]").solve_batch(*batch.arrays())
    again = solvers.get("highs").solve_batch(*batch.arrays())
    for solution in (first, fast, again):
        assert (solution.status == solvers.Status.OPTIMAL).all()
    np.testing.assert_allclose(fast.objective, first.objective, atol=1e-9)
