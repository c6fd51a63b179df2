"""HiGHS through highspy's direct API: one reused ``Highs`` object per adapter instance.

Dual signs: HiGHS' ``row_dual`` is already the project's convention (sensitivity of
the optimal objective to the row bound, so ``y_ub <= 0`` for a binding ``<=`` row); the
conformance suite proves it on LPs with known duals. On an infeasible LP the adapter
returns HiGHS' dual ray as ``(y_eq, y_ub)``: in the same convention it is a Farkas
certificate (``A^T y <= 0``, ``y_ub <= 0``, ``b @ y > 0``), which the verifier checks.

Options are set through ``setOptionValue``; one HiGHS rejects (unknown name, value out of
range) raises ``ProblemError`` naming it when the adapter is built, never a silent default.
"""

from __future__ import annotations

import numpy as np

from .base import Adapter, Conformance, Option, module_api
from .errors import ProblemError
from .types import Capabilities, Solution, StandardForm, Status

INF = float("inf")

#: HiGHS model status name -> project Status; anything else maps to ERROR.
_STATUS = {
    "kOptimal": Status.OPTIMAL,
    "kInfeasible": Status.INFEASIBLE,
    "kUnbounded": Status.UNBOUNDED,
    "kUnboundedOrInfeasible": Status.INFEASIBLE,
    "kIterationLimit": Status.MAX_ITER,
    "kTimeLimit": Status.TIME_LIMIT,
    "kSolveError": Status.NUMERICAL_ERROR,
    "kPostsolveError": Status.NUMERICAL_ERROR,
}


class HighsAdapter(Adapter):
    """HiGHS (simplex / IPM, float64, CPU), looping over the cases of a batch."""

    NAME = "highs"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 1e-07},
    )
    CAPABILITIES = Capabilities(lp=True, qp=False, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("highspy",)
    INSTALL_HINT = "pip install highspy"
    OPTIONS = {
        "presolve": Option(str, None, "HiGHS presolve", choices=("off", "choose", "on")),
        "threads": Option(int, None, "HiGHS threads (0 = automatic)", ge=0),
        "solver": Option(str, None, "HiGHS LP method", choices=("choose", "simplex", "ipm", "pdlp")),
        "time_limit": Option(float, None, "seconds per solve", gt=0),
        "primal_feasibility_tolerance": Option(float, None, "HiGHS primal feasibility tolerance", gt=0),
        "dual_feasibility_tolerance": Option(float, None, "HiGHS dual feasibility tolerance", gt=0),
    }
    SETTINGS = {
        "default": {},
        "fast": {"presolve": "off", "threads": 1},
        "high_accuracy": {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    }

    def __init__(self, profile: str = "default", **overrides) -> None:
        super().__init__(profile, **overrides)
        self._highs = None
        self._solver()  # options HiGHS rejects fail here, before any run

    @staticmethod
    def _set(h, key, value) -> bool:
        """Set one HiGHS option; False when HiGHS rejects it."""
        import highspy

        return h.setOptionValue(key, value) == highspy.HighsStatus.kOk

    def _solver(self):
        """The one ``Highs`` object of this adapter, created on first use."""
        if self._highs is None:
            import highspy

            h = highspy.Highs()
            self._set(h, "output_flag", False)
            rejected = [f"{key}={value!r}" for key, value in self.native_options().items()
                        if not self._set(h, key, value)]
            if rejected:
                raise ProblemError(f"settings: HiGHS rejects {', '.join(rejected)} (see HiGHS' option list for "
                                   "each option's type and range)")
            self._highs = h
        return self._highs

    def prepare(self, problem: StandardForm):
        """Column-wise sparse matrices and row bounds per case (untimed), and the solver
        object with its options set (reused by every case: ``passModel`` replaces the model)."""
        import highspy

        prepared = super().prepare(problem)
        self._solver()
        if self.settings.get("threads") is not None:
            # HiGHS' thread scheduler is global to the process and fixed by its first run: a
            # Highs asking for another thread count after any other has run stops with
            # "Not Set" (ERROR) on every case. Reset it (untimed) so this adapter's count holds.
            highspy.Highs.resetGlobalScheduler(True)
        return prepared

    def case_args(self, case: StandardForm):
        import highspy

        A = np.vstack([case.A_eq, case.A_ub])
        mask = A != 0.0
        starts = np.concatenate([[0], np.cumsum(mask.sum(axis=0))]).astype(np.int32)
        rows, cols = np.nonzero(mask.T)  # column-major order
        index = cols.astype(np.int32)
        value = A.T[rows, cols]
        row_lower = np.concatenate([case.b_eq, np.full(case.m_ub, -INF)])
        row_upper = np.concatenate([case.b_eq, case.b_ub])
        return (case.n, A.shape[0], int(value.size), int(highspy.MatrixFormat.kColwise), 1, 0.0,
                case.c, np.where(np.isfinite(case.lb), case.lb, -INF), np.full(case.n, INF),
                row_lower, row_upper, starts[:-1].copy(), index, value, np.zeros(case.n, dtype=np.int32))

    def call_case(self, model):
        h = self._solver()
        h.passModel(*model)
        h.run()
        native = h.getModelStatus()
        info = h.getInfo()
        sol = h.getSolution()
        status = _STATUS.get(getattr(native, "name", str(native)))
        # rays are read now: the next case replaces the model
        ray = h.getDualRay() if status is Status.INFEASIBLE else h.getPrimalRay() if status is Status.UNBOUNDED else None
        return (native, float(info.objective_function_value), int(max(info.simplex_iteration_count, 0)
                + max(info.ipm_iteration_count, 0)), sol.value_valid, sol.dual_valid,
                np.array(sol.col_value), np.array(sol.row_dual), ray)

    def case_solution(self, case: StandardForm, out) -> Solution:
        native, objective, iterations, value_valid, dual_valid, col_value, row_dual_raw, ray = out
        native_name = getattr(native, "name", str(native))
        status = _STATUS.get(native_name, Status.ERROR)
        n, m_eq = case.n, case.m_eq
        x = np.asarray(col_value, dtype=float) if value_valid else np.full(n, np.nan)
        row_dual = np.full(m_eq + case.m_ub, np.nan)
        primal_ray = np.full(n, np.nan)
        if status is Status.UNBOUNDED and ray is not None:
            _, has_ray, values = ray
            if has_ray and len(values) == n:
                primal_ray = np.asarray(values, dtype=float)
        if status is Status.INFEASIBLE:
            if ray is not None:
                _, has_ray, values = ray
                if has_ray and len(values) == len(row_dual):
                    row_dual = np.asarray(values, dtype=float)
            x = np.full(n, np.nan)  # no primal answer to an infeasible LP
        elif dual_valid:
            row_dual = np.asarray(row_dual_raw, dtype=float)
        return Solution(
            x=x, y_eq=row_dual[:m_eq], y_ub=row_dual[m_eq:],
            objective=objective if status is Status.OPTIMAL else float("nan"), status=status,
            iterations=iterations, native_status=native_name, message=self._solver().modelStatusToString(native),
            extras={"ray": primal_ray},
        )


ADAPTER = HighsAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
