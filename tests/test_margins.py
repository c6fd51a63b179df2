"""Seed 002's LP with margins as one problem: ``bench.hold.check_batch`` solves
LP-1, then the exits of the scenes it verified supported only, and linrax-hold starts those
exits from LP-1's final bases (``prepare_exits_from``, ``solvers.linrax_hold_.exit_starts``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from bench.studies import margins as margins_module
from bench.hold import check, check_batch, prepare_exits, prepare_lp1
from bench.engine.reference import reference
from bench.engine.verify import exit_outcomes, verify_exit, verify_lp1
from problems.hold import EXIT_CAP, SceneBatch, exit_arrays, lp1_arrays
from solvers import ProblemError, Status
from solvers._linrax_std import standard_form
from solvers.linrax_hold_ import exit_starts

#: minutes of real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

needs_hold = pytest.mark.skipif(solvers.available().get("linrax-hold") is not None,
                                reason=str(solvers.available().get("linrax-hold")))


def _scenes(family: str, n: int, seed: int = 0) -> SceneBatch:
    return margins_module.scenes_of(family, {"disk": True} if family == "planar-box" else {}, n, seed)


def _lp1_raw_and_held(adapter, scenes):
    """LP-1 of ``scenes`` by ``adapter``: its raw ``run`` outputs and the indices of the
    scenes it verified supported (the ones whose exits ``prepare_exits`` builds)."""
    lp1_batch, ready = prepare_lp1(adapter, scenes)
    raw = ready.run()
    return raw, np.flatnonzero(verify_lp1(lp1_batch, ready.finish(raw))["verdict"].to_numpy() == "supported")


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 6), d=st.integers(1, 4), limits=st.integers(0, 2), seed=st.integers(0, 2**31 - 1))
def test_a_mapped_basis_names_the_same_columns_in_the_exit_lp(k, d, limits, seed):
    """Every column of an LP-1 basis that ``exit_starts`` maps is the same column of the exit
    LP (without ``t``) on LP-1's rows, zero on the cap row; the cap row's slack is added; a
    basis with an ``s`` column is not usable. Fails for any wrong offset in the map."""
    rng = np.random.default_rng(seed)
    scenes = SceneBatch(rng.normal(size=(1, d, k)), rng.normal(size=(1, d)), rng.uniform(0, 1, size=(1, limits, k)),
                        rng.uniform(0.5, 2, size=(1, limits)))
    lp1 = standard_form(np, *(a[0] for a in lp1_arrays(scenes)))
    c, A_eq, b_eq, A_ub, b_ub = (a[0] for a in exit_arrays(scenes, np.eye(d)[:1], EXIT_CAP))
    ex = standard_form(np, c[:k], A_eq[:, :k], b_eq, A_ub[:, :k], b_ub)  # the exit LP without t
    m1, m = d + limits, d + 1 + limits
    bases = np.stack([rng.choice(lp1.A_full.shape[1], size=m1, replace=False) for _ in range(20)])
    starts, usable = exit_starts(bases, np.ones(len(bases), bool), k, d, limits)
    rows = np.r_[np.arange(d), d + 1 + np.arange(limits)]  # LP-1's rows in the exit LP (the cap row is d)
    has_s = np.any((bases >= k) & (bases < k + 2 * d), axis=1)
    np.testing.assert_array_equal(usable, ~has_s)
    assert starts.shape == (len(bases), m)
    for basis, start, ok in zip(bases, starts, usable):
        assert start[-1] == k  # the cap row's slack
        if not ok:
            continue
        np.testing.assert_array_equal(ex.A_full[np.ix_(rows, start[:-1])], lp1.A_full[:, basis])
        np.testing.assert_array_equal(ex.A_full[d, start[:-1]], 0.0)
        assert ex.A_full[d, k] == 1.0 and len(set(start)) == m
    _, not_optimal = exit_starts(bases, np.zeros(len(bases), bool), k, d, limits)
    assert not not_optimal.any()


@needs_hold
@pytest.mark.parametrize("family, n", [("planar-box", 48), ("cube-3d", 24)])
def test_exits_from_lp1_bases_run_no_phase_1_and_are_as_right_as_the_shared_phase_1(family, n, own_programs):
    """The exits of the supported scenes start from LP-1's bases: linrax-hold traces no
    phase 1 for them; against HiGHS they are at least as often right as from the shared
    phase 1, with no false accept."""
    from solvers import _jax

    phase1 = lambda: [k for k in _jax.programs_of(adapter) if k[:2] == ("hold", "phase1")]  # noqa: E731
    scenes = _scenes(family, n)
    adapter = solvers.get("linrax-hold", dtype="float32")
    raw, held = _lp1_raw_and_held(adapter, scenes)
    assert 0 < len(held) < n
    exit_batch, prepared = prepare_exits(adapter, scenes, held, raw, ("a",) * scenes.d)
    assert prepared[1][2].usable.all()  # every supported scene's LP-1 basis is a start
    from_lp1 = adapter.finish(adapter.run(prepared), prepared)
    assert _jax.programs_of(adapter) and not phase1()
    ref = reference(exit_batch)

    def outcomes(solution):
        checked = verify_exit(exit_batch, solution)
        return exit_outcomes(checked["verdict"], checked["exit"], ref["ref_exit"], ref["ref_verdict"])

    shared = outcomes(adapter.solve_batch(*exit_batch.arrays()))
    got = outcomes(from_lp1)
    assert phase1()  # (the shared path did trace one)
    assert (got == "correct").sum() >= (shared == "correct").sum() >= len(exit_batch) * 0.9
    assert "false_accept" not in set(got)


@needs_hold
@pytest.mark.parametrize("family, n", [("planar-box", 48), ("cube-3d", 24)])
def test_lean_exits_are_as_right_as_with_the_rounds(family, n):
    """``lean_exits`` (on by default): exits started from LP-1's bases without the
    reinversion rounds are, against HiGHS, at least as often right as the same starts with
    the rounds, with no false accept. The running adapter's setting decides, whoever
    prepared the starts (``bench.studies.margins`` runs the lean adapter's starts with the
    rounds): the two answers differ where the rounds move a basis."""
    scenes = _scenes(family, n)
    outcomes, answers = {}, {}
    for lean in (True, False):
        adapter = solvers.get("linrax-hold", dtype="float32", lean_exits=lean)
        raw, held = _lp1_raw_and_held(adapter, scenes)
        exit_batch, prepared = prepare_exits(adapter, scenes, held, raw, ("a",) * scenes.d)
        assert prepared[1][2].usable.all()  # every exit starts from LP-1 (no cold solve)
        solution = adapter.finish(adapter.run(prepared), prepared)
        if lean:  # the first pass; LP-1, so the exit batch, is the same in the second
            ref = reference(exit_batch)
        checked = verify_exit(exit_batch, solution)
        outcomes[lean] = exit_outcomes(checked["verdict"], checked["exit"], ref["ref_exit"], ref["ref_verdict"])
        answers[lean] = solution.x
    assert (outcomes[True] == "correct").sum() >= (outcomes[False] == "correct").sum() >= 0.9 * len(outcomes[True])
    assert "false_accept" not in set(outcomes[True])
    lean_prepared = prepare_exits(solvers.get("linrax-hold", dtype="float32"), scenes, held, raw, ("a",) * scenes.d)[1]
    rounds = solvers.get("linrax-hold", dtype="float32", lean_exits=False)
    np.testing.assert_array_equal(rounds.finish(rounds.run(lean_prepared), lean_prepared).x, answers[False])


@needs_hold
def test_exits_each_from_its_own_lp1_basis_skip_the_gather_and_answer_as_gathered(monkeypatch):
    """When every exit starts from its own LP-1 basis and ends optimal, ``run`` returns the
    warm answers as they are: no rows gathered, no batch assembled (those eager dispatches
    were 40% of a planar near-boundary exit batch). The answers are the gathered path's, bit
    for bit; the rows past the batch's (the exits come padded to a bucket's size by their last
    one) are the last exit's answer again, and ``finish`` drops them."""
    import jax.numpy as jnp

    from solvers import _jax
    from solvers import linrax_hold_ as hold_module

    scenes = _scenes("planar-box", 32)
    adapter = solvers.get("linrax-hold", dtype="float32")
    raw, held = _lp1_raw_and_held(adapter, scenes)
    _, prepared = prepare_exits(adapter, scenes, held, raw, ("a", "b", "c"))
    problem, (bounded, arrays, warm) = prepared
    assert warm.usable.all()
    gathers = []
    take, put = hold_module._index_ops()
    monkeypatch.setattr(hold_module, "_index_ops", lambda: (lambda *a: gathers.append(1) or take(*a), put))
    fast = adapter.run(prepared)
    assert gathers == [] and np.all(np.asarray(fast[3]) == 3)
    B = len(problem.c)
    with _jax.precision("float32"):  # the same starts through the gather: a basis table longer than the batch
        gathered = adapter._warm_then_cold(problem, bounded, arrays, jnp.concatenate([warm.basis, warm.basis]),
                                           np.arange(B), warm.usable, np.zeros(B, bool),
                                           np.zeros((B, problem.m_eq)), np.zeros((B, problem.m_ub)), warm.shared)
    assert gathers == [1]
    assert B == 150 and len(warm.shared.per_exit[0]) == _jax.batch_bucket(B) == 160
    for got, expected in zip(fast, gathered, strict=True):
        got = np.asarray(got)
        assert len(got) == 160
        np.testing.assert_array_equal(got[:B], np.asarray(expected))
        np.testing.assert_array_equal(got[B:], got[[B - 1] * (160 - B)])
        assert got.dtype == np.asarray(expected).dtype
    solution = adapter.finish(fast, prepared)
    assert len(solution.x) == B
    np.testing.assert_array_equal(solution.x, np.asarray(fast[0])[:B].astype(np.float64))


