"""Kind ``socp``: a QP with second-order (friction) cones ``|(x_t1, x_t2)| <= mu x_n``.

Everything but the problem class is the ``qp`` kind's: the primal check includes the cone
residual, a certificate's cone multipliers are rebuilt from ``A^T y`` (``farkas_check``),
and the reference is Clarabel at 1e-10.
"""

from __future__ import annotations

from .qp import QpKind


class SocpKind(QpKind):
    """Friction-cone SOCPs (see module docstring)."""

    name = "socp"
    description = "QP with circular friction cones (second-order cone program)"
    problem_class = "socp"


KIND = SocpKind()
