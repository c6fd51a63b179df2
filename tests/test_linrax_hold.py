"""linrax-hold: each measure's effect on a concrete LP, the guard on linrax's
internals, the cap, and the ablation / reproduction tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import problems
import solvers
from bench.studies import seed002
from bench.engine.reference import reference
from bench.engine.verify import exit_outcomes, lp1_outcomes, verify_exit, verify_lp1
from solvers import SolverNotAvailable, Status

pytestmark = [pytest.mark.slow, pytest.mark.skipif(solvers.available().get("linrax-hold") is not None,
                                reason=str(solvers.available().get("linrax-hold")))]


def _outcome(batch, **settings):
    """Outcomes of linrax-hold float32 with ``settings`` on ``batch`` against HiGHS float64."""
    ref = reference(batch)
    s = solvers.get("linrax-hold", dtype="float32", **settings).solve_batch(*batch.arrays())
    if batch.kind == "lp1":
        return lp1_outcomes(verify_lp1(batch, s)["verdict"], ref["truth"], ref["ambiguous"]), s
    v = verify_exit(batch, s)
    return exit_outcomes(v["verdict"], v["exit"], ref["ref_exit"], ref["ref_verdict"]), s


# (measure, off value, family, n, seed, params): seed 002's sets (generator version 2) on
# which each measure, switched off, turns LPs from right to wrong. Which LPs depends on the
# CPU: float32 rounding follows its vector units (the batch XLA compiles for, too). With
# XLA's single-threaded Eigen (tests/conftest.py, as in the cells), pivot_tol fixed LP 85 of
# cube-3d 768 on the machine that found it, and LPs 13, 179, 229, 270, 439, 514, 528 and 602,
# not 85, on an AMD EPYC with AVX-512. So the test counts. dantzig is not here: it is there
# for speed (under vmap a loop runs as long as its slowest LP), and since the basis algebra is
# elementwise (solvers._small_linalg) it neither fixes nor breaks an LP of the 16-scene 3D
# exit batch (on 768 scenes it fixed 28 more than it broke); the test below counts its pivots.
MEASURE_CASES = [
    ("recompute", False, "cube-3d", 768, 0, {}),
    ("pivot_tol", 1e-6, "cube-3d", 768, 0, {}),
    ("reinvert", False, "cube-3d", 768, 0, {}),
    ("small_witness", False, "cube-3d", 768, 0, {}),
]
WRONG = ("uncertain", "false_reject", "failed")


def _assert_fixes_more(with_it, without_it, label: str) -> None:
    """More LPs right with a measure and wrong without it than the other way round (at least
    one), and no false accept with it (outcomes per LP, in the same order)."""
    with_it, without_it = np.asarray(with_it), np.asarray(without_it)
    fixed = np.flatnonzero((with_it == "correct") & np.isin(without_it, WRONG))
    broke = np.flatnonzero((without_it == "correct") & np.isin(with_it, WRONG))
    assert len(fixed) > len(broke), f"{label}: fixed {fixed.tolist()}, broke {broke.tolist()}"
    assert "false_accept" not in set(with_it)


@pytest.mark.parametrize("measure, off, family, n, seed, params", MEASURE_CASES, ids=[c[0] for c in MEASURE_CASES])
def test_each_measure_fixes_more_lps_than_it_breaks(measure, off, family, n, seed, params):
    """Each measure earns its place: on its set, more LPs are right with it and wrong without
    it than the other way round (at least one), and with every measure on none is a false
    accept."""
    # solved in its batch: float32 rounding under vmap depends on the batch XLA compiles for
    batch = problems.generate(family, n, seed, **params)
    _assert_fixes_more(_outcome(batch)[0], _outcome(batch, **{measure: off})[0], f"{measure} off")


def test_the_exit_cap_of_the_problem_fixes_more_exit_lps_than_it_breaks():
    """The exit LPs' cap ``T`` belongs to the problem (the exit kind's ``cap``): the same
    scenes and directions with seed 002's first ``T = 1000`` leave linrax-hold float32 wrong
    on more of them than ``T = 10`` does, and never unsafe."""
    _assert_fixes_more(_outcome(problems.generate("planar-box", 256, 0, kind="exit", disk=True))[0],
                       _outcome(problems.generate("planar-box", 256, 0, kind="exit", disk=True, cap=1000.0))[0],
                       "cap 1000")


def test_reinversion_rounds_stop_once_a_round_changes_nothing():
    """On planar exits no reinversion round changes a basis, so the second of the two asked
    for would repeat the first exactly: asking for one gives the same answers, bit for bit."""
    batch = problems.generate("planar-box", 16, 0, kind="exit")
    two = solvers.get("linrax-hold", dtype="float32", chunk=0).solve_batch(*batch.arrays())
    one = solvers.get("linrax-hold", dtype="float32", chunk=0, reinversions=1).solve_batch(*batch.arrays())
    np.testing.assert_array_equal(two.x, one.x)
    np.testing.assert_array_equal(two.y_eq, one.y_eq)


def test_small_witness_returns_a_witness_float32_can_check():
    batch = problems.generate("cube-3d", 768, 0)
    _, full = _outcome(batch)
    _, plain = _outcome(batch, small_witness=False)
    k = batch.W.shape[2]
    assert full.x[450, :k].sum() < plain.x[450, :k].sum()  # a smaller total weight
    assert np.abs(full.x[450, :k]).max() < 50 < np.abs(plain.x[450, :k]).max()


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
    specs = {str(c.solver) for c in cells}
    assert "linrax-hold" in specs and "linrax" in specs and "linrax-hold[reinvert=False]" in specs
    # every set x every setting, plus the exit set built with seed 002's first cap (a problem's measure)
    assert len(cells) == len(seed002.ABLATION_SETS) * len(seed002.ablation_specs()) + 1
    assert [c.family.params.get("cap") for c in cells if str(c.family).count("cap")] == [1000.0]
    rows = pd.DataFrame({
        "family": ["cube-3d"] * 3 + ["planar-box"], "kind": ["lp1"] * 3 + ["exit"],
        "family_params": [json.dumps({"kind": "lp1"})] * 3 + [json.dumps({"cap": 1000.0, "disk": True, "kind": "exit"})],
        "solver_spec": ["linrax-hold", "linrax-hold[reinvert=False]", "linrax-hold[reinvert=False]", "linrax-hold"],
        "outcome": ["correct", "uncertain", "correct", "uncertain"], "ms_per_256": [1.0, 2.0, 2.0, 3.0],
        "case_hash": ["h0", "h0", "h1", "h2"],  # two cases (bench.analysis.results counts distinct cases)
    })
    table = seed002.ablation_table(rows)
    off = table[table["configuration"] == "without reinvert"].iloc[0]
    assert (off["n"], off["correct"], off["uncertain"], off["set"]) == (2, 1, 1, "cube-3d random LP-1")
    cap = table[table["configuration"] == "without exit_cap"].iloc[0]
    assert (cap["n"], cap["uncertain"], cap["set"]) == (1, 1, "planar exits (disk)")
    rcells = seed002.reproduction_cells(scale=0.02)
    assert {(str(c.solver), c.dtype) for c in rcells} >= {("linrax-hold", "float32"), ("linrax", "float64"),
                                                      ("highs", "float64"), ("exact-planar", "float32")}
    assert all(c.kind == "lp1" for c in rcells if str(c.solver) == "exact-planar")


def test_the_reproduction_table_adds_every_scenes_exit_cell_to_lp1_and_says_so():
    """The reproduction table's time adds the ``exit`` cell (the exit LPs of every scene) to
    LP-1's, and its column says so: it is not seed 002's LP with margins (the held scenes'
    exits only, ``bench.studies.margins`` and the device table)."""
    params = {"lp1": json.dumps({"disk": True, "kind": "lp1"}), "exit": json.dumps({"disk": True, "kind": "exit"})}
    rows = pd.DataFrame({
        "family": ["planar-box"] * 4, "kind": ["lp1", "lp1", "exit", "exit"],
        "family_params": [params["lp1"]] * 2 + [params["exit"]] * 2, "solver_label": ["linrax-hold"] * 4,
        "dtype": ["float32"] * 4, "outcome": ["correct", "uncertain", "correct", "correct"],
        "ms_per_256": [1.5, 1.5, 7.0, 7.0], "case_hash": ["a", "b", "c", "d"]})
    table = seed002.reproduction_table(rows)
    assert "ms_per_256_with_margins" not in table
    got = table.iloc[0]
    assert (got["set"], got["cases"], got["right"], got["uncertain"], got["exits_right"]) == (
        "planar random", 2, 1, 1, "2/2")
    assert (got["ms_per_256_lp1"], got["ms_per_256_lp1_and_every_exit"]) == (1.5, 8.5)


_FAMILY_PARAMS = [(fam, {**params, **extra}) for _l, fam, params, _n in seed002.REPRODUCTION_SETS + seed002.ABLATION_SETS
                  for extra in ({}, {"kind": "lp1"}, {"kind": "exit"}, {"kind": "exit", "disk": False})] + [
    ("planar-box", {}), ("legged", {"kind": "qp"}), ("cube-3d", {"base": "cube-3d"})]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_FAMILY_PARAMS), min_size=0, max_size=30), st.booleans())
def test_set_labels_decide_once_per_family_and_parameters_what_each_row_would(picked, sort_keys):
    """The seed-002 tables label their per-case rows by ``set_labels``, once per distinct
    ``(family, family_params)`` (it was a ``DataFrame.apply`` over every row): each row gets
    the label of its own pair, whatever the JSON's key order, and an empty table none."""
    rows = pd.DataFrame({"family": [f for f, _p in picked],
                         "family_params": [json.dumps(p, sort_keys=sort_keys) for _f, p in picked]})
    for sets in (seed002.REPRODUCTION_SETS, seed002.ABLATION_SETS):
        got = seed002.set_labels(rows, sets)
        assert len(got) == len(rows)
        assert list(got) == [seed002._set_label(f, json.dumps(p), sets) for f, p in picked]


