"""linrax-hold (issue 6): each measure's effect on a concrete LP, the guard on linrax's
internals, the cap, and the ablation / reproduction tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import problems
import solvers
from bench import seed002
from bench.reference import reference
from bench.verify import exit_outcomes, lp1_outcomes, verify_exit, verify_lp1
from solvers import SolverNotAvailable, Status

pytestmark = pytest.mark.skipif(solvers.available().get("linrax-hold") is not None,
                                reason=str(solvers.available().get("linrax-hold")))


def _outcome(batch, **settings):
    """Outcomes of linrax-hold float32 with ``settings`` on ``batch`` against HiGHS float64."""
    ref = reference(batch)
    s = solvers.get("linrax-hold", dtype="float32", **settings).solve_batch(*batch.arrays())
    if batch.kind == "lp1":
        return lp1_outcomes(verify_lp1(batch, s)["verdict"], ref["truth"], ref["ambiguous"]), s
    v = verify_exit(batch, s)
    return exit_outcomes(v["verdict"], v["exit"], ref["ref_exit"]), s


def _case(family, n, seed, index, **params):
    """One LP of a generated batch, as a batch of one (generators are pure: same bytes every time)."""
    return problems.generate(family, n, seed, **params).subset(np.array([index]))


# (measure, off value, family, n, seed, index, params): found by running every measure off
# on seed 002's sets; each LP goes wrong with the measure off and right with everything on.
MEASURE_CASES = [
    ("recompute", False, "cube-3d", 768, 0, 150, {}),
    ("pivot_tol", 1e-6, "cube-3d", 768, 0, 15, {}),
    ("reinvert", False, "cube-3d", 768, 0, 150, {}),
    ("small_witness", False, "cube-3d", 768, 0, 150, {}),
    ("exit_cap", False, "planar-box", 256, 0, 2, {"kind": "exit", "disk": True}),
]


@pytest.mark.parametrize("measure, off, family, n, seed, index, params", MEASURE_CASES,
                         ids=[c[0] for c in MEASURE_CASES])
def test_each_measure_fixes_a_concrete_lp(measure, off, family, n, seed, index, params):
    # solved in its batch: float32 rounding under vmap depends on the batch XLA compiles for
    batch = problems.generate(family, n, seed, **params)
    with_all, _ = _outcome(batch)
    without, _ = _outcome(batch, **{measure: off})
    assert with_all[index] == "correct"
    assert without[index] in ("uncertain", "false_reject", "failed")
    assert "false_accept" not in set(with_all)


def test_small_witness_returns_a_witness_float32_can_check():
    batch = problems.generate("cube-3d", 768, 0)
    _, full = _outcome(batch)
    _, plain = _outcome(batch, small_witness=False)
    k = batch.k
    assert full.x[150, :k].sum() < plain.x[150, :k].sum()  # a smaller total weight
    assert np.abs(full.x[150, :k]).max() < 50 < np.abs(plain.x[150, :k]).max()


def test_cap_bounds_every_lp_and_the_batch_still_answers():
    batch = problems.generate("cube-3d", 64, 0)
    s = solvers.get("linrax-hold", dtype="float32", max_pivots=20, reinvert=False,
                    small_witness=False).solve_batch(*batch.arrays())
    capped = s.status == Status.MAX_ITER
    assert 0 < capped.sum() < len(batch)  # some LPs need more than 20 pivots, the rest finish
    ref = reference(batch)
    outcome = lp1_outcomes(verify_lp1(batch, s)["verdict"], ref["truth"], ref["ambiguous"])
    assert "false_accept" not in set(outcome)
    assert (outcome[~capped] == "correct").all()


def test_measures_do_not_leak_into_published_linrax():
    batch = problems.generate("cube-3d", 32, 3)
    published = solvers.get("linrax", dtype="float32")
    before = published.solve_batch(*batch.arrays())
    solvers.get("linrax-hold", dtype="float32").solve_batch(*batch.arrays())
    after = solvers.get("linrax", dtype="float32").solve_batch(*batch.arrays())
    np.testing.assert_array_equal(before.x, after.x)
    from linrax import optim

    assert optim._simplex.__module__ == "linrax.optim"  # the original loop is back in place


def test_refuses_linrax_internals_it_was_not_checked_against(monkeypatch):
    from linrax import optim

    from solvers import linrax_hold_

    monkeypatch.setattr(optim, "_simplex", lambda *a, **k: None)
    with pytest.raises(SolverNotAvailable, match="_simplex is not the function it was checked against"):
        linrax_hold_.check_linrax()
    monkeypatch.setattr(linrax_hold_.importlib.metadata, "version", lambda name: "0.4.0")
    with pytest.raises(SolverNotAvailable, match="checked against linrax 0.3.0; found 0.4.0"):
        linrax_hold_.check_linrax()


def test_settings_from_the_command_line_spec():
    name, settings = solvers.parse_spec("linrax-hold[reinvert=false,bland=false]")
    adapter = solvers.get(name, **settings)
    assert adapter.settings["bland"] is False and adapter.settings["reinvert"] is False
    assert adapter.label == "linrax-hold[bland=False,reinvert=False]"


def test_householder_spreads_the_right_hand_side():
    from solvers.linrax_hold_ import householder

    b = np.array([0.0, 1.0, 0.0])
    H = householder(np, b)
    np.testing.assert_allclose(H @ b, np.ones(3) / np.sqrt(3), atol=1e-12)
    np.testing.assert_allclose(H @ H.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(householder(np, np.zeros(3)), np.eye(3))


def test_ablation_and_reproduction_tables_count_per_configuration():
    cells = seed002.ablation_cells(scale=0.02)
    specs = {c.solver for c in cells}
    assert "linrax-hold" in specs and "linrax" in specs and "linrax-hold[reinvert=False]" in specs
    assert len(cells) == len(seed002.ABLATION_SETS) * len(seed002.ablation_specs())
    rows = pd.DataFrame({
        "family": ["cube-3d"] * 3, "kind": ["lp1"] * 3,
        "family_params": [json.dumps({"kind": "lp1"})] * 3,
        "solver_spec": ["linrax-hold", "linrax-hold[reinvert=False]", "linrax-hold[reinvert=False]"],
        "outcome": ["correct", "uncertain", "correct"], "ms_per_256": [1.0, 2.0, 2.0],
    })
    table = seed002.ablation_table(rows)
    off = table[table["configuration"] == "without reinvert"].iloc[0]
    assert (off["n"], off["correct"], off["uncertain"], off["set"]) == (2, 1, 1, "cube-3d random LP-1")
    rcells = seed002.reproduction_cells(scale=0.02)
    assert {(c.solver, c.dtype) for c in rcells} >= {("linrax-hold", "float32"), ("linrax", "float64"),
                                                      ("highs", "float64"), ("exact-planar", "float32")}
    assert all(c.kind == "lp1" for c in rcells if c.solver == "exact-planar")
