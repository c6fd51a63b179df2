"""CVXPY with a parameterised (DPP) problem per shape: compiled once, then only values change.

The problem ``min c@x + 0.5 ||F x||^2  s.t.  A_eq x == b_eq, A_ub x <= b_ub, x >= lb`` and the
friction cones ``||x[t]|| <= mu x[n]`` is built once per shape (sizes, QP or not, pattern of
finite bounds, cone indices) with every array a ``cp.Parameter``; for a QP,
``F`` is a symmetric square root of ``P`` (``0.5 x@P@x = 0.5 ||F x||^2``), which keeps the
problem DPP. Each case sets the parameter values and calls ``solve``.

Dual signs: CVXPY's ``dual_value`` of ``A x == b`` and ``A x <= b`` is the Lagrange
multiplier of ``A x - b``, so the sensitivity of the optimum to ``b`` is ``-dual_value``:
``y_eq = -dual(eq)``, ``y_ub = -dual(ub)``.
"""

from __future__ import annotations

import numpy as np

from . import _forms
from .base import Adapter, Conformance, Option, module_api
from .errors import ProblemError
from .types import Capabilities, Solution, StandardForm, Status

#: CVXPY status -> project Status; unknown statuses map to ERROR.
_STATUS = {
    "optimal": Status.OPTIMAL,
    "optimal_inaccurate": Status.OPTIMAL,
    "infeasible": Status.INFEASIBLE,
    "infeasible_inaccurate": Status.INFEASIBLE,
    "unbounded": Status.UNBOUNDED,
    "unbounded_inaccurate": Status.UNBOUNDED,
    "user_limit": Status.MAX_ITER,
    "solver_error": Status.NUMERICAL_ERROR,
}


class CvxpyAdapter(Adapter):
    """CVXPY (DPP, compiled once per shape) with a configurable backend solver."""

    NAME = "cvxpy"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 1e-06},
    )
    #: why ``bench.studies.native_speed`` does not compare this adapter with a bare loop
    NATIVE_SPEED_NOTE = ("CVXPY is a modelling layer over Clarabel (measured against its bare loop): its "
                         "canonicalisation per problem is the cost this adapter is in the grid to show, so it "
                         "has no bare loop of its own")
    CAPABILITIES = Capabilities(lp=True, qp=True, socp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("cvxpy",)
    INSTALL_HINT = "pip install cvxpy clarabel"
    OPTIONS = {
        "backend": Option(str, "CLARABEL", "CVXPY solver name (CLARABEL, SCS, HIGHS, OSQP, ... as installed)"),
    }
    SETTINGS = {"default": {}}

    def __init__(self, profile: str = "default", **overrides) -> None:
        super().__init__(profile, **overrides)
        import cvxpy as cp

        self.settings["backend"] = self.settings["backend"].upper()
        if self.settings["backend"] not in cp.installed_solvers():
            raise ProblemError(f"setting 'backend': expected one of {cp.installed_solvers()}, "
                               f"got {self.settings['backend']!r}")
        self._problems: dict[tuple, tuple] = {}

    def _problem(self, n: int, m_eq: int, m_ub: int, qp: bool, bounded: tuple[int, ...] | None,
                 cones: tuple[tuple[int, int, int], ...]):
        """The cached DPP problem of this shape and its parameters; ``bounded`` None means
        every ``x >= 0`` (a ``nonneg`` variable), else the indices with a finite lower bound."""
        key = (n, m_eq, m_ub, qp, bounded, cones)
        if key not in self._problems:
            import cvxpy as cp

            x = cp.Variable(n, nonneg=bounded is None)
            params = {"c": cp.Parameter(n)}
            objective = params["c"] @ x
            if qp:
                params["F"] = cp.Parameter((n, n))
                objective = objective + 0.5 * cp.sum_squares(params["F"] @ x)
            constraints = []
            if m_eq:
                params["A_eq"], params["b_eq"] = cp.Parameter((m_eq, n)), cp.Parameter(m_eq)
                constraints.append(params["A_eq"] @ x == params["b_eq"])
            if m_ub:
                params["A_ub"], params["b_ub"] = cp.Parameter((m_ub, n)), cp.Parameter(m_ub)
                constraints.append(params["A_ub"] @ x <= params["b_ub"])
            if bounded:
                params["lb"] = cp.Parameter(len(bounded))
                constraints.append(x[list(bounded)] >= params["lb"])
            if cones:
                idx = np.array(cones)
                params["cone_mu"] = cp.Parameter(len(cones), nonneg=True)
                constraints.append(cp.SOC(cp.multiply(params["cone_mu"], x[idx[:, 0]]),
                                          cp.vstack([x[idx[:, 1]], x[idx[:, 2]]]), axis=0))
            problem = cp.Problem(cp.Minimize(objective), constraints)
            self._problems[key] = (problem, x, params, constraints)
        return self._problems[key]

    def solve_one(self, problem: StandardForm) -> Solution:
        import cvxpy as cp

        qp = problem.P is not None
        bounded = None if problem.default_bounds else tuple(int(j) for j in _forms.bounded(problem))
        cones = tuple(tuple(int(i) for i in row) for row in problem.cones)
        prob, x, params, constraints = self._problem(problem.n, problem.m_eq, problem.m_ub, qp, bounded, cones)
        params["c"].value = problem.c
        if "lb" in params:
            params["lb"].value = problem.lb[list(bounded)]
        if "cone_mu" in params:
            params["cone_mu"].value = problem.cone_mu
        if qp:
            w, V = np.linalg.eigh(0.5 * (problem.P + problem.P.T))
            params["F"].value = (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T
        for name in ("A_eq", "b_eq", "A_ub", "b_ub"):
            if name in params:
                params[name].value = getattr(problem, name)
        try:
            prob.solve(solver=self.settings["backend"])
            native = str(prob.status)
            message = ""
        except cp.error.SolverError as exc:
            native, message = "solver_error", str(exc)
        status = _STATUS.get(native, Status.ERROR)
        xs, y_eq, y_ub = _forms.nan_solution_arrays(problem)
        if x.value is not None and status is Status.OPTIMAL:
            xs = np.asarray(x.value, float)
        idx = 0
        if problem.m_eq:
            if constraints[idx].dual_value is not None:
                y_eq = -np.asarray(constraints[idx].dual_value, float)
            idx += 1
        if problem.m_ub and constraints[idx].dual_value is not None:
            y_ub = -np.asarray(constraints[idx].dual_value, float)
        stats = prob.solver_stats if status is not Status.ERROR and native != "solver_error" else None
        iterations = int(stats.num_iters) if stats is not None and stats.num_iters is not None else -1
        return Solution(x=xs, y_eq=y_eq, y_ub=y_ub,
                        objective=float(prob.value) if status is Status.OPTIMAL else float("nan"),
                        status=status, iterations=iterations, native_status=native, message=message)


ADAPTER = CvxpyAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
