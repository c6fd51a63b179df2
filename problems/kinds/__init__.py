"""Problem kinds: what a batch of problems is, and what a right answer to it is.

Built-in kinds are the modules of this package (``lp1``, ``exit``: hold tests; ``qp``,
``socp``, ``lp``: standard-form problems); a module defining ``KIND`` is registered when
the registry is first read, and a plug-in registers its own with ``register_kind``. See
``base.Kind`` for what a kind owns.
"""

from .base import Kind, get_kind, kinds, register_kind
from .checks import DEFAULT_TOLERANCES, OUTCOMES, Tolerances, certificate_passes, farkas_check, finite_rows

__all__ = ["DEFAULT_TOLERANCES", "OUTCOMES", "Kind", "Tolerances", "certificate_passes", "farkas_check",
           "finite_rows", "get_kind", "kinds", "register_kind"]
