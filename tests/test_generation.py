"""Generation at array speed: the version-2 array samplers of planar-box and
cube-3d draw from the same distribution as the version-1 scene-by-scene samplers, give the
same bytes for a seed, build the same cones and LPs, and record their version."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import problems
from bench.engine import reference
from problems import contacts, cube, planar_box, planar_exact
from problems.hold import SceneBatch, lp1
from problems import near_boundary
from tests.legacy_generators import cube_v1, near_boundary_planar_scene_by_scene, planar_v1

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

N = 10_000
#: fixed directions for the support function of a scene's generators (order- and
#: duplicate-invariant, so the two layouts compare)
DIRECTIONS = np.random.default_rng(12345).normal(size=(24, 6))


def support(scenes: SceneBatch) -> np.ndarray:
    """(n, 24) the support function ``max_j u @ W_j`` of each scene's generator set."""
    U = DIRECTIONS[:, :scenes.d]
    return np.max(np.einsum("ud,ndk->nuk", U, scenes.W), axis=2)


def assert_same_distribution(name, old: np.ndarray, new: np.ndarray, z: float = 5.0, q: float = 0.005,
                             std_rtol: float = 0.1):
    """Column by column: means within ``z`` standard errors of their difference, standard
    deviations within ``std_rtol``, the same support (the ``q`` and ``1 - q`` quantiles within 4 % of
    the range: the 0.5 % and 99.5 % sample quantiles of 10,000 draws move by about 3 %
    between two seeds of one generator) and a two-sample Kolmogorov-Smirnov p-value above
    1e-4 (asymptotic: at 10,000 draws scipy's exact calculation can fail, and it falls back to
    it with a warning)."""
    from scipy.stats import ks_2samp

    old, new = np.asarray(old, float).reshape(len(old), -1), np.asarray(new, float).reshape(len(new), -1)
    se = np.sqrt(old.var(axis=0) / len(old) + new.var(axis=0) / len(new))
    gap = np.abs(old.mean(axis=0) - new.mean(axis=0))
    assert np.all(gap <= z * se + 1e-12), f"{name}: means differ by {gap / np.maximum(se, 1e-300)} standard errors"
    np.testing.assert_allclose(new.std(axis=0), old.std(axis=0), rtol=std_rtol, atol=1e-12, err_msg=name)
    span = np.maximum(old.max(axis=0) - old.min(axis=0), 1e-12)
    for level in (q, 1 - q):
        a, b = np.quantile(old, level, axis=0), np.quantile(new, level, axis=0)
        assert np.all(np.abs(a - b) <= 0.04 * span), f"{name}: the {level} quantiles differ: {a} vs {b}"
    varied = old.std(axis=0) > 0
    p = [ks_2samp(old[:, j], new[:, j], method="asymp").pvalue for j in np.flatnonzero(varied)]
    assert min(p, default=1.0) > 1e-4, f"{name}: Kolmogorov-Smirnov p-values {np.round(p, 6)}"


def frequencies(values, categories) -> np.ndarray:
    values = np.asarray(values)
    return np.stack([values == c for c in categories], axis=1).astype(float)


@pytest.mark.parametrize("params", [{}, {"disk": True}, {"mass": (0.8, 1.2), "com": (0.3, 0.2)}],
                         ids=["default", "disk", "robust"])
def test_planar_version_2_samples_the_distribution_of_version_1(params):
    old, old_meta = planar_v1(N, 1, **params)
    new, new_meta = planar_box.sample(N, 2, **params)
    assert (old.W.shape[1:], old.limit_B.shape[1:]) == (new.W.shape[1:], new.limit_B.shape[1:])
    assert list(new_meta.columns) == list(old_meta.columns)
    C = len(old) // N  # LPs per case (robust: one per corner of the uncertainty box): one sample per case
    assert_same_distribution("need", old.need.reshape(N, -1), new.need.reshape(N, -1))
    old, new, old_meta, new_meta = old.take(np.arange(0, len(old), C)), new.take(np.arange(0, len(new), C)), \
        old_meta.iloc[::C], new_meta.iloc[::C]
    assert_same_distribution("support", support(old), support(new))
    assert_same_distribution("limits", old.limit_fmax, new.limit_fmax)
    numeric = [c for c in old_meta if old_meta[c].dtype.kind == "f"]
    assert_same_distribution("meta", old_meta[numeric], new_meta[numeric])
    corners = ("A", "B", "AB")
    assert_same_distribution("corners", frequencies(old_meta["corners"], corners),
                             frequencies(new_meta["corners"], corners))
    if not params:  # the fraction of scenes that hold (the exact planar test)
        held = lambda s: planar_exact.decide(s.W, s.need)["verdict"] == "supported"  # noqa: E731
        assert_same_distribution("held", np.c_[held(old)], np.c_[held(new)])


