"""The verifier: witnesses, certificates, exits, outcomes; never trusting a solver's flag."""

import numpy as np
import pandas as pd
import pytest

import problems
import solvers
from bench import verify
from bench.reference import compute_reference, reference
from problems import hold_batch, planar_box
from solvers import BatchSolution, Status


def one(scene, kind="lp1"):
    return hold_batch("t", [scene], pd.DataFrame([{"case": 0}]), kind)


def sol(x, y_eq, y_ub, status=Status.OPTIMAL):
    x, y_eq, y_ub = (np.atleast_2d(np.asarray(a, float)) for a in (x, y_eq, y_ub))
    b = x.shape[0]
    return BatchSolution(x, y_eq, y_ub, np.zeros(b), np.array([status] * b, dtype=object),
                         np.zeros(b, int), np.array([""] * b, dtype=object), np.array([""] * b, dtype=object))


FLAT = planar_box.scene()
NO_UB = np.zeros((1, 0))


def test_witness_passes_and_perturbed_witness_fails():
    b = one(FLAT)
    good = verify.verify_lp1(b, sol([0.5, 0, 0, 0.5, 0, 0, 0, 0, 0, 0], [0, 0, 0], NO_UB))
    assert good["verdict"][0] == "supported" and good["residual"][0] == pytest.approx(0.0)
    off = verify.verify_lp1(b, sol([0.5, 0, 0, 0.5001, 0, 0, 0, 0, 0, 0], [0, 0, 0], NO_UB))
    assert off["verdict"][0] == "uncertain" and off["residual"][0] == pytest.approx(1.2e-4, rel=1e-3)  # |tau| of B- is 1.2
    negative = verify.verify_lp1(b, sol([0.6, -0.1, 0.1, 0.4, 0, 0, 0, 0, 0, 0], [0, 0, 0], NO_UB))
    assert negative["verdict"][0] == "uncertain" and negative["min_weight"][0] == pytest.approx(-0.1)


def test_certificate_passes_only_with_the_right_signs():
    b = one(planar_box.scene(corners="A"))
    x = np.zeros(2 + 6)
    good = verify.verify_lp1(b, sol(x, [-1, 1, -1], NO_UB))
    assert good["verdict"][0] == "unsupported" and good["cert_value"][0] == pytest.approx(1.0)
    flipped = verify.verify_lp1(b, sol(x, [1, -1, 1], NO_UB))
    assert flipped["verdict"][0] == "uncertain"


def test_certificate_with_force_limits():
    # the disk alone (limit 0.5) cannot supply a pure +f_x of 1
    sc = planar_box.scene(mu=0.0, corners="A", disk_height=0.0, disk_mu=0.0, disk_fmax=0.5)
    sc = problems.HoldScene(sc.W[:, 2:], np.array([1.0, 0.0, 0.0]),
                            problems.Limits(sc.limits.B[:, 2:], sc.limits.fmax))
    b = one(sc)
    s = solvers.get("highs").solve_batch(*b.arrays())
    out = verify.verify_lp1(b, s)
    assert out["verdict"][0] == "unsupported" and out["delta"][0] == pytest.approx(0.5)
    assert s.y_ub[0, 0] < 0  # the binding limit's dual, project sign


def test_nan_is_failed_and_solver_flag_is_ignored():
    b = one(FLAT)
    nan = verify.verify_lp1(b, sol(np.full(10, np.nan), np.full(3, np.nan), NO_UB))
    assert nan["verdict"][0] == "failed"
    # a solver that says OPTIMAL with lam = 0 and y = 0 proves nothing
    zero = verify.verify_lp1(b, sol(np.zeros(10), np.zeros(3), NO_UB, Status.OPTIMAL))
    assert zero["verdict"][0] == "uncertain"


def test_lp1_outcomes_table():
    verdict = pd.Series(["supported", "supported", "unsupported", "unsupported", "uncertain", "failed"])
    truth = pd.Series(["supported", "unsupported", "unsupported", "supported", "supported", "unsupported"])
    assert list(verify.lp1_outcomes(verdict, truth)) == [
        "correct", "false_accept", "correct", "false_reject", "uncertain", "failed"]


