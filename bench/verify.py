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
``W lam = need + t u`` (``verified``), or its duals as a Farkas certificate of the exit
LP (``infeasible``: support is already lost); an unverified answer counts as an exit of
0 for margins, so a solver error can shrink a margin, never enlarge it.

Against the float64 reference each case is ``correct`` (only ever for a verified answer:
a witness, a certificate, or a feasible ``x`` within the gap), ``false_accept`` (unsafe:
said supported, is not; for exits: a verified exit larger than the reference's),
``false_reject``, ``uncertain`` or ``failed``. No solver status decides an outcome.

QP and SOCP kinds (``verify_qp``) are checked from the standard form alone: relative
primal residuals (equalities, inequalities, bounds, cones), the KKT stationarity
residual where the solver returned duals, the objective recomputed from ``x`` and its
relative gap to the high-accuracy reference. A case's ``verdict`` is ``feasible`` (the
primal check passes), ``infeasible`` (the duals pass ``farkas_check``, cones included:
the cone multipliers are reconstructed from ``A^T y``), ``uncertain`` (an ``x`` that fails
the check, or an infeasibility claim without a certificate) or ``failed`` (no finite
``x`` and no claim). Outcomes (``qp_outcomes``): ``correct`` (feasible within ``qp_gap``
of the reference optimum, or certified infeasible when the reference is), ``suboptimal``
(feasible but farther from the optimum), ``false_accept`` (the solver said optimal but its
forces violate the constraints, or the reference is infeasible: unsafe forces),
``false_reject`` (certified infeasible, the reference solved it), ``uncertain``,
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


