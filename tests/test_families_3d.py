"""Contact geometry, the cube family, near-boundary sampling, robust needs, the exact planar test."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import problems
import solvers
from bench.hold import check, check_robust
from bench.engine.reference import compute_reference
from problems import contacts, cube, planar_box, planar_exact
from problems.robust import corners, lower_mu
from solvers import ProblemError


# ------------------------------------------------------------------ contact geometry
def tangential_reach(G, direction):
    """Largest tangential force along ``direction`` with unit normal force, over the pyramid (an LP)."""
    from scipy.optimize import linprog

    F = G[:3]
    res = linprog(-(direction @ F), A_eq=[F[2]], b_eq=[1.0], bounds=(0, None), method="highs")
    return -res.fun


@pytest.mark.parametrize("edges", [4, 8])
def test_point_contact_reach_along_and_between_edges(edges):
    mu = 0.6
    G = contacts.point([0, 0, -1], [0, 0, 1], mu, edges=edges)
    assert G.shape == (6, edges)
    np.testing.assert_allclose(G[2], 1.0)  # unit normal component
    assert tangential_reach(G, np.array([1.0, 0, 0])) == pytest.approx(mu)  # along an edge (th_0 = 0)
    mid = np.array([np.cos(np.pi / edges), np.sin(np.pi / edges), 0.0])
    assert tangential_reach(G, mid) == pytest.approx(mu * np.cos(np.pi / edges))  # midway between edges


def test_inner_pyramid_inside_outer_and_inside_circular_cone():
    inner = contacts.edge_forces([0, 0, 1], 0.5, 8, inner=True)
    outer = contacts.edge_forces([0, 0, 1], 0.5, 8, inner=False)
    np.testing.assert_allclose(np.linalg.norm(inner[:2], axis=0), 0.5)  # on the circular cone
    np.testing.assert_allclose(np.linalg.norm(outer[:2], axis=0), 0.5 / np.cos(np.pi / 8))
    # every inner edge lies in the outer pyramid: reach of the outer along it is larger
    G_out = contacts.point([0, 0, 0], [0, 0, 1], 0.5, inner=False)
    for f in inner.T:
        d = f[:2] / np.linalg.norm(f[:2])
        assert tangential_reach(G_out, np.array([*d, 0.0])) >= 0.5 - 1e-12


def test_polygon_reduces_to_vertices_and_moments():
    verts = [[1, 1, -1], [-1, 1, -1]]
    G = contacts.polygon(verts, [0, 0, 1], 0.3, edges=4)
    assert G.shape == (6, 8)
    np.testing.assert_allclose(G[3:, 0], np.cross(verts[0], G[:3, 0]))  # tau = p x f
    with pytest.raises(ProblemError, match="edges: expected an integer >= 3"):
        contacts.point([0, 0, 0], [0, 0, 1], 0.3, edges=2)
    with pytest.raises(ProblemError, match="n: expected a nonzero 3-vector"):
        contacts.point([0, 0, 0], [0, 0, 0], 0.3)


# ------------------------------------------------------------------------- the cube
@pytest.mark.parametrize("mu", [0.2, 0.5, 0.9])
def test_cube_on_full_bottom_face_exits_are_mu(mu):
    res = check(cube.scene([cube.Contact("face", "-z")], mu=mu), "highs")
    assert res.verdict == "supported"
    for axis in ("+f_x", "-f_x", "+f_y", "-f_y"):
        assert res.exits[axis] == pytest.approx(mu, abs=1e-9), axis
    assert res.exits["-f_z"] == pytest.approx(1.0) and res.exits["+f_z"] == pytest.approx(10.0)


def test_cube_on_a_knife_edge_has_zero_margin_about_it():
    # a segment along y under the centre of mass: it holds, but any moment about it tips the cube
    res = check(cube.scene([cube.Contact("edge", "-z", size=1.0, angle=np.pi / 2)], mu=0.5), "highs")
    assert res.verdict == "supported"
    assert res.exits["+tau_y"] == pytest.approx(0.0, abs=1e-9) and res.exits["-tau_y"] == pytest.approx(0.0, abs=1e-9)
    assert res.exits["+tau_x"] == pytest.approx(1.0) and res.margin == pytest.approx(0.0, abs=1e-9)


def test_cube_on_its_bottom_edge_tips():
    res = check(cube.scene([cube.Contact("edge", "-z", center=(1.0, 0.0), size=1.0, angle=np.pi / 2)]), "highs")
    assert res.verdict == "unsupported" and res.delta == pytest.approx(1.0)


def test_cube_side_contacts_squeeze_hold():
    # two opposite side faces pressing with friction 1 hold the cube only through friction
    sides = [cube.Contact("face", "+x", size=0.5), cube.Contact("face", "-x", size=0.5)]
    assert check(cube.scene(sides, mu=1.0), "highs", margin=False).verdict == "supported"
    assert check(cube.scene(sides, mu=0.0), "highs", margin=False).verdict == "unsupported"


def test_cube_batch_shapes_meta_and_limits():
    b = problems.generate("cube-3d", 20, 0, limits=True)
    assert b.W.shape == (20, 6, 128) and b.A_ub.shape == (20, 4, 140)
    for col in ("contacts", "kinds", "faces", "mu_0", "mu_3", "mu_min", "push_f_x", "push_tau_z"):
        assert col in b.meta
    one = b.meta["contacts"] == 1
    assert one.any() and b.meta["mu_1"][one].isna().all() and b.meta["mu_0"].notna().all()
    np.testing.assert_array_equal(b.meta["mu_min"], b.meta[["mu_0", "mu_1", "mu_2", "mu_3"]].min(axis=1))
    assert (b.meta["kinds"].str.count(",") + 1 == b.meta["contacts"]).all()
    assert b.meta["faces"].str.startswith("-z").all()
    assert set("".join(b.meta["faces"]).replace(",", "").replace("-", "").replace("+", "")) <= set("xyz")
    # padded duplicate columns stay in their contact's limit row: every column is limited
    assert np.all(b.limit_B.sum(axis=1) >= 1)
    e = problems.generate("cube-3d", 3, 0, kind="exit")
    assert len(e) == 36 and list(e.meta["direction"][:2]) == ["+f_x", "-f_x"]


def test_cube_random_cases_mix_verdicts():
    ref = compute_reference(problems.generate("cube-3d", 200, 1))
    assert 0.25 < (ref["truth"] == "supported").mean() < 0.75


def test_cube_errors_name_arguments():
    with pytest.raises(ProblemError, match="face: expected one of"):
        cube.scene([cube.Contact("face", "+w")])
    with pytest.raises(ProblemError, match="leaves face"):
        cube.scene([cube.Contact("face", "-z", center=(0.9, 0.0), size=0.5)])
    with pytest.raises(ProblemError, match="contacts: expected"):
        problems.generate("cube-3d", 3, 0, contacts=(0, 5))


# ------------------------------------------------------------------ near-boundary
@pytest.mark.parametrize("base, eps, params", [("planar-box", 0.04, {}), ("cube-3d", 0.01, {}),
                                               ("cube-3d", 0.01, {"cube_params": {"limits": True, "contacts": (2, 3)}})])
def test_near_boundary_batches_straddle_the_boundary(base, eps, params):
    b = problems.generate("near-boundary", 40, 3, base=base, **params)
    ref = compute_reference(b)
    d = b.meta["distance"].to_numpy()
    assert np.all(np.abs(d) <= eps + 1e-12)
    assert set(ref["truth"]) == {"supported", "unsupported"}
    # the float64 reference agrees with the side each case was sampled on (bar ambiguous ones)
    clear = ~b.meta["ambiguous"].to_numpy()
    assert np.all((d[clear] > 0) == (ref["truth"].to_numpy()[clear] == "supported"))
    assert b.W.shape[1] == (3 if base == "planar-box" else 6)


def test_near_boundary_is_deterministic_and_validates():
    a = problems.generate("near-boundary", 10, 5)
    assert a.content_hash() == problems.generate("near-boundary", 10, 5).content_hash()
    with pytest.raises(ProblemError, match="base: expected planar-box or cube-3d, got 'sphere'"):
        problems.generate("near-boundary", 3, 0, base="sphere")
    cube_base = problems.generate("near-boundary", 10, 5, base="cube-3d")
    assert cube_base.content_hash() == problems.generate("near-boundary", 10, 5, base="cube-3d").content_hash()
    assert cube_base.params["generator_version"] == 3
    # near-boundary draws the push itself, and robust corners have no single boundary
    for fixed in ({"push": (0.1,) * 6}, {"mass": (0.9, 1.1)}, {"com": (0.1, 0.1, 0.1)}):
        with pytest.raises(ProblemError, match=f"cube_params: \\['{next(iter(fixed))}'\\] cannot be set here"):
            problems.generate("near-boundary", 3, 0, base="cube-3d", cube_params=fixed)
    with pytest.raises(ProblemError, match=r"cube_params: unknown cube-3d parameters \['foo'\]; expected some of "
                                           r"\['contacts', 'edges'"):
        problems.generate("near-boundary", 3, 0, base="cube-3d", cube_params={"foo": 1, "edges": 4})


# ------------------------------------------------------------------------- robust
def test_friction_interval_uses_lower_end():
    assert lower_mu((0.3, 0.6)) == 0.3 and lower_mu(0.4) == 0.4
    a = planar_box.scene(mu=(0.3, 0.6))
    np.testing.assert_allclose(a.W, planar_box.scene(mu=0.3).W)
    with pytest.raises(ProblemError, match="mu: expected a number or an interval"):
        lower_mu((0.6, 0.3))


def test_robust_corners_and_worst_case_verdict():
    assert len(corners((0.9, 1.1), (0.1, 0.1, 0.1), 3)) == 16
    # flat box, CoM uncertain by +-0.5 l sideways: every corner holds (CoM stays between A and B)
    base = planar_box.scene(mu=0.5)
    needs = [planar_box.robust_need(m, c, 0.0, (0, 0, 0)) for _, m, c in corners((0.8, 1.2), (0.5, 0.0), 2)]
    ok = check_robust([problems.hold.with_need(base, nd) for nd in needs], "highs")
    assert ok.verdict == "supported"
    # standing on corner B alone: the nominal CoM is left of B (tips), and so is every corner
    one = planar_box.scene(mu=0.5, corners="B")
    needs = [planar_box.robust_need(m, c, 0.0, (0, 0, 0)) for _, m, c in corners((0.8, 1.2), (0.5, 0.0), 2)]
    bad = check_robust([problems.hold.with_need(one, nd) for nd in needs], "highs")
    assert bad.verdict == "unsupported"
    # a mixed set: worst case wins, margin is the smallest
    mixed = check_robust([problems.hold.with_need(base, needs[0]), problems.hold.with_need(one, needs[0])], "highs")
    assert mixed.verdict == "unsupported" and mixed.margin < 0


def _worst_of_corner_checks(results, margin=True):
    """The robust verdict from one ``check`` per corner (the rule ``check_robust`` states)."""
    verdicts = [r.verdict for r in results]
    if "unsupported" in verdicts:
        return max((r for r in results if r.verdict == "unsupported"), key=lambda r: r.delta)
    if all(v == "supported" for v in verdicts):
        exits = {k: min(r.exits[k] for r in results) for k in results[0].exits}
        return "supported", max(r.delta for r in results), exits, min(r.margin for r in results) if margin else None
    return "failed" if "failed" in verdicts else "uncertain"


@settings(max_examples=12, deadline=None)
@given(st.floats(0.1, 0.9), st.floats(0.0, 0.8), st.floats(0.0, 0.4), st.sampled_from(["AB", "B"]),
       st.floats(0.0, 0.3))
def test_robust_check_is_the_worst_of_its_corners_checked_one_by_one(mu, com_x, mass_spread, contact, push):
    """``check_robust`` solves its corners as one batch per shape; its answer is the worst
    case of checking each corner alone: verdict, delta, each exit and the margin."""
    base = planar_box.scene(mu=mu, corners=contact)
    needs = [planar_box.robust_need(m, c, 0.0, (push, 0, 0))
             for _, m, c in corners((1 - mass_spread, 1 + mass_spread), (com_x, 0.0), 2)]
    scenes = [problems.hold.with_need(base, nd) for nd in needs]
    robust = check_robust(scenes, "highs")
    expected = _worst_of_corner_checks([check(s, "highs") for s in scenes])
    if isinstance(expected, str):
        assert robust.verdict == expected
    elif isinstance(expected, tuple):
        verdict, delta, exits, margin = expected
        assert robust.verdict == verdict
        assert robust.delta == pytest.approx(delta, abs=1e-9)
        assert robust.exits.keys() == exits.keys()
        for key in exits:
            assert robust.exits[key] == pytest.approx(exits[key], abs=1e-7)
        assert robust.margin == pytest.approx(margin, abs=1e-7)
    else:
        assert robust.verdict == "unsupported"
        assert robust.delta == pytest.approx(expected.delta, abs=1e-9)
        assert robust.margin == pytest.approx(expected.margin, abs=1e-9)
        np.testing.assert_allclose(robust.certificate, expected.certificate, atol=1e-9)


def test_robust_check_solves_the_corners_of_a_shape_in_one_batch():
    """Corners of one shape: one LP-1 solve and one exit solve for all of them (it was one of
    each per corner); corners of two shapes: one batch per shape."""
    adapter = solvers.get("highs")
    calls = []
    real_run = adapter.run

    def counting_run(prepared):
        calls.append(1)
        return real_run(prepared)

    adapter.run = counting_run
    base = planar_box.scene(mu=0.5)
    needs = [planar_box.robust_need(m, c, 0.0, (0, 0, 0)) for _, m, c in corners((0.8, 1.2), (0.5, 0.0), 2)]
    assert check_robust([problems.hold.with_need(base, nd) for nd in needs], adapter).verdict == "supported"
    assert len(needs) == 8 and len(calls) == 2  # LP-1 of the eight corners, then their exits
    calls.clear()
    one = planar_box.scene(mu=0.5, corners="B")
    mixed = [problems.hold.with_need(base, needs[0]), problems.hold.with_need(one, needs[0]),
             problems.hold.with_need(base, needs[1])]
    assert check_robust(mixed, adapter).verdict == "unsupported"
    assert len(calls) == 3  # the two AB corners: LP-1 and exits; the B corner: LP-1 (unsupported, no exits)
    with pytest.raises(ProblemError, match="scenes: expected problems.HoldScene corners, got str"):
        check_robust([mixed[0], "corner"], adapter)


def test_robust_batch_keeps_one_lp_per_corner():
    b = problems.generate("cube-3d", 5, 0, mass=(0.9, 1.1), com=(0.1, 0.1, 0.0))
    assert len(b) == 5 * 2 * 8
    assert b.meta.groupby("case")["need_corner"].nunique().eq(16).all()  # 2 masses x 8 centre-of-mass corners
    np.testing.assert_allclose(b.need[0][2] + b.meta["push_f_z"][0], 0.9)  # the m=0.9 corner


# ------------------------------------------------------------------ exact planar test
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_test_agrees_with_highs_on_every_random_case(seed):
    b = problems.generate("planar-box", 500, seed)
    out = planar_exact.decide(b.W, b.need)
    ref = compute_reference(b)
    assert list(out["verdict"]) == list(ref["truth"])


def test_exact_test_seed_numbers():
    sc = [planar_box.scene(), planar_box.scene(corners="A", pad=True)]
    out = planar_exact.decide(np.stack([s.W for s in sc]), np.stack([s.need for s in sc]))
    assert list(out["verdict"]) == ["supported", "unsupported"]
    assert out["margin"][0] == pytest.approx(0.196, abs=5e-4)  # seed 002: Euclidean margin 0.196
    np.testing.assert_allclose(out["certificate"][1], np.array([1, -1, 1]) / np.sqrt(3), atol=1e-12)
    assert np.count_nonzero(out["witness"][0]) <= 3


def test_exact_planar_adapter_in_harness_terms():
    b = problems.generate("near-boundary", 30, 1)
    a = solvers.get("exact-planar")
    s = a.solve_batch(*b.arrays())
    from bench.engine import verify

    v = verify.verify_lp1(b, s)
    outcome = verify.lp1_outcomes(v["verdict"], compute_reference(b)["truth"])
    assert (outcome == "correct").sum() >= 28  # near the boundary a few may be uncertain, none wrong
    assert not np.isin(outcome, ["false_accept", "false_reject"]).any()
    with pytest.raises(ProblemError, match="exact-planar decides only planar LP-1"):
        e = problems.generate("planar-box", 2, 0, kind="exit")
        a.solve_batch(*e.arrays())


def test_report_aggregates_robust_cases_to_the_worst_corner(tmp_path):
    from bench.engine import grid, runner
    from bench.reporting import report

    cells, _ = grid.expand(["planar-box[mass=(0.7, 1.3),com=(0.4, 0.2)]"], ["highs"], ["float64"], ["cpu"], [12], 0, 1)
    runner.run_cells(cells, tmp_path / "run", "rb", timeout=120)
    rows = report.load_runs([tmp_path / "run"])
    sections = {stem: table for _title, stem, table in report.kind_sections(rows)}
    robust = sections["robust"]
    assert len(robust) == 1 and robust["cases"].iloc[0] == 12  # 12 poses, 8 corner LPs each
    assert robust["correct"].iloc[0] == 12
    per_case = rows.groupby("meta_case")["truth"].agg(lambda t: "unsupported" if "unsupported" in set(t) else "supported")
    lp_supported = (rows["truth"] == "supported").mean()
    case_supported = (per_case == "supported").mean()
    assert case_supported <= lp_supported  # the worst case can only lose support
    report.write_report(rows, tmp_path / "rep")
    assert "Robust hold tests" in (tmp_path / "rep" / "report.md").read_text()


@pytest.mark.parametrize("settings", [dict(backend="jax", dtype="float64"), dict(backend="jax", dtype="float32"),
                                      dict(backend="numpy", dtype="float32")])
def test_exact_planar_backends_agree_with_numpy_float64(settings):
    b = problems.generate("planar-box", 200, 4)
    ref = solvers.get("exact-planar", margin=True).solve_batch(*b.arrays())
    other = solvers.get("exact-planar", margin=True, **settings).solve_batch(*b.arrays())
    assert list(other.native_status) == list(ref.native_status)  # same verdict on every case
    np.testing.assert_allclose(other.extras["margin"], ref.extras["margin"],
                               atol=1e-9 if settings["dtype"] == "float64" else 1e-4)


def _previous_exact_test(W, need, tol):
    """The exact test as it was before the closed forms (batched LAPACK solves of each
    combination's normal equations, Farkas planes by einsum): verdicts only, the yardstick
    the fast version must match case by case."""
    import itertools

    B, _, k = W.shape
    Wt = np.swapaxes(W, 1, 2)
    need_norm = np.linalg.norm(need, axis=1)
    found = need_norm <= tol
    for size in (3, 2, 1):
        for idx in itertools.combinations(range(k), size):
            M = W[:, :, list(idx)]
            G = np.einsum("bdi,bdj->bij", M, M)
            ok = np.abs(np.linalg.det(G)) > 1e-12
            lam = np.linalg.solve(np.where(ok[:, None, None], G, np.eye(size)), np.einsum("bdi,bd->bi", M, need)[..., None])[..., 0]
            resid = np.linalg.norm(np.einsum("bdk,bk->bd", M, lam) - need, axis=1)
            found |= ok & np.all(lam >= -tol, axis=1) & (resid <= tol * (1 + need_norm))
    cands = [np.cross(Wt[:, i], Wt[:, j]) for i, j in itertools.combinations(range(k), 2)]
    units = Wt / np.linalg.norm(Wt, axis=2, keepdims=True)
    rej = need[:, None, :] - np.einsum("bk,bkd->bkd", np.einsum("bkd,bd->bk", units, need), units)
    certified = np.zeros(B, dtype=bool)
    for group in (np.stack(cands + [-c for c in cands], axis=1), np.concatenate([-need[:, None, :], -rej], axis=1)):
        norm = np.linalg.norm(group, axis=2, keepdims=True)
        Z = np.where(norm > 1e-300, group / np.where(norm > 1e-300, norm, 1.0), 0.0)
        ok = (norm[..., 0] > 1e-300) & (np.einsum("bcd,bkd->bck", Z, Wt).min(axis=2) >= -tol)
        certified |= (ok & (np.einsum("bcd,bd->bc", Z, need) < -tol)).any(axis=1) & ~found
    return np.where(found, "supported", np.where(certified, "unsupported", "uncertain"))


@pytest.mark.parametrize("family", ["planar-box", "near-boundary", "planar-box[drop=0.5,mu=(0.05, 0.3)]"])
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-9), ("float32", 1e-5)])
def test_the_closed_form_exact_test_gives_the_previous_answers_on_every_case(family, dtype, tol):
    b = problems.generate(problems.FamilySpec.parse(family), 2000, 3)
    W, need = b.W.astype(dtype), b.need.astype(dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        before = _previous_exact_test(W, need, tol)
    now = planar_exact.decide(W, need, tol, margin=False)
    assert list(now["verdict"]) == list(before)
    assert np.isnan(now["margin"]).all()  # not computed unless asked
    sup = now["verdict"] == "supported"
    np.testing.assert_allclose(np.einsum("bdk,bk->bd", W[sup], now["witness"][sup]), need[sup],
                               atol=50 * tol * (1 + np.abs(need[sup]).max()))
    uns = now["verdict"] == "unsupported"
    assert (np.einsum("bd,bdk->bk", now["certificate"][uns], W[uns]) >= -tol * 1.01).all()
    assert (np.einsum("bd,bd->b", now["certificate"][uns], need[uns]) < 0).all()
