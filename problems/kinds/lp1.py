"""Kind ``lp1``: one LP-1 hold test per scene (seed 002), ``x = [lam, s+, s-]``.

LP-1 is ``min 1 @ (s+ + s-)`` s.t. ``W lam + s+ - s- = need``, ``B lam <= fmax``, all ``>= 0``:
its optimum ``delta`` is the l1 distance from ``need`` to what the contacts can supply (0:
supported). A verdict is ``supported`` only with a witness (``lam >= -negative``,
``|W lam - need|_inf <= residual``, limits kept), ``unsupported`` only with a Farkas
certificate from the duals scaled to unit max-norm (``W^T y + B^T v <= gap``, ``v <= gap``,
``need @ y + fmax @ v`` passing ``certificate_passes``), ``uncertain`` when neither (or both)
passes, ``failed`` when neither passes and the answer is not finite.

Reference: HiGHS' ``delta``; ``truth`` is ``supported`` when ``delta <= reference_delta``,
``unsupported`` when larger, ``unknown`` without a finite ``delta`` (every verdict on such a
case is ``uncertain``); cases unsupported by less than the witness tolerance are
``ambiguous`` (``supported`` is correct there). Outcomes: ``correct``, ``false_accept``
(supported, truth unsupported: unsafe), ``false_reject``, ``uncertain``, ``failed``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from solvers.types import text_codes, text_column

from ..hold import lp1_arrays
from .checks import DEFAULT_TOLERANCES, OUTCOMES, Tolerances, certificate_passes, finite_rows, row_max
from ._hold import WITNESS_COLUMNS, HoldKind, witness_columns

VERDICTS = ("supported", "unsupported", "uncertain", "failed")
#: the largest LP-1 optimum (m*g) read as a claim of support, proof or not (``ref_agrees``):
#: the reading a controller makes of a solver's answer at its usual 1e-3 tolerances
CLAIM_DELTA = 1e-3


def certificate_check(batch, y: np.ndarray, v: np.ndarray, tol: Tolerances) -> pd.DataFrame:
    """``certificate_columns`` as a DataFrame (one row per case)."""
    return pd.DataFrame(certificate_columns(batch, y, v, tol))


def certificate_columns(batch, y: np.ndarray, v: np.ndarray, tol: Tolerances) -> dict[str, np.ndarray]:
    """Farkas check of LP-1 duals ``y`` (B, d) and ``v`` (B, L) (see module docstring).

    Returns columns (name -> (B,) array) ``cert_gap`` (max of ``W^T y + B^T v`` and of ``v``,
    scaled), ``cert_value`` (``need @ y + fmax @ v``, scaled) and ``certificate_ok``.
    """
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        scale = row_max(np.abs(np.concatenate([y, v], axis=1)))
        ys, vs = y / scale[:, None], v / scale[:, None]
        gap = row_max(np.einsum("bdk,bd->bk", batch.W, ys) + np.einsum("blk,bl->bk", batch.limit_B, vs))
        if v.shape[1]:
            gap = np.maximum(gap, row_max(vs))
        value = np.einsum("bd,bd->b", batch.need, ys) + np.einsum("bl,bl->b", batch.limit_fmax, vs)
    ok = (scale > 0) & certificate_passes(gap, value, tol)
    ok &= finite_rows(y) & finite_rows(v)
    return {"cert_gap": gap, "cert_value": value, "certificate_ok": ok}


def verify_lp1(batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-case verdicts for an LP-1 batch (one row per case, in batch order)."""
    if batch.kind != "lp1":
        raise ValueError(f"batch.kind: expected 'lp1', got {batch.kind!r}")
    k = batch.W.shape[2]
    wit = witness_columns(batch, solution.x[:, :k], None, tol)
    L = batch.limit_B.shape[1]
    cert = certificate_columns(batch, solution.y_eq, solution.y_ub[:, :L], tol)
    finite = finite_rows(solution.x) & finite_rows(solution.y_eq) & finite_rows(solution.y_ub)
    witnessed, certified = wit["witness_ok"], cert["certificate_ok"]
    code = np.select([witnessed & ~certified, certified & ~witnessed, finite], [0, 1, 2], default=3)  # VERDICTS' order
    with np.errstate(invalid="ignore"):
        delta = np.einsum("bn,bn->b", batch.c, solution.x)
    # one frame of every column (three frames joined by pd.concat cost about 0.25 ms more a call)
    return pd.DataFrame({"verdict": text_column(VERDICTS, code), "delta": delta, **wit, **cert})


def lp1_outcomes(verdict, truth, ambiguous=None) -> np.ndarray:
    """Outcome per case from the verdict and the reference's truth (supported/unsupported).

    ``ambiguous`` (reference rows' column): unsupported by less than the witness tolerance;
    there ``supported`` counts as correct (see ``Tolerances.ambiguous_delta``).
    """
    return np.asarray(OUTCOMES, dtype=str)[lp1_outcome_codes(verdict, truth, ambiguous)]