@needs_hold
def test_lean_exits_run_in_pieces_of_exit_chunk_with_the_answers_of_one_piece(pieces_asked):
    """Lean exits run in pieces of ``exit_chunk`` (their own size, not LP-1's ``chunk``; by
    default on a CPU at most ``piece_kib`` KiB of tableaux: 1,216 planar exits), in one piece
    where ``exit_chunk`` or ``chunk`` is 0, and every piece size gives the same answers, bit
    for bit."""
    scenes = _scenes("planar-box", 40)
    lp1_adapter = solvers.get("linrax-hold", dtype="float32")
    raw, held = _lp1_raw_and_held(lp1_adapter, scenes)
    pieces = pieces_asked
    answers = {}
    for settings_, expected in (({"exit_chunk": 64}, 64), ({"exit_chunk": 0}, 0), ({"chunk": 0}, 0), ({"piece_kib": 0}, 4096),
                                ({}, 1216)):
        adapter = solvers.get("linrax-hold", dtype="float32", **settings_)
        _, prepared = prepare_exits(adapter, scenes, held, raw, ("a", "b", "c"))
        assert len(prepared[0].c) > 64  # more exits than a piece of 64
        pieces.clear()
        B = len(prepared[0].c)  # (the exits' own rows: solved at once, a bucket's padding follows)
        answers[str(settings_)] = [np.asarray(a)[:B] for a in adapter.run(prepared)]
        assert pieces == [expected, expected], settings_  # the scenes' program, then the exits'
    first = answers.pop("{'exit_chunk': 64}")
    for other in answers.values():
        for got, expected in zip(other, first, strict=True):
            np.testing.assert_array_equal(got, expected)


