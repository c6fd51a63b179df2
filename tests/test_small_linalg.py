"""solvers._small_linalg: the elementwise solve and products linrax-hold traces per LP."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

#: real processes, compiles or runs: outside make test-fast
pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from solvers import _small_linalg as small  # noqa: E402


def _conditioned(rng, m, cond):
    """A random (m, m) matrix with condition number ``cond``: ``Q1 diag Q2``."""
    q1, _ = np.linalg.qr(rng.normal(size=(m, m)))
    q2, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return q1 @ np.diag(np.geomspace(1.0, 1.0 / cond, m)) @ q2


# jitted once: a shape seen before is not compiled again, and a function run eagerly compiles
# each of its operations alone (``small.inv`` so: 40 s for one test's 25 examples). The
# Hypothesis tests below call these, the expected values jitted too (one program per shape).
_SOLVE, _INV = jax.jit(small.solve), jax.jit(small.inv)
_MATMUL, _VECMAT = jax.jit(small.matmul), jax.jit(small.vecmat)
_WITH_ROW = jax.jit(jax.vmap(small.with_row))
_SCATTER_ROW = jax.jit(jax.vmap(lambda M, i, row: M.at[i].set(row)))  # what ``with_row`` replaces


@jax.jit
def _indices(v):
    """``small.argmin`` and ``jnp.argmin`` of each row of ``v``, then ``small.first_true`` and
    ``jnp.argmax`` of ``v < 1``, under ``vmap``: one program per shape."""
    flags = v < 1.0
    return (jax.vmap(small.argmin)(v), jax.vmap(jnp.argmin)(v),
            jax.vmap(small.first_true)(flags), jax.vmap(jnp.argmax)(flags))


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 13), k=st.integers(0, 9), cond=st.sampled_from([1.0, 10.0, 1e3]),
       seed=st.integers(0, 2**32 - 1))
def test_solve_matches_a_float64_solve_to_float32_accuracy(m, k, cond, seed):
    """``B @ Z = X`` in float32 to within ``cond`` times float32's epsilon of NumPy's float64
    answer, for one right-hand side (k = 0: a vector) or several; ``inv`` likewise."""
    rng = np.random.default_rng(seed)
    B = _conditioned(rng, m, cond)
    X = rng.normal(size=(m,) if k == 0 else (m, k))
    Z = np.asarray(_SOLVE(jnp.asarray(B, jnp.float32), jnp.asarray(X, jnp.float32)))
    exact = np.linalg.solve(B, X)
    assert Z.shape == exact.shape
    tol = 50 * cond * np.finfo(np.float32).eps * max(1.0, np.abs(exact).max())
    np.testing.assert_allclose(Z, exact, atol=tol, rtol=0)
    np.testing.assert_allclose(np.asarray(_INV(jnp.asarray(B, jnp.float32))), np.linalg.inv(B),
                               atol=50 * cond * np.finfo(np.float32).eps * np.abs(np.linalg.inv(B)).max(), rtol=0)


def test_solve_pivots_a_matrix_whose_leading_entry_is_zero():
    """Without the row exchange the first pivot would be 0 and the answer non-finite."""
    B = jnp.asarray([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 4.0]], jnp.float32)
    np.testing.assert_array_equal(np.asarray(small.solve(B, jnp.asarray([3.0, 4.0, 8.0], jnp.float32))),
                                  [2.0, 3.0, 2.0])


def test_a_singular_basis_gives_non_finite_entries():
    """Callers test ``isfinite`` to recognise a singular basis, as with ``jnp.linalg.inv``."""
    B = jnp.asarray([[1.0, 2.0], [2.0, 4.0]], jnp.float32)
    assert not np.all(np.isfinite(np.asarray(small.inv(B))))


def test_vmapped_solve_gives_each_case_the_answer_it_gets_alone():
    """Under ``vmap`` every case is solved as it would be alone, bit for bit: a case's answer
    does not depend on which batch or piece it was solved in (``chunked``'s overlap)."""
    rng = np.random.default_rng(3)
    Bs = np.stack([_conditioned(rng, 7, 100.0) for _ in range(32)]).astype(np.float32)
    Xs = rng.normal(size=(32, 7, 5)).astype(np.float32)
    batched = np.asarray(jax.jit(jax.vmap(small.solve))(Bs, Xs))
    alone = np.stack([np.asarray(jax.jit(jax.vmap(small.solve))(Bs[i:i + 1], Xs[i:i + 1]))[0] for i in range(32)])
    np.testing.assert_array_equal(batched, alone)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 8), k=st.integers(1, 8), n=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
