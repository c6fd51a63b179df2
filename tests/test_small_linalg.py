"""solvers._small_linalg: the elementwise solve and products linrax-hold traces per LP."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from solvers import _small_linalg as small  # noqa: E402


def _conditioned(rng, m, cond):
    """A random (m, m) matrix with condition number ``cond``: ``Q1 diag Q2``."""
    q1, _ = np.linalg.qr(rng.normal(size=(m, m)))
    q2, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return q1 @ np.diag(np.geomspace(1.0, 1.0 / cond, m)) @ q2


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 13), k=st.integers(0, 9), cond=st.sampled_from([1.0, 10.0, 1e3]),
       seed=st.integers(0, 2**32 - 1))
def test_solve_matches_a_float64_solve_to_float32_accuracy(m, k, cond, seed):
    """``B @ Z = X`` in float32 to within ``cond`` times float32's epsilon of NumPy's float64
    answer, for one right-hand side (k = 0: a vector) or several; ``inv`` likewise."""
    rng = np.random.default_rng(seed)
    B = _conditioned(rng, m, cond)
    X = rng.normal(size=(m,) if k == 0 else (m, k))
    Z = np.asarray(jax.jit(small.solve)(jnp.asarray(B, jnp.float32), jnp.asarray(X, jnp.float32)))
    exact = np.linalg.solve(B, X)
    assert Z.shape == exact.shape
    tol = 50 * cond * np.finfo(np.float32).eps * max(1.0, np.abs(exact).max())
    np.testing.assert_allclose(Z, exact, atol=tol, rtol=0)
    np.testing.assert_allclose(np.asarray(small.inv(jnp.asarray(B, jnp.float32))), np.linalg.inv(B),
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
    np.testing.assert_allclose(np.asarray(small.matmul(f32(A), f32(X))), A @ X, atol=tol * 10, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(small.matmul(f32(A), f32(X[:, 0]))), A @ X[:, 0], atol=tol * 10, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(small.vecmat(f32(v), f32(A))), v @ A, atol=tol * 10, rtol=1e-5)