def test_failed_exit_check_sets_exit_to_zero():
    b = one(FLAT, "exit")
    k = FLAT.k
    x = np.zeros((6, k + 1))
    x[0, :k] = [0.5, 0, 0, 0.5]
    x[0, k] = 0.5  # claims t(+f_x) = 0.5 with a witness of t = 0: the check fails
    out = verify.verify_exit(b, sol(x, np.zeros((6, 3)), np.zeros((6, 1))))
    assert out["verdict"][0] == "uncertain" and out["exit"][0] == 0.0
    ref = compute_reference(b)
    outcome = verify.exit_outcomes(out["verdict"], out["exit"], ref["ref_exit"])
    assert outcome[0] == "uncertain"  # shrunk to 0, never enlarged
    assert ref["ref_exit"][0] == pytest.approx(0.2)


def test_exit_overclaim_is_false_accept():
    verdict = pd.Series(["verified", "verified", "verified", "uncertain"])
    out = verify.exit_outcomes(verdict, pd.Series([0.3, 0.2, 0.1, 0.0]), pd.Series([0.2, 0.2, 0.2, 0.2]))
    assert list(out) == ["false_accept", "correct", "false_reject", "uncertain"]


# linrax 0.3.0, float32, default tolerances: two disk scenes where it reports
# feasible=True, bounded=True with a negative slack (delta < 0) and, in the first, a
# negative weight. Found by scanning planar-box(disk=True) seeds 1 and 4 (cases 245 and
# 697); the exact input bits matter, so the parameters are written out in full.
PINNED = [
    dict(mu=0.7816779994562079, tilt=0.24560398579617404, corners="A", disk_height=-0.45565796424136784,
         disk_mu=0.5865722346404213, disk_fmax=0.4364758546762827,
         push=(-0.10604065483578143, 0.2655997726934051, -0.022620733919264557)),
    dict(mu=0.6575606905751481, tilt=-0.0723179416037591, corners="B", disk_height=-0.2520474329949238,
         disk_mu=0.31032222465816733, disk_fmax=0.2618309362777137,
         push=(-0.18171066796363144, -0.2445294522158269, 0.4142273424938676)),
]


@pytest.mark.parametrize("params", PINNED, ids=["negative-weight", "negative-slack"])
def test_pinned_linrax_float32_wrong_answer_flagged_success_counts_uncertain(params):
    b = one(planar_box.scene(pad=True, **params))
    s = solvers.get("linrax", dtype="float32").solve_batch(*b.arrays())
    assert s.status[0] is Status.OPTIMAL  # linrax calls it a success ...
    assert s.objective[0] < -0.5  # ... with a negative l1 distance (-0.57 and -0.94 here)
    checked = verify.verify_lp1(b, s)
    ref = reference(b)
    outcome = verify.lp1_outcomes(checked["verdict"], ref["truth"])[0]
    assert checked["verdict"][0] == "uncertain" and outcome == "uncertain"
    # the float64 reference and linrax float64 agree on the truth
    s64 = solvers.get("linrax", dtype="float64").solve_batch(*b.arrays())
    assert verify.verify_lp1(b, s64)["verdict"][0] == ref["truth"][0]


def test_reference_is_cached_on_disk(isolated_cache):
    b = problems.generate("planar-box", 20, 1)
    first = reference(b)
    files = list((isolated_cache / "reference").glob("*.parquet"))
    assert len(files) == 1
    pd.testing.assert_frame_equal(first, pd.read_parquet(files[0]))
    # a doctored cache file is what the second call returns: proof that it reads the cache
    doctored = first.assign(ref_delta=first["ref_delta"] + 123.0)
    doctored.to_parquet(files[0], index=False)
    assert reference(b)["ref_delta"].iloc[0] == pytest.approx(first["ref_delta"].iloc[0] + 123.0)
    assert (first["truth"] == first["ref_verdict"]).all()  # HiGHS' answers verify as the truth says
