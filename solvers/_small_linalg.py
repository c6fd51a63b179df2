"""Linear algebra on one LP's small matrices, written as elementwise array operations.

The simplex adapters trace a function of one LP and ``jax.vmap`` it over the batch. A
basis of a hold LP is tiny (``m`` = 3 to 13 rows), and XLA:CPU runs a batched ``inv``,
``solve`` or matrix product of such matrices one matrix at a time through its library
kernels: measured on an idle 2-core CPU, 1,024 products ``(4, 4) @ (4, 7)`` took 0.50 ms
as a ``dot`` and 0.15 ms as a multiply and a sum, and an ``inv`` 0.31 ms against 0.09 ms
by the elimination below. Written
elementwise, the batch axis is the vector axis of one fused loop instead. Elementwise
products are float32 products summed in float32 on every device, whatever the matmul
precision; the large products ``matmul`` leaves to ``@``
run at the precision the adapter traces with (``highest``).

Every function takes one problem's arrays (no batch axis: ``vmap`` adds it) and is traced
by ``jax.numpy``; shapes are static, so ``solve``'s loop over the columns is unrolled.
"""

from __future__ import annotations


#: ``matmul`` multiplies and sums when ``X`` has at most this many entries, else it calls ``@``:
#: inside linrax-hold's 3D exit solve (``(7, 7) @ (7, 131)``) the elementwise product made
#: the warm exits 1.3x slower than ``@``, while for a planar basis (``(4, 4) @ (4, 7)``) it is
#: 3-5x faster than ``@``.
ELEMENTWISE_MAX = 128

#: A product summed over 1 to this many terms is added term by term, unrolled, instead of
#: by ``jnp.sum``: XLA:CPU hands such small sums to YNNPACK reduce fusions, which took about
#: a third of a planar exit batch (1,024 products ``(4, 4) @ (4, 9)``: 138 us as a sum, 32
#: unrolled). A planar basis has 3 to 5 rows. A 3D basis (7 rows and more) keeps ``jnp.sum``:
#: unrolled there it was no faster, and its float32 rounding cost 3 of 4,584 3D random exits.
UNROLL_MAX_TERMS = 5


def matmul(A, X):
    """``A @ X`` for ``A`` (m, k) and ``X`` (k, n) or (k,): a multiply and a sum over ``k``
    when ``X`` is small (``ELEMENTWISE_MAX``; added term by term when ``k <=
    UNROLL_MAX_TERMS``), else ``@`` (traced under the caller's matmul precision: the JAX
    adapters trace at ``highest``)."""
    import jax.numpy as jnp

    if X.ndim == 1:
        return _summed(lambda j: A[:, j] * X[j], A.shape[1], lambda: jnp.sum(A * X[None, :], axis=1))
    if X.size > ELEMENTWISE_MAX:
        return A @ X
    return _summed(lambda j: A[:, j, None] * X[None, j, :], A.shape[1],
                   lambda: jnp.sum(A[:, :, None] * X[None, :, :], axis=1))


def matmul_column(A, x, columns: int):
    """Column ``j`` of ``matmul(A, X)`` for ``A`` (m, k), given only ``x = X[:, j]`` (k,) of an
    ``X`` (k, columns): the same arithmetic as that column of the whole product, ``@`` where
    ``matmul`` would call it, else the elementwise sum. XLA:CPU picks its kernels by shape,
    so the last bits may differ; for linrax-hold's 3D exits a ``(7, 7) @ (7, 1)`` dot gave
    each bit of that column of ``(7, 7) @ (7, 131)``, where ``jnp.sum`` of the products did
    not."""
    if x.shape[0] * columns > ELEMENTWISE_MAX:
        return (A @ x[:, None])[:, 0]
    return matmul(A, x[:, None])[:, 0]


def _summed(term, k: int, reduced):
    """``term(0) + term(1) + ... + term(k - 1)``, added in that order, unrolled (XLA may fuse
    each multiply and add into one FMA) when ``0 < k <= UNROLL_MAX_TERMS``; else ``reduced()``
    (the same sum as one reduction; also zeros of the right shape for ``k = 0``)."""
    if not 0 < k <= UNROLL_MAX_TERMS:
        return reduced()
    total = term(0)
    for j in range(1, k):
        total = total + term(j)
    return total