def test_products_match_numpy(m, k, n, seed):
    rng = np.random.default_rng(seed)
    A, X, v = rng.normal(size=(m, k)), rng.normal(size=(k, n)), rng.normal(size=m)
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    tol = 1e-5 * max(k, m)
    np.testing.assert_allclose(np.asarray(_MATMUL(f32(A), f32(X))), A @ X, atol=tol * 10, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(_MATMUL(f32(A), f32(X[:, 0]))), A @ X[:, 0], atol=tol * 10, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(_VECMAT(f32(v), f32(A))), v @ A, atol=tol * 10, rtol=1e-5)


_ENTRIES = st.sampled_from([0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 1e-30])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_ENTRIES, min_size=1, max_size=3), min_size=1, max_size=4).flatmap(
    lambda _: st.integers(1, 80).flatmap(lambda n: st.lists(st.lists(_ENTRIES, min_size=n, max_size=n),
                                                             min_size=1, max_size=4))))
def test_argmin_and_first_true_pick_the_index_jnp_picks(rows):
    """``small.argmin`` and ``small.first_true`` are ``jnp.argmin`` and ``jnp.argmax`` of a
    boolean, index for index, under ``vmap`` and on both sides of ``ARGMIN_MIN_LENGTH``: ties
    go to the first, a NaN wins, all ``+inf`` (or no ``True``) gives 0."""
    got, expected, got_true, expected_true = map(np.asarray, _indices(jnp.asarray(np.array(rows, dtype=np.float32))))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got_true, expected_true)


def test_argmin_takes_the_two_reduction_form_for_long_vectors():
    """The long form is what long vectors get (its lowering has no value-index reduction),
    and it ties, NaNs and empties as ``jnp.argmin`` at a length the Hypothesis test may miss."""
    n = small.ARGMIN_MIN_LENGTH
    v = np.full(n, 5.0, np.float32)
    v[[7, 20]] = -1.0
    assert int(small.argmin(jnp.asarray(v))) == 7
    v[25] = np.nan
    assert int(small.argmin(jnp.asarray(v))) == 25
    assert int(small.argmin(jnp.full(n, jnp.inf))) == 0
    assert int(small.first_true(jnp.zeros(n, bool))) == 0

    def operands_per_reduce(fn):  # a value-index reduction has two (init: per operand)
        text = jax.jit(fn).lower(jnp.asarray(v)).as_text()
        return text.count("init:") / max(1, text.count("stablehlo.reduce("))

    assert operands_per_reduce(small.argmin) == 1.0
    assert operands_per_reduce(jnp.argmin) == 2.0


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 9), n=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_with_row_is_the_scatter_it_replaces(m, n, seed):
    """``with_row(M, i, row)`` is ``M.at[i].set(row)`` bit for bit, per case under ``vmap``,
    for matrices and for an integer basis vector."""
    rng = np.random.default_rng(seed)
    M = jnp.asarray(rng.normal(size=(16, m, n)).astype(np.float32))
    rows = jnp.asarray(rng.normal(size=(16, n)).astype(np.float32))
    at = jnp.asarray(rng.integers(0, m, size=16))
    np.testing.assert_array_equal(np.asarray(_WITH_ROW(M, at, rows)), np.asarray(_SCATTER_ROW(M, at, rows)))
    basis = jnp.asarray(rng.integers(0, 50, size=(16, m)).astype(np.int32))
    col = jnp.asarray(rng.integers(0, 50, size=16).astype(np.int32))
    np.testing.assert_array_equal(np.asarray(_WITH_ROW(basis, at, col)), np.asarray(_SCATTER_ROW(basis, at, col)))


def _solve_writing_row_j_by_scatter(B, X):
    """The elimination ``small.solve`` did before, with ``.at[j].set`` for the pivot row."""
    M = jnp.concatenate([B, X], axis=1)
    rows = jnp.arange(B.shape[0])
    for j in range(B.shape[0]):
        p = jnp.argmax(jnp.where(rows >= j, jnp.abs(M[:, j]), -1.0))
        M = M[jnp.where(rows == j, p, jnp.where(rows == p, j, rows))]
        pivot_row = M[j] / M[j, j]
        M = (M - M[:, j][:, None] * pivot_row[None, :]).at[j].set(pivot_row)
    return M[:, B.shape[0]:]


