"""OSQP 1.x (ADMM), sparse CSC inputs, ``solve(raise_error=False)``.

The project's problem is passed as ``l <= [A_eq; A_ub; I] x <= u``. Each batch is set
up once with a dense sparsity pattern (explicit zeros kept), then every case only
``update``s the data, as a controller would between cycles, and starts cold (zero iterates,
the setup's step size ``rho``): a case's answer never depends on the case solved before it.

Dual signs: OSQP's ``y`` satisfies ``P x + q + A^T y = 0`` (positive on an active upper
bound), so the sensitivity of the optimum to a right-hand side is ``-y``: the adapter
returns ``y_eq = -y[eq rows]``, ``y_ub = -y[ub rows]``. For an infeasible problem it
returns ``-prim_inf_cert`` the same way: then ``A_eq^T y_eq + A_ub^T y_ub <= 0``,
``y_ub <= 0`` and ``b_eq@y_eq + b_ub@y_ub > 0``, a Farkas certificate the verifier checks.
"""

from __future__ import annotations

import numpy as np

from . import _forms
from .base import Adapter, Conformance, Option, module_api
from .errors import SolverNotAvailable
from .types import BatchSolution, Capabilities, Solution, StandardForm, Status

#: OSQP status name -> project Status; unknown names map to ERROR.
_STATUS = {
    "solved": Status.OPTIMAL,
    "solved inaccurate": Status.OPTIMAL,
    "primal infeasible": Status.INFEASIBLE,
    "primal infeasible inaccurate": Status.INFEASIBLE,
    "dual infeasible": Status.UNBOUNDED,
    "dual infeasible inaccurate": Status.UNBOUNDED,
    "maximum iterations reached": Status.MAX_ITER,
    "run time limit reached": Status.TIME_LIMIT,
    "problem non convex": Status.NUMERICAL_ERROR,
}


class OsqpAdapter(Adapter):
    """OSQP (operator splitting, float64, CPU), one ``update`` + ``solve`` per case."""

    NAME = "osqp"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 0.005},
        known={
            ("*", "lp_badly_scaled"):
                "ADMM at its default eps 1e-3 declares the LP with rows scaled 1e-6 / 1e3 dual "
                "infeasible",
        },
    )
    CAPABILITIES = Capabilities(lp=True, qp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    INSTALL_HINT = "pip install 'osqp>=1'"
    OPTIONS = {
        "eps_abs": Option(float, None, "absolute tolerance (OSQP default 1e-3)", gt=0),
        "eps_rel": Option(float, None, "relative tolerance (OSQP default 1e-3)", gt=0),
        "max_iter": Option(int, None, "ADMM iteration limit", ge=1),
        "polishing": Option(bool, None, "polish the ADMM solution (OSQP default off)"),
        "time_limit": Option(float, None, "seconds per solve (0 = none)", ge=0),
    }
    SETTINGS = {
        "default": {},
        "high_accuracy": {"eps_abs": 1e-7, "eps_rel": 1e-7, "polishing": True, "max_iter": 100000},
        "low_accuracy": {"eps_abs": 1e-2, "eps_rel": 1e-2},
    }

    REQUIRES = ("osqp",)

    @classmethod
    def check_available(cls) -> None:
        super().check_available()
        import osqp

        if int(osqp.__version__.split(".")[0]) < 1:
            raise SolverNotAvailable(f"osqp {osqp.__version__} is older than 1.0; {cls.INSTALL_HINT}")

    def _constraints(self, problem: StandardForm):
        A = np.vstack([problem.A_eq, problem.A_ub, np.eye(problem.n)])
        lower = np.concatenate([problem.b_eq, np.full(problem.m_ub, -np.inf), problem.lb])
        upper = np.concatenate([problem.b_eq, problem.b_ub, np.full(problem.n, np.inf)])
        return A, lower, upper

    def prepare(self, problem: StandardForm):
        """Dense-pattern CSC data of every case (untimed); the solver is set up in ``run``."""
        from scipy import sparse

        cases = []
        for i in range(problem.batch or 0):
            case = problem.case(i)
            A, lower, upper = self._constraints(case)
            P = np.triu(_forms.objective_matrix(case))
            P_csc = sparse.csc_matrix(np.ones_like(P) * np.triu(np.ones(P.shape)))
            P_csc.data = P.T[np.triu(np.ones(P.shape)).T.astype(bool)]
            A_csc = sparse.csc_matrix(np.ones_like(A))
            A_csc.data = A.T.ravel().copy()
            cases.append((case, P_csc, A_csc, lower, upper))
        return cases

    def run(self, prepared):
        import osqp

        solutions = []
        solver = None
        settings = self.native_options()
        for case, P, A, lower, upper in prepared:
            if solver is None:
                solver = osqp.OSQP()
                solver.setup(P, case.c, A, lower, upper, verbose=False, **settings)
                rho = solver.settings.rho
            else:  # a cold start: the start and the step size of a fresh setup, whatever the last case left
                solver.update(q=case.c, l=lower, u=upper, Px=P.data, Ax=A.data)
                solver.update_settings(rho=rho)
                solver.warm_start(x=np.zeros(len(case.c)), y=np.zeros(len(lower)))
            res = solver.solve(raise_error=False)
            solutions.append((case, _copy(res)))  # the next solve reuses OSQP's buffers
        return solutions

    def collect(self, raw, prepared) -> BatchSolution:
        """Untimed: the ``Solution`` of each case from its copied OSQP results."""
        return BatchSolution.stack([self._solution(case, res) for case, res in raw])

    def _solution(self, case: StandardForm, res) -> Solution:
        native = str(res.info.status)
        status = _STATUS.get(native, Status.ERROR)
        m_eq, m_ub = case.m_eq, case.m_ub
        if status is Status.INFEASIBLE and res.prim_inf_cert is not None:
            y = -np.asarray(res.prim_inf_cert, float)
            x = np.full(case.n, np.nan)
        else:
            y = -np.asarray(res.y, float) if res.y is not None else np.full(m_eq + m_ub + case.n, np.nan)
            x = np.asarray(res.x, float) if res.x is not None else np.full(case.n, np.nan)
        return Solution(
            x=x, y_eq=y[:m_eq], y_ub=y[m_eq:m_eq + m_ub],
            objective=float(res.info.obj_val) if status is Status.OPTIMAL else float("nan"), status=status,
            iterations=int(res.info.iter), native_status=native, message=f"status_val={res.info.status_val}",
        )


class _Results:
    """What ``_solution`` reads of one OSQP result, copied out of OSQP's buffers."""

    __slots__ = ("x", "y", "prim_inf_cert", "info")

    def __init__(self, x, y, prim_inf_cert, info) -> None:
        self.x, self.y, self.prim_inf_cert, self.info = x, y, prim_inf_cert, info


class _Info:
    __slots__ = ("status", "status_val", "obj_val", "iter")

    def __init__(self, info) -> None:
        self.status, self.status_val, self.obj_val, self.iter = info.status, info.status_val, info.obj_val, info.iter


def _copy(res) -> _Results:
    """The fields of an OSQP result that ``_solution`` reads, as copies."""
    copy = lambda a: None if a is None else np.array(a)  # noqa: E731
    return _Results(copy(res.x), copy(res.y), copy(getattr(res, "prim_inf_cert", None)), _Info(res.info))


ADAPTER = OsqpAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
