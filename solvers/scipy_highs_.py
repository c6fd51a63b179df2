"""``scipy.optimize.linprog`` with its HiGHS methods (highs, highs-ds, highs-ipm).

Dual signs: scipy's ``marginals`` are the sensitivities of the optimum to the
right-hand sides, which is the project's convention; nothing is converted.
"""

from __future__ import annotations

import numpy as np

from .base import Adapter, Conformance, Option, module_api
from .types import Capabilities, Solution, StandardForm, Status

#: linprog ``res.status`` -> project Status; unknown codes map to ERROR.
_STATUS = {0: Status.OPTIMAL, 1: Status.MAX_ITER, 2: Status.INFEASIBLE, 3: Status.UNBOUNDED,
           4: Status.NUMERICAL_ERROR}


class ScipyHighsAdapter(Adapter):
    """scipy's linprog (HiGHS inside), one call per case."""

    NAME = "scipy-highs"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 1e-07},
    )
    #: why ``bench.studies.native_speed`` does not compare this adapter with a bare loop
    NATIVE_SPEED_NOTE = ("scipy.optimize.linprog is a layer over HiGHS (measured against its bare loop): its "
                         "per-call checks and conversions are the cost this adapter is in the grid to show, so it "
                         "has no bare loop of its own")
    CAPABILITIES = Capabilities(lp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("scipy.optimize",)
    INSTALL_HINT = "pip install scipy"
    OPTIONS = {
        "method": Option(str, "highs", "linprog method", choices=("highs", "highs-ds", "highs-ipm")),
        "presolve": Option(bool, None, "linprog presolve"),
        "primal_feasibility_tolerance": Option(float, None, "HiGHS primal feasibility tolerance", gt=0),
        "dual_feasibility_tolerance": Option(float, None, "HiGHS dual feasibility tolerance", gt=0),
        "time_limit": Option(float, None, "seconds per solve", gt=0),
    }
    SETTINGS = {
        "default": {},
        "high_accuracy": {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
        "low_accuracy": {"primal_feasibility_tolerance": 1e-5, "dual_feasibility_tolerance": 1e-5},
    }

    def solve_one(self, problem: StandardForm) -> Solution:
        from scipy.optimize import linprog

        options = {k: v for k, v in self.native_options().items() if k != "method"}
        res = linprog(
            problem.c,
            A_ub=problem.A_ub if problem.m_ub else None, b_ub=problem.b_ub if problem.m_ub else None,
            A_eq=problem.A_eq if problem.m_eq else None, b_eq=problem.b_eq if problem.m_eq else None,
            bounds=[(lo if np.isfinite(lo) else None, None) for lo in problem.lb], method=self.settings["method"], options=options,
        )
        status = _STATUS.get(res.status, Status.ERROR)
        x = np.asarray(res.x, float) if res.x is not None else np.full(problem.n, np.nan)

        def marginals(block, m):
            values = getattr(block, "marginals", None) if block is not None else None
            return np.asarray(values, float) if values is not None and m else np.full(m, np.nan if m else 0.0)

        return Solution(
            x=x, y_eq=marginals(getattr(res, "eqlin", None), problem.m_eq),
            y_ub=marginals(getattr(res, "ineqlin", None), problem.m_ub),
            objective=float(res.fun) if status is Status.OPTIMAL else float("nan"), status=status,
            iterations=int(getattr(res, "nit", -1) or -1), native_status=str(res.status), message=str(res.message),
        )


ADAPTER = ScipyHighsAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
