"""Clarabel (interior point for conic programs) through its direct Python API.

The project's problem becomes ``A x + s = b, s in K`` with ``A = [A_eq; A_ub; -I]``,
``b = [b_eq; b_ub; 0]`` and ``K = ZeroCone(m_eq) x NonnegativeCone(m_ub + n)``. Clarabel's
dual ``z`` satisfies ``P x + q + A^T z = 0``, so sensitivities are ``-z``: ``y_eq = -z_eq``,
``y_ub = -z_ub``. For a primal-infeasible problem Clarabel's ``z`` is a certificate
(``A^T z = 0``, ``b@z < 0``, ``z in K*``), returned the same way: ``-z`` then satisfies
the project's Farkas conditions.
"""

from __future__ import annotations

import numpy as np

from . import _forms
from .base import Adapter, Conformance, Option, module_api
from .types import Capabilities, Solution, StandardForm, Status

#: Clarabel SolverStatus name -> project Status; unknown names map to ERROR.
_STATUS = {
    "Solved": Status.OPTIMAL,
    "AlmostSolved": Status.OPTIMAL,
    "PrimalInfeasible": Status.INFEASIBLE,
    "AlmostPrimalInfeasible": Status.INFEASIBLE,
    "DualInfeasible": Status.UNBOUNDED,
    "AlmostDualInfeasible": Status.UNBOUNDED,
    "MaxIterations": Status.MAX_ITER,
    "MaxTime": Status.TIME_LIMIT,
    "NumericalError": Status.NUMERICAL_ERROR,
    "InsufficientProgress": Status.NUMERICAL_ERROR,
}


class ClarabelAdapter(Adapter):
    """Clarabel's direct API, one solver object per case."""

    NAME = "clarabel"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 1e-06},
    )
    CAPABILITIES = Capabilities(lp=True, qp=True, socp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("clarabel",)
    INSTALL_HINT = "pip install clarabel"
    OPTIONS = {
        "tol_gap_abs": Option(float, None, "absolute duality gap tolerance (Clarabel default 1e-8)", gt=0),
        "tol_gap_rel": Option(float, None, "relative duality gap tolerance (default 1e-8)", gt=0),
        "tol_feas": Option(float, None, "feasibility tolerance (default 1e-8)", gt=0),
        "tol_infeas_abs": Option(float, None, "absolute infeasibility tolerance (default 1e-8)", gt=0),
        "tol_infeas_rel": Option(float, None, "relative infeasibility tolerance (default 1e-8)", gt=0),
        "max_iter": Option(int, None, "iteration limit (default 200)", ge=1),
        "direct_solve_method": Option(str, None, "KKT solver (qdldl default)"),
    }
    SETTINGS = {
        "default": {},
        "high_accuracy": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
                          "tol_infeas_abs": 1e-12, "tol_infeas_rel": 1e-12},
        "low_accuracy": {"tol_gap_abs": 1e-5, "tol_gap_rel": 1e-5, "tol_feas": 1e-5},
    }

    def case_args(self, problem: StandardForm):
        import clarabel
        from scipy import sparse

        n, m_eq, m_ub = problem.n, problem.m_eq, problem.m_ub
        G_b, h_b = _forms.bound_rows(problem)
        K = problem.n_cones
        soc = np.zeros((3 * K, n))  # s = b - A x in SOC(3): (mu x_n, x_t1, x_t2)
        for k, (i_n, i_1, i_2) in enumerate(problem.cones):
            soc[3 * k, i_n] = -problem.cone_mu[k]
            soc[3 * k + 1, i_1] = soc[3 * k + 2, i_2] = -1.0
        A = sparse.csc_matrix(np.vstack([problem.A_eq, problem.A_ub, G_b, soc]))
        b = np.concatenate([problem.b_eq, problem.b_ub, h_b, np.zeros(3 * K)])
        P = sparse.csc_matrix(np.triu(_forms.objective_matrix(problem)))
        cones = ([clarabel.ZeroConeT(m_eq)] if m_eq else [])
        cones += [clarabel.NonnegativeConeT(m_ub + len(h_b))] if m_ub + len(h_b) else []
        cones += [clarabel.SecondOrderConeT(3) for _ in range(K)]
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for key, value in self.native_options().items():
            setattr(settings, key, value)
        return P, problem.c, A, b, cones, settings

    def call_case(self, args):
        import clarabel

        result = clarabel.DefaultSolver(*args).solve()
        return str(result.status), np.array(result.x), np.array(result.z), float(result.obj_val), int(result.iterations)

    def case_solution(self, problem: StandardForm, out) -> Solution:
        native, x, z, obj_val, iterations = out
        n, m_eq, m_ub = problem.n, problem.m_eq, problem.m_ub
        status = _STATUS.get(native, Status.ERROR)
        z = -np.asarray(z, float)
        ray = np.full(n, np.nan)
        if status is Status.UNBOUNDED:  # Clarabel's x is then its certificate: a ray, not a point
            ray, x = np.asarray(x, float), np.full(n, np.nan)
        x = np.asarray(x, float) if status is not Status.INFEASIBLE else np.full(n, np.nan)
        return Solution(x=x, y_eq=z[:m_eq], y_ub=z[m_eq:m_eq + m_ub],
                        objective=obj_val if status is Status.OPTIMAL else float("nan"),
                        status=status, iterations=iterations, native_status=native, extras={"ray": ray})


ADAPTER = ClarabelAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
