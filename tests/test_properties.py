"""Property-based tests (Hypothesis) of the validation layer, the verifier and the adapters'
status contract.

``make test`` runs the small ``ci`` profile registered in ``conftest.py``; a larger search
is ``pytest tests/test_properties.py --hypothesis-profile thorough``.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import problems
import solvers
from bench.engine import verify
from bench.engine.reference import compute_reference
from problems import hold_batch, planar_box
from solvers import BatchSolution, ProblemError, Status, check_standard_form

# ------------------------------------------------------------------ strategies

ODD_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1e-300, 1e25, -1e39, 1e308, np.nan, np.inf, -np.inf]),
)
DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.complex128, np.bool_, object])


@st.composite
def odd_array(draw, shape):
    """An array of ``shape`` (or a wrong shape), of any dtype, with odd values."""
    if draw(st.integers(0, 9)) == 0:  # now and then a wrong number of dimensions
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    dtype = draw(DTYPES)
    values = draw(hnp.arrays(np.float64, shape, elements=ODD_FLOATS if draw(st.booleans()) else
                             st.floats(-10, 10, allow_nan=False)))
    if dtype is object:
        out = values.astype(object)
        if out.size and draw(st.booleans()):
            out.flat[0] = "x"
        return out
    with np.errstate(all="ignore"):
        out = values.astype(dtype)
    if dtype is np.complex128 and draw(st.booleans()):
        out = out + 1j
    return out


@st.composite
def raw_problem(draw):
    n = draw(st.integers(0, 4))
    m_eq, m_ub = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    args = [draw(odd_array((n,))), draw(odd_array((m_eq, n))), draw(odd_array((m_eq,))),
            draw(odd_array((m_ub, n))), draw(odd_array((m_ub,)))]
    kwargs = {}
    if draw(st.booleans()):
        kwargs["P"] = draw(odd_array((n, n)))
    if draw(st.booleans()):
        kwargs["lb"] = draw(odd_array((n,)))
    if draw(st.integers(0, 3)) == 0:
        kwargs["cones"] = draw(hnp.arrays(np.int64, (draw(st.integers(0, 2)), 3), elements=st.integers(-1, 4)))
        kwargs["cone_mu"] = draw(odd_array((len(kwargs["cones"]),)))
    return args, kwargs


@st.composite
def sane_problem(draw, max_n=3, max_m=2, qp=None):
    """A well-formed small LP or QP (any feasibility), P symmetric PSD when present."""
    n = draw(st.integers(1, max_n))
    m_eq, m_ub = draw(st.integers(0, max_m)), draw(st.integers(0, max_m))
    val = st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 2))
    c = draw(hnp.arrays(np.float64, (n,), elements=val))
    A_eq = draw(hnp.arrays(np.float64, (m_eq, n), elements=val))
    b_eq = draw(hnp.arrays(np.float64, (m_eq,), elements=val))
    A_ub = draw(hnp.arrays(np.float64, (m_ub, n), elements=val))
    b_ub = draw(hnp.arrays(np.float64, (m_ub,), elements=val))
    P = None
    if qp if qp is not None else draw(st.booleans()):
        L = draw(hnp.arrays(np.float64, (n, n), elements=val))
        P = L @ L.T + draw(st.sampled_from([0.0, 0.1, 1.0])) * np.eye(n)
    return (c, A_eq, b_eq, A_ub, b_ub), P


# ------------------------------------------------------------------ validation

@given(raw_problem(), st.booleans())
def test_validation_accepts_or_raises_problem_error(problem, batched):
    args, kwargs = problem
    if batched:
        args = [np.asarray(a)[None] if isinstance(a, np.ndarray) else a for a in args]
        kwargs = {k: (v if k == "cones" else np.asarray(v)[None]) for k, v in kwargs.items()}
    try:
        form = check_standard_form(*args, **kwargs, batched=batched)
    except ProblemError:
        return
    # accepted: float64, finite where it must be, P symmetric PSD, at least one variable
    assert form.n >= 1
    for arr in (form.c, form.A_eq, form.b_eq, form.A_ub, form.b_ub):
        assert arr.dtype == np.float64 and np.all(np.isfinite(arr))
    if form.P is not None:
        P = form.P
        assert np.array_equal(P, np.swapaxes(P, -1, -2))
        eig = np.linalg.eigvalsh(P)
        assert np.all(eig[..., 0] >= -1e-9 * np.max(np.abs(eig), axis=-1) - 1e-300)
    # and every adapter either takes it or refuses it with ProblemError
    for name in ("highs", "linrax", "clarabel"):
        if solvers.available().get(name):  # (its extra not installed here)
            continue
        adapter = solvers.get(name, dtype=solvers.adapters()[name].CAPABILITIES.dtypes[0])
        try:
            adapter.validate(form)
        except ProblemError:
            pass


@given(st.data())
def test_asymmetric_or_indefinite_P_is_refused(data):
    n = data.draw(st.integers(2, 4))
    P = data.draw(hnp.arrays(np.float64, (n, n), elements=st.floats(-3, 3, allow_nan=False)))
    asym = np.max(np.abs(P - P.T)) > 1e-9 * max(np.max(np.abs(P)), 1e-300)
    sym = 0.5 * (P + P.T)
    eig = np.linalg.eigvalsh(sym)
    indefinite = eig[0] < -1e-9 * np.max(np.abs(eig))
    args = (np.zeros(n), np.zeros((0, n)), np.zeros(0), np.zeros((0, n)), np.zeros(0))
    if asym or indefinite:
        with pytest.raises(ProblemError, match="^P: "):
            check_standard_form(*args, P=P)
    else:
        check_standard_form(*args, P=P)


# ------------------------------------------------------------------ the verifier

def _solution(x, y_eq, y_ub, status=Status.OPTIMAL):
    b = x.shape[0]
    return BatchSolution(x, y_eq, y_ub, np.zeros(b), np.array([status] * b, dtype=object), np.zeros(b, int),
                         np.array([""] * b, dtype=object), np.array([""] * b, dtype=object))


@st.composite
def planar_scene(draw):
    return planar_box.scene(mu=draw(st.floats(0.05, 1.2)), tilt=draw(st.floats(-0.6, 0.6)),
                            corners=draw(st.sampled_from(["AB", "A", "B"])), pad=True)


PERTURBATIONS = ["random_x", "scaled_witness", "nan_everything", "flipped_duals", "shifted_witness"]


def _perturb(kind, rng, good: BatchSolution, n, m_eq, m_ub):
    x, ye, yu = good.x.copy(), good.y_eq.copy(), good.y_ub.copy()
    zeros = (np.zeros_like(ye), np.zeros_like(yu))
    if kind == "random_x":
        return _solution(rng.uniform(0, 2, x.shape), *zeros)
    if kind == "scaled_witness":
        return _solution(x * rng.choice([rng.uniform(0.2, 0.98), rng.uniform(1.02, 3.0)]), *zeros)
    if kind == "shifted_witness":
        shift = np.zeros_like(x)
        shift[:, rng.integers(x.shape[1])] = rng.choice([-1, 1]) * rng.uniform(1e-3, 1.0)
        return _solution(x + shift, *zeros)
    if kind == "nan_everything":
        return _solution(np.full_like(x, np.nan), np.full_like(ye, np.nan), np.full_like(yu, np.nan),
                         Status.INFEASIBLE)
    return _solution(np.full_like(x, np.nan), -ye, -yu, Status.INFEASIBLE)  # flipped_duals


@given(planar_scene(), st.sampled_from(PERTURBATIONS), st.integers(0, 2**32 - 1), st.sampled_from(["lp1", "exit"]))
def test_no_fabricated_or_perturbed_hold_answer_is_counted_correct(scene, perturbation, seed, kind):
    batch = hold_batch("t", [scene], pd.DataFrame([{"case": 0}]), kind)
    ref = compute_reference(batch)
    good = solvers.get("highs").solve_batch(*batch.arrays())
    if perturbation in ("scaled_witness", "shifted_witness"):
        ok = verify.verify_exit(batch, good)["verdict"] == "verified" if kind == "exit" else \
            verify.verify_lp1(batch, good)["verdict"] == "supported"
        assume(ok.all() and np.any(np.abs(good.x[:, :batch.W.shape[2]]) > 1e-3))  # a witness there is to perturb
        if kind == "exit":  # t = 0 with lam scaled: only the scale of lam is wrong
            assume(np.all(np.abs(good.x[:, batch.W.shape[2]]) > 1e-3) or perturbation == "shifted_witness")
    bad = _perturb(perturbation, np.random.default_rng(seed), good, batch.c.shape[1], batch.b_eq.shape[1],
                   batch.b_ub.shape[1])
    if kind == "lp1":
        outcome = verify.lp1_outcomes(verify.verify_lp1(batch, bad)["verdict"], ref["truth"], ref["ambiguous"])
    else:
        checked = verify.verify_exit(batch, bad)
        outcome = verify.exit_outcomes(checked["verdict"], checked["exit"], ref["ref_exit"], ref["ref_verdict"])
    allowed = {"uncertain", "failed"}
    if perturbation in ("scaled_witness", "shifted_witness", "random_x"):
        # a wrong witness may happen to verify on another point of the cone: then it is a
        # real witness, and for exits its t is judged against the reference
        checked_ok = (verify.verify_lp1(batch, bad)["verdict"] == "supported") if kind == "lp1" else \
            (verify.verify_exit(batch, bad)["verdict"] == "verified")
        if checked_ok.any():
            allowed |= {"correct", "false_accept", "false_reject"} if kind == "exit" else {"correct"}
            assert kind == "exit" or ref["truth"][0] == "supported" or ref["ambiguous"][0]
    assert set(outcome) <= allowed, (perturbation, list(outcome))


@given(st.sampled_from(["qp", "socp"]), st.sampled_from(PERTURBATIONS), st.integers(0, 2**32 - 1))
def test_no_fabricated_qp_answer_is_counted_correct_or_false_reject(kind, perturbation, seed):
    batch = problems.generate("quadruped", 8, seed % 1000, kind=kind)
    ref = compute_reference(batch)
    good = solvers.get("clarabel", profile="high_accuracy").solve_batch(*batch.arrays(), **batch.extra())
    rng = np.random.default_rng(seed)
    if perturbation in ("scaled_witness", "shifted_witness"):
        x = good.x * (1 + rng.choice([-1, 1]) * rng.uniform(0.02, 0.5))
        bad = _solution(x, np.zeros_like(good.y_eq), np.zeros_like(good.y_ub))
    else:
        bad = _perturb(perturbation, rng, good, batch.c.shape[1], batch.b_eq.shape[1], batch.b_ub.shape[1])
    outcome = verify.qp_outcomes(verify.verify_qp(batch, bad), ref)["outcome"].to_numpy()
    assert not np.isin(outcome, ["correct", "false_reject"]).any(), (perturbation, list(outcome))


# ------------------------------------------------------------------ adapters' status contract

LOOP_ADAPTERS = ["highs", "scipy-highs", "clarabel", "osqp", "daqp", "piqp", "proxsuite", "quadprog", "cvxpy"]


@pytest.mark.parametrize("name", LOOP_ADAPTERS)
@given(problem=sane_problem())
def test_adapter_returns_a_status_or_refuses_and_optimal_is_finite(name, problem):
    if solvers.available().get(name):
        pytest.skip(solvers.available()[name])
    (c, A_eq, b_eq, A_ub, b_ub), P = problem
    adapter = solvers.get(name)
    try:
        s = adapter.solve(c, A_eq, b_eq, A_ub, b_ub, P=P)
    except ProblemError:
        return
    assert isinstance(s.status, Status)
    if s.status is Status.OPTIMAL:
        assert np.all(np.isfinite(s.x)) and np.isfinite(s.objective)


_JAX_ADAPTERS: dict = {}


@pytest.mark.parametrize("name, dtype", [("linrax", "float32"), ("linrax", "float64"), ("linrax-hold", "float64"),
                                         ("qpax", "float64"), ("mpax", "float32")])
@given(data=st.data())
def test_jax_adapter_returns_a_status_and_optimal_is_finite(name, dtype, data):
    """One shape per adapter (each new shape compiles), random values, LPs and QPs."""
    if solvers.available().get(name):
        pytest.skip(solvers.available()[name])
    qp = solvers.adapters()[name].CAPABILITIES.qp and data.draw(st.booleans())
    val = st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 1))
    arrays = [data.draw(hnp.arrays(np.float64, shape, elements=val)) for shape in ((3,), (1, 3), (1,), (2, 3), (2,))]
    P = np.eye(3) if qp else None
    key = (name, dtype)
    if key not in _JAX_ADAPTERS:  # one instance: it compiles each shape once
        _JAX_ADAPTERS[key] = solvers.get(name, dtype=dtype, **({"max_iter": 2000} if name == "mpax" else {}))
    s = _JAX_ADAPTERS[key].solve(*arrays, P=P)
    assert isinstance(s.status, Status)
    if s.status is Status.OPTIMAL:
        assert np.all(np.isfinite(s.x)) and np.isfinite(s.objective)


# ------------------------------------------------------------------ inputs, rays, case keys
FINITE = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)


@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 3), st.data())
def test_standard_form_arrays_are_read_only_and_never_alias_the_callers(batch, n, m, data):
    """What an adapter receives cannot be written, and the caller's arrays stay the caller's:
    writing into them after the check changes nothing the adapter sees."""
    c = data.draw(hnp.arrays(np.float64, (batch, n), elements=FINITE))
    A = data.draw(hnp.arrays(np.float64, (batch, m, n), elements=FINITE))
    b = data.draw(hnp.arrays(np.float64, (batch, m), elements=FINITE))
    std = check_standard_form(c, np.zeros((batch, 0, n)), np.zeros((batch, 0)), A, b, batched=True)
    snapshot = {k: getattr(std, k).copy() for k in ("c", "A_ub", "b_ub", "lb")}
    for name in ("c", "A_eq", "b_eq", "A_ub", "b_ub", "lb", "cones", "cone_mu"):
        arr = getattr(std, name)
        assert not arr.flags.writeable, name
        with pytest.raises(ValueError):
            arr[...] = 0.0
    c[...], A[...], b[...] = 7.0, 7.0, 7.0
    for key, value in snapshot.items():
        np.testing.assert_array_equal(getattr(std, key), value)
    one = std.case(0)
    assert not one.c.flags.writeable and not one.A_ub.flags.writeable


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6), st.floats(-1e3, 1e3))
def test_an_input_borrowed_from_a_writable_buffer_is_copied(values, later):
    """A buffer (here a memoryview of a bytearray) is not a NumPy array, so its memory is not
    taken as the check's own: writing to the buffer afterwards must not change the form."""
    buf = bytearray(np.array(values, dtype=np.float64).tobytes())
    n = len(values)
    form = solvers.check_standard_form(memoryview(buf).cast("d"), np.zeros((0, n)), np.zeros(0),
                                       np.ones((1, n)), [1.0])
    buf[:8] = np.array([later]).tobytes()
    assert np.array_equal(form.c, values)