def test_set_labels_of_known_pairs():
    """A row's label in the reproduction's and the ablation's sets, for pairs whose answer is known."""
    known = {("planar-box", '{"disk": true}'): ("planar random", ""),
             ("cube-3d", '{"kind": "lp1"}'): ("3D random", "cube-3d random LP-1"),
             ("cube-3d", '{"kind": "exit"}'): ("3D random", ""),
             ("planar-box", '{"disk": true, "kind": "exit"}'): ("planar random", "planar exits (disk)"),
             ("near-boundary", '{"base": "cube-3d", "kind": "lp1"}'): ("3D near-boundary", "cube-3d near-boundary LP-1"),
             ("legged", '{"kind": "qp"}'): ("", "")}
    for (family, params), labels in known.items():
        one = pd.DataFrame({"family": [family], "family_params": [params]})
        assert (seed002.set_labels(one, seed002.REPRODUCTION_SETS)[0],
                seed002.set_labels(one, seed002.ABLATION_SETS)[0]) == labels


def _lp(c, A_eq, b_eq, A_ub, b_ub):
    """One generic LP as a batch of one (arrays with a leading axis of 1)."""
    return tuple(np.asarray(a, dtype=float)[None] for a in (c, A_eq, b_eq, A_ub, b_ub))


# min -2 x1 - x2  s.t.  -x1 = 0, x1 + x2 <= 1: phase 1 ends with the first row's artificial
# basic at 0, the artificial whose index equals the right-hand-side column's after phase 1.
ARTIFICIAL_LP = ([-2, -1], [[-1, 0]], [0], [[1, 1]], [1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_artificial_ge_keeps_a_basic_artificial_out_of_phase_2(dtype):
    lp = _lp(*ARTIFICIAL_LP)
    right = solvers.get("linrax-hold", dtype=dtype).solve_batch(*lp)
    assert right.status[0] == Status.OPTIMAL
    np.testing.assert_allclose(right.x[0], [0.0, 1.0], atol=1e-6)
    # with linrax's '>' the artificial grows in phase 2: x1 = 1 breaks -x1 = 0, called optimal
    wrong = solvers.get("linrax-hold", dtype=dtype, artificial_ge=False).solve_batch(*lp)
    assert wrong.status[0] == Status.OPTIMAL
    np.testing.assert_allclose(wrong.x[0], [1.0, 0.0], atol=1e-6)
    published = solvers.get("linrax", dtype=dtype).solve_batch(*lp)  # the same bug, as published
    np.testing.assert_allclose(published.x[0], [1.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_spread_hides_the_artificial_bug_on_one_row_order_not_on_the_other(dtype):
    # seed 002: spread "first worked around the artificial-row bug". It does on this LP, with
    # artificial_ge off: every spread right-hand side is positive, no artificial stays basic.
    lp = _lp([-2, -1, 0], [[-1, 0, 0], [0, 0, 1]], [0, 1], [[1, 1, 0]], [1])
    spread = solvers.get("linrax-hold", dtype=dtype, artificial_ge=False).solve_batch(*lp)
    plain = solvers.get("linrax-hold", dtype=dtype, artificial_ge=False, spread=False).solve_batch(*lp)
    assert spread.objective[0] == pytest.approx(-1.0, abs=1e-5)  # right (HiGHS: -1)
    assert plain.objective[0] == pytest.approx(-2.0, abs=1e-5)  # x1 = 1 breaks -x1 = 0
    # ... but it is no cure: the same LP with its equality rows swapped goes wrong only when spread
    swapped = _lp([-2, -1, 0], [[0, 0, 1], [-1, 0, 0]], [1, 0], [[1, 1, 0]], [1])
    spread = solvers.get("linrax-hold", dtype=dtype, artificial_ge=False).solve_batch(*swapped)
    plain = solvers.get("linrax-hold", dtype=dtype, artificial_ge=False, spread=False).solve_batch(*swapped)
    assert spread.objective[0] == pytest.approx(-2.0, abs=1e-5)
    assert plain.objective[0] == pytest.approx(-1.0, abs=1e-5)
    full = solvers.get("linrax-hold", dtype=dtype).solve_batch(*swapped)
    assert full.objective[0] == pytest.approx(-1.0, abs=1e-5)


# Two LPs (min c x, A_ub x <= b_ub, x >= 0; four rows through the origin) on which linrax's rule
# (lowest-index entering, lowest *row* leaving among ratio ties) cycles in float64; found by a
# random search over degenerate LPs. Optima (HiGHS): -2 and -3.
CYCLING_LPS = [
    ([1, -2, -2, 3, 3, 2, 1],
     [[3, 1, -2, 0, -3, 0, 3], [1, -2, 0, 0, 0, 2, 0], [2, -3, 0, 1, -1, 0, 0], [2, 0, 0, -2, 2, 3, -2],
      [2, 1, 1, 2, 2, 3, 1]], -2.0),
    ([0, 0, 1, -3, 3, 0, -2],
     [[0, -3, 0, -3, -1, 0, 1], [-1, -2, 0, 0, 0, 3, 2], [0, -2, 0, 0, 2, -3, 3], [1, 2, 0, 0, -1, 1, 2],
      [3, 1, 3, 1, 1, 4, 1]], -3.0),
]


def _cycling_batch(extra: int = 6):
    """The two cycling LPs followed by ``extra`` LPs of the same rows with other costs."""
    rng = np.random.default_rng(7)
    cs = [np.array(c, float) for c, _, _ in CYCLING_LPS]
    rows = [np.array(A, float) for _, A, _ in CYCLING_LPS]
    for i in range(extra):
        cs.append(rng.integers(-3, 4, size=7).astype(float))
        rows.append(rows[i % 2])
    b_ub = np.zeros((len(cs), 5))
    b_ub[:, -1] = 1.0
    return np.stack(cs), np.zeros((len(cs), 0, 7)), np.zeros((len(cs), 0)), np.stack(rows), b_ub


def test_bland_ends_the_cycle_and_the_cap_keeps_the_batch_answering():
    from scipy.optimize import linprog

    arrays = _cycling_batch()
    expected = np.array([linprog(c, A_ub=A, b_ub=b, method="highs").fun
                         for c, A, b in zip(arrays[0], arrays[3], arrays[4])])
    np.testing.assert_allclose(expected[:2], [c[2] for c in CYCLING_LPS], atol=1e-9)
    full = solvers.get("linrax-hold", dtype="float64").solve_batch(*arrays)
    assert (full.status == Status.OPTIMAL).all()
    np.testing.assert_allclose(full.objective, expected, atol=1e-9)
    # lowest-row leaving: the two cycle (still at 2,000 pivots), the cap stops them, the rest answer
    # (cold: these LPs differ in their last column only, so warm_exits would skip their phase 1;
    # dantzig off: its rule in the reinversion rounds would leave the cycle, as below)
    cycling = solvers.get("linrax-hold", dtype="float64", bland=False, max_pivots=2000,
                          warm_exits=False, dantzig=False).solve_batch(*arrays)
    assert list(cycling.status[:2]) == [Status.MAX_ITER, Status.MAX_ITER]
    assert (cycling.status[2:] == Status.OPTIMAL).all()
    np.testing.assert_allclose(cycling.objective[2:], expected[2:], atol=1e-9)
    # with dantzig, the reinversion rounds continue from the capped basis by Dantzig's rule,
    # which leaves the cycle: every LP ends optimal at the right objective even without bland
    rescued = solvers.get("linrax-hold", dtype="float64", bland=False, max_pivots=2000,
                          warm_exits=False).solve_batch(*arrays)
    assert (rescued.status == Status.OPTIMAL).all()
    np.testing.assert_allclose(rescued.objective, expected, atol=1e-9)


_CAP_SCRIPT = """
import sys, numpy as np, solvers
c, A = {c!r}, {A!r}
b = np.zeros(5); b[-1] = 1.0
adapter = solvers.get("linrax-hold", dtype="float64", bland=False, dantzig=False, cap=sys.argv[1] == "on")
batch = lambda c, A, b: [np.asarray(a, float)[None] for a in (c, np.zeros((0, 7)), np.zeros(0), A, b)]
# an LP of the same shapes that ends at once (x = 0 optimal): the program is compiled and runs
adapter.solve_batch(*batch(np.zeros(7), np.zeros((5, 7)), np.ones(5)))
print("compiled", flush=True)
print(adapter.solve_batch(*batch(c, A, b)).status_text()[0])
"""


def test_without_the_cap_a_cycling_lp_never_returns(tmp_path):
    """With the cap the cycling LP ends (``max_iter``); the same LP uncapped is still pivoting
    3 s after its program was compiled and had run on an LP that ends at once (the wait
    counts from "compiled", so a slow start-up cannot pass for a cycle; an LP of this size
    that ends takes microseconds). The two processes run side by side."""
    import subprocess
    import sys

    script = tmp_path / "cap.py"
    c, A, _ = CYCLING_LPS[0]
    script.write_text(_CAP_SCRIPT.format(c=c, A=A))
    uncapped = subprocess.Popen([sys.executable, str(script), "off"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    try:
        capped = subprocess.run([sys.executable, str(script), "on"], capture_output=True, text=True, timeout=120)
        assert capped.stdout.strip().splitlines()[-1] == "max_iter", capped.stderr[-2000:]
        assert uncapped.stdout.readline().strip() == "compiled"
        with pytest.raises(subprocess.TimeoutExpired):
            uncapped.wait(timeout=3)
    finally:
        uncapped.kill()
        uncapped.wait()


def test_chunked_batches_give_the_whole_batch_answer():
    batch = problems.generate("cube-3d", 10, 2)
    whole = solvers.get("linrax-hold", dtype="float64", chunk=0).solve_batch(*batch.arrays())
    chunked = solvers.get("linrax-hold", dtype="float64", chunk=4).solve_batch(*batch.arrays())  # 4 + 4 + the last 4 (2 new)
    np.testing.assert_allclose(chunked.x, whole.x, atol=1e-9)
    np.testing.assert_array_equal(chunked.status, whole.status)


def test_pieces_on_a_cpu_hold_piece_kib_of_tableaux(monkeypatch, request):
    """On a CPU a piece holds at most ``piece_kib`` (512) KiB of tableaux, at least 64 LPs:
    cube-3d's LP-1 (4.6 KiB each in float32) and exits run in pieces of 64, planar-box's LP-1
    (0.4 KiB) keeps ``chunk``'s 1,024 and its exits 1,216 of ``exit_chunk``'s 4,096; float64
    fits half as many. ``piece_kib=0``, and a GPU device, keep ``chunk`` and ``exit_chunk``.
    The batch runs in those pieces, with the verdicts of one piece."""
    from types import SimpleNamespace

    from solvers import _jax, check_standard_form
    from solvers.linrax_hold_ import tableau_bytes

    def form(family, kind, **params):
        return check_standard_form(*problems.generate(family, 8, 0, kind=kind, **params).arrays(), batched=True)

    cube, cube_exit = form("cube-3d", "lp1"), form("cube-3d", "exit")
    planar, planar_exit = form("planar-box", "lp1", disk=True), form("planar-box", "exit", disk=True)
    assert tableau_bytes(cube, 4) == (6 + 2) * (140 + 0 + 6 + 1) * 4 == 4704
    hold = solvers.get("linrax-hold", dtype="float32")
    assert (hold.piece(cube), hold._exit_chunk(cube_exit)) == (64, 64)
    assert (hold.piece(planar), hold._exit_chunk(planar_exit)) == (1024, 1216)
    wide = solvers.get("linrax-hold", dtype="float64")
    assert (wide.piece(planar), wide._exit_chunk(planar_exit)) == (576, 576)
    off = solvers.get("linrax-hold", dtype="float32", piece_kib=0)
    assert (off.piece(cube), off._exit_chunk(cube_exit)) == (1024, 4096)
    assert solvers.get("linrax-hold", dtype="float32", chunk=0).piece(cube) == 0  # at once, as asked
    monkeypatch.setattr(_jax, "device", lambda kind: SimpleNamespace(platform="gpu"))
    assert (hold.piece(cube), hold._exit_chunk(cube_exit)) == (1024, 4096)
    monkeypatch.undo()
    pieces = request.getfixturevalue("pieces_asked")  # (after the undo: its spy stays in place)
    batch = problems.generate("cube-3d", 150, 3)
    ref = reference(batch)
    in_pieces = verify_lp1(batch, solvers.get("linrax-hold", dtype="float32").solve_batch(*batch.arrays()))
    assert pieces == [64]
    at_once = verify_lp1(batch, solvers.get("linrax-hold", dtype="float32", chunk=0).solve_batch(*batch.arrays()))
    assert list(in_pieces["verdict"]) == list(at_once["verdict"]) == list(ref["ref_verdict"])


def test_the_device_table_fills_each_device_column_from_its_own_rows(tmp_path):
    """CPU cells for real (with XLA simulating 4 host devices, as a multi-GPU node would give
    several), and the same rows relabelled as a GPU run: each column reads its own device.
    "LP with margins" is seed 002's: LP-1 for every scene, then the exits of the scenes it
    holds (``check_batch``), not the exit LPs of every scene (the ``exit`` cells)."""
    import os
    import subprocess
    import sys

    import pandas as pd

    import problems
    from bench.reporting import report
    from bench.studies import seed002
    from bench.engine.reference import reference

    cells = seed002.device_cells(0, 1, 8 / seed002.DEVICE_N, ("cpu", "gpu"))
    assert {c.device for c in cells} == {"cpu", "gpu"} and {c.dtype for c in cells} == {"float32"}
    assert {c.family.kind for c in cells} == {"lp1"} and len(cells) == 2 * 3  # exact, two LP-1 per device
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "CONTACTBENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "bench.cli", "ablate", "--table", "gpu", "--scale", "0.03125",
                           "--repeats", "1", "--out", str(tmp_path / "runs"), "--run-id", "dev"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "GPU columns read 'not measured'" in proc.stdout
    rows = report.load_runs([tmp_path / "runs" / "dev"])
    margins = pd.read_csv(tmp_path / "runs" / "dev" / "margins.csv")
    assert set(rows["env_jax_devices"]) == {"cpu:cpu:0,cpu:cpu:1,cpu:cpu:2,cpu:cpu:3"}  # 4 simulated devices seen
    assert list(margins["family"]) == ["planar-box", "cube-3d"] and set(margins["state"]) == {"done"}
    cpu_only = seed002.device_table(rows, margins)
    assert list(cpu_only["row"]) == [r[0] for r in seed002.DEVICE_ROWS]
    assert (cpu_only["gpu_ms_per_256"] == "not measured").all()
    assert (tmp_path / "runs" / "dev" / "gpu.md").read_text().strip() == cpu_only.to_markdown(
        index=False, floatfmt=".3g").strip()
    for label, family, d in (("planar LP with margins", "planar-box", 3), ("3D LP with margins", "cube-3d", 6)):
        held = int((reference(problems.generate(family, 8, 0, kind="lp1"))["ref_verdict"] == "supported").sum())
        assert 0 < held < 8  # so that the exits of every scene would count otherwise
        right, total = cpu_only.set_index("row").loc[label, "cpu_correct"].split("/")
        assert int(total) == 8 + 2 * d * held and int(right) >= 8  # LP-1's 8 answers, then the held scenes' exits
        m = margins.set_index("family").loc[family]
        assert m["exits"] == 2 * d * held and m["with_margins"] > m["lp1"] > 0
        lp1_label = label.replace("LP with margins", "LP-1")  # its LP-1 cell's solve, then the exits'
        assert cpu_only.set_index("row").loc[label, "cpu_ms_per_256"] == pytest.approx(
            cpu_only.set_index("row").loc[lp1_label, "cpu_ms_per_256"] + m["with_margins"] - m["lp1"])
        assert cpu_only.set_index("row").loc[label, "cpu_e2e_ms_per_256"] == pytest.approx(m["with_margins_e2e"])
    gpu_margins = margins.assign(device="gpu", with_margins=margins["with_margins"] / 4, lp1=margins["lp1"] / 4,
                                 with_margins_e2e=margins["with_margins_e2e"] / 4)
    both = seed002.device_table(pd.concat([rows, rows.assign(device="gpu", ms_per_256=rows["ms_per_256"] / 4)]),
                                pd.concat([margins, gpu_margins]))
    assert list(both["gpu_ms_per_256"].astype(float) * 4) == pytest.approx(list(both["cpu_ms_per_256"].astype(float)))
    assert list(both["gpu_correct"]) == list(both["cpu_correct"])
    assert both.set_index("row").loc["3D LP-1", "cpu_correct"] == "8/8"
    timed_out = seed002.device_table(rows, pd.concat([margins, gpu_margins.assign(state="timeout")]))
    # a margins measurement that did not finish says so (here without GPU LP-1 rows as well)
    assert list(timed_out.set_index("row")["gpu_ms_per_256"]) == ["not measured", "not measured", "timeout",
                                                                  "not measured", "timeout"]
    assert list(timed_out["cpu_ms_per_256"]) == list(cpu_only["cpu_ms_per_256"])
    no_margins = seed002.device_table(rows)
    assert list(no_margins.set_index("row")["cpu_ms_per_256"][["planar LP with margins", "3D LP with margins"]]) \
        == ["not measured", "not measured"]


@pytest.mark.parametrize("family, n", [("planar-box", 48), ("cube-3d", 24)])
def test_warm_exits_share_phase_1_and_are_never_less_correct_than_cold(family, n):
    """A scene's exit LPs share one phase 1 and start phase 2 from its basis
    (``warm_exits``, on by default); on the same LPs they are at least as often correct as
    solved cold, with no false accept, and where both end optimal the exits agree."""
    batch = problems.generate(family, n, 0, kind="exit", **({"disk": True} if family == "planar-box" else {}))
    adapter = solvers.get("linrax-hold", dtype="float32")
    problem = solvers.check_standard_form(*batch.arrays(), batched=True)
    _, (_, _, warm) = adapter.prepare(problem)
    assert warm is not None and warm[0][0].shape[0] == n  # one phase 1 per scene, not per exit
    warm_out, warm_sol = _outcome(batch)
    cold_out, cold_sol = _outcome(batch, warm_exits=False)
    assert (warm_out == "correct").sum() >= (cold_out == "correct").sum()
    assert "false_accept" not in set(warm_out)
    both = (warm_sol.status == Status.OPTIMAL) & (cold_sol.status == Status.OPTIMAL)
    assert both.sum() > len(batch) // 3
    k = batch.W.shape[2]
    np.testing.assert_allclose(warm_sol.x[both, k], cold_sol.x[both, k], atol=2e-3)


def test_warm_exits_leave_a_batch_without_shared_rows_cold():
    """LPs that share nothing but their shape take the cold path (no grouping to gain from)."""
    batch = problems.generate("planar-box", 16, 0)  # LP-1: every LP its own scene
    adapter = solvers.get("linrax-hold", dtype="float32")
    _, (_, _, warm) = adapter.prepare(solvers.check_standard_form(*batch.arrays(), batched=True))
    assert warm is None


def test_the_pivot_loops_primal_is_the_final_vertex_read_once_after_the_loop():
    """Our pivot loop reads the primal off the final tableau once, after the loop (not at
    every pivot). With the measures that recompute or replace it off, ``x`` is linrax's own
    reading of that primal: on LP-1 of planar scenes (phase 1 and phase 2 both pivot) each
    LP linrax-hold (float64) calls optimal must have a primal that is feasible to 1e-7 and
    whose cost is HiGHS's optimum; a primal kept from before the last pivot (or the start's)
    is not, on most of them."""
    batch = problems.generate("planar-box", 64, 3)
    c, A_eq, b_eq, A_ub, b_ub = batch.arrays()
    s = solvers.get("linrax-hold", dtype="float64", recompute=False, reinvert=False, small_witness=False,
                    chunk=0).solve_batch(c, A_eq, b_eq, A_ub, b_ub)
    ref = solvers.get("highs").solve_batch(c, A_eq, b_eq, A_ub, b_ub)
    optimal = (np.asarray(s.status) == Status.OPTIMAL) & (np.asarray(ref.status) == Status.OPTIMAL)
    assert optimal.sum() >= 48
    x = s.x[optimal]
    assert np.all(x >= -1e-9)
    np.testing.assert_allclose(np.einsum("bij,bj->bi", A_eq[optimal], x), b_eq[optimal], atol=1e-7)
    np.testing.assert_allclose(np.einsum("bj,bj->b", c[optimal], x), np.einsum("bj,bj->b", c[optimal], ref.x[optimal]),
                               atol=1e-7)
