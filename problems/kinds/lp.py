"""Kind ``lp``: a plain standard-form LP (``P`` is None), e.g. one logged by a user's planner
and read by the ``files`` family.

Verified like the ``qp`` kind, from the standard form alone (primal residuals, Farkas
certificate, objective gap to the reference); the reference is HiGHS (dual simplex).
"""

from __future__ import annotations

from ._hold import LP_REFERENCE
from .qp import QpKind


class LpKind(QpKind):
    """Standard-form LPs (see module docstring)."""

    name = "lp"
    description = "standard-form LP: min c@x over A_eq x = b_eq, A_ub x <= b_ub, x >= lb"
    problem_class = "lp"
    reference_solver = LP_REFERENCE

    def aggregations(self) -> dict[str, tuple[str, str]]:
        return {"max_rel_gap": ("rel_gap", "max"), "max_primal_res": ("primal_residual", "max")}


KIND = LpKind()