@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 3), st.booleans(), st.data())
def test_a_frozen_input_is_held_without_a_copy_and_nothing_it_holds_can_be_unlocked(batch, n, m, as_view, data):
    """A caller's array that nothing can write (read-only down to its owner, as
    ``problems.generate`` returns them) is held as it is, without a copy; a read-only view of
    memory the caller can still write is copied; and no array of the form can be made
    writeable again (``setflags(write=True)`` raises), so an adapter cannot change what it is
    judged on."""
    c = data.draw(hnp.arrays(np.float64, (batch, n), elements=FINITE))
    A = data.draw(hnp.arrays(np.float64, (batch, m, n), elements=FINITE))
    b = data.draw(hnp.arrays(np.float64, (batch, m), elements=FINITE))
    owners = (c, A, b)
    given_ = [a.view() for a in owners] if as_view else list(owners)
    for arr in given_:
        arr.setflags(write=False)  # a view frozen, its owner not (as_view), or the owner frozen
    std = check_standard_form(given_[0], np.zeros((batch, 0, n)), np.zeros((batch, 0)), given_[1], given_[2],
                              batched=True)
    for name, arr in zip(("c", "A_ub", "b_ub"), given_):
        held = getattr(std, name)
        assert solvers.types.is_frozen(held), name
        assert np.shares_memory(held, arr) == (not as_view and arr.size > 0), name
    for name in ("c", "A_eq", "b_eq", "A_ub", "b_ub", "lb", "cones", "cone_mu"):
        with pytest.raises(ValueError, match="WRITEABLE"):
            getattr(std, name).setflags(write=True)
    if as_view:  # the caller can still write its owners: the form keeps what it checked
        snapshot = std.c.copy()
        c[...] = 7.0
        np.testing.assert_array_equal(std.c, snapshot)