@needs_hold
@pytest.mark.parametrize("family, n", [("planar-box", 24), ("cube-3d", 8)])
def test_lean_exits_factor_each_scene_once_and_start_from_their_own_fresh_tableau(family, n):
    """A scene's lean exits share one factorisation of its LP-1 start (``one_exit_scene``: one
    group per supported scene, its 2d exits in a row), and each exit's start, the scene's
    tableau with its ``t`` column put in, is the tableau built fresh from the exit LP itself
    (``_fresh_tableau``), its basis the mapped one (float64, so only rounding differs)."""
    import jax
    import jax.numpy as jnp

    from solvers import _jax
    from solvers import linrax_hold_ as hold_module

    scenes = _scenes(family, n)
    adapter = solvers.get("linrax-hold", dtype="float64")
    raw, held = _lp1_raw_and_held(adapter, scenes)
    _, prepared = prepare_exits(adapter, scenes, held, raw, ("a",) * scenes.d)
    problem, (_bounded, arrays, warm) = prepared
    group = np.asarray(warm.shared.per_exit[0])
    np.testing.assert_array_equal(group, np.repeat(np.arange(len(held)), 2 * scenes.d))
    padded = len(warm.shared.scenes[0])  # 3D: the groups, padded to the exits' piece size by the last one
    if family == "cube-3d":
        assert hold_module._pads_its_scenes(problem)
        assert padded > len(held) and padded % _jax.piece_size(len(group), adapter.settings["chunk"]) == 0
    else:  # planar: elementwise products, the same bits at any batch size, so no padding
        assert not hold_module._pads_its_scenes(problem) and padded == len(held)
    for part in warm.shared.scenes:
        part = np.asarray(part)
        np.testing.assert_array_equal(part[len(held):], part[[len(held) - 1] * (padded - len(held))])
    k = problem.n - 1

    def own(c, A_eq, b_eq, A_ub, b_ub, basis):  # the exit LP's own fresh tableau, built per exit
        H, A_eq_s, b_eq_s = adapter._spread(c, A_eq, b_eq)
        form = standard_form(jnp, c, A_eq_s, b_eq_s, A_ub, b_ub)
        basis = hold_module._with_t(basis, k)
        fresh = adapter._fresh_tableau(form, basis, form.b_std.shape[0])[0]
        return fresh, basis, form.A_full[:, basis], jnp.all(jnp.isfinite(fresh))

    def shared(scene, g, t_eq, t_ub, c_t):
        _H, _form, fresh, basis, columns, finite = adapter.lean_exit_start(scene, g, t_eq, t_ub, c_t)
        return fresh, basis, columns(basis), finite

    # jitted as the adapter runs them (run eagerly, each of their operations compiled alone:
    # 457 programs and 39 s of compiling for the two cases)
    with _jax.precision("float64"):
        scene_out = jax.jit(jax.vmap(adapter.one_exit_scene))(*warm.shared.scenes)
        expected = jax.jit(jax.vmap(own))(*arrays.placed()[:5], warm.basis)
        got = jax.jit(jax.vmap(shared, in_axes=(None, 0, 0, 0, 0)))(scene_out, *warm.shared.per_exit)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(expected[0]), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(expected[1]))
    np.testing.assert_array_equal(np.asarray(got[2]), np.asarray(expected[2]))
    np.testing.assert_array_equal(np.asarray(got[3]), np.asarray(expected[3]))  # the fresh tableau's finiteness