@pytest.mark.parametrize("params", [{}, {"limits": True, "contacts": (2, 3), "kinds": ("edge", "point")}],
                         ids=["default", "limits"])
def test_cube_version_2_samples_the_distribution_of_version_1(params):
    old, old_meta = cube_v1(N, 1, **params)
    new, new_meta = cube.sample(N, 2, **params)
    assert (old.W.shape[1:], old.limit_B.shape[1:]) == (new.W.shape[1:], new.limit_B.shape[1:])
    assert_same_distribution("need", old.need, new.need)
    assert_same_distribution("support", support(old), support(new))
    if params.get("limits"):
        assert_same_distribution("fmax range", np.c_[old.limit_fmax.min(1), old.limit_fmax.max(1)],
                                 np.c_[new.limit_fmax.min(1), new.limit_fmax.max(1)])
    numeric = ["contacts", "mu_min", *[c for c in old_meta if c.startswith("push_")]]
    assert_same_distribution("meta", old_meta[numeric], new_meta[numeric])
    for column, names in (("kinds", cube.KINDS), ("faces", cube.FACE_NAMES)):
        split = lambda m: m[column].str.split(",").explode()  # noqa: E731
        assert_same_distribution(column, frequencies(split(old_meta), names), frequencies(split(new_meta), names))


@settings(max_examples=60, deadline=None)
@given(face=st.sampled_from(cube.FACE_NAMES), kind=st.sampled_from(cube.KINDS),
       u=st.floats(-0.4, 0.4), v=st.floats(-0.4, 0.4), size=st.floats(0.1, 0.6), angle=st.floats(0, np.pi),
       mu=st.floats(0.05, 1.5), edges=st.integers(3, 12), inner=st.booleans())
def test_contact_generators_are_the_single_contact_pyramids(face, kind, u, v, size, angle, mu, edges, inner):
    """The batched generators of one contact are, as a set, the columns ``contacts.polygon``
    gives the same contact scene by scene (a segment's and a point's repeated vertex slots
    add duplicates only)."""
    c = cube.Contact(kind, face, (u, v), size if kind != "point" else 0.0, angle, mu)
    single = contacts.polygon(c.vertices(), c.normal(), mu, edges, inner)  # (6, V*edges)
    batched = cube.contact_generators(cube.FACE_NAMES.index(face), cube.KINDS.index(kind), np.array([u, v]),
                                      size, angle, mu, edges, inner)  # (4*edges, 6)
    assert batched.shape == (4 * edges, 6)
    distance = np.abs(batched[:, None, :] - single.T[None, :, :]).max(axis=2)
    assert distance.min(axis=1).max() < 1e-12  # every batched column is a single-contact column
    assert distance.min(axis=0).max() < 1e-12  # and every single-contact column is there