def certificate_passes(gap: np.ndarray, value: np.ndarray, tol: Tolerances) -> np.ndarray:
    """The one acceptance rule of every Farkas certificate (LP-1, exits, QPs, SOCPs), with the
    duals scaled to unit max-norm: ``value > tol.certificate`` and
    ``gap <= tol.certificate * max(1, value)``.

    A violation ``gap`` of the sign conditions adds at most ``gap * |x|_1`` to the bound,
    so the certificate proves that no ``x`` with ``|x|_1 < value / gap`` is feasible: at
    least ``1 / tol.certificate`` (1e5, in m*g) for a strong certificate (``value >= 1``),
    ``value / tol.certificate`` for a weak one (the absolute rule of LP-1)."""
    with np.errstate(invalid="ignore"):
        return (value > tol.certificate) & (gap <= tol.certificate * np.maximum(1.0, value))


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
    ok = (scale > 0) & certificate_passes(gap, value, tol)
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
    k = batch.k
    lam, t = solution.x[:, :k], solution.x[:, k]
    wit = witness_check(batch, lam, t, tol)
    with np.errstate(invalid="ignore"):
        in_range = (t >= -tol.negative) & (t <= batch.cap * (1 + tol.residual))
    ok = wit["witness_ok"].to_numpy() & in_range
    cert = farkas_check(batch.A_eq, batch.b_eq, batch.A_ub, batch.b_ub, None, None, None,
                        solution.y_eq, solution.y_ub, tol)
    certified = cert["certificate_ok"].to_numpy()
    # a claim of infeasibility without a proof is an answer, but an unverified one
    answered = _finite_rows(solution.x) | np.asarray(solution.status == Status.INFEASIBLE, dtype=bool)
    verdict = np.where(ok & ~certified, "verified",
                       np.where(certified & ~ok, "infeasible", np.where(answered, "uncertain", "failed")))
    exit_value = np.where(verdict == "verified", np.clip(t, 0.0, batch.cap), 0.0)
    return pd.concat([pd.DataFrame({"verdict": verdict, "t": t, "exit": exit_value}), wit, cert], axis=1)


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
    v = np.asarray(verdict)
    e, r = np.asarray(exit_value, float), np.asarray(ref_exit, float)
    rv = np.asarray(ref_verdict, dtype=object)
    band = tol.exit_abs + tol.exit_rel * np.abs(r)
    ref_known = (rv == "verified") | (rv == "infeasible")
    verified, certified = v == "verified", v == "infeasible"
    return np.select(
        [v == "failed", v == "uncertain", ~ref_known,
         verified & (np.abs(e - r) <= band), verified & (e > r + band), verified,
         certified & (r <= band), certified],
        ["failed", "uncertain", "uncertain", "correct", "false_accept", "false_reject", "correct", "false_reject"],
        default="uncertain",
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


def farkas_check(A_eq: np.ndarray, b_eq: np.ndarray, A_ub: np.ndarray, b_ub: np.ndarray,
                 lb: np.ndarray | None, cones: np.ndarray | None, cone_mu: np.ndarray | None,
                 y_eq: np.ndarray, y_ub: np.ndarray, tol: Tolerances) -> pd.DataFrame:
    """Float64 check that ``(y_eq, y_ub)`` proves a standard-form problem infeasible.

    Shapes: ``A_eq`` (B, m_eq, n), ``b_eq`` (B, m_eq), ``A_ub`` (B, m_ub, n), ``b_ub``
    (B, m_ub), ``lb`` (B, n) or None (zeros), ``cones`` (K, 3) indices ``(n, t1, t2)``
    and ``cone_mu`` (B, K) or None; duals ``y_eq`` (B, m_eq), ``y_ub`` (B, m_ub) in the
    project's sign convention (a certificate has ``y_ub <= 0``).

    With ``y`` scaled to unit max-norm and ``g = A_eq^T y_eq + A_ub^T y_ub``, every
    feasible ``x`` has ``g @ x >= b @ y``. ``g`` is split into a bound part ``g_b`` and a
    cone part ``g_k`` with ``-g_k`` in the dual cone ``{(a, b): a >= mu |b|}`` (so
    ``g_k @ x <= 0`` on the cone): ``g_b = 0`` on free and tangential variables, ``<= 0``
    on bounded ones, and on a cone's normal ``g_b = min(g_n + mu |g_t|, 0)`` where its
    bound is finite and ``>= 0``. Then ``g @ x <= lb @ g_b``, so ``b @ y - lb @ g_b > 0``
    is a contradiction. Columns: ``cert_gap`` (the largest violation of the sign
    conditions), ``cert_value`` (``b @ y - lb @ g_b``), ``certificate_ok``
    (``certificate_passes``). Cone index triples must be
    disjoint (``check_standard_form`` enforces it), else the split is not sound.
    """
    B, n = A_eq.shape[0], A_eq.shape[2]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        y = np.concatenate([y_eq, y_ub], axis=1)
        scale = np.max(np.abs(y), axis=1, initial=0.0)
        ye, yu = y_eq / scale[:, None], y_ub / scale[:, None]
        g = np.einsum("bmn,bm->bn", A_eq, ye) + np.einsum("bmn,bm->bn", A_ub, yu)
        lb_ = np.zeros((B, n)) if lb is None else lb
        free = ~np.isfinite(lb_)
        lb0 = np.where(free, 0.0, lb_)
        in_cone = np.zeros(n, bool)
        gap_parts = [np.max(yu, axis=1, initial=-np.inf)]
        g_b = np.where(free, 0.0, g)
        if cones is not None and len(cones):
            idx = np.asarray(cones)
            mu = np.broadcast_to(np.asarray(cone_mu, float), (B, len(idx)))
            in_cone[idx.ravel()] = True
            g_n, g_t = g[:, idx[:, 0]], np.hypot(g[:, idx[:, 1]], g[:, idx[:, 2]])
            residual = g_n + mu * g_t  # <= 0: -g on this cone lies in its dual cone
            gap_parts.append(np.max(residual, axis=1))
            normal_lb = lb_[:, idx[:, 0]]
            use = np.isfinite(normal_lb) & (normal_lb >= 0)
            g_b[:, idx[:, 1]] = 0.0
            g_b[:, idx[:, 2]] = 0.0
            g_b[:, idx[:, 0]] = np.where(use, np.minimum(residual, 0.0), 0.0)
        plain = ~in_cone[None, :]
        gap_parts.append(np.max(np.where(plain & free, np.abs(g), np.where(plain, g, -np.inf)), axis=1,
                                initial=-np.inf))
        gap = np.maximum.reduce(gap_parts)
        value = (np.einsum("bm,bm->b", b_eq, ye) + np.einsum("bm,bm->b", b_ub, yu)
                 - np.sum(lb0 * g_b, axis=1))
    ok = (scale > 0) & certificate_passes(gap, value, tol)
    ok &= _finite_rows(y_eq) & _finite_rows(y_ub) & ~np.isnan(gap) & np.isfinite(value)
    return pd.DataFrame({"cert_gap": gap, "cert_value": value, "certificate_ok": ok})


def _qp_certificate(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances) -> pd.DataFrame:
    """``farkas_check`` of the solver's duals against the batch's standard form."""
    return farkas_check(batch.A_eq, batch.b_eq, batch.A_ub, batch.b_ub, batch.lb, batch.cones, batch.cone_mu,
                        solution.y_eq, solution.y_ub, tol)


def qp_objective(batch: ProblemBatch, x: np.ndarray) -> np.ndarray:
    """``c@x + 0.5 x@P@x`` per case, recomputed in float64 from ``x``."""
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.einsum("bn,bn->b", batch.c, x)
        if batch.P is not None:
            value = value + 0.5 * np.einsum("bi,bij,bj->b", x, batch.P, x)
    return value


def verify_qp(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-case verdicts and residuals for a QP / SOCP batch (see module docstring).

    ``verdict``: ``feasible`` (``x`` passes the primal check), ``infeasible`` (the duals
    pass ``farkas_check``: a certificate, whatever the solver said), ``uncertain`` (a
    finite answer, or a claim, that proves neither; both proofs at once is uncertain
    too) or ``failed`` (no finite ``x``, no certificate, no claim of infeasibility).
    Columns: ``verdict``, ``primal_residual``, ``eq_residual``, ``max_cone_utilization``,
    ``dual_residual``, ``certified``, ``cert_gap``, ``cert_value``, ``qp_objective``
    (from ``x``), ``said`` (the solver's status value, recorded, never trusted).
    """
    if batch.kind not in ("qp", "socp"):
        raise ValueError(f"batch.kind: expected 'qp' or 'socp', got {batch.kind!r}")
    primal = _qp_primal(batch, solution.x)
    cert = _qp_certificate(batch, solution, tol)
    said_infeasible = np.asarray(solution.status == Status.INFEASIBLE, dtype=bool)
    feasible = primal["primal_residual"].to_numpy() <= tol.qp_residual
    certified = cert["certificate_ok"].to_numpy()
    finite = _finite_rows(solution.x)
    verdict = np.where(feasible & ~certified, "feasible",
                       np.where(certified & ~feasible, "infeasible",
                                np.where(finite | said_infeasible | certified, "uncertain", "failed")))
    return pd.concat([pd.DataFrame({"verdict": verdict}), primal, pd.DataFrame({
        "dual_residual": _qp_dual(batch, solution),
        "certified": certified,
        "cert_gap": cert["cert_gap"].to_numpy(), "cert_value": cert["cert_value"].to_numpy(),
        "qp_objective": qp_objective(batch, solution.x),
        "said": [s.value for s in solution.status],
    })], axis=1)


def qp_outcomes(checked: pd.DataFrame, ref: pd.DataFrame, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """``outcome`` and ``rel_gap`` per case from ``verify_qp`` rows and the reference rows
    (``truth`` feasible / infeasible / unknown, ``ref_objective``).

    ``correct`` needs a verified answer: a feasible ``x`` within ``qp_gap`` of the
    reference optimum, or a certified ``infeasible`` where the reference is infeasible.
    An uncertified infeasibility claim is ``uncertain``; a certificate on a problem the
    reference solved is ``false_reject``; a feasible ``x`` on an infeasible reference,
    or an ``x`` that fails the primal check under an OPTIMAL claim, is ``false_accept``.
    """
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
         (truth == "infeasible") & (v == "feasible"),
         said_optimal & (v == "uncertain") & np.isfinite(checked["primal_residual"].to_numpy())],
        ["uncertain", "correct", "suboptimal", "correct", "false_reject", "failed", "false_accept", "false_accept"],
        default="uncertain",
    )
    return pd.DataFrame({"outcome": outcome, "rel_gap": np.where(feasible_ref, gap, np.nan)})
