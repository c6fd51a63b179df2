"""Kind ``exit``: one exit LP (LP-2) per scene and pure direction, ``x = [lam, t]``.

LP-2 is ``max t`` s.t. ``W lam = need + t u``, ``B lam <= fmax``, ``0 <= t <= cap``, ``lam >= 0``:
how far the needed wrench can move along ``u`` before support is lost (the margin of seed
002 is the smallest exit over the 2d directions ``+-e_i``). ``meta`` gains ``direction``,
and ``scene_index`` says which scene a row belongs to.

Verification: ``verified`` (``(lam, t)`` passes the witness check with ``0 <= t <= cap``),
``infeasible`` (the duals are a Farkas certificate of the exit LP: support is already
lost), ``uncertain``, ``failed``. An unverified answer counts as an exit of 0, so a solver
error can shrink a margin, never enlarge it. Reference: HiGHS' ``t`` when verified
(``ref_exit``), 0 when its dual ray is a certificate; a case whose reference is unproven
is ``uncertain`` for every solver.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from solvers import Status
from solvers.types import text_codes, text_column

from ..hold import EXIT_CAP, direction_names, exit_arrays, margin_directions
from ..params import Param, number
from .checks import DEFAULT_TOLERANCES, OUTCOMES, Tolerances, farkas_columns, finite_rows
from ._hold import WITNESS_COLUMNS, HoldKind, witness_columns

VERDICTS = ("verified", "infeasible", "uncertain", "failed")


def verify_exit(batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-LP checked exits for an exit batch.

    ``verdict`` is ``verified`` (``(lam, t)`` passes the witness check with
    ``0 <= t <= cap``), ``infeasible`` (the duals are a Farkas certificate of the exit LP:
    no ``t`` in ``[0, cap]`` keeps the scene held), ``uncertain`` (an answer that proves
    neither) or ``failed`` (no finite answer and no claim). ``exit`` is ``t`` when verified,
    else 0: an unverified answer can shrink a margin, never enlarge it. The solver's
    status is not read.
    """
    if batch.kind != "exit":
        raise ValueError(f"batch.kind: expected 'exit', got {batch.kind!r}")
    k = batch.W.shape[2]
    lam, t = solution.x[:, :k], solution.x[:, k]
    wit = witness_columns(batch, lam, t, tol)
    with np.errstate(invalid="ignore"):
        in_range = (t >= -tol.negative) & (t <= batch.cap * (1 + tol.residual))
    ok = wit["witness_ok"] & in_range
    cert = farkas_columns(batch.A_eq, batch.b_eq, batch.A_ub, batch.b_ub, None, None, None,
                          solution.y_eq, solution.y_ub, tol)
    certified = cert["certificate_ok"]
    # a claim of infeasibility without a proof is an answer, but an unverified one
    answered = finite_rows(solution.x) | np.asarray(solution.status == Status.INFEASIBLE, dtype=bool)
    code = np.select([ok & ~certified, certified & ~ok, answered], [0, 1, 2], default=3)  # VERDICTS' order
    exit_value = np.where(code == 0, np.clip(t, 0.0, batch.cap), 0.0)
    # one frame of every column (three frames joined by pd.concat cost about 0.25 ms more a call)
    return pd.DataFrame({"verdict": text_column(VERDICTS, code), "t": t, "exit": exit_value, **wit, **cert})


def exit_outcomes(verdict: pd.Series, exit_value: pd.Series, ref_exit: pd.Series, ref_verdict: pd.Series,
                  tol: Tolerances = DEFAULT_TOLERANCES) -> np.ndarray:
    """Outcome per exit LP against the reference.

    ``correct`` needs a proof: a verified exit within ``exit_abs + exit_rel * ref`` of the
    reference's, or a certified ``infeasible`` where the reference's exit is 0 (support
    already lost). A verified exit above the band is ``false_accept`` (it claims more
    margin than there is), below it ``false_reject``; a certificate where the reference
    verified an exit above the band is ``false_reject``. ``uncertain`` and ``failed``
    verdicts keep their names whatever their (zeroed) exit, and every case whose
    reference is itself unproven (``ref_verdict`` neither ``verified`` nor ``infeasible``)
    is ``uncertain``.
    """
    return np.asarray(OUTCOMES, dtype=str)[exit_outcome_codes(verdict, exit_value, ref_exit, ref_verdict, tol)]