def _delta(A_eq, b_eq, A_ub, b_ub, c):
    from scipy.optimize import linprog

    res = linprog(c, A_ub=A_ub if len(b_ub) else None, b_ub=b_ub if len(b_ub) else None, A_eq=A_eq, b_eq=b_eq,
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def test_repeated_contacts_and_limit_rows_leave_lp1_unchanged():
    """A cube scene with fewer contacts than slots repeats them, limit rows included: its LP-1
    optimum equals that of the scene built from its own contacts only (one limit row each)."""
    scenes, meta = cube.sample(40, 7, contacts=(1, 4), limits=True, mu=(0.1, 0.4),
                               push=(0.6, 0.6, 0.9, 0.3, 0.3, 0.3))
    per_slot = 4 * 8
    deltas = []
    for i in np.flatnonzero(meta["contacts"].to_numpy() < 4)[:15]:
        count = int(meta["contacts"][i])
        W = scenes.W[i][:, :count * per_slot]
        B = scenes.limit_B[i][:count, :count * per_slot]
        assert np.array_equal(B, np.kron(np.eye(count), np.ones(per_slot)))  # one row per own contact
        own = SceneBatch(W[None], scenes.need[i][None], B[None], scenes.limit_fmax[i][None, :count])
        deltas.append((_delta(*lp1(scenes[i]).arrays()[1:], lp1(scenes[i]).c),
                       _delta(*lp1(own[0]).arrays()[1:], lp1(own[0]).c)))
    deltas = np.array(deltas)
    assert len(deltas) >= 10 and np.any(deltas[:, 1] > 1e-6)  # some are unsupported: the test can fail
    np.testing.assert_allclose(deltas[:, 0], deltas[:, 1], atol=1e-9)


@pytest.mark.parametrize("family,params", [("planar-box", {"disk": True}), ("cube-3d", {"limits": True}),
                                           ("planar-box", {"kind": "exit", "mass": (0.9, 1.1)})])
def test_a_seed_gives_the_same_bytes_and_the_batch_names_its_generator_version(family, params):
    a, b = problems.generate(family, 300, 5, **params), problems.generate(family, 300, 5, **params)
    assert a.content_hash() == b.content_hash()
    assert problems.generate(family, 300, 6, **params).content_hash() != a.content_hash()
    assert a.params["generator_version"] == problems.families()[family].version == 2
    old = problems.ProblemBatch(a.family, a.kind, *a.arrays(), a.meta, {**a.params, "generator_version": 1},
                                payload=a.payload)
    assert reference.cache_path(old) != reference.cache_path(a)  # the version is in the cache key


def test_batched_lps_are_the_single_scene_lps():
    scenes, _ = planar_box.sample(20, 3, disk=True)
    batch = problems.get_kind("exit").build("planar-box", scenes, _, axes=planar_box.AXES)
    from problems.hold import exit_lp, margin_directions

    U = margin_directions(3)
    for i in (0, 7, 19):
        for j, u in enumerate(U):
            row = i * len(U) + j
            for got, want in zip((batch.c[row], batch.A_eq[row], batch.b_eq[row], batch.A_ub[row], batch.b_ub[row]),
                                 exit_lp(scenes[i], u).arrays()):
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("n", "seed", "params"), [(70, 0, {}), (33, 7, {"eps": 0.2, "mu": (0.2, 0.3)}),
                                                   (5, 11, {"tilt": (0.0, 0.0), "push": (0.0, 0.1, 0.0)})])
def test_near_boundary_planar_in_arrays_gives_the_scene_by_scene_samplers_bytes(n, seed, params):
    """near-boundary (base planar-box) builds, decides and bisects its candidate blocks as
    arrays and bisects only the candidates it keeps; it draws the same numbers in the same
    order as the scene-by-scene sampler before it (one ``planar_box.scene`` per candidate and
    height), so a seed gives the same
    scenes and meta, bit for bit (on x86-64, where numpy's scalar and array ``uniform`` round
    alike)."""
    old_scenes, old_meta = near_boundary_planar_scene_by_scene(n, seed, **params)
    scenes, meta = near_boundary.sample(n, seed, **params)
    old = SceneBatch.of(old_scenes)
    for field in ("W", "need", "limit_B", "limit_fmax"):
        assert np.array_equal(getattr(scenes, field), getattr(old, field)), field
    pd.testing.assert_frame_equal(meta, old_meta, check_exact=True)
    assert (meta["distance"].abs() <= params.get("eps", 0.04) + 1e-12).all()