_SOLVE_BATCH, _SCATTER_BATCH = jax.jit(jax.vmap(small.solve)), jax.jit(jax.vmap(_solve_writing_row_j_by_scatter))


@settings(max_examples=12, deadline=None)  # four shapes of basis, each compiled once
@given(m=st.sampled_from([1, 4, 7, 13]), k=st.sampled_from([1, 8]), seed=st.integers(0, 2**32 - 1))
def test_vmapped_solve_writes_no_row_by_scatter_and_gives_the_scatter_forms_bits(m, k, seed):
    """Under ``vmap`` a row written with ``.at[j].set`` is a scatter per LP, which XLA:CPU runs
    as a copy and a loop of its own (1,024 solves of (7, 7) by (7, 7): 0.78x the time
    without it): ``solve`` writes its pivot row by a select, with the same bits as the
    scatter form, ties and zero pivots included."""
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(8, m, m))
    B[:4, :, 0] = np.round(B[:4, :, 0])  # equal magnitudes in a column: argmax ties
    B[6, :, :] = 0.0  # a singular basis: non-finite entries, the same ones
    B, X = jnp.asarray(B.astype(np.float32)), jnp.asarray(rng.normal(size=(8, m, k)).astype(np.float32))
    assert "scatter" not in _SOLVE_BATCH.lower(B, X).as_text()
    np.testing.assert_array_equal(np.asarray(_SOLVE_BATCH(B, X)), np.asarray(_SCATTER_BATCH(B, X)))


@pytest.mark.parametrize("k", [1, 3, small.UNROLL_MAX_TERMS, small.UNROLL_MAX_TERMS + 1, 7])
def test_products_over_few_terms_are_unrolled_and_longer_ones_reduced(k):
    """A product over at most ``UNROLL_MAX_TERMS`` terms lowers to multiplies and adds, no
    reduction (the form XLA:CPU does not hand to a YNNPACK reduce); a longer one keeps its
    ``jnp.sum``. The values themselves are checked against numpy above."""
    A, X, v = jnp.ones((3, k)), jnp.ones((k, 4)), jnp.ones(k)

    def reductions(fn, *args):
        return jax.jit(fn).lower(*args).as_text().count("stablehlo.reduce(")

    expected = 0 if k <= small.UNROLL_MAX_TERMS else 1
    assert reductions(small.matmul, A, X) == expected
    assert reductions(small.matmul, A, X[:, 0]) == expected
    assert reductions(small.vecmat, v, X) == expected


def test_a_product_over_no_terms_is_zero():
    """An LP without equality rows multiplies by a (0, 0) spread: a product over no terms is
    zeros of the right shape (the unrolled form has no first term to start from)."""
    assert np.asarray(small.matmul(jnp.ones((0, 0)), jnp.ones((0, 7)))).shape == (0, 7)
    np.testing.assert_array_equal(np.asarray(small.matmul(jnp.ones((3, 0)), jnp.ones((0, 4)))), np.zeros((3, 4)))
    np.testing.assert_array_equal(np.asarray(small.matmul(jnp.ones((3, 0)), jnp.ones(0))), np.zeros(3))
    np.testing.assert_array_equal(np.asarray(small.vecmat(jnp.ones(0), jnp.ones((0, 5)))), np.zeros(5))


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 8), k=st.integers(1, 8), n=st.integers(1, 140), seed=st.integers(0, 2**31 - 1))
def test_a_product_column_alone_is_that_column_of_the_whole_product(m, k, n, seed):
    """``matmul_column(A, X[:, j], n)`` is column ``j`` of ``matmul(A, X)`` to float32 rounding,
    vmapped over a batch, on both sides of ``ELEMENTWISE_MAX`` (``@`` or the elementwise sum):
    what lets a scene's lean exits build their tableaux from one shared product
    (``one_lean_exit``). (Its last bits may differ: XLA:CPU picks kernels by shape.)"""
    import jax

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((64, m, k)).astype(np.float32)
    X = rng.standard_normal((64, k, n)).astype(np.float32)
    j = int(rng.integers(n))
    whole = np.asarray(jax.jit(jax.vmap(small.matmul))(A, X))[:, :, j]
    alone = np.asarray(jax.jit(jax.vmap(lambda a, x: small.matmul_column(a, x, n)))(A, X[:, :, j]))
    scale = np.abs(A) @ np.abs(X[:, :, j, None])  # the size of the terms summed
    np.testing.assert_array_less(np.abs(alone - whole), 4 * k * np.finfo(np.float32).eps * scale[:, :, 0] + 1e-30)