def exit_outcome_codes(verdict, exit_value, ref_exit, ref_verdict, tol: Tolerances = DEFAULT_TOLERANCES) -> np.ndarray:
    """``exit_outcomes`` as indices into ``OUTCOMES``: the same rule on the verdicts' codes
    (``text_codes``), never a string per case."""
    v = text_codes(verdict, VERDICTS)  # verified 0, infeasible 1, uncertain 2, failed 3, else -1
    rv = text_codes(ref_verdict, VERDICTS)
    e, r = np.asarray(exit_value, float), np.asarray(ref_exit, float)
    band = tol.exit_abs + tol.exit_rel * np.abs(r)
    ref_known = (rv == 0) | (rv == 1)
    verified, certified = v == 0, v == 1
    with np.errstate(invalid="ignore"):
        return np.select(
            [v == 3, v == 2, ~ref_known,
             verified & (np.abs(e - r) <= band), verified & (e > r + band), verified,
             certified & (r <= band), certified],
            [OUTCOMES.index(o) for o in ("failed", "uncertain", "uncertain", "correct", "false_accept",
                                         "false_reject", "correct", "false_reject")],
            default=OUTCOMES.index("uncertain"),
        )


class ExitKind(HoldKind):
    """Exit LPs (see module docstring)."""

    name = "exit"
    description = "margins: how far the needed wrench can move along each pure direction (LP-2 per direction)"
    columns = {"verdict": "str", "t": "float64", "exit": "float64", **WITNESS_COLUMNS, "cert_gap": "float64",
               "cert_value": "float64", "certificate_ok": "bool", "ref_exit": "float64", "ref_verdict": "str",
               "outcome": "str", "ref_agrees": "bool"}
    params = (Param("cap", "float > 0", EXIT_CAP, "the exit LPs' cap T on t, m*g (m*g*l for torques); seed 002 "
                    "first used 1000", number(gt=0)),)

    def expand(self, scenes, meta, axes, cap):
        U = margin_directions(scenes.d)
        names = direction_names(axes)
        order = np.repeat(np.arange(len(scenes)), len(U))
        rows = meta.iloc[order].reset_index(drop=True).assign(
            scene_index=order, direction=text_column(names, np.tile(np.arange(len(U)), len(scenes))))
        return order, np.tile(U, (len(scenes), 1)), rows

    def lp_arrays(self, scenes, directions, cap):
        return exit_arrays(scenes, directions, cap)

    def reference_rows(self, batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        checked = verify_exit(batch, solution, tol)
        return pd.DataFrame({"ref_exit": checked["exit"], "ref_verdict": checked["verdict"]})

    def verify(self, batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        return verify_exit(batch, solution, tol)

    def judge(self, checked, ref, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        """``outcome`` (``exit_outcome_codes``) and ``ref_agrees``: a correct answer, or a ``t``,
        proof or not, within the band of a proven reference exit."""
        codes = exit_outcome_codes(checked["verdict"], checked["exit"], ref["ref_exit"], ref["ref_verdict"], tol)
        t, r = checked["t"].to_numpy(dtype=float), ref["ref_exit"].to_numpy(dtype=float)
        known = text_codes(ref["ref_verdict"], VERDICTS[:2]) >= 0
        with np.errstate(invalid="ignore"):
            agrees = (codes == OUTCOMES.index("correct")) | (
                known & np.isfinite(t) & (np.abs(t - r) <= tol.exit_abs + tol.exit_rel * np.abs(r)))
        return pd.DataFrame({"outcome": text_column(OUTCOMES, codes), "ref_agrees": agrees})


KIND = ExitKind()