@needs_hold
@pytest.mark.parametrize("family, n", [("planar-box", 48), ("cube-3d", 24)])
def test_an_exit_unlike_its_scene_mates_is_a_group_of_its_own_and_answered_for_itself(family, n):
    """Exits share a scene's start only where they are equal but for their ``t`` column: one
    whose need differs (a caller's own batch) starts its own group and gets its own answer,
    the one HiGHS gives for it, not its scene-mates'."""
    scenes = _scenes(family, n)
    per_scene = 2 * scenes.d
    adapter = solvers.get("linrax-hold", dtype="float64")
    raw, held = _lp1_raw_and_held(adapter, scenes)
    exit_batch, _ = prepare_exits(adapter, scenes, held, raw, ("a",) * scenes.d)
    highs = solvers.get("highs")
    before = highs.solve_batch(*exit_batch.arrays()).x[:, -1]
    # an exit inside its scene's run whose t is below the cap (so a changed need shows)
    i = next(i for i in range(len(before)) if 0 < i % per_scene < per_scene - 1 and 1e-2 < before[i] < 9)
    c, A_eq, b_eq, A_ub, b_ub = (np.array(a) for a in exit_batch.arrays())
    b_eq[i] *= 1.05  # a need 5% larger
    problem = solvers.check_standard_form(c, A_eq, b_eq, A_ub, b_ub, batched=True)
    prepared = adapter.prepare_exits_from(problem, raw, np.repeat(held, per_scene))
    group = np.asarray(prepared[1][2].shared.per_exit[0])
    assert group[i] == group[i - 1] + 1 and group[i + 1] == group[i] + 1  # exits i and i + 1 each start a group
    assert group.max() + 1 == len(held) + 2
    solution = adapter.finish(adapter.run(prepared), prepared)
    after = highs.solve_batch(c, A_eq, b_eq, A_ub, b_ub).x[:, -1]
    assert np.all(solution.status == Status.OPTIMAL)
    np.testing.assert_allclose(solution.x[:, -1], after, atol=1e-7)
    assert abs(after[i] - before[i]) > 1e-3  # its scene-mates' LP would answer otherwise


