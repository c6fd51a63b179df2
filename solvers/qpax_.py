"""qpax (primal-dual interior point in JAX) under ``jit(vmap)``, for LPs (P = 0) and QPs.

qpax solves ``min 0.5 x@Q@x + q@x  s.t.  A x = b, G x <= h`` with KKT
``Q x + q + A^T y + G^T z = 0``, ``z >= 0``. The project's ``x >= 0`` becomes the rows
``-x <= 0`` appended to ``G``. Sensitivities of the optimum to ``b`` and ``h`` are ``-y``
and ``-z``, so the adapter returns ``y_eq = -y`` and ``y_ub = -z[:m_ub]``.

Status: ``converged = 1`` -> OPTIMAL, ``0`` -> MAX_ITER. qpax does not detect
infeasibility or unboundedness (those end as MAX_ITER, usually with NaN or huge values).
Known traps, reported rather than hidden (see ``bench/conformance.py``): in float32 the
``converged`` flag is not set for tolerances below about 3e-4 although the answers are
good (use ``low_accuracy``); rank-deficient equality rows give NaN with the Cholesky
linear solver (``linear_solver=qr`` handles them).
"""

from __future__ import annotations

import numpy as np

from . import _forms, _jax
from .base import Adapter, Conformance, Option, module_api
from .types import Capabilities, Status


class QpaxAdapter(_jax.JaxBatchedAdapter, Adapter):
    """qpax, batched with ``jax.jit(jax.vmap(solve_qp))``."""

    NAME = "qpax"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float32": 0.002, "float64": 1e-05},
        known={
            ("float32", "lp_*"):
                "in float32 qpax never sets converged at its default tol 1e-5 (MAX_ITER), and its "
                "Cholesky KKT solve can break down to NaN on LPs",
            ("float32", "qp_[!f]*"):
                "in float32 qpax never sets converged at its default tol 1e-5 (MAX_ITER)",
            ("float64", "lp_free_variable"):
                "qpax's interior point does not converge on an LP with a free variable (MAX_ITER)",
            ("*", "*infeasible*"):
                "qpax does not detect infeasibility (ends MAX_ITER)",
            ("*", "lp_*unbounded*"):
                "qpax does not detect unboundedness (ends MAX_ITER)",
            ("*", "lp_inconsistent_eq"):
                "qpax does not detect infeasibility (ends MAX_ITER)",
            ("float64", "lp_redundant_eq_rows"):
                "rank-deficient equality rows: Cholesky gives NaN (linear_solver=qr fixes it)",
            ("float64", "qp_rank_deficient_eq"):
                "rank-deficient equality rows: Cholesky gives NaN (linear_solver=qr fixes it)",
            ("float64", "lp_badly_scaled"):
                "interior point in 30 iterations does not reach 1e-5 on rows scaled 1e-6/1e3",
        },
    )
    CAPABILITIES = Capabilities(lp=True, qp=True, batched=True, devices=("cpu", "gpu"),
                                dtypes=("float32", "float64"))
    REQUIRES = ("jax", "qpax")
    INSTALL_HINT = "pip install qpax jax"
    NEEDS_A_ROW = "inequality"  # with no inequality at all qpax returns NaN marked converged
    OPTIONS = {
        "backend": Option(str, None, "qpax backend: e (explicit, its default) or i (implicit)", choices=("e", "i")),
        "solver_tol": Option(float, None, "KKT residual tolerance (qpax default 1e-5)", gt=0),
        "max_iter": Option(int, None, "interior-point iterations (qpax default 30)", ge=1),
        "linear_solver": Option(str, None, "KKT factorisation (qpax default cholesky)", choices=("cholesky", "qr")),
        "device": _jax.JaxBatchedAdapter.device_option(),
    }
    SETTINGS = {
        "default": {},
        "high_accuracy": {"solver_tol": 1e-8, "max_iter": 60},
        "low_accuracy": {"solver_tol": 1e-3},
        "robust": {"linear_solver": "qr"},
    }

    def one_case(self, c, A_eq, b_eq, A_ub, b_ub, P=None, lb=None, bounded=()):
        import jax.numpy as jnp
        import qpax

        n, m_ub = c.shape[0], b_ub.shape[0]
        Q = jnp.zeros((n, n), c.dtype) if P is None else P
        rows = np.asarray(bounded, dtype=int)
        G = jnp.concatenate([A_ub, -jnp.eye(n, dtype=c.dtype)[rows]], axis=0)
        h = jnp.concatenate([b_ub, -lb[rows]])
        kwargs = {k: self.settings[k] for k in ("backend", "solver_tol", "max_iter") if self.settings[k] is not None}
        if self.settings["linear_solver"] is not None:
            kwargs["linear_solver"] = qpax.LinearSolver(self.settings["linear_solver"])
        x, _s, z, y, converged, iters = qpax.solve_qp(Q, c, A_eq, b_eq, G, h, **kwargs)
        return x, -y, -z[:m_ub], jnp.asarray(converged, jnp.int32), jnp.asarray(iters, jnp.int32)

    def status_of(self, code):
        return _forms.status_table(code, {0: (Status.MAX_ITER, "converged=0"), 1: (Status.OPTIMAL, "converged=1"),
                                         None: Status.MAX_ITER})


ADAPTER = QpaxAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
