"""What the two hold-test kinds (``lp1``, ``exit``) share: their payload, how a batch of
them is built from ``HoldScene`` items, the witness check and the HiGHS reference.

Payload (B = LPs in the batch): ``W`` (B, d, k) the wrench generators, ``need`` (B, d) the
wrench the contacts must supply, ``limit_B`` (B, L, k) / ``limit_fmax`` (B, L) the force
limits ``B lam <= fmax``, ``direction`` (B, d) the exit direction (zeros for LP-1) and
``cap`` (B,) the exit cap T. Units: m*g for forces, m*g*l for torques.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from ..batch import ProblemBatch, frozen_batch
from ..hold import EXIT_CAP, HoldScene, SceneBatch
from .base import Kind
from .checks import Tolerances, finite_rows, row_max, row_min

#: the hold kinds' float64 reference: HiGHS (dual simplex), never the registry's ``highs``.
LP_REFERENCE = ("solvers.highs_:HighsAdapter", "highspy", "default")


class HoldKind(Kind):
    """A hold-test LP per scene (or per scene and direction); see module docstring."""

    problem_class = "lp"
    payload = ("W", "need", "limit_B", "limit_fmax", "direction", "cap")
    reference_solver = LP_REFERENCE

    def structure(self, axes: tuple[str, ...]) -> str:
        """``hold-d<d>-<kind>``: d wrench axes (3 planar, 6 spatial)."""
        return f"hold-d{len(axes)}-{self.name}"

    def expand(self, scenes: SceneBatch, meta: pd.DataFrame, axes: tuple[str, ...], cap: float):
        """``(order, directions, rows)``: the scene index of each LP (int array), its exit
        direction (B, d; zeros for LP-1) and its meta rows."""
        raise NotImplementedError

    def lp_arrays(self, scenes: SceneBatch, directions: np.ndarray, cap: float) -> tuple[np.ndarray, ...]:
        """``(c, A_eq, b_eq, A_ub, b_ub)`` of the LPs of ``scenes`` (one per scene, already expanded)."""
        raise NotImplementedError

    def build(self, family: str, scenes: "SceneBatch | list[HoldScene]", meta: pd.DataFrame,
              params: dict[str, Any] | None = None, *, axes: tuple[str, ...] | None = None,
              cap: float = EXIT_CAP) -> ProblemBatch:
        """The batch of this kind from same-shape scenes (a ``SceneBatch``, or a list of
        ``HoldScene``) and their meta rows; ``axes`` names the wrench axes (for exit direction
        names), ``cap`` is the exit cap T. Array operations only, whatever the batch size."""
        scenes = SceneBatch.of(scenes)
        cap = float((params or {}).get("cap", cap))
        if len(meta) != len(scenes):
            raise ProblemError(f"meta: expected {len(scenes)} rows (one per scene), got {len(meta)}")
        axes = axes or tuple(f"e{i}" for i in range(scenes.d))
        order, dirs, rows = self.expand(scenes, meta, axes, cap)
        lps = scenes.take(order)
        c, A_eq, b_eq, A_ub, b_ub = self.lp_arrays(lps, dirs, cap)
        payload = {"W": lps.W, "need": lps.need, "limit_B": lps.limit_B, "limit_fmax": lps.limit_fmax,
                   "direction": dirs, "cap": np.full(len(order), float(cap))}
        # the arrays made here own their memory: frozen, they are validated without a copy
        return frozen_batch(ProblemBatch(family, self.name, c, A_eq, b_eq, A_ub, b_ub, rows.reset_index(drop=True),
                                         dict(params or {}), payload=payload), owners=False)


def witness_check(batch: ProblemBatch, lam: np.ndarray, t: np.ndarray | None, tol: Tolerances) -> pd.DataFrame:
    """``witness_columns`` as a DataFrame (one row per case)."""
    return pd.DataFrame(witness_columns(batch, lam, t, tol))


def witness_columns(batch: ProblemBatch, lam: np.ndarray, t: np.ndarray | None,
                    tol: Tolerances) -> dict[str, np.ndarray]:
    """Residual, most negative weight and limit excess of ``W lam = need + t u``.

    ``lam`` (B, k) weights; ``t`` (B,) exit distances or None for LP-1.
    Returns columns (name -> (B,) array; a verifier joins them into its one frame)
    ``residual``, ``min_weight``, ``limit_excess``, ``witness_ok``.
    """
    target = batch.need if t is None else batch.need + t[:, None] * batch.direction
    with np.errstate(invalid="ignore", over="ignore"):
        residual = row_max(np.abs(np.einsum("bdk,bk->bd", batch.W, lam) - target))
        min_weight = row_min(lam)
        if batch.limit_B.shape[1]:
            excess = row_max(np.einsum("blk,bk->bl", batch.limit_B, lam) - batch.limit_fmax)
        else:
            excess = np.zeros(len(lam))
    ok = (residual <= tol.residual) & (min_weight >= -tol.negative) & (excess <= tol.residual)
    return {"residual": residual, "min_weight": min_weight, "limit_excess": excess, "witness_ok": ok & finite_rows(lam)}


#: the witness check's columns (both hold kinds).
WITNESS_COLUMNS = {"residual": "float64", "min_weight": "float64", "limit_excess": "float64", "witness_ok": "bool"}


def hold_batch(family: str, scenes: list, meta: pd.DataFrame, kind: str = "lp1",
               axes: tuple[str, ...] | None = None, cap: float | None = None,
               params: dict[str, Any] | None = None) -> ProblemBatch:
    """A hold-test batch (kind ``lp1`` or ``exit``) from same-shape ``HoldScene`` items and
    their meta rows: ``problems.kinds.get_kind(kind).build`` (see ``problems.kinds._hold``)."""
    from .base import get_kind

    spec = get_kind(kind)
    if not isinstance(spec, HoldKind):
        raise ProblemError(f"kind: expected a hold-test kind (lp1, exit), got {kind!r}")
    options = {} if cap is None else {"cap": cap}
    return spec.build(family, scenes, meta, params, axes=axes, **options)