@needs_hold
@pytest.mark.filterwarnings("error::FutureWarning")
def test_an_exit_whose_lp1_basis_is_no_start_is_solved_cold_and_still_right():
    """A basis with an ``s`` column (or an LP-1 that did not end optimal) is no start: those
    exits are solved cold, and the answers match the ones from a start. In float64 (x64) the
    handed-over int32 bases once met int64 pivot indices (JAX's FutureWarning, an error here)."""
    scenes = _scenes("planar-box", 24)
    adapter = solvers.get("linrax-hold", dtype="float64")
    raw, held = _lp1_raw_and_held(adapter, scenes)
    exit_batch, good = prepare_exits(adapter, scenes, held, raw, ("a", "b", "c"))
    k = scenes.W.shape[2]
    spoiled_basis = np.asarray(raw[-1]).copy()
    spoiled_code = np.asarray(raw[3]).copy()
    spoiled_basis[held[0], 0] = k  # an s+ column
    spoiled_code[held[1]] = 2  # stopped by the cap
    spoiled = (*raw[:3], spoiled_code, raw[4], spoiled_basis)
    _, bad = prepare_exits(adapter, scenes, held, spoiled, ("a", "b", "c"))
    usable = bad[1][2].usable.reshape(len(held), 6)
    assert not usable[:2].any() and usable[2:].all()
    a, b = adapter.finish(adapter.run(good), good), adapter.finish(adapter.run(bad), bad)
    assert np.all(a.status == Status.OPTIMAL) and np.all(b.status == Status.OPTIMAL)
    np.testing.assert_allclose(b.x[:, k], a.x[:, k], atol=1e-9)


@needs_hold
def test_prepare_exits_from_names_a_wrong_argument():
    scenes = _scenes("planar-box", 8)
    adapter = solvers.get("linrax-hold", dtype="float32")
    _lp1, ready = prepare_lp1(adapter, scenes)
    raw = ready.run()
    exit_batch, _ = prepare_exits(adapter, scenes, np.arange(2), raw, ("a", "b", "c"))
    problem = solvers.check_standard_form(*exit_batch.arrays(), batched=True)
    with pytest.raises(ProblemError, match="scene_of_exit"):
        adapter.prepare_exits_from(problem, raw, np.zeros(3, int))
    with pytest.raises(ProblemError, match="lp1_raw"):
        adapter.prepare_exits_from(problem, raw, np.full(len(problem.c), 99))
    with pytest.raises(ProblemError, match="lp1_raw"):
        adapter.prepare_exits_from(problem, (*raw[:5], np.asarray(raw[-1])[:, :2]), np.zeros(len(problem.c), int))


