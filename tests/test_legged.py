"""Legged stance sets: quadruped force QP/SOCP, humanoid torque QP, altproj."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import problems
import solvers
from bench.reporting import report
from bench.engine.reference import compute_reference
from bench.engine.verify import qp_outcomes, verify_qp
from problems import humanoid, quadruped
from solvers import BatchSolution, ProblemError, Status
from solvers.altproj_ import exact_cone_projection, utilization

QP_ADAPTERS = [n for n, cls in solvers.adapters().items()
               if cls.CAPABILITIES.qp and cls.CAPABILITIES.structures is None and solvers.available()[n] is None]
SOCP_ADAPTERS = [n for n, cls in solvers.adapters().items() if cls.CAPABILITIES.socp and solvers.available()[n] is None]
needs_humanoid = pytest.mark.skipif(humanoid.model_reason() is not None, reason=str(humanoid.model_reason()))


def _solve(name, scene, cone, **settings):
    q = scene.qp(cone)
    return solvers.get(name, **settings).solve(q.c, q.A_eq, q.b_eq, q.A_ub, q.b_ub, P=q.P, lb=q.lb, cones=q.cones,
                                               cone_mu=q.cone_mu)


def _normal_forces(x):
    return x.reshape(4, 3)[:, 1]


@pytest.mark.parametrize("cone, name", [("pyramid", n) for n in QP_ADAPTERS] + [("circular", n) for n in SOCP_ADAPTERS])
def test_four_feet_under_gravity_share_the_weight_equally(cone, name):
    s = _solve(name, quadruped.scene(weight=90.0), cone)
    # judged on the forces, never on the flag (qpax returns them exactly but says MAX_ITER:
    # its absolute tolerance 1e-5 is tight for forces of tens of newtons)
    assert s.status is not Status.INFEASIBLE
    np.testing.assert_allclose(_normal_forces(s.x), [22.5] * 4, atol=1e-3)
    np.testing.assert_allclose(s.x.reshape(4, 3)[:, [0, 2]], 0.0, atol=1e-3)


@pytest.mark.parametrize("cone, name", [("pyramid", n) for n in QP_ADAPTERS] + [("circular", n) for n in SOCP_ADAPTERS])
def test_diagonal_pair_carries_half_each_and_swing_feet_nothing(cone, name):
    s = _solve(name, quadruped.scene("FL,BR", weight=90.0), cone)
    if name in ("quadprog", "daqp", "qpax"):  # rank-deficient rows: see the rank-deficient table test
        return
    assert s.status is Status.OPTIMAL
    np.testing.assert_allclose(_normal_forces(s.x), [45.0, 0.0, 0.0, 45.0], rtol=1e-3, atol=1e-2)  # IPM: ~2e-3 N on swing feet


def test_same_side_pair_without_compensating_torque_is_infeasible():
    scene = quadruped.scene("FL,BL", weight=90.0)
    for cone in ("pyramid", "circular"):
        assert _solve("clarabel", scene, cone).status is Status.INFEASIBLE
    assert _solve("altproj", scene, "circular").status is Status.INFEASIBLE
    # with the torque the pair needs (the weight's moment about the line through the feet) it holds
    fixed = quadruped._consistent_torque(("FL", "BL"), (0.0, 0.0), (0.0, 0.0), 90.0, quadruped.HEIGHT)
    held = _solve("clarabel", quadruped.scene("FL,BL", torque=fixed, weight=90.0), "pyramid")
    assert held.status is Status.OPTIMAL
    np.testing.assert_allclose(_normal_forces(held.x), [45.0, 0.0, 45.0, 0.0], rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_seed000_overload_is_flagged_from_cone_utilisation(dtype):
    scene = quadruped.scene(push=(200.0, 0.0), mu=0.6, weight=90.0)
    s = _solve("altproj", scene, "circular", dtype=dtype)
    assert s.status is Status.INFEASIBLE and s.native_status == "cone_utilization>1"
    # the wrench equality holds (the last step is the affine projection) ...
    assert np.max(np.abs(scene.wrench_matrix() @ s.x - scene.wrench)) < 1e-3
    # ... and every foot sits at 50 / (0.6 * 22.5) = 370 % of its cone
    assert s.extras["max_utilization"] == pytest.approx(50 / (0.6 * 22.5), rel=1e-3)
    # the verifier sees the same utilisation on those forces, and the reference says infeasible
    batch = problems.get_kind("socp").build("q", [scene.qp("circular")], pd.DataFrame([{"case": 0}]), {})
    checked = verify_qp(batch, solvers.get("altproj", dtype=dtype).solve_batch(*batch.arrays(), **batch.extra()))
    assert checked["max_cone_utilization"].iloc[0] == pytest.approx(3.7037, rel=1e-3)
    assert compute_reference(batch)["truth"].iloc[0] == "infeasible"


def _grid_projection(f_n, f_t, mu, steps=2001):
    """Brute force: the nearest point of the cone boundary |t| = mu n (n >= 0) or the apex, in the
    (f_n, |f_t|) plane, by a fine grid along the boundary ray."""
    r = np.hypot(*f_t)
    if r <= mu * f_n:
        return f_n, r
    s = np.linspace(0.0, 2 * (abs(f_n) + r), steps)
    pts = np.stack([s / np.sqrt(1 + mu * mu), s * mu / np.sqrt(1 + mu * mu)], axis=1)
    best = pts[np.argmin(np.hypot(pts[:, 0] - f_n, pts[:, 1] - r))]
    return best[0], best[1]


@pytest.mark.parametrize("mu", [0.2, 0.6, 1.0, 2.0])
def test_exact_cone_projection_matches_brute_force(mu):
    rng = np.random.default_rng(int(mu * 10))
    shortcut_errors = []
    for _ in range(50):
        f_n, f_t = rng.uniform(-1, 2), rng.normal(size=2) * 2
        n_new, t_new = exact_cone_projection(np, np.array(f_n), np.array(f_t), np.array(mu))
        n_grid, r_grid = _grid_projection(f_n, f_t, mu)
        assert n_new == pytest.approx(n_grid, abs=3e-3)
        assert np.hypot(*t_new) == pytest.approx(r_grid, abs=3e-3)
        assert np.hypot(*t_new) <= mu * n_new + 1e-12
        # the mu-scaled shortcut: scale f_n by mu, project onto the mu = 1 cone, scale back
        if np.hypot(*f_t) > mu * f_n and mu * np.hypot(*f_t) > -f_n:
            s = (mu * f_n + np.hypot(*f_t)) / 2
            wrong = np.array([s / mu, s])
            true_d = np.hypot(n_grid - f_n, r_grid - np.hypot(*f_t))
            shortcut_errors.append(np.hypot(*(wrong - [n_grid, r_grid])) / max(true_d, 1e-9))
    if mu == 1.0:
        assert max(shortcut_errors) < 1e-2  # the shortcut is exact at mu = 1 only
    if mu == 0.2:
        assert np.median(shortcut_errors) > 0.3  # seed 000: ~60 % off at mu = 0.2


def test_utilization_counts_negative_normal_force_as_infinite():
    assert utilization(np, np.array([-1.0, 0.0, 2.0]), np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]),
                       np.array([0.5, 0.5, 0.5])).tolist() == [np.inf, 0.0, 1.0]


def test_altproj_dykstra_reaches_the_optimum_and_ap_a_feasible_point():
    batch = problems.generate("quadruped", 48, 3, kind="socp")
    ref = compute_reference(batch)
    for profile, want in (("default", ("correct", "suboptimal")), ("dykstra", ("correct",))):
        s = solvers.get("altproj", profile=profile).solve_batch(*batch.arrays(), **batch.extra())
        checked = verify_qp(batch, s)
        outcome = qp_outcomes(checked, ref)["outcome"]
        feasible = (ref["truth"] == "feasible").to_numpy()
        # altproj returns no duals: its infeasibility claims carry no certificate, so they are
        # uncertain (never correct, never false_reject); every infeasible case is flagged, none accepted
        assert set(outcome[feasible]) <= set(want) | {"uncertain"}
        assert (outcome[feasible] == "uncertain").sum() <= 1
        assert set(outcome[~feasible]) == {"uncertain"}
        assert (s.status[~feasible] == Status.INFEASIBLE).all()
    said_feasible = s.status == Status.OPTIMAL
    assert (s.extras["max_utilization"][said_feasible] <= 1 + 1e-4).all()


@pytest.mark.needs("altproj", "osqp")
def test_altproj_refuses_other_structures_with_a_clear_error():
    with pytest.raises(ProblemError, match="force-distribution"):
        solvers.get("altproj").solve([1.0, 0.0, 0.0], np.eye(3), [0.3, 1, 0], np.zeros((0, 3)), np.zeros(0),
                                     P=2 * np.eye(3), lb=[-np.inf] * 3, cones=[[1, 0, 2]], cone_mu=[0.5])
    with pytest.raises(ProblemError, match="cones"):
        solvers.get("osqp").solve([0.0] * 3, np.eye(3), [0.3, 1, 0], np.zeros((0, 3)), np.zeros(0),
                                  P=2 * np.eye(3), lb=[-np.inf] * 3, cones=[[1, 0, 2]], cone_mu=[0.5])


def test_generate_quadruped_covers_every_stance_and_records_the_wrench():
    batch = problems.generate("quadruped", 256, 0, kind="qp")
    meta = batch.meta
    assert set(meta["stance"]) == set(quadruped.STANCES) and len(quadruped.STANCES) == 11
    for col in ("push_x", "push_z", "roll", "pitch", "mu", "weight", "rank_deficient"):
        assert col in meta
    assert (meta["rank_deficient"] == (meta["n_feet"] == 2)).all()
    assert batch.content_hash() == problems.generate("quadruped", 256, 0, kind="qp").content_hash()
    # the wrench rows of case 0 are what scene() builds from its meta
    r = meta.iloc[0]
    s = quadruped.scene(r.stance, (r.push_x, r.push_z), (r.roll, r.pitch), r.mu, r.weight)
    np.testing.assert_allclose(batch.b_eq[0], s.wrench)
    np.testing.assert_allclose(batch.A_eq[0], s.wrench_matrix())


@pytest.mark.parametrize("draw, low, high", [("controller", 0.9, 1.0), ("stress", 0.25, 0.75)])
def test_qp_and_hold_lp_of_a_stance_agree_on_feasibility(draw, low, high):
    qp = compute_reference(problems.generate("quadruped", 200, 5, kind="qp", draw=draw))
    lp = compute_reference(problems.generate("quadruped", 200, 5, kind="lp1", draw=draw))
    assert ((qp["truth"] == "feasible").to_numpy() == (lp["truth"] == "supported").to_numpy()).all()
    assert low < (qp["truth"] == "feasible").mean() <= high


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stance=st.sampled_from(["random", *quadruped.STANCES]), edges=st.integers(3, 9),
       mu=st.floats(0.02, 2.0), share=st.floats(0.0, 1.0), seed=st.integers(0, 2**32))
def test_a_controller_draws_built_feasible_cases_are_feasible_in_every_kind(stance, edges, mu, share, seed):
    """Forces inside the cones exert the wrench: the reference finds each built case feasible
    as a QP (pyramids), an SOCP (circular cones) and a hold test, at any friction, edge
    count and stance; the share built is round(feasible * n)."""
    spec = dict(stance=stance, edges=edges, mu=mu, feasible=share)
    built = None
    for kind, ok in (("qp", "feasible"), ("socp", "feasible"), ("lp1", "supported")):
        batch = problems.generate("quadruped", 24, seed, kind=kind, **spec)
        built = (batch.meta["drawn"] == "feasible").to_numpy()
        assert built.sum() == round(share * 24)
        assert (compute_reference(batch)["truth"].to_numpy()[built] == ok).all(), kind
    assert built is not None


def test_the_stress_set_starts_with_seed000s_overload_and_the_controller_mix_is_mostly_feasible():
    stress = problems.generate("quadruped", 32, 7, kind="socp", draw="stress")
    first = stress.meta.iloc[0]
    assert (first.stance, first.push_x, first.push_z, first.mu, first.weight) == ("FL,FR,BL,BR", 200.0, 0.0, 0.6, 90.0)
    assert compute_reference(stress)["truth"].iloc[0] == "infeasible"
    # a stance that cannot hold the overload's four feet draws no overload
    two = problems.generate("quadruped", 8, 7, kind="qp", draw="stress", stance="FL,BR")
    assert two.meta["push_x"].iloc[0] != 200.0
    mix = problems.generate("quadruped", 64, 7, kind="qp")
    assert (mix.meta["drawn"] == "feasible").sum() == round(0.9 * 64)
    with pytest.raises(ProblemError, match="feasible"):
        problems.generate("quadruped", 8, 0, kind="qp", feasible=1.5)
    with pytest.raises(ProblemError, match="draw"):
        problems.generate("quadruped", 8, 0, kind="qp", draw="calm")


@pytest.mark.needs("quadprog")
def test_solvers_that_break_on_two_feet_show_in_the_rank_deficient_table():
    batch = problems.generate("quadruped", 64, 0, kind="qp")
    ref = compute_reference(batch)
    deficient = batch.meta["rank_deficient"].to_numpy()
    solution = solvers.get("quadprog").solve_batch(*batch.arrays(), **batch.extra())
    outcome = qp_outcomes(verify_qp(batch, solution), ref)["outcome"].to_numpy()
    # quadprog says "constraints are inconsistent" on some feasible two-foot stances, never elsewhere;
    # with no certificate behind the claim it is uncertain, not a (verified) false reject
    said = solution.status == Status.INFEASIBLE
    rejected = said & (ref["truth"] == "feasible").to_numpy()
    assert rejected.sum() >= 1 and deficient[rejected].all()
    assert (outcome[rejected] == "uncertain").all()
    rows = pd.DataFrame({"family_label": "quadruped", "kind": "qp", "solver_label": "quadprog", "device": "cpu",
                         "dtype": "float64", "n_scenes": 64, "outcome": outcome, "meta_rank_deficient": deficient,
                         "case_hash": batch.case_hashes()})  # rows name their cases (bench.analysis.results counts distinct ones)
    table = report.rank_deficient_summary(rows)
    assert table.loc[0, "uncertain"] == (outcome[deficient] == "uncertain").sum() >= rejected.sum()
    assert table.loc[0, "cases"] == deficient.sum()


def test_verify_qp_flags_unsafe_forces_as_false_accept():
    scene = quadruped.scene(push=(200.0, 0.0), mu=0.6, weight=90.0)
    batch = problems.get_kind("socp").build("q", [scene.qp("circular")], pd.DataFrame([{"case": 0}]), {})
    x = scene.min_norm_forces().reshape(1, 12)  # wrench met, cones violated 3.7x
    claimed = BatchSolution(x=x, y_eq=np.full((1, 6), np.nan), y_ub=np.zeros((1, 0)), objective=np.array([0.0]),
                            status=np.array([Status.OPTIMAL], dtype=object), iterations=np.array([1]),
                            native_status=np.array(["x"], dtype=object), message=np.array([""], dtype=object))
    checked = verify_qp(batch, claimed)
    assert checked["verdict"].iloc[0] == "uncertain" and checked["eq_residual"].iloc[0] < 1e-12
    assert qp_outcomes(checked, compute_reference(batch))["outcome"].iloc[0] == "false_accept"


@needs_humanoid
def test_humanoid_single_support_has_the_unique_force_of_seed001():
    rng = np.random.default_rng(0)
    for support in ("left", "right"):
        case = humanoid.posture(rng.normal(0, 0.1, 32), support)
        q = case.qp()
        for name in ("clarabel", "quadprog"):
            s = solvers.get(name).solve(q.c, q.A_eq, q.b_eq, q.A_ub, q.b_ub, P=q.P, lb=q.lb)
            assert s.status is Status.OPTIMAL and s.x.shape == (38,)
            wrench = s.x[32:38]
            np.testing.assert_allclose(wrench, case.unique_single_support_wrench(), rtol=1e-5, atol=1e-4)
            tau = case.g[6:] - (case.J_l if support == "left" else case.J_r)[:, 6:].T @ wrench
            np.testing.assert_allclose(s.x[:32], tau, rtol=1e-5, atol=1e-4)
    assert case.g[2] == pytest.approx(90.272 * 9.81, rel=1e-3)  # TALOS' weight in newtons


@needs_humanoid
def test_humanoid_double_support_torques_no_larger_than_the_pseudo_inverse_route():
    rng = np.random.default_rng(1)
    compared = 0
    for _ in range(20):
        case = humanoid.posture(rng.normal(0, 0.1, 32), "double")
        q = case.qp(eps=1e-4)
        s = solvers.get("clarabel", profile="high_accuracy").solve(q.c, q.A_eq, q.b_eq, q.A_ub, q.b_ub, P=q.P, lb=q.lb)
        assert s.status is Status.OPTIMAL
        f_pinv, tau_pinv = case.pinv_route()
        if f_pinv[2] >= 0 and f_pinv[8] >= 0:  # the pseudo-inverse route is feasible
            compared += 1
            slack = 1e-4 * (f_pinv @ f_pinv)  # the QP also weighs the wrenches by eps
            assert s.x[:32] @ s.x[:32] <= tau_pinv @ tau_pinv + slack + 1e-6
            assert s.x[:32] @ s.x[:32] < tau_pinv @ tau_pinv  # and is strictly better here
    assert compared >= 10


@needs_humanoid
def test_humanoid_family_generates_and_rejects_bad_parameters():
    batch = problems.generate("humanoid", 6, 0, support="double", friction=True, torque_limits=True)
    assert batch.A_eq.shape == (6, 38, 44) and batch.A_ub.shape == (6, 8 + 64, 44)
    assert np.isneginf(batch.lb).sum(axis=1).tolist() == [42] * 6
    assert problems.generate("humanoid", 2, 0, support="left").A_eq.shape == (2, 38, 38)
    with pytest.raises(ProblemError, match="support"):
        problems.generate("humanoid", 2, 0, support="hopping")


def test_quadruped_scene_rejects_bad_input():
    with pytest.raises(ProblemError, match="stance"):
        quadruped.scene("FL")
    with pytest.raises(ProblemError, match="mu"):
        quadruped.scene(mu=0.0)
    with pytest.raises(ProblemError, match="cone"):
        quadruped.scene().qp("elliptic")


@pytest.mark.needs("linrax")
def test_standard_form_rejects_bad_bounds_and_cones():
    args = ([0.0, 0.0], np.zeros((0, 2)), np.zeros(0), np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ProblemError, match="lb"):
        solvers.check_standard_form(*args, lb=[0.0, np.inf])
    with pytest.raises(ProblemError, match="cones"):
        solvers.check_standard_form(*args, cones=[[0, 1, 2]], cone_mu=[0.5])
    args3 = ([0.0] * 3, np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ProblemError, match="cone_mu"):
        solvers.check_standard_form(*args3, cones=[[0, 1, 2]], cone_mu=[-1.0])
    with pytest.raises(ProblemError, match="disjoint"):  # the certificate check relies on it
        solvers.check_standard_form(*args3, cones=[[0, 1, 1]], cone_mu=[1.0])
    with pytest.raises(ProblemError, match="x >= 0 only"):
        solvers.get("linrax").solve(*args, lb=[-np.inf, 0.0])


@pytest.mark.parametrize(("n", "seed", "params"), [(200, 0, {}), (40, 3, {"edges": 7, "height": 0.45}),
                                                   (16, 1, {"stance": "FL,BR"})])
def test_quadruped_hold_tests_built_as_arrays_are_each_scenes_own_bytes(n, seed, params):
    """``quadruped.hold_batch`` (the ``lp1`` kind's builder, as arrays) gives every scene's
    ``QuadrupedScene.hold`` byte for byte, swing feet's zero
    columns included, so a seed's LP-1 batch is what it was."""
    from problems.hold import SceneBatch

    scenes, _ = quadruped.sample(n, seed, **params)
    one_by_one = SceneBatch.of([s.hold() for s in scenes])
    batch = quadruped.hold_batch(scenes)
    for field in ("W", "need", "limit_B", "limit_fmax"):
        mine, theirs = getattr(batch, field), getattr(one_by_one, field)
        assert mine.shape == theirs.shape and mine.tobytes() == theirs.tobytes(), field
    generated = problems.generate("quadruped", n, seed, kind="lp1", **params)
    assert generated.W.tobytes() == one_by_one.W.tobytes()


def test_quadruped_hold_batch_needs_one_height_and_edge_count():
    with pytest.raises(ProblemError, match="scenes: expected one height and one number of edges"):
        quadruped.hold_batch([quadruped.scene(height=0.3), quadruped.scene(height=0.4)])


@pytest.mark.parametrize("cone", ["pyramid", "circular"])
@pytest.mark.parametrize(("n", "seed", "params"), [(120, 0, {}), (30, 2, {"edges": 6, "height": 0.4}),
                                                   (12, 1, {"stance": "FL,BR"})])
def test_quadruped_qps_built_as_arrays_are_each_scenes_own_bytes(cone, n, seed, params):
    """``quadruped.qp_arrays`` (the ``qp`` and ``socp`` kinds' builder) gives the stack of
    every scene's ``QuadrupedScene.qp(cone)`` byte for byte, the wrench matrix's ``-0.0``
    entries included (a sum over feet had turned them into ``+0.0``)."""
    scenes, _ = quadruped.sample(n, seed, **params)
    arrays = quadruped.qp_arrays(scenes, cone)
    one_by_one = [s.qp(cone) for s in scenes]
    for name, mine in arrays.items():
        theirs = one_by_one[0].cones if name == "cones" else np.stack([np.asarray(getattr(q, name), float)
                                                                       for q in one_by_one])
        assert mine.shape == theirs.shape and mine.tobytes() == np.asarray(theirs).tobytes(), name
    assert set(arrays) == {"c", "A_eq", "b_eq", "P", "lb", "A_ub", "b_ub"} | (
        {"cones", "cone_mu"} if cone == "circular" else set())


def test_qp_kind_from_arrays_needs_one_meta_row_per_problem():
    from problems.kinds import get_kind

    scenes, meta = quadruped.sample(4, 0)
    with pytest.raises(ProblemError, match="meta: expected 4 rows"):
        get_kind("qp").build_arrays("quadruped", **quadruped.qp_arrays(scenes), meta=meta.iloc[:3])
    with pytest.raises(ProblemError, match="cone: expected one of"):
        quadruped.qp_arrays(scenes, "elliptic")
