"""Solver adapters behind one standard-form interface.

``solve(c, A_eq, b_eq, A_ub, b_ub, *, P=None)`` minimises ``c@x + 0.5 x@P@x``
subject to ``A_eq@x == b_eq``, ``A_ub@x <= b_ub``, ``x >= 0``. See ``solvers.types``
for shapes and dual conventions and ``solvers.registry`` for how adapters are found.
"""

from .base import Adapter, Conformance, Option, module_api
from .errors import BenchError, ProblemError, SolverError, SolverNotAvailable
from .registry import adapter_class, adapters, available, refresh, register
from .specs import SolverSpec, from_spec, get, parse_spec
from .types import (
    STATUS_TEXT, BatchSolution, Capabilities, CodedText, ProblemTraits, Solution, StandardForm, Status, check_standard_form,
)

__all__ = [
    "Adapter", "Conformance", "Option", "module_api",
    "BenchError", "ProblemError", "SolverError", "SolverNotAvailable",
    "SolverSpec", "adapter_class", "adapters", "available", "from_spec", "get", "parse_spec", "refresh", "register",
    "STATUS_TEXT", "BatchSolution", "Capabilities", "CodedText", "ProblemTraits", "Solution", "StandardForm", "Status",
    "check_standard_form",
]
