"""Solver-independent verification of hold-test answers, in float64, elementwise.

A solver's own success flag is never trusted. For LP-1 a case is

* ``supported`` only with a witness: ``lam >= -negative``, ``|W lam - need|_inf <= residual``
  and (with limits) ``B lam <= fmax + residual``;
* ``unsupported`` only with a Farkas certificate from the duals ``(y, v) = (y_eq, y_ub)``
  scaled to unit max-norm: ``W^T y + B^T v <= certificate``, ``v <= certificate`` and
  ``need @ y + fmax @ v > certificate`` (then no ``lam >= 0`` can satisfy the test);
* ``uncertain`` when neither passes, ``failed`` when neither passes and the solver
  returned NaN/inf (or crashed / timed out: the harness writes those rows).

For an exit LP (LP-2) the returned ``(lam, t)`` is checked the same way against
``W lam = need + t u``; a failed check sets the exit to 0, so a solver error can shrink
a margin, never enlarge it.

Against the float64 reference each case is ``correct``, ``false_accept`` (unsafe:
said supported, is not; for exits: claims a larger exit than the reference),
``false_reject``, ``uncertain`` or ``failed``.

QP and SOCP kinds (``verify_qp``) are checked from the standard form alone: relative
primal residuals (equalities, inequalities, bounds, cones), the KKT stationarity
residual where the solver returned duals, the objective recomputed from ``x`` and its
relative gap to the high-accuracy reference. A case's ``verdict`` is ``feasible`` (the
primal check passes), ``infeasible`` (the solver said so; ``certified`` tells whether its
duals form a Farkas certificate for problems without cones), ``uncertain`` (an ``x`` that
fails the check) or ``failed`` (no finite ``x``). Outcomes (``qp_outcomes``): ``correct``
(feasible within ``qp_gap`` of the reference optimum, or infeasible when the reference is),
``suboptimal`` (feasible but farther from the optimum), ``false_accept`` (the solver said
optimal but its forces violate the constraints, or the reference is infeasible: unsafe
forces), ``false_reject`` (said infeasible, the reference solved it), ``uncertain``,
``failed``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from problems import ProblemBatch
from solvers import BatchSolution, Status

VERDICTS = ("supported", "unsupported", "uncertain", "failed")
QP_VERDICTS = ("feasible", "infeasible", "uncertain", "failed")
OUTCOMES = ("correct", "suboptimal", "false_accept", "false_reject", "uncertain", "failed")


@dataclass(frozen=True)
class Tolerances:
    """Named verification tolerances (units: m*g and m*g*l, like the wrenches).

    residual : max |W lam - need| (and limit excess) for a witness or an exit.
    negative : how far below 0 a weight may be.
    certificate : slack on W^T y <= 0, and the least need @ y for a certificate
        (y scaled to unit max-norm).
    reference_delta : the float64 reference calls a case unsupported when its LP-1
        optimum delta exceeds this.
    ambiguous_delta : reference cases with ``reference_delta < delta <= ambiguous_delta`` are
        ``ambiguous``: unsupported, but by less than the witness tolerance, so a witness
        within ``residual`` exists (HiGHS' own answer passes the check). On them a
        ``supported`` verdict is not counted as a false accept (default: ``residual``).
    exit_abs, exit_rel : an exit agrees with the reference within
        ``exit_abs + exit_rel * t_ref``.
    qp_residual : QP/SOCP primal residual allowed, relative to ``1 + max(|b_eq|, |b_ub|)``.
    qp_gap : QP/SOCP objective gap to the reference allowed, relative to ``1 + |f_ref|``.
    """

    residual: float = 1e-5
    negative: float = 1e-5
    certificate: float = 1e-5
    reference_delta: float = 1e-9
    ambiguous_delta: float = 1e-5
    exit_abs: float = 1e-4
    exit_rel: float = 1e-4
    qp_residual: float = 1e-5
    qp_gap: float = 1e-4

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


DEFAULT_TOLERANCES = Tolerances()


def _finite_rows(a: np.ndarray) -> np.ndarray:
    return np.all(np.isfinite(a.reshape(a.shape[0], -1)), axis=1) if a.size else np.ones(a.shape[0], bool)


def witness_check(batch: ProblemBatch, lam: np.ndarray, t: np.ndarray | None,
                  tol: Tolerances) -> pd.DataFrame:
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
                         "witness_ok": ok & _finite_rows(lam)})


def certificate_check(batch: ProblemBatch, y: np.ndarray, v: np.ndarray, tol: Tolerances) -> pd.DataFrame:
    """Farkas check of LP-1 duals ``y`` (B, d) and ``v`` (B, L) (see module docstring).

    Returns ``cert_gap`` (max of ``W^T y + B^T v`` and of ``v``, scaled), ``cert_value``
    (``need @ y + fmax @ v``, scaled) and ``certificate_ok``.
    """
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        scale = np.max(np.abs(np.concatenate([y, v], axis=1)), axis=1)
        ys, vs = y / scale[:, None], v / scale[:, None]
        gap = np.max(np.einsum("bdk,bd->bk", batch.W, ys) + np.einsum("blk,bl->bk", batch.limit_B, vs), axis=1)
        if v.shape[1]:
            gap = np.maximum(gap, np.max(vs, axis=1))
        value = np.einsum("bd,bd->b", batch.need, ys) + np.einsum("bl,bl->b", batch.limit_fmax, vs)
    ok = (scale > 0) & (gap <= tol.certificate) & (value > tol.certificate)
    ok &= _finite_rows(y) & _finite_rows(v)
    return pd.DataFrame({"cert_gap": gap, "cert_value": value, "certificate_ok": ok})


def verify_lp1(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-case verdicts for an LP-1 batch (one row per case, in batch order)."""
    if batch.kind != "lp1":
        raise ValueError(f"batch.kind: expected 'lp1', got {batch.kind!r}")
    k = batch.k
    lam = solution.x[:, :k]
    wit = witness_check(batch, lam, None, tol)
    L = batch.limit_B.shape[1]
    cert = certificate_check(batch, solution.y_eq, solution.y_ub[:, :L], tol)
    finite = _finite_rows(solution.x) & _finite_rows(solution.y_eq) & _finite_rows(solution.y_ub)
    verdict = np.where(wit["witness_ok"] & ~cert["certificate_ok"], "supported",
                       np.where(cert["certificate_ok"] & ~wit["witness_ok"], "unsupported",
                                np.where(finite, "uncertain", "failed")))
    with np.errstate(invalid="ignore"):
        delta = np.einsum("bn,bn->b", batch.c, solution.x)
    return pd.concat([pd.DataFrame({"verdict": verdict, "delta": delta}), wit, cert], axis=1)


def verify_exit(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-LP checked exits for an exit batch: ``exit`` is ``t`` when verified, else 0."""
    if batch.kind != "exit":
        raise ValueError(f"batch.kind: expected 'exit', got {batch.kind!r}")
    k = batch.k
    lam, t = solution.x[:, :k], solution.x[:, k]
    wit = witness_check(batch, lam, t, tol)
    with np.errstate(invalid="ignore"):
        in_range = (t >= -tol.negative) & (t <= batch.cap * (1 + tol.residual))
    ok = wit["witness_ok"].to_numpy() & in_range
    # No primal is an answer when the solver says infeasible (it is, for an unsupported
    # scene); it cannot be verified, so it counts as an exit of 0 like any unverified one.
    said_infeasible = np.asarray(solution.status == Status.INFEASIBLE, dtype=bool)
    answered = _finite_rows(solution.x) | said_infeasible
    verdict = np.where(ok, "verified", np.where(answered, "uncertain", "failed"))
    exit_value = np.where(ok, np.clip(t, 0.0, batch.cap), 0.0)
    return pd.concat([pd.DataFrame({"verdict": verdict, "t": t, "exit": exit_value}), wit], axis=1)


def lp1_outcomes(verdict: pd.Series, truth: pd.Series, ambiguous: pd.Series | None = None) -> np.ndarray:
    """Outcome per case from the verdict and the reference's truth (supported/unsupported).

    ``ambiguous`` (reference rows' column): unsupported by less than the witness tolerance;
    there ``supported`` counts as correct (see ``Tolerances.ambiguous_delta``).
    """
    v, t = np.asarray(verdict), np.asarray(truth)
    amb = np.zeros(len(v), bool) if ambiguous is None else np.asarray(ambiguous, dtype=bool)
    return np.select(
        [v == "failed", v == "uncertain", v == t, amb & (v == "supported"), (v == "supported") & (t == "unsupported")],
        ["failed", "uncertain", "correct", "correct", "false_accept"], default="false_reject",
    )


def exit_outcomes(verdict: pd.Series, exit_value: pd.Series, ref_exit: pd.Series,
                  tol: Tolerances = DEFAULT_TOLERANCES) -> np.ndarray:
    """Outcome per exit LP: agree with the reference exit, over-claim, under-claim, or not verified."""
    v = np.asarray(verdict)
    e, r = np.asarray(exit_value, float), np.asarray(ref_exit, float)
    band = tol.exit_abs + tol.exit_rel * np.abs(r)
    return np.select(
        [v == "failed", np.abs(e - r) <= band, e > r + band, v == "uncertain"],
        ["failed", "correct", "false_accept", "uncertain"], default="false_reject",
    )


def _qp_primal(batch: ProblemBatch, x: np.ndarray) -> pd.DataFrame:
    """Relative primal residuals of ``x`` (B, n) in the batch's standard form."""
    B = len(x)
    rhs = np.concatenate([batch.b_eq, batch.b_ub], axis=1)
    scale = 1.0 + (np.max(np.abs(rhs), axis=1) if rhs.shape[1] else np.zeros(B))
    with np.errstate(invalid="ignore", over="ignore"):
        eq = np.max(np.abs(np.einsum("bmn,bn->bm", batch.A_eq, x) - batch.b_eq), axis=1, initial=0.0)
        ub = np.max(np.einsum("bmn,bn->bm", batch.A_ub, x) - batch.b_ub, axis=1, initial=0.0)
        lb = batch.lb if batch.lb is not None else np.zeros_like(x)
        finite = np.isfinite(lb)
        bound = np.max(np.where(finite, np.where(finite, lb, 0.0) - x, 0.0), axis=1, initial=0.0)
        cone = np.zeros(B)
        util = np.full(B, np.nan)
        if batch.cones is not None and len(batch.cones):
            idx = batch.cones
            f_n, r = x[:, idx[:, 0]], np.hypot(x[:, idx[:, 1]], x[:, idx[:, 2]])
            cone = np.max(r - batch.cone_mu * f_n, axis=1)
            util = np.max(np.where(f_n > 0, r / (batch.cone_mu * np.where(f_n > 0, f_n, 1.0)),
                                   np.where(r > 0, np.inf, 0.0)), axis=1)
        primal = np.maximum.reduce([eq, np.maximum(ub, 0), np.maximum(bound, 0), np.maximum(cone, 0)]) / scale
    primal = np.where(_finite_rows(x), primal, np.nan)
    return pd.DataFrame({"primal_residual": primal, "eq_residual": eq / scale, "max_cone_utilization": util})


def _qp_dual(batch: ProblemBatch, solution: BatchSolution) -> np.ndarray:
    """Relative KKT stationarity residual (NaN without duals, or with cones: no cone multipliers)."""
    x, y_eq, y_ub = solution.x, solution.y_eq, solution.y_ub
    B = len(x)
    if batch.cones is not None and len(batch.cones):
        return np.full(B, np.nan)
    P = batch.P if batch.P is not None else np.zeros((B, x.shape[1], x.shape[1]))
    with np.errstate(invalid="ignore", over="ignore"):
        Px = np.einsum("bij,bj->bi", P, x)
        r = Px + batch.c - np.einsum("bmn,bm->bn", batch.A_eq, y_eq) - np.einsum("bmn,bm->bn", batch.A_ub, y_ub)
        free = ~np.isfinite(batch.lb) if batch.lb is not None else np.zeros_like(x, bool)
        stat = np.max(np.where(free, np.abs(r), np.maximum(-r, 0.0)), axis=1, initial=0.0)
        sign = np.max(y_ub, axis=1, initial=0.0)
        scale = 1.0 + np.maximum(np.max(np.abs(batch.c), axis=1, initial=0.0), np.max(np.abs(Px), axis=1, initial=0.0))
        out = np.maximum(stat, np.maximum(sign, 0.0)) / scale
    ok = _finite_rows(x) & _finite_rows(y_eq) & _finite_rows(y_ub)
    return np.where(ok, out, np.nan)


def _qp_certificate(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances) -> np.ndarray:
    """True where the duals prove infeasibility (problems without cones; see module docstring
    of ``solvers.types`` for the sign convention): ``A^T y`` is 0 on free variables and
    <= 0 on bounded ones, ``y_ub <= 0``, and ``b @ y - lb @ (A^T y)`` > 0 (unit max-norm y)."""
    y_eq, y_ub = solution.y_eq, solution.y_ub
    B = len(y_eq)
    if batch.cones is not None and len(batch.cones):
        return np.zeros(B, bool)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        y = np.concatenate([y_eq, y_ub], axis=1)
        scale = np.max(np.abs(y), axis=1, initial=0.0)
        ye, yu = y_eq / scale[:, None], y_ub / scale[:, None]
        g = np.einsum("bmn,bm->bn", batch.A_eq, ye) + np.einsum("bmn,bm->bn", batch.A_ub, yu)
        lb = batch.lb if batch.lb is not None else np.zeros_like(g)
        free = ~np.isfinite(lb)
        gap = np.max(np.where(free, np.abs(g), g), axis=1, initial=-np.inf)
        gap = np.maximum(gap, np.max(yu, axis=1, initial=-np.inf))
        value = (np.einsum("bm,bm->b", batch.b_eq, ye) + np.einsum("bm,bm->b", batch.b_ub, yu)
                 - np.sum(np.where(free, 0.0, np.where(free, 0.0, lb) * g), axis=1))
    ok = (scale > 0) & (gap <= tol.certificate) & (value > tol.certificate)
    return ok & _finite_rows(y_eq) & _finite_rows(y_ub)


def qp_objective(batch: ProblemBatch, x: np.ndarray) -> np.ndarray:
    """``c@x + 0.5 x@P@x`` per case, recomputed in float64 from ``x``."""
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.einsum("bn,bn->b", batch.c, x)
        if batch.P is not None:
            value = value + 0.5 * np.einsum("bi,bij,bj->b", x, batch.P, x)
    return value


def verify_qp(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-case verdicts and residuals for a QP / SOCP batch (see module docstring).

    Columns: ``verdict``, ``primal_residual``, ``eq_residual``, ``max_cone_utilization``,
    ``dual_residual``, ``certified``, ``qp_objective`` (from ``x``), ``said``
    (the solver's status value).
    """
    if batch.kind not in ("qp", "socp"):
        raise ValueError(f"batch.kind: expected 'qp' or 'socp', got {batch.kind!r}")
    primal = _qp_primal(batch, solution.x)
    said_infeasible = np.asarray(solution.status == Status.INFEASIBLE, dtype=bool)
    feasible = primal["primal_residual"].to_numpy() <= tol.qp_residual
    finite = _finite_rows(solution.x)
    verdict = np.where(said_infeasible, "infeasible",
                       np.where(feasible, "feasible", np.where(finite, "uncertain", "failed")))
    return pd.concat([pd.DataFrame({"verdict": verdict}), primal, pd.DataFrame({
        "dual_residual": _qp_dual(batch, solution),
        "certified": _qp_certificate(batch, solution, tol) & said_infeasible,
        "qp_objective": qp_objective(batch, solution.x),
        "said": [s.value for s in solution.status],
    })], axis=1)


def qp_outcomes(checked: pd.DataFrame, ref: pd.DataFrame, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """``outcome`` and ``rel_gap`` per case from ``verify_qp`` rows and the reference rows
    (``truth`` feasible / infeasible / unknown, ``ref_objective``)."""
    v = checked["verdict"].to_numpy()
    said_optimal = checked["said"].to_numpy() == Status.OPTIMAL.value
    truth = ref["truth"].to_numpy()
    with np.errstate(invalid="ignore"):
        gap = (checked["qp_objective"].to_numpy() - ref["ref_objective"].to_numpy()) / (
            1.0 + np.abs(ref["ref_objective"].to_numpy()))
    feasible_ref = truth == "feasible"
    outcome = np.select(
        [truth == "unknown",
         feasible_ref & (v == "feasible") & (gap <= tol.qp_gap),
         feasible_ref & (v == "feasible"),
         (truth == "infeasible") & (v == "infeasible"),
         (v == "infeasible"),
         v == "failed",
         said_optimal | ((truth == "infeasible") & (v == "feasible"))],
        ["uncertain", "correct", "suboptimal", "correct", "false_reject", "failed", "false_accept"],
        default="uncertain",
    )
    return pd.DataFrame({"outcome": outcome, "rel_gap": np.where(feasible_ref, gap, np.nan)})