def lp1_outcome_codes(verdict, truth, ambiguous=None) -> np.ndarray:
    """``lp1_outcomes`` as indices into ``OUTCOMES``: the same rule on the verdicts' and truths'
    codes (``text_codes``), never a string per case."""
    v = text_codes(verdict, VERDICTS)  # supported 0, unsupported 1, uncertain 2, failed 3, else -1
    t = text_codes(truth, VERDICTS[:2])  # supported 0, unsupported 1, else (unknown) -1
    amb = np.zeros(len(v), bool) if ambiguous is None else np.asarray(ambiguous, dtype=bool)
    return np.select(
        [v == 3, v == 2, t < 0, (v >= 0) & (v == t), amb & (v == 0), (v == 0) & (t == 1)],
        [OUTCOMES.index(o) for o in ("failed", "uncertain", "uncertain", "correct", "correct", "false_accept")],
        default=OUTCOMES.index("false_reject"),
    )


def robust_verdict(verdicts) -> str:
    """The robust verdict over one case's corners (seed 002 §5): ``unsupported`` if any corner
    is, ``supported`` if all are; else ``unknown`` where a reference truth is unknown,
    ``failed`` if a corner failed, ``uncertain`` otherwise. The one owner of the rule: the
    robust tables and ``bench.hold.check_robust`` apply it."""
    values = set(verdicts)
    if "unsupported" in values:
        return "unsupported"
    if values == {"supported"}:
        return "supported"
    if "unknown" in values:
        return "unknown"
    return "failed" if "failed" in values else "uncertain"


class Lp1Kind(HoldKind):
    """LP-1 hold tests (see module docstring)."""

    name = "lp1"
    description = "hold test: can the contacts supply the needed wrench? (LP-1: l1 distance to the wrench cone)"
    columns = {"verdict": "str", "delta": "float64", **WITNESS_COLUMNS, "cert_gap": "float64",
               "cert_value": "float64", "certificate_ok": "bool", "ref_delta": "float64", "truth": "str",
               "ref_verdict": "str", "ambiguous": "bool", "outcome": "str", "ref_agrees": "bool"}

    def expand(self, scenes, meta, axes, cap):
        n = len(scenes)
        return np.arange(n), np.zeros((n, scenes.d)), meta.assign(scene_index=np.arange(n))

    def lp_arrays(self, scenes, directions, cap):
        return lp1_arrays(scenes)

    def reference_rows(self, batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        checked = verify_lp1(batch, solution, tol)
        delta = np.asarray(solution.objective, dtype=float)
        with np.errstate(invalid="ignore"):
            truth = np.select([~np.isfinite(delta), delta <= tol.reference_delta], ["unknown", "supported"],
                              default="unsupported")
        ambiguous = (delta > tol.reference_delta) & (delta <= tol.ambiguous_delta)
        return pd.DataFrame({"ref_delta": delta, "truth": truth, "ref_verdict": checked["verdict"],
                             "ambiguous": ambiguous})

    def verify(self, batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        return verify_lp1(batch, solution, tol)

    def judge(self, checked, ref, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        """``outcome`` (``lp1_outcome_codes``) and ``ref_agrees``: a correct answer, or one whose
        claim, proof or not (supported where its ``delta`` is at most ``CLAIM_DELTA``,
        unsupported where it is larger), is the reference's truth (either claim, on an
        ambiguous case)."""
        codes = lp1_outcome_codes(checked["verdict"], ref["truth"], ref.get("ambiguous"))
        delta = checked["delta"].to_numpy(dtype=float)
        truth = text_codes(ref["truth"], VERDICTS[:2])  # supported 0, unsupported 1, else -1
        ambiguous = ref["ambiguous"].to_numpy(dtype=bool) if "ambiguous" in ref else np.zeros(len(ref), bool)
        with np.errstate(invalid="ignore"):
            claim = np.where(delta <= CLAIM_DELTA, 0, 1)  # (NaN: no claim, masked below)
        agrees = (codes == OUTCOMES.index("correct")) | (
            np.isfinite(delta) & (truth >= 0) & ((claim == truth) | ambiguous))
        return pd.DataFrame({"outcome": text_column(OUTCOMES, codes), "ref_agrees": agrees})

    def report_sections(self, rows: pd.DataFrame, group: list[str]) -> list[tuple[str, str, pd.DataFrame]]:
        """Robust hold tests: one outcome per case (pose), the worst over its corners, for
        cells whose ``meta_need_corner`` has several values per case."""
        table = robust_summary(rows, group)
        return [("Robust hold tests (worst over each case's corners)", "robust", table)] if len(table) else []


def robust_summary(rows: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    """Robust hold tests: one outcome per case (pose), the worst over its corners.

    A case is supported only if every corner LP is, unsupported if any corner is
    certified unsupported, failed if any failed, else uncertain; its truth is likewise
    the worst of the corners' reference truths. Empty when the rows hold no robust cases.
    ``group``: the summary's group columns (one row per group).
    """
    if "meta_need_corner" not in rows or "meta_case" not in rows:
        return pd.DataFrame()
    sub = rows[(rows["kind"] == "lp1") & rows["meta_need_corner"].notna()]
    sub = sub[sub.groupby(["cell_id", "meta_case"])["meta_need_corner"].transform("nunique") > 1]
    if sub.empty:
        return pd.DataFrame()
    cases = sub.groupby(group + ["cell_id", "meta_case"]).agg(verdict=("verdict", robust_verdict),
                                                              truth=("truth", robust_verdict)).reset_index()
    cases["outcome"] = lp1_outcomes(cases["verdict"], cases["truth"])
    counts = pd.crosstab([cases[g] for g in group], cases["outcome"]).reindex(
        columns=list(KIND.outcomes), fill_value=0)
    counts.insert(0, "cases", counts.sum(axis=1))
    return counts.reset_index()


KIND = Lp1Kind()
