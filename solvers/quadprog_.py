"""quadprog (Goldfarb-Idnani dual active set), for strictly convex QPs only.

quadprog minimises ``0.5 x@G@x - a@x  s.t.  C^T x >= b`` (first ``meq`` rows equalities),
with ``G`` positive definite: LPs and singular ``P`` are outside what it solves, so
``CAPABILITIES.lp`` is False and a singular ``P`` ends as ``NUMERICAL_ERROR`` with
quadprog's message. Rows passed: ``A_eq x = b_eq``, ``-A_ub x >= -b_ub``, ``x >= 0``.
Multipliers ``lam >= 0`` give sensitivities ``y_eq = lam[eq]`` and ``y_ub = -lam[ub]``.
"""

from __future__ import annotations

import numpy as np

from . import _forms
from .base import Adapter, Conformance, module_api
from .types import Capabilities, Solution, StandardForm, Status


class QuadprogAdapter(Adapter):
    """quadprog, one call per case (no settings: quadprog has none)."""

    NAME = "quadprog"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 1e-07},
    )
    CAPABILITIES = Capabilities(lp=False, qp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("quadprog",)
    INSTALL_HINT = "pip install quadprog"
    SETTINGS = {"default": {}}

    def case_args(self, problem: StandardForm):
        G_b, h_b = _forms.bound_rows(problem)
        C = np.vstack([problem.A_eq, -problem.A_ub, -G_b]).T
        b = np.concatenate([problem.b_eq, -problem.b_ub, -h_b])
        # a writeable copy of P: quadprog's Cython takes writeable buffers (the problem's are read-only)
        return np.array(problem.P, dtype=float, order="C"), -problem.c, C, b, problem.m_eq

    def call_case(self, args):
        import quadprog

        try:
            return quadprog.solve_qp(*args)
        except ValueError as exc:  # quadprog's way of saying infeasible (or worse)
            return str(exc)

    def case_solution(self, problem: StandardForm, out) -> Solution:
        m_eq, m_ub = problem.m_eq, problem.m_ub
        if isinstance(out, str):
            status = Status.INFEASIBLE if "constraints are inconsistent" in out else Status.NUMERICAL_ERROR
            x_nan, ye_nan, yu_nan = _forms.nan_solution_arrays(problem)
            return Solution(x=x_nan, y_eq=ye_nan, y_ub=yu_nan, objective=float("nan"), status=status,
                            native_status="ValueError", message=out)
        x, _f, _xu, iters, lam, _act = out
        lam = np.asarray(lam, float)
        return Solution(x=np.asarray(x, float), y_eq=lam[:m_eq], y_ub=-lam[m_eq:m_eq + m_ub],
                        objective=_forms.objective_value(problem, np.asarray(x, float)), status=Status.OPTIMAL,
                        iterations=int(iters[0]), native_status="solved")


ADAPTER = QuadprogAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
