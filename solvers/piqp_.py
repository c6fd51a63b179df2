"""PIQP (proximal interior point, dense backend): the worked example of docs/adding-a-solver.md.

PIQP solves ``min 0.5 x@P@x + c@x  s.t.  A x = b, h_l <= G x <= h_u, x_l <= x <= x_u``
with multipliers satisfying ``P x + c + A^T y + G^T (z_u - z_l) + ... = 0``. The
project's sensitivities of the optimum to ``b_eq`` and ``b_ub`` are therefore
``y_eq = -y`` and ``y_ub = -z_u``.
"""

from __future__ import annotations

import numpy as np

from solvers import _forms
from solvers.base import Adapter, Conformance, Option, module_api
from solvers.types import Capabilities, Solution, StandardForm, Status

#: PIQP status name -> project Status; unknown names map to ERROR (Adapter contract).
_STATUS = {
    "PIQP_SOLVED": Status.OPTIMAL,
    "PIQP_PRIMAL_INFEASIBLE": Status.INFEASIBLE,
    "PIQP_DUAL_INFEASIBLE": Status.UNBOUNDED,
    "PIQP_MAX_ITER_REACHED": Status.MAX_ITER,
    "PIQP_NUMERICS": Status.NUMERICAL_ERROR,
}


class PiqpAdapter(Adapter):
    """PIQP's dense solver, one ``setup`` + ``solve`` per case."""

    NAME = "piqp"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 1e-06},
        known={
            ("*", "lp_badly_scaled"):
                "PIQP declares the LP with rows scaled 1e-6 / 1e3 dual infeasible",
        },
    )
    CAPABILITIES = Capabilities(lp=True, qp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("piqp",)
    INSTALL_HINT = "pip install piqp"
    OPTIONS = {  # PIQP's own option names; None = PIQP's default
        "eps_abs": Option(float, None, "absolute tolerance (PIQP default 1e-8)", gt=0),
        "eps_rel": Option(float, None, "relative tolerance (PIQP default 1e-9)", gt=0),
        "max_iter": Option(int, None, "iteration limit (PIQP default 250)", ge=1),
    }
    SETTINGS = {
        "default": {},  # never override the solver's defaults here
        "low_accuracy": {"eps_abs": 1e-5, "eps_rel": 1e-5},
    }

    def case_args(self, problem: StandardForm):
        m_eq, m_ub = problem.m_eq, problem.m_ub
        fortran = lambda a: np.asfortranarray(a, dtype=float)  # noqa: E731  (PIQP wants column-major)
        return (fortran(_forms.objective_matrix(problem)), problem.c,
                fortran(problem.A_eq) if m_eq else None, problem.b_eq if m_eq else None,
                fortran(problem.A_ub) if m_ub else None, None, problem.b_ub if m_ub else None,
                np.where(np.isfinite(problem.lb), problem.lb, -np.inf), None), self.native_options()

    def call_case(self, args):
        import piqp

        arrays, options = args
        solver = piqp.DenseSolver()
        solver.settings.verbose = False
        for key, value in options.items():
            setattr(solver.settings, key, value)
        solver.setup(*arrays)
        status = solver.solve()
        res = solver.result
        return status, np.array(res.x), np.array(res.y), np.array(res.z_u), int(res.info.iter)

    def case_solution(self, problem: StandardForm, out) -> Solution:
        n, m_eq, m_ub = problem.n, problem.m_eq, problem.m_ub
        flag, x, y, z_u, iterations = out
        native = str(flag).split(".")[-1]
        status = _STATUS.get(native, Status.ERROR)
        ok = status is Status.OPTIMAL
        duals = ok or status is Status.INFEASIBLE  # PIQP's last iterate: the verifier decides if it proves anything
        return Solution(
            x=np.asarray(x, float) if ok else np.full(n, np.nan),
            y_eq=-np.asarray(y, float) if duals and m_eq else np.full(m_eq, np.nan),
            y_ub=-np.asarray(z_u, float) if duals and m_ub else np.full(m_ub, np.nan),
            objective=_forms.objective_value(problem, np.asarray(x, float)) if ok else float("nan"),
            status=status, iterations=iterations, native_status=native,
        )


ADAPTER = PiqpAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
