"""linrax 0.3.0 (two-phase tableau simplex in JAX) as published, under ``jit(vmap)``.

linrax returns the final tableau, basis and primal, and flags ``feasible`` / ``bounded``,
but no dual. The adapter recovers it inside the jitted function from the final basis
(seed 002 §6): with linrax's standard form ``A_std = S [A_eq 0; A_ub I]`` (``S`` flips
rows whose right-hand side is negative; basic artificial columns are unit vectors),
solve ``B^T y' = c_B`` and map back ``y = S y'``. That ``y`` is the sensitivity of the
optimal objective to ``b`` (the project's convention), so ``y_ub <= 0`` at an optimum.
When linrax ends infeasible it has stopped in phase 1, whose costs are 1 on the
artificial columns and 0 elsewhere; the same solve with those costs gives the phase-1
dual, which is a Farkas certificate (``A^T y <= 0``, ``y_ub <= 0``, ``b@y > 0``).

linrax is used exactly as published (it ships without a licence; nothing is copied).
Its own flags are recorded as the native status; the verifier never trusts them.
"""

from __future__ import annotations

from . import _forms, _jax
from ._linrax_std import basis_duals, standard_form
from .base import Adapter, Conformance, Option, module_api
from .types import Capabilities, Status

LINRAX_VERSION = "0.3.0"
#: code = 2 * feasible + bounded -> (Status, native flags)
_STATUS = {
    0: (Status.INFEASIBLE, "feasible=False,bounded=False"), 1: (Status.INFEASIBLE, "feasible=False,bounded=True"),
    2: (Status.UNBOUNDED, "feasible=True,bounded=False"), 3: (Status.OPTIMAL, "feasible=True,bounded=True"),
    None: Status.ERROR,
}


class LinraxAdapter(_jax.JaxBatchedAdapter, Adapter):
    """Published linrax 0.3.0, batched with ``jax.jit(jax.vmap(linprog))``."""

    NAME = "linrax"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float32": 0.0002, "float64": 1e-07},
        known={
            ("*", "lp_badly_scaled"):
                "linrax's ratio test skips pivots <= dual_tol (1e-6), so the row scaled 1e-6 is "
                "ignored and the LP is declared unbounded",
            ("*", "lp_degenerate_fan"):
                "linrax 0.3.0 declares this bounded, degenerate LP unbounded (its ratio test "
                "finds no pivot above dual_tol on the degenerate vertex x = 0)",
            ("*", "lp_artificial_left_basic"):
                "linrax 0.3.0 marks basic artificials in phase 2 with '>' and misses the first "
                "(its index equals the right-hand-side column's): it returns x = (1, 0), "
                "violating x1 = 0, and calls it optimal",
        },
    )
    CAPABILITIES = Capabilities(lp=True, qp=False, batched=True, devices=("cpu", "gpu"),
                                dtypes=("float32", "float64"), general_bounds=False)
    REQUIRES = ("jax", "linrax")
    NEEDS_A_ROW = "any"
    INSTALL_HINT = f"pip install 'linrax=={LINRAX_VERSION}' jax"
    OPTIONS = {
        "primal_tol": Option(float, None, "linrax primal_tol (phase-1 feasibility); its default 1e-6", gt=0),
        "dual_tol": Option(float, None, "linrax dual_tol (pivot and optimality); its default 1e-6", gt=0),
        "device": _jax.JaxBatchedAdapter.device_option(),
    }
    SETTINGS = {"default": {}, "low_accuracy": {"primal_tol": 1e-4, "dual_tol": 1e-4}}

    def one_case(self, c, A_eq, b_eq, A_ub, b_ub, P=None, lb=None, bounded=()):
        """One LP: linrax's primal and flags, plus the dual recovered from its final basis."""
        import jax.numpy as jnp
        import linrax

        tols = {k: self.settings[k] for k in ("primal_tol", "dual_tol") if self.settings[k] is not None}
        sol, kind = linrax.linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, **tols)
        m_eq, n = b_eq.shape[0], c.shape[0]
        y, _phase1 = basis_duals(jnp, standard_form(jnp, c, A_eq, b_eq, A_ub, b_ub), sol.basis, kind.feasible[0])
        code = 2 * kind.feasible[0].astype(jnp.int32) + kind.bounded[0].astype(jnp.int32)
        return sol.x[:n], y[:m_eq], y[m_eq:], code, jnp.int32(-1)

    def status_of(self, code):
        """code = 2*feasible + bounded -> Status, and the flags as the native status."""
        return _forms.status_table(code, _STATUS)


ADAPTER = LinraxAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