@pytest.mark.parametrize("saved", [False, True])
@pytest.mark.parametrize("family, params", [("planar-box", {"kind": "exit"}), ("cube-3d", {}),
                                            ("quadruped", {"kind": "qp"})])
def test_a_generated_batch_is_frozen_and_checked_without_a_copy(family, params, saved, tmp_path):
    """``problems.generate`` freezes every array of the batch (payload included) down to its
    owner, so ``check_standard_form`` holds the batch's own memory instead of copying it
    (the copy was a third of validation at 65,536 cases). So does
    ``ProblemBatch.load`` (``saved``): a cell reads the batch its worker saved, and copying a
    loaded 65,536-case cube-3d batch cost about 1 s of the cell."""
    batch = problems.generate(family, 8, 0, **params)
    if saved:
        batch.save(tmp_path, "b")
        loaded = problems.ProblemBatch.load(tmp_path, "b")
        assert loaded.content_hash() == batch.content_hash()
        batch = loaded
    named = {**dict(zip(("c", "A_eq", "b_eq", "A_ub", "b_ub"), batch.arrays())),
             **{k: v for k, v in batch.extra().items() if v is not None}, **batch.payload}
    for name, arr in named.items():
        assert solvers.types.is_frozen(arr), name
        with pytest.raises(ValueError):
            arr[(0,) * arr.ndim] = 1.0
    std = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    for name in ("c", "A_eq", "b_eq", "A_ub", "b_ub"):
        assert np.shares_memory(getattr(std, name), named[name]) or not named[name].size, name


