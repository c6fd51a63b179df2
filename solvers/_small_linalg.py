"""Linear algebra on one LP's small matrices, written as elementwise array operations.

The simplex adapters trace a function of one LP and ``jax.vmap`` it over the batch. A
basis of a hold LP is tiny (``m`` = 3 to 13 rows), and XLA:CPU runs a batched ``inv``,
``solve`` or matrix product of such matrices one matrix at a time through its library
kernels: measured on an idle 2-core CPU, 1,024 products ``(4, 4) @ (4, 7)`` took 0.50 ms
as a ``dot`` and 0.15 ms as a multiply and a sum, and an ``inv`` 0.31 ms against 0.09 ms
by the elimination below (docs/gpu-scale.md). Written elementwise, the batch axis is the vector axis
of one fused loop instead. Elementwise products are float32 products summed in float32 on
every device, whatever the matmul precision; the large products ``matmul`` leaves to ``@``
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


def matmul(A, X):
    """``A @ X`` for ``A`` (m, k) and ``X`` (k, n) or (k,): a multiply and a sum over ``k``
    when ``X`` is small (``ELEMENTWISE_MAX``), else ``@`` (traced under the caller's matmul
    precision: the JAX adapters trace at ``highest``)."""
    import jax.numpy as jnp

    if X.ndim == 1:
        return jnp.sum(A * X[None, :], axis=1)
    if X.size > ELEMENTWISE_MAX:
        return A @ X
    return jnp.sum(A[:, :, None] * X[None, :, :], axis=1)


def vecmat(v, A):
    """``v @ A`` for ``v`` (k,) and ``A`` (k, n): ``A.T @ v`` without a transpose or a dot."""
    import jax.numpy as jnp

    return jnp.sum(v[:, None] * A, axis=0)


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
        M = (M - M[:, j][:, None] * pivot_row[None, :]).at[j].set(pivot_row)
    Z = M[:, m:]
    return Z[:, 0] if vector else Z


def inv(B):
    """``B^-1`` for ``B`` (m, m), by ``solve(B, I)``."""
    import jax.numpy as jnp

    return solve(B, jnp.eye(B.shape[0], dtype=B.dtype))
