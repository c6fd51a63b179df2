"""Seed 002's numbers from scene() + solvers; LP-1 / LP-2 / LP-3 structure."""

import numpy as np
import pytest

import solvers
from bench.hold import check
from problems import exit_lp, lp1, margin_directions, planar_box
from problems.hold import HoldScene, Limits
from solvers import ProblemError

from conftest import real_adapter_params

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

#: Profiles the seed-number tests use: each adapter's defaults where they reach the
#: verifier's 1e-5, else its most accurate profile (loose defaults are measured by the
#: benchmark, not hidden here). Simplex methods return vertices.
SEED_PROFILES = {"osqp": "high_accuracy", "proxsuite": "high_accuracy", "mpax": "high_accuracy",
                 "qpax": "robust"}
SIMPLEX = {"highs", "scipy-highs", "linrax"}
SEED_SKIP = {("mpax", "float32"): "float32 PDHG does not reach 1e-5 on these LPs within its iteration cap "
                                  "(the benchmark measures this; see the planar-box report)"}


def seed_params():
    out = []
    for p in real_adapter_params():
        name, dtype = p.values
        cls = solvers.adapters()[name]
        if not cls.CAPABILITIES.lp or cls.CAPABILITIES.structures is not None:
            continue
        marks = list(p.marks) + ([pytest.mark.skip(reason=SEED_SKIP[(name, dtype)])] if (name, dtype) in SEED_SKIP else [])
        out.append(pytest.param(name, dtype, SEED_PROFILES.get(name, "default"), id=p.id, marks=marks))
    return out


def adapter(name, dtype, profile):
    return solvers.get(name, dtype=dtype, profile=profile)

FLAT = dict(mu=0.2)
DISK = dict(mu=0.2, disk_height=0.0, disk_mu=0.2, disk_fmax=0.5)


def tol(dtype, name="highs"):
    """The larger of the dtype's rounding level and the adapter's conformance tolerance."""
    from bench.conformance import tolerance

    return max(1e-5 if dtype == "float32" else 1e-7, tolerance(name, dtype))


def test_flat_box_generators_match_seed_geometry():
    sc = planar_box.scene(**FLAT)
    assert sc.labels == ("A+", "A-", "B+", "B-")
    # edge n + mu t with t = -x at corner A = (-1, -1): f = (-0.2, 1), tau = p_z f_x - p_x f_z = 0.2 + 1
    np.testing.assert_allclose(sc.W[:, 0], [-0.2, 1.0, 1.2])
    np.testing.assert_allclose(sc.need, [0.0, 1.0, 0.0])
    # z = (1, -1, 1) is orthogonal to both edges at A (seed's certificate)
    np.testing.assert_allclose(np.array([1.0, -1.0, 1.0]) @ sc.W[:, :2], 0.0, atol=1e-15)


def test_highs_gives_seed_witness_exactly():
    res = check(planar_box.scene(**FLAT), "highs")
    assert res.verdict == "supported" and res.delta == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(res.witness, [0.5, 0.0, 0.0, 0.5], atol=1e-12)  # lam_A+ = lam_B- = 1/2


@pytest.mark.parametrize("name, dtype, profile", seed_params())
def test_flat_box_supported_with_witness(name, dtype, profile):
    sc = planar_box.scene(**FLAT)
    res = check(sc, adapter(name, dtype, profile))
    assert res.verdict == "supported"
    assert res.delta == pytest.approx(0.0, abs=tol(dtype, name))
    lam = res.witness
    if name in SIMPLEX:
        assert np.count_nonzero(lam > 1e-6) <= sc.d  # a basic solution: at most d generators
    # whichever vertex: each corner carries half the weight (normal force = sum of its weights)
    assert lam[:2].sum() == pytest.approx(0.5, abs=tol(dtype, name)) and lam[2:].sum() == pytest.approx(0.5, abs=tol(dtype, name))