@given(st.integers(1, 5), st.integers(1, 4), st.integers(0, 2), st.booleans(), st.sampled_from(["lp1", "exit"]),
       st.integers(0, 2**32 - 1))
def test_a_hold_batch_built_from_a_callers_scenes_is_checked_without_a_copy_and_leaves_the_callers_arrays_writable(
        n, k, L, transposed, kind, seed):
    """``HoldKind.build`` (``check_batch``'s batches) freezes the arrays it makes, so
    ``check_standard_form`` holds them instead of copying them (3D exits of 768 scenes: 3.7 ->
    1.2 ms per call), and ``SceneBatch`` keeps its arrays C-contiguous whatever layout it is
    given (cube-3d computes W as (n, k, 6) and transposes it). The caller's own arrays stay
    writable and unchanged."""
    from problems.hold import SceneBatch
    from solvers.types import is_frozen

    rng = np.random.default_rng(seed)
    d = 3
    W = np.ascontiguousarray(rng.uniform(-1, 1, (n, k, d))).transpose(0, 2, 1) if transposed else \
        rng.uniform(-1, 1, (n, d, k))
    need, B, fmax = rng.uniform(-1, 1, (n, d)), rng.uniform(0, 1, (n, L, k)), rng.uniform(1, 2, (n, L))
    given_arrays = (W, need, B, fmax)
    before = [a.copy() for a in given_arrays]
    scenes = SceneBatch(W, need, B, fmax)
    for name in ("W", "need", "limit_B", "limit_fmax"):
        assert getattr(scenes, name).flags.c_contiguous, name
    np.testing.assert_array_equal(scenes.W, W)
    batch = problems.get_kind(kind).build("t", scenes, pd.DataFrame({"case": range(n)}))
    std = check_standard_form(*batch.arrays(), batched=True)
    for name, arr in zip(("c", "A_eq", "b_eq", "A_ub", "b_ub"), batch.arrays()):
        assert is_frozen(arr), name
        assert np.shares_memory(getattr(std, name), arr) or not arr.size, name
    for arr, old in zip(given_arrays, before):
        assert arr.flags.writeable
        np.testing.assert_array_equal(arr, old)
        if arr.size:
            arr[(0,) * arr.ndim] = 5.0  # still the caller's to write
    assert all(np.isfinite(getattr(batch, name)).all() for name in ("W", "need"))