@needs_hold
def test_check_batch_answers_like_highs_and_asks_exits_of_supported_scenes_only(monkeypatch):
    """Signed margins: min exit where supported, -delta where not, against HiGHS float64;
    exits are solved for the supported scenes only (the exit batch the adapter is given)."""
    scenes = _scenes("planar-box", 32, seed=3)
    ref = check_batch(scenes, "highs")
    asked = []
    adapter = solvers.get("linrax-hold", dtype="float32")
    original = type(adapter).prepare_exits_from

    def spy(self, problem, raw, scene_of_exit):
        asked.append(np.asarray(scene_of_exit))
        return original(self, problem, raw, scene_of_exit)

    monkeypatch.setattr(type(adapter), "prepare_exits_from", spy)
    got = check_batch(scenes, adapter)
    supported = got.verdict == "supported"
    assert 0 < supported.sum() < len(scenes)
    np.testing.assert_array_equal(np.unique(asked[0]), np.flatnonzero(supported))
    assert len(asked[0]) == 6 * supported.sum()
    np.testing.assert_array_equal(got.verdict, ref.verdict)
    np.testing.assert_allclose(got.margin, ref.margin, atol=1e-4)
    np.testing.assert_allclose(got.margin[~supported], -got.delta[~supported])
    assert np.isnan(got.exits[~supported]).all() and np.isnan(got.witness[~supported]).all()
    assert np.isnan(got.certificate[supported]).all()
    frame = got.frame()
    assert list(frame.columns[:3]) == ["verdict", "delta", "margin"] and "exit-tau_y" in frame
    one = check(scenes[int(np.flatnonzero(supported)[0])], adapter)
    assert one.verdict == "supported" and one.margin == pytest.approx(got.margin[supported][0], abs=1e-5)
    no_margins = check_batch(scenes, adapter, margin=False)
    assert np.isnan(no_margins.margin[supported]).all() and len(asked) == 2


def test_check_batch_names_a_wrong_argument():
    scenes = _scenes("planar-box", 4)
    with pytest.raises(ProblemError, match="scenes"):
        check_batch(scenes[0], "highs")
    with pytest.raises(ProblemError, match="axes"):
        check_batch(scenes, "highs", axes=("f_x",))
    with pytest.raises(ProblemError, match="solver"):
        check_batch(scenes, 3)


@pytest.mark.parametrize("family", ["planar-box", "cube-3d"])
def test_check_batch_in_blocks_answers_as_in_one_and_bounds_its_blocks(family, monkeypatch):
    """A batch larger than ``block`` scenes is solved in equal blocks (``block_sizes``), joined
    in order, with HiGHS' answers bit for bit those of one call (linrax-hold's too on planar
    scenes, whose products are elementwise); the default block keeps a block's exit matrices
    under ``BLOCK_ENTRIES`` (8,192 cube-3d scenes at once peaked at 2.3 GB, 65,536 would need 16)."""
    from bench import hold

    scenes = _scenes(family, 23, seed=5)
    assert hold.block_sizes(23, 5) == [5, 4, 5, 4, 5]  # equal blocks (one or two compiled shapes), in order
    assert hold.block_sizes(23, 23) == [23] and hold.block_sizes(23, 1) == [1] * 23
    specs = ["highs"] + (["linrax-hold"] if family == "planar-box" and not solvers.available().get("linrax-hold")
                         else [])
    for spec in specs:
        adapter = solvers.get(spec, dtype="float32") if spec != "highs" else solvers.get(spec)
        whole = check_batch(scenes, adapter)
        blocked = check_batch(scenes, adapter, block=5)
        assert 0 < (whole.verdict == "supported").sum() < len(scenes)
        np.testing.assert_array_equal(blocked.verdict, whole.verdict)
        for name in ("delta", "witness", "certificate", "exits", "margin"):
            np.testing.assert_array_equal(getattr(blocked, name), getattr(whole, name), err_msg=f"{spec} {name}")
        assert blocked.directions == whole.directions
    d, k, L = scenes.W.shape[1], scenes.W.shape[2], scenes.limit_B.shape[1]
    per_scene = 2 * d * (d + 1 + L) * (k + 1)
    assert hold.block_scenes(d, k, L) == hold.BLOCK_ENTRIES // per_scene
    assert hold.block_scenes(d, k, L, entries=per_scene * 3 - 1) == 2 and hold.block_scenes(d, k, L, entries=1) == 1
    monkeypatch.setattr(hold, "BLOCK_ENTRIES", per_scene * 6)  # the default follows the constant: blocks of 6
    assert hold.block_scenes(d, k, L) == 6
    blocked = check_batch(scenes, "highs", margin=False)
    np.testing.assert_array_equal(blocked.delta, check_batch(scenes, "highs", margin=False, block=23).delta)


