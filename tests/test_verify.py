"""The verifier: witnesses, certificates, exits, outcomes; never trusting a solver's flag."""

import numpy as np
import pandas as pd
import pytest

import problems
import solvers
from bench.engine import verify
from bench.engine.reference import compute_reference, reference
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
    outcome = verify.exit_outcomes(out["verdict"], out["exit"], ref["ref_exit"], ref["ref_verdict"])
    assert outcome[0] == "uncertain"  # shrunk to 0, never enlarged
    assert ref["ref_exit"][0] == pytest.approx(0.2)


def test_exit_overclaim_is_false_accept():
    verdict = pd.Series(["verified", "verified", "verified", "uncertain"])
    out = verify.exit_outcomes(verdict, pd.Series([0.3, 0.2, 0.1, 0.0]), pd.Series([0.2, 0.2, 0.2, 0.2]),
                               pd.Series(["verified"] * 4))
    assert list(out) == ["false_accept", "correct", "false_reject", "uncertain"]


def test_unverified_exit_of_zero_is_never_correct():
    """Regression: an unverified exit is set to 0 for margins, and 0 equals a
    reference exit of 0, so ``exit_outcomes`` called it correct; 87 of 192 'correct'
    planar exits of linrax float32 were unverified."""
    verdict = pd.Series(["uncertain", "failed", "infeasible", "verified", "infeasible", "verified"])
    exits = pd.Series([0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    ref_exit = pd.Series([0.0, 0.0, 0.0, 0.0, 0.3, 0.0])
    ref_verdict = pd.Series(["infeasible", "infeasible", "infeasible", "verified", "verified", "uncertain"])
    out = verify.exit_outcomes(verdict, exits, ref_exit, ref_verdict)
    assert list(out) == ["uncertain", "failed", "correct", "correct", "false_reject", "uncertain"]


def test_exit_of_an_unsupported_scene_is_correct_only_with_a_certificate():
    # one corner cannot hold the box: most exit LPs are infeasible (a push along +-f_x or
    # +-tau can bring the need back into the cone, so those are feasible with t > 0)
    b = one(planar_box.scene(corners="A"), "exit")
    ref = compute_reference(b)
    lost = (ref["ref_verdict"] == "infeasible").to_numpy()
    assert lost.sum() >= 3 and (ref["ref_exit"][lost] == 0).all()
    k = b.W.shape[2]
    zero = verify.verify_exit(b, sol(np.zeros((6, k + 1)), np.zeros((6, 3)), np.zeros((6, 1)), Status.INFEASIBLE))
    assert set(zero["verdict"][lost]) == {"uncertain"}  # a claim and an exit of 0 prove nothing
    highs = solvers.get("highs").solve_batch(*b.arrays())
    certified = verify.verify_exit(b, highs)
    assert set(certified["verdict"][lost]) == {"infeasible"}
    outcome = verify.exit_outcomes(certified["verdict"], certified["exit"], ref["ref_exit"], ref["ref_verdict"])
    assert set(outcome) == {"correct"}
    flipped = verify.verify_exit(b, sol(np.full_like(highs.x, np.nan), -highs.y_eq, -highs.y_ub, Status.INFEASIBLE))
    assert set(flipped["verdict"][lost]) == {"uncertain"}


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


@pytest.mark.needs("linrax")
@pytest.mark.parametrize("params", PINNED, ids=["negative-weight", "negative-slack"])
def test_pinned_linrax_float32_wrong_answer_flagged_success_counts_uncertain(params):
    b = one(planar_box.scene(pad=True, **params))
    s = solvers.get("linrax", dtype="float32").solve_batch(*b.arrays())
    assert s.status[0] == Status.OPTIMAL  # linrax calls it a success ...
    assert s.objective[0] < -0.5  # ... with a negative l1 distance (-0.57 and -0.94 here)
    checked = verify.verify_lp1(b, s)
    ref = reference(b)
    outcome = verify.lp1_outcomes(checked["verdict"], ref["truth"])[0]
    assert checked["verdict"][0] == "uncertain" and outcome == "uncertain"
    # the float64 reference and linrax float64 agree on the truth
    s64 = solvers.get("linrax", dtype="float64").solve_batch(*b.arrays())
    assert verify.verify_lp1(b, s64)["verdict"][0] == ref["truth"][0]


def test_reference_is_cached_on_disk(isolated_cache, monkeypatch):
    from bench.engine import reference as reference_module

    b = problems.generate("planar-box", 20, 1)
    first = reference(b)
    files = list((isolated_cache / "reference").glob("*.npz"))
    assert len(files) == 1
    assert (first["truth"] == first["ref_verdict"]).all()  # HiGHS' answers verify as the truth says
    # the second call reads the cache: it does not solve
    monkeypatch.setattr(reference_module, "solve_reference", lambda batch: pytest.fail("solved again"))
    pd.testing.assert_frame_equal(reference(b), first)


def test_doctored_reference_cache_is_detected_and_recomputed(isolated_cache):
    """Regression: wrong references persisted in the cache, whose key ignored
    which solver produced them. The cache stores answers and re-verifies them on load."""
    b = problems.generate("planar-box", 32, 1)
    first = reference(b)
    path = next((isolated_cache / "reference").glob("*.npz"))
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["x"] = np.zeros_like(arrays["x"])  # answers that no longer prove the stored truth
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.warns(UserWarning, match="contradicts"):
        again = reference(b)
    pd.testing.assert_frame_equal(again, first)
    path.write_bytes(b"not an npz")
    with pytest.warns(UserWarning, match="unreadable"):
        pd.testing.assert_frame_equal(reference(b), first)


def test_reference_cache_key_names_the_reference_solver(isolated_cache, monkeypatch):
    from bench.engine import reference as reference_module

    b = problems.generate("planar-box", 8, 1)
    before = reference_module.cache_path(b)
    real = reference_module.reference_identity
    monkeypatch.setattr(reference_module, "reference_identity", lambda batch: {**real(batch), "version": "0.0.1"})
    assert reference_module.cache_path(b) != before