@pytest.mark.parametrize("params", [{}, {"stance": "FL,BR", "mu": 0.5}], ids=["random", "two-feet"])
def test_quadruped_stress_draw_samples_the_distribution_of_version_1(params):
    """quadruped's array sampler's stress draw against its scene-by-scene version 1 (case 0,
    seed 000's overload, left out): the same meta columns, stance and consistent-torque frequencies, moments and support of every
    drawn number, and the same LP-1 and QP problems for the same drawn parameters."""
    from problems import quadruped
    from tests.legacy_generators import quadruped_v1

    old_scenes, old = quadruped_v1(N, 1, **params)
    batch, new = quadruped.sample(N, 2, draw="stress", **params)
    new = new.drop(columns="drawn").iloc[1:]
    assert list(new.columns) == list(old.columns)
    assert_same_distribution("stance", frequencies(old["stance"], quadruped.STANCES),
                             frequencies(new["stance"], quadruped.STANCES))
    two_old, two_new = old["n_feet"] == 2, new["n_feet"] == 2
    assert_same_distribution("consistent", old["consistent_torque"][two_old].to_numpy(float),
                             new["consistent_torque"][two_new].to_numpy(float))
    for columns in (["push_x", "push_z", "mu", "weight"], ["roll", "pitch"]):
        for feet in (2, 3, 4):
            if (old["n_feet"] == feet).any():
                assert_same_distribution(f"{columns} ({feet} feet)", old.loc[old["n_feet"] == feet, columns],
                                         new.loc[new["n_feet"] == feet, columns])
    for column in ("rank", "height", "edges", "n_feet"):  # functions of the stance: equal per stance
        assert (old.groupby("stance")[column].first() == new.groupby("stance")[column].first()).all(), column
    # the builders are functions of the drawn parameters: version 1's scenes through version 2's builders
    again = quadruped.QuadrupedBatch.of(old_scenes[:300])
    assert quadruped.hold_batch(again).W.tobytes() == SceneBatch.of([s.hold() for s in old_scenes[:300]]).W.tobytes()
    assert quadruped.qp_arrays(again)["A_ub"].tobytes() == np.stack([s.qp().A_ub for s in old_scenes[:300]]).tobytes()


def test_quadruped_version_recorded_and_consistent_torques_are_realisable():
    """The sampler's version (3) is recorded in the batch; a consistent two-foot torque, drawn
    or built from forces, is already consistent: moving it again (``_consistent_torque``, the least move that lets the pair
    realise the wrench) leaves it where it is."""
    from problems import quadruped

    batch = problems.generate("quadruped", 400, 5, kind="lp1")
    assert batch.params["generator_version"] == 3
    scenes, meta = quadruped.sample(400, 5)
    assert set(meta.loc[meta["consistent_torque"], "drawn"]) == {"feasible", "stress"}
    for i in np.flatnonzero(meta["consistent_torque"].to_numpy())[:20]:
        s = scenes[i]
        np.testing.assert_allclose(s.torque, quadruped._consistent_torque(s.stance, s.push, s.torque, s.weight,
                                                                           s.height), rtol=1e-12, atol=1e-12)


#: near-boundary's cube-3d version 2 solves two scipy LPs per candidate (tens of ms per kept
#: scene), so its sample is smaller than ``N``
N_NEAR_CUBE = 1_500