def test_check_batch_refuses_a_block_that_is_not_a_positive_count():
    scenes = _scenes("planar-box", 4)
    for bad in (0, -3, 2.5, True, "4"):
        with pytest.raises(ProblemError, match="block"):
            check_batch(scenes, "highs", block=bad)


@needs_hold
def test_the_margins_benchmark_times_and_counts_each_set(capsys, tmp_path):
    """``python -m bench.studies.margins`` on a shrunk set: one row with the counts it measured."""
    out = tmp_path / "margins.csv"
    assert margins_module.main(["--sets", "planar random", "--scale", "0.02", "--rounds", "1", "--out", str(out)]) == 0
    import pandas as pd

    table = pd.read_csv(out)
    row = table.iloc[0]
    assert row["scenes"] == 20 and 0 < row["supported"] <= 20 and row["exits"] == 6 * row["supported"]
    assert row["exits_right_from_lp1"] == f"{row['exits']}/{row['exits']}"
    assert row["margins_over_lp1"] == pytest.approx(row["with_margins"] / row["lp1"])
    assert row["exits_right_rounds"] == f"{row['exits']}/{row['exits']}"  # lean_exits off, same starts
    assert row["rounds_over_lp1"] == pytest.approx(row["with_margins_rounds"] / row["lp1"])
    assert "| planar random" in capsys.readouterr().out
    # measured in a cell-engine worker, under a cell's settings (the worker's own environment)
    assert row["state"] == "done" and str(row["pjrt_nproc"]) == "1"
    assert "--xla_cpu_multi_thread_eigen=false" in row["xla_flags"] and "MALLOC_MMAP_THRESHOLD_=" in row["malloc"]
    assert margins_module.main(["--sets", "nowhere"]) == 2
    assert margins_module.main(["--timeout", "0"]) == 2


@needs_hold
def test_a_margins_set_that_does_not_finish_is_a_row_with_its_state(monkeypatch):
    """A set whose worker outlives ``timeout`` is killed: a row naming the set, its state
    and the reason, with no figure; the next set runs in a fresh worker and ends the same way."""
    from bench.studies.seed002 import REPRODUCTION_SETS

    planar = [s for s in REPRODUCTION_SETS if s[0] == "planar random"]
    table = margins_module.measure_sets(planar * 2, rounds=1, scale=0.008, timeout=0.01)
    assert list(table["state"]) == ["timeout", "timeout"]
    assert list(table["set"]) == ["planar random"] * 2 and "timeout" in table["reason"].iloc[0]
    assert "lp1" not in table and "margins_over_lp1" not in table


