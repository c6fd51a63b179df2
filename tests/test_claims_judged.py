"""A claim is judged as made, and no constraint-violating answer counts correct: super-optimal
objectives, one loose row hiding another, certificates beside unsafe forces, and a reference
that failed. Dishonest plug-ins run through the real engine (worker processes, files family)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.engine import runner
from bench.engine.grid import Cell
from problems import generate
from problems.kinds.checks import DEFAULT_TOLERANCES as TOL
from problems.kinds.qp import dual_bound, qp_outcomes, qp_reference_rows, verify_qp
from solvers import BatchSolution, Status

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow


def _lp_folder(path, A_ub, b_ub, cases=16):
    """``cases`` LPs ``min c@x`` with ``c = [-1 - 0.01 i, 0]`` over ``A_ub x <= b_ub``, ``x >= 0``."""
    path.mkdir()
    c = np.stack([[-1.0 - 0.01 * i, 0.0] for i in range(cases)])
    np.savez(path / "lps.npz", c=c, A_ub=np.broadcast_to(np.asarray(A_ub, float), (cases, 2, 2)),
             b_ub=np.broadcast_to(np.asarray(b_ub, float), (cases, 2)),
             A_eq=np.zeros((cases, 0, 2)), b_eq=np.zeros((cases, 0)))
    return path


def _run(tmp_path, family, solver, n=16):
    result, = runner.run_cells([Cell.of(family, n, 0, solver, "float64", "cpu", 1)], tmp_path / "run", "t", timeout=300)
    assert result.state == "done", result
    return result.rows


@pytest.mark.parametrize("A_ub, b_ub, spec", [
    # a 10 % step past a small bound, objective recomputed: 5 % below the optimum
    ([[1, -1e4], [0, 1]], [0, 1e-4], "fake-superoptimal"),
    # 50 past a bound of 1, beside a row whose bound is 1e7
    ([[1, 0], [0, 1]], [1, 1e7], "fake-shifted"),
])
def test_a_constraint_breaking_answer_below_the_optimum_is_never_correct(tmp_path, fake_plugins, A_ub, b_ub, spec):
    folder = _lp_folder(tmp_path / "lps", A_ub, b_ub)
    rows = _run(tmp_path, f"files[kind=lp,path={folder}]", spec)
    assert (rows["truth"] == "feasible").all()
    assert (rows["outcome"] == "false_accept").all(), rows["outcome"].value_counts()
    honest = _run(tmp_path / "honest", f"files[kind=lp,path={folder}]", "clarabel")
    assert (honest["outcome"] == "correct").all()


def test_each_row_is_measured_against_its_own_right_hand_side():
    """One row with ``b = 1e7`` loosens no other row: ``x0 = 51`` breaks ``x0 <= 1`` by 50
    over that row's size 1 + 1 + 51, whatever the other row's size."""
    from problems.kinds.lp import KIND as LP

    batch = LP.build_arrays("t", np.array([[-1.0, 0.0]]), np.zeros((1, 0, 2)), np.zeros((1, 0)),
                                     np.eye(2)[None], np.array([[1.0, 1e7]]), pd.DataFrame({"i": [0]}))
    x = np.array([[51.0, 0.0]])
    sol = BatchSolution(x=x, y_eq=np.zeros((1, 0)), y_ub=np.zeros((1, 2)), objective=np.array([-51.0]),
                        status=np.array([Status.OPTIMAL], dtype=object), iterations=np.zeros(1, np.int64),
                        native_status=np.array(["x"], dtype=object), message=np.array([""], dtype=object))
    checked = verify_qp(batch, sol)
    assert checked["primal_residual"].iloc[0] == pytest.approx(50 / 53)
    assert checked["verdict"].iloc[0] == "uncertain"


def test_optimal_claim_with_unsafe_forces_is_judged_by_its_forces_not_its_duals(tmp_path, fake_plugins):
    """Noise forces claimed OPTIMAL keep Clarabel's duals; where those certify infeasibility the
    answer is still unsafe forces (false accept), never a correct infeasibility."""
    rows = _run(tmp_path, "quadruped[kind=qp]", "fake-noisy-forces")
    assert (rows["outcome"] == "false_accept").all(), rows["outcome"].value_counts()
    assert rows["certified"].any()  # the duals were certificates: they did not count


def test_a_reference_that_failed_gives_no_truth(tmp_path):
    """A planar scene whose contacts' W column is scaled by 1e16: where the reference LP-1
    returns no finite delta, the truth is unknown and every answer uncertain, never a class."""
    from problems.kinds.lp1 import KIND

    batch = generate("planar-box", 8, seed=0, kind="lp1")
    nan = np.full(len(batch), np.nan)
    ref = KIND.reference_rows(batch, BatchSolution(
        x=np.full(batch.c.shape, np.nan), y_eq=np.full(batch.b_eq.shape, np.nan),
        y_ub=np.full(batch.b_ub.shape, np.nan), objective=nan, status=np.array([Status.ERROR] * 8, dtype=object),
        iterations=np.zeros(8, np.int64), native_status=np.array(["x"] * 8, dtype=object),
        message=np.array([""] * 8, dtype=object)))
    assert (ref["truth"] == "unknown").all()
    exact = generate("planar-box", 8, seed=0, kind="lp1")
    sol = KIND.solve_reference(exact)
    checked = KIND.verify(exact, sol)
    assert set(checked["verdict"]) <= {"supported", "unsupported"}
    assert (KIND.judge(checked, ref)["outcome"] == "uncertain").all()


def test_super_optimal_against_an_unproven_reference_is_uncertain():
    checked = pd.DataFrame({"verdict": ["feasible"] * 3, "said": ["optimal"] * 3,
                            "qp_objective": [-2.0, -2.0, -1.0], "primal_residual": [0.0] * 3})
    ref = pd.DataFrame({"truth": ["feasible"] * 3, "ref_objective": [-1.0] * 3,
                        "ref_dual_bound": [-1.0, np.nan, -1.0]})
    assert list(qp_outcomes(checked, ref)["outcome"]) == ["false_accept", "uncertain", "correct"]


def test_reference_duals_prove_the_optimum_of_a_generated_qp():
    from problems.kinds.qp import KIND as kind

    batch = generate("quadruped", 16, seed=0, kind="qp")
    sol = kind.solve_reference(batch)
    ref = qp_reference_rows(batch, sol)
    feasible = ref["truth"] == "feasible"
    assert feasible.any()
    gap = (ref["ref_objective"] - ref["ref_dual_bound"]) / (1 + ref["ref_objective"].abs())
    assert (gap[feasible].abs() <= TOL.qp_gap).all()
    # a bound from duals with the wrong sign is no bound
    flipped = BatchSolution(**{**sol.__dict__, "y_ub": -sol.y_ub - 1.0})
    assert np.isnan(dual_bound(batch, flipped)[feasible.to_numpy()]).all()


def test_an_adapter_that_replays_its_first_answers_is_caught_by_a_later_repeat(tmp_path, fake_plugins):
    """Each timed repeat sees the cases in a fresh order and is verified: replayed answers
    land on other cases and are judged there."""
    rows = _run(tmp_path, "planar-box", "fake-replay", n=32)
    honest = _run(tmp_path / "honest", "planar-box", "highs", n=32)
    assert (honest["outcome"] == "correct").all()
    assert (rows["outcome"] != "correct").sum() >= 8, rows["outcome"].value_counts()


def test_a_family_whose_reference_fails_gives_unknown_truth_and_no_unsafe_verdict(tmp_path):
    """A family plug-in of planar scenes with one W column x 1e16: the reference LP-1 finds no
    delta, so no answer on them is scored against a truth it did not establish (the exact
    witnesses were 16/16 false accepts)."""
    import os
    import subprocess
    import sys

    (tmp_path / "huge_w.py").write_text(
        "import dataclasses\nimport numpy as np\nfrom problems import Family, planar_box\n"
        "def sample(n, seed):\n"
        "    items, meta = planar_box.sample(n, seed)\n"
        "    scaled = []\n"
        "    for scene in items:\n"
        "        W = np.array(scene.W, dtype=float)\n"
        "        W[:, 0] *= 1e16\n"
        "        scaled.append(dataclasses.replace(scene, W=W))\n"
        "    return scaled, meta\n"
        "FAMILY = Family('huge-w', 'one W column x 1e16', sample, planar_box.AXES, kinds=('lp1',))\n")
    env = {**os.environ, "CONTACTBENCH_FAMILY_PLUGINS": "huge_w",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "bench.cli", "run", "-f", "huge-w", "-s", "exact-planar",
                           "--dtype", "float64", "--n", "16", "--repeats", "1", "--out", str(tmp_path / "runs"),
                           "--run-id", "r"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = pd.concat(pd.read_parquet(p) for p in (tmp_path / "runs" / "r").glob("*.parquet"))
    assert len(rows) == 16 and (rows["truth"] == "unknown").all()
    assert set(rows["outcome"]) <= {"uncertain", "failed"}


def test_ref_agrees_reads_each_claim_against_the_truth_proof_or_not():
    from problems.kinds.lp1 import CLAIM_DELTA
    from problems.kinds.lp1 import KIND as LP1

    checked = pd.DataFrame({"verdict": ["uncertain"] * 5, "delta": [0.0, 2 * CLAIM_DELTA, 0.0, np.nan, 0.5]})
    ref = pd.DataFrame({"truth": ["supported", "unsupported", "unsupported", "supported", "unknown"],
                        "ambiguous": [False, False, True, False, False]})
    assert list(LP1.judge(checked, ref)["ref_agrees"]) == [True, True, True, False, False]
    qp_checked = pd.DataFrame({"verdict": ["uncertain"] * 4, "said": ["infeasible", "infeasible", "optimal", "max_iter"],
                               "qp_objective": [np.nan] * 4, "primal_residual": [np.nan] * 4})
    qp_ref = pd.DataFrame({"truth": ["infeasible", "feasible", "feasible", "feasible"], "ref_objective": [np.nan] * 4})
    assert list(qp_outcomes(qp_checked, qp_ref)["ref_agrees"]) == [True, False, True, False]