def _lp_batch(c, A_eq, A_ub, b_ub, lb=None, P=None):
    B, n = c.shape
    return problems.ProblemBatch("t", "lp" if P is None else "qp", c, A_eq, np.zeros((B, A_eq.shape[1])), A_ub,
                                 b_ub, pd.DataFrame({"i": range(B)}), P=P, lb=lb)


@given(st.integers(2, 5), st.integers(0, 3), st.integers(0, 3), st.data())
def test_a_constructed_descent_ray_verifies_and_its_opposite_objective_does_not(n, m_eq, m_ub, data):
    """Rays built to satisfy the conditions (in the null space of A_eq, A_ub d <= 0, d >= 0)
    pass ``ray_check`` when ``c @ d < 0`` and fail for ``-c`` (c @ d > 0): the verifier's
    unboundedness proof is exactly the recession-direction condition."""
    from problems.kinds.checks import DEFAULT_TOLERANCES, ray_check

    d = data.draw(hnp.arrays(np.float64, n, elements=st.floats(0, 1)))
    assume(d.max() > 0.1)
    A_eq = data.draw(hnp.arrays(np.float64, (m_eq, n), elements=FINITE))
    A_eq = A_eq - np.outer(A_eq @ d, d) / (d @ d)  # rows orthogonal to d: A_eq d = 0
    A_ub = data.draw(hnp.arrays(np.float64, (m_ub, n), elements=FINITE))
    A_ub = A_ub - np.outer(np.maximum(A_ub @ d, 0.0) + 1.0, d) / (d @ d)  # A_ub d = min(A_ub d, 0) - 1 < 0
    c = data.draw(hnp.arrays(np.float64, n, elements=FINITE))
    c = c - (c @ d + 1.0) * d / (d @ d)  # c @ d = -1
    batch = _lp_batch(c[None], A_eq[None], A_ub[None], np.ones((1, m_ub)))
    assert ray_check(batch, d[None], DEFAULT_TOLERANCES)["ray_ok"].tolist() == [True]
    assert ray_check(_lp_batch(-c[None], A_eq[None], A_ub[None], np.ones((1, m_ub))), d[None],
                     DEFAULT_TOLERANCES)["ray_ok"].tolist() == [False]
    assert ray_check(batch, np.full((1, n), np.nan), DEFAULT_TOLERANCES)["ray_ok"].tolist() == [False]
    bad = d.copy()  # pointing out of x >= 0 on a bounded variable: no ray
    bad[np.argmin(d)] = -1.0
    assert not ray_check(batch, bad[None], DEFAULT_TOLERANCES)["ray_ok"].any()