@pytest.mark.needs("linrax-hold")
def test_check_batch_on_a_new_count_of_held_scenes_reuses_the_exits_compiled_program(monkeypatch, caplog, own_programs):
    """One adapter, two calls of ``check_batch`` whose LP-1 holds a different number of scenes
    (so a different number of exit LPs): with both counts in one ``batch_bucket``, the lean
    exits' program is traced once, not once per call (each new count compiled it again, about
    1.8 s of a call whose solves take milliseconds), the second call compiles no program at
    all (padding the exits on the device compiled a padding and a trimming program per count:
    0.18 s of a 200-scene call that otherwise takes 7 ms), and its answers are those a fresh
    adapter gives."""
    import logging

    import jax

    from problems.hold import SceneBatch
    from solvers._jax import batch_bucket

    adapter = solvers.get("linrax-hold", dtype="float32")
    traced = []
    lean = type(adapter).one_lean_exit

    def counted(self, *args, **kwargs):
        traced.append(1)
        return lean(self, *args, **kwargs)

    monkeypatch.setattr(type(adapter), "one_lean_exit", counted)
    reference = solvers.get("highs")  # (which seed's held count leaves room in its buckets)
    for seed in range(20):
        scenes = margins_module.scenes_of("planar-box", {}, 40, seed)
        held = np.flatnonzero(check_batch(scenes, reference, margin=False).verdict == "supported")
        k = len(held)
        # j held scenes replaced by an unsupported one: fewer scenes and exits, in the same buckets
        j = next((j for j in range(1, k) if batch_bucket(k - j) == batch_bucket(k)
                  and batch_bucket(6 * (k - j)) == batch_bucket(6 * k)), None)
        if j is not None:
            break
    assert j is not None, "no seed of 20 gives two held counts in one bucket"
    first = check_batch(scenes, adapter)
    assert np.array_equal(np.flatnonzero(first.verdict == "supported"), held)
    dropped = np.flatnonzero(first.verdict == "unsupported")[0]
    keep = np.arange(40)
    keep[held[:j]] = dropped
    fewer = SceneBatch(scenes.W[keep], scenes.need[keep], scenes.limit_B[keep], scenes.limit_fmax[keep])
    assert len(traced) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jax"), jax.log_compiles():
        second = check_batch(fewer, adapter)
    assert (second.verdict == "supported").sum() == k - j  # a new count of held scenes and exits
    assert len(traced) == 1  # ... and no new trace of the exits
    assert [r.getMessage()[:60] for r in caplog.records if r.getMessage().startswith("Compiling")] == []
    fresh = check_batch(fewer, solvers.get("linrax-hold", dtype="float32"))
    np.testing.assert_array_equal(second.exits, fresh.exits)
    np.testing.assert_array_equal(second.margin, fresh.margin)


@pytest.mark.parametrize("name, dtype", [pytest.param("linrax-hold", "float32", marks=pytest.mark.needs("linrax-hold")),
                                         pytest.param("linrax", "float64", marks=pytest.mark.needs("linrax"))])
def test_check_batch_on_a_new_count_of_scenes_compiles_nothing_and_answers_each_scene_as_before(name, dtype, caplog):
    """A JAX adapter compiles a program per batch size, so ``check_batch`` solves LP-1 as
    ``adapter.batch_size(S)`` scenes (copies of the last one after them, their answers dropped),
    and the exits as that of the held count (linrax-hold pads its exits itself). A second call
    on fewer scenes, with fewer of them held, both counts in the same buckets, compiles no program
    (each new scene count compiled LP-1 again: about 2 s of a 200-scene planar call whose solves
    take milliseconds), and every scene gets the answers it got in the first call, bit for bit."""
    import logging

    import jax

    from solvers._jax import batch_bucket

    adapter, highs = solvers.get(name, dtype=dtype), solvers.get("highs")
    assert adapter.batch_size(38) == adapter.batch_size(40) == 40 and highs.batch_size(38) == 38  # (HiGHS: unpadded)
    for seed in range(20):
        scenes = margins_module.scenes_of("planar-box", {}, 40, seed)
        verdict = check_batch(scenes, highs, margin=False).verdict
        held, unheld = np.flatnonzero(verdict == "supported"), np.flatnonzero(verdict == "unsupported")
        k = len(held)
        j = next((j for j in range(1, k) if batch_bucket(k - j) == batch_bucket(k)
                  and batch_bucket(6 * (k - j)) == batch_bucket(6 * k)), None)
        if j is not None and len(unheld) >= 2:
            break
    assert j is not None and len(unheld) >= 2, "no seed of 20 gives two held counts in one bucket"
    first = check_batch(scenes, adapter)
    np.testing.assert_array_equal(first.verdict, verdict)
    keep = np.setdiff1d(np.arange(40), np.concatenate([held[:j], unheld[:2]]))  # 38 scenes, k - j held
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jax"), jax.log_compiles():
        second = check_batch(scenes.take(keep), adapter)
    assert [r.getMessage()[:60] for r in caplog.records if r.getMessage().startswith("Compiling")] == []
    assert (second.verdict == "supported").sum() == k - j
    for field in ("verdict", "delta", "witness", "certificate", "exits", "margin"):
        np.testing.assert_array_equal(getattr(second, field), getattr(first, field)[keep], err_msg=field)