@pytest.mark.parametrize("name, dtype, profile", seed_params())
def test_corner_a_alone_unsupported_with_certificate(name, dtype, profile):
    res = check(planar_box.scene(mu=0.2, corners="A"), adapter(name, dtype, profile))
    assert res.verdict == "unsupported"
    assert res.delta == pytest.approx(1.0, abs=tol(dtype, name))
    np.testing.assert_allclose(res.certificate, [-1.0, 1.0, -1.0], atol=10 * tol(dtype, name))  # y; seed's z = -y
    assert res.margin == pytest.approx(-1.0, abs=tol(dtype, name))


@pytest.mark.parametrize("name, dtype, profile", seed_params())
def test_flat_box_exits_and_margin(name, dtype, profile):
    res = check(planar_box.scene(**FLAT), adapter(name, dtype, profile))
    expected = {"+f_x": 0.2, "-f_x": 0.2, "+f_z": 10.0, "-f_z": 1.0, "+tau_y": 1.0, "-tau_y": 1.0}
    assert res.exits.keys() == expected.keys()
    for k, v in expected.items():
        assert res.exits[k] == pytest.approx(v, abs=10 * tol(dtype, name)), k
    assert res.margin == pytest.approx(0.2, abs=10 * tol(dtype, name))


DISK_KNOWN = {"proxsuite": "ProxQP (also with high_accuracy) declares the feasible +f_x and -tau_y exit LPs of the "
                          "disk scene PROXQP_PRIMAL_INFEASIBLE, so those exits stay unverified (0)"}


@pytest.mark.parametrize("name, dtype, profile", seed_params())
def test_disk_raises_plus_fx_exit_but_not_margin(name, dtype, profile, request):
    if name in DISK_KNOWN:
        request.applymarker(pytest.mark.xfail(reason=DISK_KNOWN[name], strict=True))
    res = check(planar_box.scene(**DISK), adapter(name, dtype, profile))
    assert res.exits["+f_x"] == pytest.approx(0.72, abs=10 * tol(dtype, name))  # 0.5 disk + 0.2 * 1.1 floor
    assert res.exits["-f_x"] == pytest.approx(0.2, abs=10 * tol(dtype, name))
    assert res.margin == pytest.approx(0.2, abs=10 * tol(dtype, name))


def test_lp1_is_always_feasible_at_lambda_zero():
    sc = planar_box.scene(mu=0.3, corners="B", push=(0.2, -0.1, 0.3), tilt=0.1)
    lp = lp1(sc)
    x0 = np.concatenate([np.zeros(sc.k), np.maximum(sc.need, 0), np.maximum(-sc.need, 0)])
    np.testing.assert_allclose(lp.A_eq @ x0, lp.b_eq)
    assert lp.c @ x0 == pytest.approx(np.abs(sc.need).sum())


def test_exit_lp_layout_and_cap_row():
    sc = planar_box.scene(**DISK)
    lp = exit_lp(sc, margin_directions(3)[0], T=10.0)
    assert lp.A_eq.shape == (3, sc.k + 1) and lp.c[-1] == -1.0
    assert lp.A_ub[0, -1] == pytest.approx(0.1) and lp.b_ub[0] == 1.0  # t / T <= 1
    np.testing.assert_array_equal(lp.A_ub[1, -3:-1], [1.0, 1.0])  # disk limit row on its 2 edges
    assert lp.b_ub[1] == 0.5


def test_margin_directions():
    U = margin_directions(3)
    np.testing.assert_array_equal(U, [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])
    with pytest.raises(ProblemError, match="d: expected a positive integer"):
        margin_directions(0)


def test_scene_validation_names_arguments():
    with pytest.raises(ProblemError, match="need: expected shape \\(3,\\)"):
        HoldScene(np.zeros((3, 4)), np.zeros(2))
    with pytest.raises(ProblemError, match="limits"):
        HoldScene(np.zeros((3, 4)), np.zeros(3), Limits(np.zeros((1, 3)), np.zeros(1)))
    with pytest.raises(ProblemError, match="u: expected a direction of shape \\(3,\\)"):
        exit_lp(planar_box.scene(), [1.0, 0.0])