def _fixed_batch(cases: int):
    """A small batch from fixed arithmetic (no generator), with bounds and a payload."""
    from problems.batch import ProblemBatch

    A_eq = np.arange(cases * 2 * 3, dtype=float).reshape(cases, 2, 3) / 7.0
    return ProblemBatch("files", "lp", np.ones((cases, 3)) * np.arange(cases)[:, None], A_eq,
                        np.arange(cases * 2, dtype=float).reshape(cases, 2), np.zeros((cases, 1, 3)) - 1.5,
                        np.ones((cases, 1)), pd.DataFrame({"case": np.arange(cases)}), lb=np.zeros((cases, 3)),
                        payload={"extra": np.arange(cases, dtype=float)[:, None] * -0.0})


def test_case_hashes_are_the_fingerprints_results_already_hold():
    """Rows of earlier runs name their cases by these fingerprints (``bench.analysis.intervals`` counts a
    case answered in several merged runs once), so a faster computation must give the same
    words: these are the values of the first, unblocked version (ff32ac2)."""
    assert list(_fixed_batch(5).case_hashes()) == [
        "4bf3cddc226560c1baf461456d4354d4", "50891e3431dd80740b79a33ff74b2930", "0335ce29b10656176eb7068ea7c9bd13",
        "5d31dbda4ccadd15b1276676cf6cb236", "bd0cea3294ba03713722143e7c44d733"]


