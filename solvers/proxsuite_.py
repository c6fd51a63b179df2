"""ProxQP (proxsuite's dense backend), the QP solver of many robotics controllers.

The project's problem maps to ``QP(n, m_eq, m_ub, box_constraints=True)``:
``H = P`` (zeros for an LP), equalities ``A_eq x = b_eq``, inequalities
``-inf <= A_ub x <= b_ub`` and the box ``0 <= x``. ProxQP's multipliers satisfy
``H x + g + A^T y + C^T z = 0``, so sensitivities are ``y_eq = -y``, ``y_ub = -z``.

ProxQP with its defaults does not check the duality gap, and on LPs (``H = 0``) it can
report ``PROXQP_SOLVED`` at a feasible but non-optimal point; ``high_accuracy`` turns
the gap check on. The conformance suite records this rather than hiding it.
"""

from __future__ import annotations

import numpy as np

from . import _forms
from .base import Adapter, Conformance, Option, module_api
from .types import Capabilities, Solution, StandardForm, Status

BIG = 1e20  # ProxQP's infinity for bounds

#: QPSolverOutput name -> project Status; unknown names map to ERROR.
_STATUS = {
    "PROXQP_SOLVED": Status.OPTIMAL,
    "PROXQP_SOLVED_CLOSEST_PRIMAL_FEASIBLE": Status.INFEASIBLE,
    "PROXQP_PRIMAL_INFEASIBLE": Status.INFEASIBLE,
    "PROXQP_DUAL_INFEASIBLE": Status.UNBOUNDED,
    "PROXQP_MAX_ITER_REACHED": Status.MAX_ITER,
}


class ProxsuiteAdapter(Adapter):
    """proxsuite ProxQP, dense backend, one solver object per case."""

    NAME = "proxsuite"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 0.0001},
        known={
            **{("*", case): "ProxQP with its defaults (no duality-gap check) stops at a feasible, non-optimal LP "
                            "point and reports PROXQP_SOLVED (profile high_accuracy turns the check on)"
               for case in ("lp_eq_and_ub", "lp_negative_eq_rhs", "lp_negative_ub_rhs", "lp_degenerate_vertex",
                            "lp_no_eq_rows", "lp_one_row", "lp_no_rows")},
            **{("*", case): "ProxQP does not detect this unbounded LP (PROXQP_MAX_ITER_REACHED); without the "
                            "box on free variables it does (lp_free_eq_only_unbounded passes)"
               for case in ("lp_unbounded", "lp_unbounded_zero_column", "lp_no_rows_unbounded")},
            ("*", "lp_badly_scaled"):
                "ProxQP declares the LP with rows scaled 1e-6 / 1e3 primal infeasible",
        },
    )
    CAPABILITIES = Capabilities(lp=True, qp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("proxsuite",)
    INSTALL_HINT = "pip install proxsuite"
    OPTIONS = {
        "eps_abs": Option(float, None, "absolute tolerance (ProxQP default 1e-5)", gt=0),
        "eps_rel": Option(float, None, "relative tolerance (default 0)", ge=0),
        "max_iter": Option(int, None, "iteration limit", ge=1),
        "check_duality_gap": Option(bool, None, "also require a small duality gap (default off)"),
    }
    SETTINGS = {
        "default": {},
        "high_accuracy": {"eps_abs": 1e-9, "check_duality_gap": True},
        "low_accuracy": {"eps_abs": 1e-3},
    }

    def case_args(self, problem: StandardForm):
        n, m_eq, m_ub = problem.n, problem.m_eq, problem.m_ub
        box = bool(np.isfinite(problem.lb).any())  # declaring bounds on free variables costs ~25 % (measured)
        arrays = [_forms.objective_matrix(problem), problem.c,
                  problem.A_eq if m_eq else None, problem.b_eq if m_eq else None,
                  problem.A_ub if m_ub else None, np.full(m_ub, -BIG) if m_ub else None,
                  problem.b_ub if m_ub else None]
        if box:
            arrays += [np.where(np.isfinite(problem.lb), problem.lb, -BIG), np.full(n, BIG)]
        return (n, m_eq, m_ub, box), arrays, self.native_options()

    def call_case(self, args):
        import proxsuite

        shape, arrays, options = args
        qp = proxsuite.proxqp.dense.QP(*shape)
        qp.settings.verbose = False
        for key, value in options.items():
            setattr(qp.settings, key, value)
        qp.init(*arrays)
        qp.solve()
        res = qp.results
        return res.info.status, np.array(res.x), np.array(res.y), np.array(res.z), int(res.info.iter)

    def case_solution(self, problem: StandardForm, out) -> Solution:
        n, m_eq, m_ub = problem.n, problem.m_eq, problem.m_ub
        flag, x, y, z, iterations = out
        native = getattr(flag, "name", str(flag)).split(".")[-1]
        status = _STATUS.get(native, Status.ERROR)
        ok = status is Status.OPTIMAL
        duals = ok or status is Status.INFEASIBLE  # ProxQP's last iterate: the verifier decides if it proves anything
        return Solution(
            x=np.asarray(x, float) if ok else np.full(n, np.nan),
            y_eq=-np.asarray(y, float)[:m_eq] if duals else np.full(m_eq, np.nan),
            y_ub=-np.asarray(z, float)[:m_ub] if duals else np.full(m_ub, np.nan),
            objective=_forms.objective_value(problem, np.asarray(x, float)) if ok else float("nan"),
            status=status, iterations=iterations, native_status=native,
        )


ADAPTER = ProxsuiteAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
