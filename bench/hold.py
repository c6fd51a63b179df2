"""``check(scene)``: the one-call hold test for users, with witness, certificate and margin."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from problems import EXIT_CAP, HoldScene, hold_batch
from solvers import Adapter, ProblemError, from_spec

from .verify import DEFAULT_TOLERANCES, Tolerances, verify_exit, verify_lp1

AXES_BY_DIM = {3: ("f_x", "f_z", "tau_y"), 6: ("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z")}


@dataclass(frozen=True)
class HoldCheck:
    """Result of ``check``.

    verdict : 'supported', 'unsupported', 'uncertain' or 'failed' (verified, see ``bench.verify``).
    delta : LP-1 optimum from the solver: l1 distance from need to the cone (0 = supported).
    witness : (k,) edge weights lam >= 0 with W lam = need, when supported; else None.
    certificate : (d,) dual y with W^T y <= 0 and need @ y > 0, when unsupported; else None.
        seed 002's Farkas plane is z = -y.
    exits : pure direction name -> checked exit distance t (0 where unchecked), when
        supported and margins were asked for.
    margin : signed l1 margin: min exit when supported, -delta when unsupported,
        NaN when uncertain or not asked for.
    """

    verdict: str
    delta: float
    witness: np.ndarray | None
    certificate: np.ndarray | None
    exits: dict[str, float]
    margin: float


def _adapter(solver: str | Adapter) -> Adapter:
    """The adapter ``solver`` names (a spec string) or is; ``ProblemError`` naming ``solver``
    for anything else (None, a class, a number)."""
    if isinstance(solver, str):
        return from_spec(solver)
    if isinstance(solver, Adapter):
        return solver
    raise ProblemError(f"solver: expected a solver spec such as 'highs' or an adapter instance "
                       f"(solvers.get(...)), got {solver!r}")


def check(scene: HoldScene, solver: str | Adapter = "highs", margin: bool = True,
          tolerances: Tolerances = DEFAULT_TOLERANCES, cap: float = EXIT_CAP) -> HoldCheck:
    """Can the contacts of ``scene`` hold it? Solves LP-1 (and the 2d exits) and verifies.

    ``solver`` is an adapter or a spec such as ``"highs"`` or ``"linrax[dtype=float64]"``.
    """
    adapter = _adapter(solver)
    if not isinstance(scene, HoldScene):
        raise ProblemError(f"scene: expected a problems.HoldScene, got {type(scene).__name__}")
    meta = pd.DataFrame([{"case": 0}])
    batch = hold_batch("scene", [scene], meta, "lp1")
    solution = adapter.solve_batch(*batch.arrays())
    row = verify_lp1(batch, solution, tolerances).iloc[0]
    verdict, delta = str(row["verdict"]), float(row["delta"])
    witness = solution.x[0, : scene.k].copy() if verdict == "supported" else None
    certificate = solution.y_eq[0].copy() if verdict == "unsupported" else None
    exits: dict[str, float] = {}
    value = -delta if verdict == "unsupported" else float("nan")
    if margin and verdict == "supported":
        axes = AXES_BY_DIM.get(scene.d, tuple(f"e{i}" for i in range(scene.d)))
        ebatch = hold_batch("scene", [scene], meta, "exit", axes=axes, cap=cap)
        checked = verify_exit(ebatch, adapter.solve_batch(*ebatch.arrays()), tolerances)
        exits = dict(zip(ebatch.meta["direction"], checked["exit"].astype(float)))
        value = min(exits.values())
    return HoldCheck(verdict, delta, witness, certificate, exits, value)


def check_robust(scenes: list[HoldScene], solver: str | Adapter = "highs", margin: bool = True,
                 tolerances: Tolerances = DEFAULT_TOLERANCES, cap: float = EXIT_CAP) -> HoldCheck:
    """The robust hold test (seed 002 §5): ``scenes`` are one pose's corners of the mass /
    centre-of-mass box (or any set of needs); the result is the worst over them.

    Supported only if every corner is (witness of the first corner, each exit the smallest
    over corners, margin the smallest); unsupported if any corner is certified
    unsupported (that corner's delta and certificate, the largest delta); else uncertain
    (or failed, if any corner failed).
    """
    if not scenes:
        raise ProblemError("scenes: expected at least one scene (one per corner of the uncertainty box)")
    adapter = _adapter(solver)
    results = [check(s, adapter, margin, tolerances, cap) for s in scenes]
    verdicts = [r.verdict for r in results]
    if "unsupported" in verdicts:
        worst = max((r for r in results if r.verdict == "unsupported"), key=lambda r: r.delta)
        return worst
    if all(v == "supported" for v in verdicts):
        exits = {k: min(r.exits[k] for r in results) for k in results[0].exits}
        return HoldCheck("supported", max(r.delta for r in results), results[0].witness, None, exits,
                         min(r.margin for r in results) if margin else float("nan"))
    verdict = "failed" if "failed" in verdicts else "uncertain"
    return HoldCheck(verdict, float("nan"), None, None, {}, float("nan"))
