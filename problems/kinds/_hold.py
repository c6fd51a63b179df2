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
from solvers.highs_ import HighsAdapter

from ..batch import ProblemBatch
from ..hold import EXIT_CAP, HoldScene
from .base import Kind
from .checks import Tolerances, finite_rows

#: the hold kinds' float64 reference: HiGHS (dual simplex), never the registry's ``highs``.
LP_REFERENCE = (HighsAdapter, "highspy", "default")


class HoldKind(Kind):
    """A hold-test LP per scene (or per scene and direction); see module docstring."""

    problem_class = "lp"
    payload = ("W", "need", "limit_B", "limit_fmax", "direction", "cap")
    reference_solver = LP_REFERENCE

    def structure(self, axes: tuple[str, ...]) -> str:
        """``hold-d<d>-<kind>``: d wrench axes (3 planar, 6 spatial)."""
        return f"hold-d{len(axes)}-{self.name}"

    def expand(self, scenes: list[HoldScene], meta: pd.DataFrame, axes: tuple[str, ...], cap: float):
        """``(lps, order, directions, rows)``: the LPs, the scene index of each, its exit
        direction (B, d) and its meta row."""
        raise NotImplementedError

    def build(self, family: str, scenes: list[HoldScene], meta: pd.DataFrame, params: dict[str, Any] | None = None,
              *, axes: tuple[str, ...] | None = None, cap: float = EXIT_CAP) -> ProblemBatch:
        """The batch of this kind from same-shape scenes and their meta rows; ``axes`` names
        the wrench axes (for exit direction names), ``cap`` is the exit cap T."""
        if not scenes:
            raise ProblemError("scenes: expected at least one scene")
        shapes = {(s.W.shape, s.limit_rows[0].shape) for s in scenes}
        if len(shapes) != 1:
            raise ProblemError(f"scenes: expected one shape of W and limits across the batch, got {sorted(shapes)}")
        if len(meta) != len(scenes):
            raise ProblemError(f"meta: expected {len(scenes)} rows (one per scene), got {len(meta)}")
        axes = axes or tuple(f"e{i}" for i in range(scenes[0].d))
        lps, order, dirs, rows = self.expand(scenes, meta, axes, cap)
        stack = lambda f: np.stack([f(lp) for lp in lps])  # noqa: E731
        payload = {
            "W": np.stack([scenes[i].W for i in order]),
            "need": np.stack([scenes[i].need for i in order]),
            "limit_B": np.stack([scenes[i].limit_rows[0] for i in order]),
            "limit_fmax": np.stack([scenes[i].limit_rows[1] for i in order]),
            "direction": dirs, "cap": np.full(len(order), float(cap)),
        }
        return ProblemBatch(family, self.name, stack(lambda lp: lp.c), stack(lambda lp: lp.A_eq),
                            stack(lambda lp: lp.b_eq), stack(lambda lp: lp.A_ub), stack(lambda lp: lp.b_ub),
                            rows.reset_index(drop=True), dict(params or {}), payload=payload)


def witness_check(batch: ProblemBatch, lam: np.ndarray, t: np.ndarray | None, tol: Tolerances) -> pd.DataFrame:
    """Residual, most negative weight and limit excess of ``W lam = need + t u``.

    ``lam`` (B, k) weights; ``t`` (B,) exit distances or None for LP-1.
    Returns columns ``residual``, ``min_weight``, ``limit_excess``, ``witness_ok``.
    """
    target = batch.need if t is None else batch.need + t[:, None] * batch.direction
    with np.errstate(invalid="ignore", over="ignore"):
        residual = np.max(np.abs(np.einsum("bdk,bk->bd", batch.W, lam) - target), axis=1)
        min_weight = np.min(lam, axis=1)
        if batch.limit_B.shape[1]:
            excess = np.max(np.einsum("blk,bk->bl", batch.limit_B, lam) - batch.limit_fmax, axis=1)
        else:
            excess = np.zeros(len(lam))
    ok = (residual <= tol.residual) & (min_weight >= -tol.negative) & (excess <= tol.residual)
    return pd.DataFrame({"residual": residual, "min_weight": min_weight, "limit_excess": excess,
                         "witness_ok": ok & finite_rows(lam)})


#: the witness check's columns (both hold kinds).
WITNESS_COLUMNS = {"residual": "float64", "min_weight": "float64", "limit_excess": "float64", "witness_ok": "bool"}