@given(st.integers(1, 40), st.integers(1, 7))
def test_case_hashes_do_not_depend_on_the_block_size(cases, rows_per_block):
    """``case_hashes`` mixes and sums blocks of cases (``HASH_BLOCK_BYTES``); any block size,
    including blocks that do not divide the batch, gives the fingerprints of the whole batch
    at once."""
    import problems.batch as batch_module

    batch = problems.generate("planar-box", cases, cases)
    whole = batch.case_hashes()
    width = sum(int(np.prod(np.shape(a)[1:])) for a in (*batch.arrays(), *(v for k, v in batch.extra().items()
                                                                         if v is not None and k != "cones"),
                                                       *batch.payload.values()))
    original = batch_module.HASH_BLOCK_BYTES
    try:
        batch_module.HASH_BLOCK_BYTES = 8 * width * rows_per_block
        np.testing.assert_array_equal(batch.case_hashes(), whole)
    finally:
        batch_module.HASH_BLOCK_BYTES = original


@given(st.integers(1, 6), st.data())
def test_case_hashes_name_content_whatever_the_order_or_the_seed(cases, data):
    """A case's hash depends on its content alone: permuting the batch permutes the hashes,
    equal cases hash equal, and one changed entry changes that case's hash only."""
    batch = problems.generate("planar-box", cases, data.draw(st.integers(0, 2**31)))
    h = batch.case_hashes()
    assert len(set(h)) == cases and all(len(x) == 32 for x in h)
    order = np.array(data.draw(st.permutations(range(cases))))
    np.testing.assert_array_equal(batch.subset(order).case_hashes(), h[order])
    twice = batch.subset(np.array([0, 0]))
    assert twice.case_hashes()[0] == twice.case_hashes()[1] == h[0]
    i = data.draw(st.integers(0, cases - 1))
    changed = batch.subset(np.arange(cases))
    b_eq = changed.b_eq.copy()
    b_eq[i, 0] = np.nextafter(b_eq[i, 0], np.inf)  # one bit of one entry
    from dataclasses import replace

    after = replace(changed, b_eq=b_eq).case_hashes()
    assert after[i] != h[i] and np.array_equal(np.delete(after, i), np.delete(h, i))
