"""linrax 0.3.0 (two-phase tableau simplex in JAX) as published, under ``jit(vmap)``.

linrax returns the final tableau, basis and primal, and flags ``feasible`` / ``bounded``,
but no dual. The adapter recovers it inside the jitted function from the final basis
(seed 002 §6): with linrax's standard form ``A_std = S [A_eq 0; A_ub I]`` (``S`` flips
rows whose right-hand side is negative; basic artificial columns are unit vectors),
solve ``B^T y' = c_B`` and map back ``y = S y'``. That ``y`` is the sensitivity of the
optimal objective to ``b`` (the project's convention), so ``y_ub <= 0`` at an optimum.

linrax is used exactly as published (it ships without a licence; nothing is copied).
Its own flags are recorded as the native status; the verifier never trusts them.
"""

from __future__ import annotations

import numpy as np

from . import _jax
from .base import Adapter, Option, module_api
from .errors import SolverNotAvailable
from .types import BatchSolution, Capabilities, StandardForm, Status

LINRAX_VERSION = "0.3.0"


class LinraxAdapter(Adapter):
    """Published linrax 0.3.0, batched with ``jax.jit(jax.vmap(linprog))``."""

    NAME = "linrax"
    CAPABILITIES = Capabilities(lp=True, qp=False, batched=True, devices=("cpu", "gpu"),
                                dtypes=("float32", "float64"))
    INSTALL_HINT = f"pip install 'linrax=={LINRAX_VERSION}' jax"
    OPTIONS = {
        "primal_tol": Option(float, None, "linrax primal_tol (phase-1 feasibility); its default 1e-6"),
        "dual_tol": Option(float, None, "linrax dual_tol (pivot and optimality); its default 1e-6"),
        "device": Option(str, None, "JAX device platform; None = JAX's default", choices=("cpu", "gpu")),
    }
    SETTINGS = {"default": {}, "loose": {"primal_tol": 1e-4, "dual_tol": 1e-4}}

    @classmethod
    def check_available(cls) -> None:
        _jax.import_jax()
        try:
            import linrax  # noqa: F401
        except ImportError as exc:
            raise SolverNotAvailable(f"linrax is not installed ({exc}); {cls.INSTALL_HINT}") from None

    def __init__(self, profile: str = "default", **overrides) -> None:
        super().__init__(profile, **overrides)
        self._batched = None

    @property
    def device_name(self) -> str:
        """Platform the solves run on ('cpu' or 'gpu')."""
        return _jax.device(self.settings["device"]).platform

    def _function(self):
        """``jit(vmap(one case))`` returning (x, y_eq, y_ub, feasible, bounded)."""
        if self._batched is None:
            import jax
            import jax.numpy as jnp
            import linrax

            tols = {k: self.settings[k] for k in ("primal_tol", "dual_tol") if self.settings[k] is not None}

            def one(c, A_eq, b_eq, A_ub, b_ub):
                sol, kind = linrax.linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, **tols)
                m_eq, m_ub, n = b_eq.shape[0], b_ub.shape[0], c.shape[0]
                flip = jnp.where(jnp.concatenate([b_eq, b_ub]) < 0, -1.0, 1.0).astype(c.dtype)
                A = jnp.concatenate([
                    jnp.concatenate([A_eq, jnp.zeros((m_eq, m_ub), c.dtype)], axis=1),
                    jnp.concatenate([A_ub, jnp.eye(m_ub, dtype=c.dtype)], axis=1),
                ], axis=0)
                A_full = jnp.concatenate([flip[:, None] * A, jnp.eye(m_eq + m_ub, dtype=c.dtype)], axis=1)
                c_full = jnp.concatenate([c, jnp.zeros(m_ub + m_eq + m_ub, c.dtype)])
                B = A_full[:, sol.basis]
                y_std = jnp.linalg.solve(B.T, c_full[sol.basis])
                y = flip * y_std
                return sol.x[:n], y[:m_eq], y[m_eq:], kind.feasible[0], kind.bounded[0]

            self._batched = jax.jit(jax.vmap(one))
        return self._batched

    def prepare(self, problem: StandardForm):
        """Cast to the adapter's dtype and place on its device (untimed)."""
        import jax

        dev = _jax.device(self.settings["device"])
        with _jax.precision(self.dtype):
            arrays = tuple(jax.device_put(np.asarray(a, dtype=self.dtype), dev)
                           for a in (problem.c, problem.A_eq, problem.b_eq, problem.A_ub, problem.b_ub))
        return problem, arrays

    def run(self, prepared):
        import jax

        _, arrays = prepared
        with _jax.precision(self.dtype):
            return jax.block_until_ready(self._function()(*arrays))

    def collect(self, raw, prepared) -> BatchSolution:
        problem, _ = prepared
        x, y_eq, y_ub, feasible, bounded = (np.asarray(a) for a in raw)
        if x.dtype != np.dtype(self.dtype):
            raise AssertionError(f"linrax computed in {x.dtype}, expected {self.dtype}")
        feasible, bounded = feasible.astype(bool), bounded.astype(bool)
        status = np.where(~feasible, Status.INFEASIBLE,
                          np.where(~bounded, Status.UNBOUNDED, Status.OPTIMAL)).astype(object)
        x64 = x.astype(np.float64)
        objective = np.einsum("bn,bn->b", problem.c, x64)
        objective = np.where(status == Status.OPTIMAL, objective, np.nan)
        native = np.array([f"feasible={f},bounded={b}" for f, b in zip(feasible, bounded)], dtype=object)
        return BatchSolution(
            x=x64, y_eq=y_eq.astype(np.float64), y_ub=y_ub.astype(np.float64), objective=objective,
            status=status, iterations=np.full(len(x), -1, dtype=np.int64), native_status=native,
            message=np.array(["" for _ in range(len(x))], dtype=object),
        )


ADAPTER = LinraxAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
