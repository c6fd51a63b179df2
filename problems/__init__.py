"""Problem families (generators), problem kinds, the hold-test LP builders and contact geometry.

``generate(family, n, seed, **params) -> ProblemBatch`` is a pure function: the same
inputs give the same bytes. ``families()`` lists the registered families (plug-ins, the
built-in ones included: see ``problems.family``); ``problems.kinds`` holds the kinds.
"""

from __future__ import annotations

from .batch import ProblemBatch
from .family import (MAX_SEED, Family, FamilySpec, Param, broken_families, families, generate, refresh_families,
                     register_family)
from .hold import EXIT_CAP, LP, HoldScene, Limits, exit_lp, lp1, margin_directions
from .kinds import Kind, get_kind, register_kind
from .kinds._hold import hold_batch

__all__ = [
    "EXIT_CAP", "LP", "MAX_SEED", "Family", "FamilySpec", "HoldScene", "Kind", "Limits", "Param", "ProblemBatch",
    "broken_families", "exit_lp", "families", "generate", "get_kind", "hold_batch", "lp1",
    "margin_directions", "refresh_families", "register_family", "register_kind",
]
