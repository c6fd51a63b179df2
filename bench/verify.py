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
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from problems import ProblemBatch
from solvers import BatchSolution, Status

VERDICTS = ("supported", "unsupported", "uncertain", "failed")
OUTCOMES = ("correct", "false_accept", "false_reject", "uncertain", "failed")


@dataclass(frozen=True)
class Tolerances:
    """Named verification tolerances (units: m*g and m*g*l, like the wrenches).

    residual : max |W lam - need| (and limit excess) for a witness or an exit.
    negative : how far below 0 a weight may be.
    certificate : slack on W^T y <= 0, and the least need @ y for a certificate
        (y scaled to unit max-norm).
    reference_delta : the float64 reference calls a case unsupported when its LP-1
        optimum delta exceeds this.
    ambiguous_delta : reference cases with delta below this but above 0 by rounding are
        labelled ``ambiguous`` in the rows (they sit on the boundary at float64).
    exit_abs, exit_rel : an exit agrees with the reference within
        ``exit_abs + exit_rel * t_ref``.
    """

    residual: float = 1e-5
    negative: float = 1e-5
    certificate: float = 1e-5
    reference_delta: float = 1e-9
    ambiguous_delta: float = 1e-7
    exit_abs: float = 1e-4
    exit_rel: float = 1e-4

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


def lp1_outcomes(verdict: pd.Series, truth: pd.Series) -> np.ndarray:
    """Outcome per case from the verdict and the reference's truth (supported/unsupported)."""
    v, t = np.asarray(verdict), np.asarray(truth)
    return np.select(
        [v == "failed", v == "uncertain", v == t, (v == "supported") & (t == "unsupported")],
        ["failed", "uncertain", "correct", "false_accept"], default="false_reject",
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