#: ``argmin`` (``first_true``) of a vector at least this long is a ``min`` and a ``min`` of
#: indices: XLA:CPU runs ``jnp.argmin`` and ``jnp.argmax`` (reductions of value-index pairs)
#: slowly once the vector has 32 or more entries. Measured on this 2-core CPU, ``vmap`` over
#: 1,024 vectors, per vector: 131 entries 0.58 us by ``jnp.argmin``, 0.15 us as two plain
#: reductions; 8 entries 0.006 us against 0.035, so short vectors keep ``jnp.argmin``.
ARGMIN_MIN_LENGTH = 32


def argmin(v):
    """``jnp.argmin(v)`` for a vector ``v`` (n,), the same index: the first of the smallest
    entries, or the first NaN when there is one (all ``+inf``: 0); as two plain reductions
    when ``n >= ARGMIN_MIN_LENGTH``."""
    import jax.numpy as jnp

    n = v.shape[0]
    if n < ARGMIN_MIN_LENGTH:
        return jnp.argmin(v)
    smallest = jnp.min(v)  # NaN when any entry is NaN
    return first_true((v == smallest) | (jnp.isnan(v) & jnp.isnan(smallest)))


def with_row(M, i, row):
    """``M.at[i].set(row)`` for ``M`` (m, ...) and a traced index ``i``, as a select on the
    row index: under ``vmap`` a scatter per LP, which XLA:CPU runs as a copy of ``M`` and an
    element loop, becomes part of the fused loop that computes ``M`` (the same values)."""
    import jax.numpy as jnp

    at = (jnp.arange(M.shape[0]) == i).reshape((-1,) + (1,) * (M.ndim - 1))
    return jnp.where(at, jnp.asarray(row, M.dtype), M)


def first_true(flags):
    """``jnp.argmax(flags)`` for a boolean vector ``flags`` (n,), the same index: the first
    ``True``, or 0 when none is; as a ``min`` of indices when ``n >= ARGMIN_MIN_LENGTH``
    (``jnp.argmax`` is a reduction of value-index pairs, as ``argmin``)."""
    import jax.numpy as jnp

    n = flags.shape[0]
    if n < ARGMIN_MIN_LENGTH:
        return jnp.argmax(flags)
    first = jnp.min(jnp.where(flags, jnp.arange(n), n))  # jnp.argmax's index type
    return jnp.where(first == n, 0, first)


def vecmat(v, A):
    """``v @ A`` for ``v`` (k,) and ``A`` (k, n): ``A.T @ v`` without a transpose or a dot
    (added term by term when ``k <= UNROLL_MAX_TERMS``)."""
    import jax.numpy as jnp

    return _summed(lambda j: v[j] * A[j], A.shape[0], lambda: jnp.sum(v[:, None] * A, axis=0))


def solve(B, X):
    """``Z`` with ``B @ Z = X``, ``B`` (m, m), ``X`` (m, k) or (m,): Gauss-Jordan elimination
    with partial pivoting (in column ``j`` the row of largest magnitude among those not yet
    used), unrolled over the ``m`` columns. A singular ``B`` (a zero pivot) gives non-finite
    entries, as ``jnp.linalg.solve`` does: callers test ``isfinite``."""
    import jax.numpy as jnp

    vector = X.ndim == 1
    m = B.shape[0]
    M = jnp.concatenate([B, X[:, None] if vector else X], axis=1)
    rows = jnp.arange(m)
    for j in range(m):
        p = jnp.argmax(jnp.where(rows >= j, jnp.abs(M[:, j]), -1.0))
        M = M[jnp.where(rows == j, p, jnp.where(rows == p, j, rows))]  # swap rows j and p
        pivot_row = M[j] / M[j, j]
        # row j set by a select on the row index, not ``.at[j].set``: under vmap that write
        # is a scatter (a copy of M and a loop of its own on XLA:CPU); the select joins the
        # elimination's fused loop, with the same values
        M = jnp.where((rows == j)[:, None], pivot_row[None, :], M - M[:, j][:, None] * pivot_row[None, :])
    Z = M[:, m:]
    return Z[:, 0] if vector else Z


def inv(B):
    """``B^-1`` for ``B`` (m, m), by ``solve(B, I)``."""
    import jax.numpy as jnp

    return solve(B, jnp.eye(B.shape[0], dtype=B.dtype))
