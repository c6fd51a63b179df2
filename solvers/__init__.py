"""Solver adapters behind one standard-form interface.

``solve(c, A_eq, b_eq, A_ub, b_ub, *, P=None)`` minimises ``c@x + 0.5 x@P@x``
subject to ``A_eq@x == b_eq``, ``A_ub@x <= b_ub``, ``x >= 0``. See ``solvers.types``
for shapes and dual conventions and ``solvers.registry`` for how adapters are found.
"""

from .base import Adapter, Option, module_api
from .errors import BenchError, ProblemError, SolverError, SolverNotAvailable
from .registry import adapters, available, from_spec, get, parse_spec, refresh, register
from .types import BatchSolution, Capabilities, Solution, StandardForm, Status, check_standard_form

__all__ = [
    "Adapter", "Option", "module_api",
    "BenchError", "ProblemError", "SolverError", "SolverNotAvailable",
    "adapters", "available", "from_spec", "get", "parse_spec", "refresh", "register",
    "BatchSolution", "Capabilities", "Solution", "StandardForm", "Status", "check_standard_form",
]
