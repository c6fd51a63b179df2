"""DAQP (dual active-set QP solver, as embedded in MPC controllers).

The project's problem is passed as ``blower <= [x; A_eq x; A_ub x] <= bupper`` with the
first ``n`` entries simple bounds ``0 <= x`` and ``sense = 5`` on the equality rows.
DAQP's multipliers ``lam`` satisfy ``H x + f + A^T lam = 0`` (positive on an active upper
bound), so sensitivities are ``-lam``: ``y_eq = -lam[eq]``, ``y_ub = -lam[ub]``.

LPs (``P = 0``) need DAQP's proximal-point mode, which its documentation prescribes for
singular Hessians: for an LP the adapter passes ``eps_prox = -1`` (automatic) unless the
``eps_prox`` setting says otherwise. QPs get DAQP's defaults.
"""

from __future__ import annotations

import numpy as np

from . import _forms
from .base import Adapter, Conformance, Option, module_api
from .types import Capabilities, Solution, StandardForm, Status

#: DAQP exitflag -> project Status; unknown flags map to ERROR.
_STATUS = {1: Status.OPTIMAL, 2: Status.OPTIMAL, -1: Status.INFEASIBLE, -2: Status.NUMERICAL_ERROR,
           -3: Status.UNBOUNDED, -4: Status.MAX_ITER, -5: Status.NUMERICAL_ERROR, -6: Status.NUMERICAL_ERROR}
_NAMES = {1: "optimal", 2: "soft optimal", -1: "infeasible", -2: "cycling", -3: "unbounded",
          -4: "iteration limit", -5: "nonconvex", -6: "overdetermined initial active set"}


class DaqpAdapter(Adapter):
    """DAQP, one call per case."""

    NAME = "daqp"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float64": 1e-06},
        known={
            ("*", "lp_badly_scaled"):
                "DAQP's proximal-point LP mode reports the LP with rows scaled 1e-6 / 1e3 "
                "unbounded",
            ("*", "lp_free_variable"):
                "DAQP's LP mode (eps_prox -1) reports an LP with a free variable unbounded; a "
                "fixed eps_prox such as 1e-6 solves it",
        },
    )
    CAPABILITIES = Capabilities(lp=True, qp=True, batched=False, devices=("cpu",), dtypes=("float64",))
    REQUIRES = ("daqp",)
    INSTALL_HINT = "pip install daqp"
    OPTIONS = {
        "primal_tol": Option(float, None, "primal feasibility tolerance (DAQP default 1e-6)", gt=0),
        "dual_tol": Option(float, None, "dual feasibility tolerance (DAQP default 1e-12)", gt=0),
        "iter_limit": Option(int, None, "iteration limit", ge=1),
        "eps_prox": Option(float, None, "proximal regularisation (-1 automatic; LPs default to -1)", ge=0, special=(-1.0,)),
    }
    SETTINGS = {
        "default": {},
        "high_accuracy": {"primal_tol": 1e-9},
        "low_accuracy": {"primal_tol": 1e-4},
    }

    def case_args(self, problem: StandardForm):
        n, m_eq, m_ub = problem.n, problem.m_eq, problem.m_ub
        A = np.vstack([problem.A_eq, problem.A_ub])
        upper = np.concatenate([np.full(n, np.inf), problem.b_eq, problem.b_ub])
        lower = np.concatenate([problem.lb, problem.b_eq, np.full(m_ub, -np.inf)])
        sense = np.concatenate([np.zeros(n), np.full(m_eq, 5), np.zeros(m_ub)]).astype(np.int32)
        settings = self.native_options()
        if problem.P is None:
            settings.setdefault("eps_prox", -1.0)
        # writeable copies: DAQP's Cython signature takes writeable buffers, and the problem's
        # arrays are read-only (``check_standard_form``)
        return (np.array(_forms.objective_matrix(problem)), np.array(problem.c), A, upper, lower, sense), settings

    def call_case(self, args):
        import daqp

        arrays, settings = args
        return daqp.solve(*arrays, **settings)

    def case_solution(self, problem: StandardForm, out) -> Solution:
        x, fval, flag, info = out
        n, m_eq, m_ub = problem.n, problem.m_eq, problem.m_ub
        status = _STATUS.get(int(flag), Status.ERROR)
        lam = -np.asarray(info["lam"], float)
        ok = status is Status.OPTIMAL
        if status is Status.NUMERICAL_ERROR and m_eq:
            certificate = _inconsistent_equalities(problem)
            if certificate is not None:  # DAQP stops on a singular working set instead
                return Solution(x=np.full(n, np.nan), y_eq=certificate, y_ub=np.zeros(m_ub), objective=float("nan"),
                                status=Status.INFEASIBLE, iterations=int(info.get("iterations", -1)),
                                native_status=f"{int(flag)} ({_NAMES.get(int(flag), '?')})",
                                message="equality rows inconsistent (least-squares residual is the certificate)")
        return Solution(
            x=np.asarray(x, float) if ok else np.full(n, np.nan),
            y_eq=lam[n:n + m_eq] if ok else np.full(m_eq, np.nan),
            y_ub=lam[n + m_eq:] if ok else np.full(m_ub, np.nan),
            objective=float(fval) if ok else float("nan"), status=status,
            iterations=int(info.get("iterations", -1)), native_status=f"{int(flag)} ({_NAMES.get(int(flag), '?')})",
        )


def _inconsistent_equalities(problem: StandardForm, rtol: float = 1e-9) -> np.ndarray | None:
    """The least-squares residual ``r = b_eq - A_eq x_ls`` when it is not ~0, else None.

    ``A_eq^T r = 0`` and ``b_eq @ r = |r|^2 > 0``, so ``(y_eq, y_ub) = (r, 0)`` is a Farkas
    certificate in the project's convention, which the verifier checks like any other."""
    A, b = problem.A_eq, problem.b_eq
    x = np.linalg.lstsq(A, b, rcond=None)[0]
    r = b - A @ x
    return r if np.max(np.abs(r)) > rtol * (1 + np.max(np.abs(b))) else None


ADAPTER = DaqpAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
