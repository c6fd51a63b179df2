"""Solver-independent verification, in float64: the public entry points.

The rules live with each problem kind (``problems.kinds``): ``lp1`` (witness / Farkas
certificate of the hold test), ``exit`` (checked exits, margins), ``qp`` / ``socp`` / ``lp``
(standard-form primal check, cone-aware Farkas certificate, objective gap). No solver
status ever decides an outcome. ``verify`` and ``judge`` dispatch on the batch's kind; the
per-kind functions are re-exported here under their historical names.
"""

from __future__ import annotations

import pandas as pd

from problems import ProblemBatch, get_kind
from problems.kinds.checks import DEFAULT_TOLERANCES, OUTCOMES, Tolerances, certificate_passes, farkas_check
from problems.kinds.exit import VERDICTS as EXIT_VERDICTS
from problems.kinds.exit import exit_outcomes, verify_exit
from problems.kinds._hold import witness_check
from problems.kinds.lp1 import VERDICTS, certificate_check, lp1_outcomes, verify_lp1
from problems.kinds.qp import VERDICTS as QP_VERDICTS
from problems.kinds.qp import qp_objective, qp_outcomes, verify_qp
from solvers import BatchSolution


def verify(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-case verdicts of ``solution`` for ``batch``, by the rules of its kind."""
    return get_kind(batch.kind).verify(batch, solution, tol)


def judge(batch: ProblemBatch, solution: BatchSolution, ref: pd.DataFrame,
          tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Verdicts, checks and ``outcome`` per case against the reference rows ``ref``
    (``Kind.result_rows``)."""
    return get_kind(batch.kind).result_rows(batch, solution, ref, tol)


__all__ = [
    "DEFAULT_TOLERANCES", "EXIT_VERDICTS", "OUTCOMES", "QP_VERDICTS", "Tolerances", "VERDICTS",
    "certificate_check", "certificate_passes", "exit_outcomes", "farkas_check", "judge", "lp1_outcomes",
    "qp_objective", "qp_outcomes", "verify", "verify_exit", "verify_lp1", "verify_qp", "witness_check",
]