@pytest.mark.slow
def test_near_boundary_cube_version_3_samples_the_distribution_of_version_2():
    """near-boundary with base cube-3d in blocks decided as batches (version 3) against its
    candidate-by-candidate version 2: the same meta columns, every scene within ``eps`` of
    its boundary on the side its distance says, and the same distribution of the base
    scenes (contacts, kinds, faces, friction, generators), of the directions, of the
    boundaries and push magnitudes and of the needs (``N_NEAR_CUBE`` old scenes, four times as
    many new; with 1,500 old scenes the support is compared at the 5 % and 95 % quantiles, which
    have 75 scenes beyond them, and the Kolmogorov-Smirnov test compares the whole distributions). A
    seed's scenes differ from version 2's: this is the test that they are drawn alike."""
    from tests.legacy_generators import near_boundary_cube_v2

    old_scenes, old = near_boundary_cube_v2(N_NEAR_CUBE, 1)
    new_scenes, new = near_boundary.sample(4 * N_NEAR_CUBE, 2, base="cube-3d")
    old_scenes = SceneBatch.of(old_scenes)
    assert list(new.columns) == list(old.columns)
    assert np.array_equal(new["case"], np.arange(len(new)))
    assert (new["distance"].abs() <= 0.01).all() and (new["boundary"] > 0.01).all()
    np.testing.assert_allclose(new["value"] + new["distance"], new["boundary"], rtol=0, atol=1e-12)
    for column, names in (("kinds", cube.KINDS), ("faces", cube.FACE_NAMES)):
        split = lambda m: m[column].str.split(",").explode()  # noqa: E731
        assert_same_distribution(column, frequencies(split(old), names), frequencies(split(new), names), q=0.05)
    for columns in (["contacts", "mu_min", "distance"], [f"u_{a}" for a in cube.AXES]):
        assert_same_distribution(str(columns), old[columns], new[columns], q=0.05)
    # boundaries have a long tail up to the cap: the 98 % quantile of 1,500 of them moves by
    # about 5 % of the range between samples, so their support is compared at 10 % and 90 %
    assert_same_distribution("boundary", old[["boundary", "value"]], new[["boundary", "value"]], q=0.1,
                             std_rtol=0.3)
    # a need is gravity minus a push of up to 10 m*g: the standard deviation of 1,500 of them
    # moves by 7-9 % between samples (bootstrap), so it is compared within 30 %
    assert_same_distribution("need", old_scenes.need, new_scenes.need, q=0.05, std_rtol=0.3)
    assert_same_distribution("support", support(old_scenes), support(new_scenes), q=0.05)
    # the side of the boundary is HiGHS' verdict on the scene as built (ambiguous ones aside)
    import solvers
    from problems.hold import lp1_arrays

    delta = solvers.get("highs").solve_batch(*(a[:400] for a in lp1_arrays(new_scenes))).objective
    clear = ~new["ambiguous"].to_numpy()[:400]
    assert np.array_equal((delta <= 1e-9)[clear], (new["distance"].to_numpy()[:400] >= 0)[clear])


@pytest.mark.skipif(not problems.families().get("humanoid") or
                    problems.families()["humanoid"].reason_unavailable() is not None,
                    reason="humanoid's model (pinocchio, example-robot-data) is not installed")
@pytest.mark.parametrize(("n", "seed", "params"), [(40, 0, {}), (25, 3, {"support": "left", "friction": True}),
                                                   (9, 8, {"friction": True, "torque_limits": True, "mu": 0.4,
                                                           "eps": 1e-3, "spread": 0.3})])
def test_humanoid_qps_as_arrays_are_the_scene_by_scene_samplers_bytes(n, seed, params):
    """humanoid draws its joint offsets in one call and builds its QPs, ranks and meta as
    arrays (Pinocchio per posture is the one loop left): the same bytes as the sampler that
    built one QP and one rank per posture, and one posture's ``qp()`` is its row of the batch."""
    from problems import humanoid
    from tests.legacy_generators import humanoid_scene_by_scene

    old_qps, old_meta = humanoid_scene_by_scene(n, seed, **params)
    batch, meta = humanoid.sample(n, seed, **params)
    pd.testing.assert_frame_equal(meta, old_meta, check_exact=True)
    for name, array in batch.arrays.items():
        old = np.stack([q[name] for q in old_qps])
        assert array.shape == old.shape and array.dtype == old.dtype and array.tobytes() == old.tobytes(), name
    generated = problems.generate("humanoid", n, seed, **params)
    for name in ("c", "A_eq", "b_eq", "A_ub", "b_ub", "P", "lb"):
        assert getattr(generated, name).tobytes() == batch.arrays[name].tobytes(), name
    rng = np.random.default_rng(seed)
    first = humanoid.posture(rng.normal(0.0, params.get("spread", 0.1), 32), params.get("support", "double"))
    one = first.qp(params.get("eps", 1e-4), params.get("mu", 0.7), params.get("friction", False),
                   params.get("torque_limits", False))
    for name in ("c", "A_eq", "b_eq", "A_ub", "b_ub", "P", "lb"):
        assert np.asarray(getattr(one, name)).tobytes() == old_qps[0][name].tobytes(), name
