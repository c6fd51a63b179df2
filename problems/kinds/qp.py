"""Kind ``qp``: one convex QP per case in standard form, verified from the standard form alone.

Also the base of the other standard-form kinds (``socp``: friction cones; ``lp``: plain
LPs), which change only their problem class and reference solver.

``verify_qp`` computes relative primal residuals (rows, bounds, cones), the KKT stationarity
residual where the solver returned duals, and the objective's relative gap to the reference.
A verdict is ``feasible`` (the primal check passes), ``infeasible`` (the duals pass
``farkas_check``, cones included), ``uncertain`` (an ``x`` that fails the check, or a claim
without its proof) or ``failed``. Outcomes (``qp_outcomes``): ``correct`` (feasible within
``qp_gap`` of the reference optimum, or certified infeasible where the reference is),
``suboptimal``, ``false_accept`` (forces that break a constraint under an optimal claim, or a
feasible answer to an infeasible reference: unsafe), ``false_reject``, ``uncertain``,
``failed``. Reference: Clarabel at 1e-10. The rules in full: docs/verification.md."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from solvers import STATUS_TEXT, Status
from solvers.errors import ProblemError
from solvers.types import text_codes, text_column

from ..batch import ProblemBatch
from .base import Kind
from .checks import DEFAULT_TOLERANCES, OUTCOMES, Tolerances, farkas_check, finite_rows, ray_check, row_max

#: the QP / SOCP float64 reference: Clarabel at 1e-10, never the registry's ``clarabel``.
QP_REFERENCE = ("solvers.clarabel_:ClarabelAdapter", "clarabel", "high_accuracy")
VERDICTS = ("feasible", "infeasible", "unbounded", "uncertain", "failed")
#: the reference's ``truth`` of a QP / SOCP / LP case
TRUTHS = ("feasible", "infeasible", "unbounded", "unknown")


def _qp_primal(batch, x: np.ndarray) -> pd.DataFrame:
    """Primal residuals of ``x`` (B, n) in the batch's standard form, each row's violation
    relative to that row's own size, the magnitudes its value is made of: an equality or
    inequality row ``a_i x ? b_i`` by ``1 + |b_i| + sum_j |a_ij x_j|``, a finite bound by
    ``1 + |lb_j|``, a cone ``|x_t| <= mu x_n`` by ``1 + |x_t| + mu |x_n|``. ``primal_residual``
    is the largest of them, so a row with a large right-hand side loosens no other row."""
    B = len(x)
    with np.errstate(invalid="ignore", over="ignore"):
        def rows(A, b):
            size = 1.0 + np.abs(b) + np.einsum("bmn,bn->bm", np.abs(A), np.abs(x))
            return (np.einsum("bmn,bn->bm", A, x) - b) / size
        eq = row_max(np.abs(rows(batch.A_eq, batch.b_eq)), initial=0.0)
        ub = row_max(rows(batch.A_ub, batch.b_ub), initial=0.0)
        lb = batch.lb if batch.lb is not None else np.zeros_like(x)
        finite = np.isfinite(lb)
        lb0 = np.where(finite, lb, 0.0)
        bound = row_max(np.where(finite, (lb0 - x) / (1.0 + np.abs(lb0)), 0.0), initial=0.0)
        cone = np.zeros(B)
        util = np.full(B, np.nan)
        if batch.cones is not None and len(batch.cones):
            idx = batch.cones
            f_n, r = x[:, idx[:, 0]], np.hypot(x[:, idx[:, 1]], x[:, idx[:, 2]])
            cone = row_max((r - batch.cone_mu * f_n) / (1.0 + r + batch.cone_mu * np.abs(f_n)))
            util = row_max(np.where(f_n > 0, r / (batch.cone_mu * np.where(f_n > 0, f_n, 1.0)), np.where(r > 0, np.inf, 0.0)))
        primal = np.maximum.reduce([eq, np.maximum(ub, 0), np.maximum(bound, 0), np.maximum(cone, 0)])
    primal = np.where(finite_rows(x), primal, np.nan)
    return pd.DataFrame({"primal_residual": primal, "eq_residual": eq, "max_cone_utilization": util})


def _qp_dual(batch, solution) -> np.ndarray:
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
        stat = row_max(np.where(free, np.abs(r), np.maximum(-r, 0.0)), initial=0.0)
        sign = row_max(y_ub, initial=0.0)
        scale = 1.0 + np.maximum(row_max(np.abs(batch.c), initial=0.0), row_max(np.abs(Px), initial=0.0))
        out = np.maximum(stat, np.maximum(sign, 0.0)) / scale
    ok = finite_rows(x) & finite_rows(y_eq) & finite_rows(y_ub)
    return np.where(ok, out, np.nan)


def _qp_certificate(batch, solution, tol: Tolerances) -> pd.DataFrame:
    """``farkas_check`` of the solver's duals against the batch's standard form."""
    return farkas_check(batch.A_eq, batch.b_eq, batch.A_ub, batch.b_ub, batch.lb, batch.cones, batch.cone_mu,
                        solution.y_eq, solution.y_ub, tol)


def solution_rays(solution) -> np.ndarray:
    """The rays an adapter returned (``extras['ray']``, (B, n)), NaN where it gave none."""
    ray = solution.extras.get("ray") if solution.extras else None
    if ray is None:
        return np.full(solution.x.shape, np.nan)
    return np.asarray(ray, dtype=float).reshape(solution.x.shape)


def qp_objective(batch, x: np.ndarray) -> np.ndarray:
    """``c@x + 0.5 x@P@x`` per case, recomputed in float64 from ``x``."""
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.einsum("bn,bn->b", batch.c, x)
        if batch.P is not None:
            value = value + 0.5 * np.einsum("bi,bij,bj->b", x, batch.P, x)
    return value


def dual_bound(batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> np.ndarray:
    """(B,) the lower bound on the optimum that ``solution``'s duals prove (weak duality),
    NaN where they prove none.

    With ``z = P x + c - A_eq^T y_eq - A_ub^T y_ub`` (the bound multipliers, 0 on free
    variables) every feasible ``u`` has ``c@u + u@P@u/2 >= b_eq@y_eq + b_ub@y_ub + lb@z -
    x@P@x/2``, provided ``y_ub <= 0``, ``z >= 0`` on bounded variables and ``z = 0`` on free
    ones (the project's sign convention). The duals prove the bound where those conditions
    hold within ``tol.qp_residual`` (``_qp_dual``'s relative KKT residual). NaN with cones
    (no cone multipliers are returned) and where ``x`` or the duals are not finite."""
    B, n = solution.x.shape
    stationary = _qp_dual(batch, solution) <= tol.qp_residual
    P = batch.P if batch.P is not None else np.zeros((B, n, n))
    lb = batch.lb if batch.lb is not None else np.zeros((B, n))
    bounded = np.isfinite(lb)
    with np.errstate(invalid="ignore", over="ignore"):
        x = solution.x
        Px = np.einsum("bij,bj->bi", P, x)
        z = np.where(bounded, np.maximum(
            Px + batch.c - np.einsum("bmn,bm->bn", batch.A_eq, solution.y_eq)
            - np.einsum("bmn,bm->bn", batch.A_ub, solution.y_ub), 0.0), 0.0)
        bound = (np.einsum("bm,bm->b", batch.b_eq, solution.y_eq) + np.einsum("bm,bm->b", batch.b_ub, solution.y_ub)
                 + np.einsum("bn,bn->b", np.where(bounded, lb, 0.0), z) - 0.5 * np.einsum("bn,bn->b", x, Px))
    return np.where(stationary & np.isfinite(bound), bound, np.nan)


def verify_qp(batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Per-case verdicts and residuals for a QP / SOCP batch (see module docstring).

    A claim is judged as made: an ``OPTIMAL`` claim by its ``x`` alone, ``feasible`` when it
    passes the primal check, else ``uncertain`` (a certificate in its duals does not turn a
    wrong ``x`` into a right answer). Any other answer is judged by what it proves:
    ``feasible`` (``x`` passes the primal check), ``infeasible`` (the duals pass
    ``farkas_check``: a certificate, whatever the solver said), ``unbounded`` (the
    adapter's ``extras['ray']`` passes ``ray_check``: a direction of unbounded descent),
    ``uncertain`` (a finite answer, or a claim, that proves none of these; contradictory
    proofs are uncertain too) or ``failed`` (no finite ``x``, no proof, no claim of
    infeasibility or unboundedness).
    Columns: ``verdict``, ``primal_residual``, ``eq_residual``, ``max_cone_utilization``,
    ``ray_gap``, ``ray_value``, ``ray_ok``, ``dual_residual``, ``certified``, ``cert_gap``, ``cert_value``, ``qp_objective``
    (from ``x``), ``said`` (the solver's status value, recorded, never trusted).
    """
    primal = _qp_primal(batch, solution.x)
    cert = _qp_certificate(batch, solution, tol)
    ray = ray_check(batch, solution_rays(solution), tol)
    said = text_column(STATUS_TEXT, solution.status)
    said_optimal = np.asarray(solution.status == Status.OPTIMAL, dtype=bool)
    said_infeasible = solution.status == Status.INFEASIBLE
    said_unbounded = solution.status == Status.UNBOUNDED
    feasible = primal["primal_residual"].to_numpy() <= tol.qp_residual
    certified = cert["certificate_ok"].to_numpy()
    has_ray = ray["ray_ok"].to_numpy()
    finite = finite_rows(solution.x)
    code = np.select(  # into VERDICTS: feasible 0, infeasible 1, unbounded 2, uncertain 3, failed 4
        [said_optimal & feasible, said_optimal & finite,
         certified & (feasible | has_ray), feasible & ~certified & ~has_ray, certified, has_ray],
        [0, 3, 3, 0, 1, 2], default=np.where(finite | said_infeasible | said_unbounded, 3, 4))
    return pd.concat([pd.DataFrame({"verdict": text_column(VERDICTS, code)}), primal, ray, pd.DataFrame({
        "dual_residual": _qp_dual(batch, solution),
        "certified": certified,
        "cert_gap": cert["cert_gap"].to_numpy(), "cert_value": cert["cert_value"].to_numpy(),
        "qp_objective": qp_objective(batch, solution.x),
        "said": said,
    })], axis=1)


def qp_outcomes(checked: pd.DataFrame, ref: pd.DataFrame, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """``outcome`` and ``rel_gap`` per case from ``verify_qp`` rows and the reference rows
    (``truth`` feasible / infeasible / unbounded / unknown, ``ref_objective`` and, where
    known, ``ref_dual_bound``).

    ``correct`` needs a verified answer: a feasible ``x`` whose objective is within
    ``qp_gap`` of the reference optimum on either side (``|rel_gap| <= qp_gap``), a
    certified ``infeasible`` where the reference is infeasible, or a verified ray
    (``unbounded``) where the reference is unbounded (feasible, with a verified ray of its
    own). A feasible ``x`` more than ``qp_gap`` above the optimum is ``suboptimal``; more
    than ``qp_gap`` below it (super-optimal) it is ``false_accept`` where the reference's
    duals prove its optimum (``ref_dual_bound`` within ``qp_gap`` of it: then such an
    ``x`` breaks a constraint by more than the check can see), else ``uncertain`` (the
    reference itself is in doubt). An uncertified infeasibility or unboundedness claim is
    ``uncertain``; a certificate on a problem the reference solved is ``false_reject``; a
    feasible ``x`` on an infeasible reference, an ``x`` that fails the primal check under an
    OPTIMAL claim, or a ray claimed on an infeasible problem, is ``false_accept``; a
    feasible ``x`` claimed OPTIMAL on an unbounded problem is ``suboptimal`` (safe forces,
    wrong answer: the optimum is infinitely far below).

    ``ref_agrees``: a correct answer, or one whose claim, proof or not, is the reference's truth (OPTIMAL on a
    feasible case, INFEASIBLE on an infeasible one, UNBOUNDED on an unbounded one); any
    other status claims nothing and agrees with nothing.
    """
    v = text_codes(checked["verdict"], VERDICTS)  # feasible 0, infeasible 1, unbounded 2, uncertain 3, failed 4
    said_optimal = text_codes(checked["said"], [Status.OPTIMAL.text]) == 0
    truth = text_codes(ref["truth"], TRUTHS)  # feasible 0, infeasible 1, unbounded 2, unknown 3
    ref_objective = ref["ref_objective"].to_numpy(dtype=float)
    ref_bound = ref["ref_dual_bound"].to_numpy(dtype=float) if "ref_dual_bound" in ref else np.full(len(ref), np.nan)
    with np.errstate(invalid="ignore"):
        gap = (checked["qp_objective"].to_numpy() - ref_objective) / (1.0 + np.abs(ref_objective))
        proven = (ref_objective - ref_bound) / (1.0 + np.abs(ref_objective)) <= tol.qp_gap
        feasible_ref = truth == 0
        unbounded_ref = truth == 2
        below = gap < -tol.qp_gap
        code = np.select(
            [truth == 3,
             feasible_ref & (v == 0) & below & proven,
             feasible_ref & (v == 0) & below,
             feasible_ref & (v == 0) & (gap <= tol.qp_gap),
             feasible_ref & (v == 0),
             (truth == 1) & (v == 1),
             unbounded_ref & (v == 2),
             (v == 1),
             v == 4,
             (truth == 1) & ((v == 0) | (v == 2)),
             unbounded_ref & (v == 0) & said_optimal,
             said_optimal & (v == 3) & np.isfinite(checked["primal_residual"].to_numpy())],
            [OUTCOMES.index(o) for o in ("uncertain", "false_accept", "uncertain", "correct", "suboptimal", "correct",
                                         "correct", "false_reject", "failed", "false_accept", "suboptimal",
                                         "false_accept")],
            default=OUTCOMES.index("uncertain"),
        )
    claims = text_codes(checked["said"], [Status.OPTIMAL.text, Status.INFEASIBLE.text, Status.UNBOUNDED.text])
    agrees = (code == OUTCOMES.index("correct")) | ((claims >= 0) & (claims == truth))  # TRUTHS' order
    return pd.DataFrame({"outcome": text_column(OUTCOMES, code), "rel_gap": np.where(feasible_ref, gap, np.nan),
                         "ref_agrees": agrees})


def qp_reference_rows(batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """QP / SOCP / LP reference rows: ``truth`` is ``feasible`` when the reference's ``x``
    passes the verifier's primal check, ``infeasible`` when its duals are a certificate (or
    the equality rows have no least-squares solution, itself a certificate), ``unbounded``
    when its ``x`` is feasible and its ray passes ``ray_check`` (``ref_objective`` -inf),
    else ``unknown`` (every solver's outcome on such a case is ``uncertain``).
    ``ref_objective`` is recomputed from its ``x``; ``ref_dual_bound`` is the lower bound
    its duals prove (``dual_bound``; NaN where they prove none)."""
    checked = verify_qp(batch, solution, tol)
    verdict = checked["verdict"].to_numpy(dtype=object)
    unbounded = (verdict == "unbounded") & (checked["primal_residual"] <= tol.qp_residual)
    truth = np.select([verdict == "feasible", verdict == "infeasible", unbounded],
                      ["feasible", "infeasible", "unbounded"], default="unknown")
    # Clarabel stops with InsufficientProgress on some rank-deficient, inconsistent equality
    # blocks (two-foot stances); equalities with no least-squares solution decide those.
    truth = np.where((truth == "unknown") & ~equalities_consistent(batch), "infeasible", truth)
    objective = np.where(truth == "feasible", checked["qp_objective"], np.where(truth == "unbounded", -np.inf, np.nan))
    bound = np.where(truth == "feasible", dual_bound(batch, solution, tol), np.nan)
    return pd.DataFrame({"truth": truth, "ref_objective": objective, "ref_dual_bound": bound,
                         "ref_verdict": checked["verdict"], "ref_status": checked["said"],
                         "ref_primal_residual": checked["primal_residual"]})


def equalities_consistent(batch, rtol: float = 1e-9) -> np.ndarray:
    """(B,) True where ``A_eq x = b_eq`` has a solution (least-squares residual within
    ``rtol * (1 + |b_eq|_inf)``), whatever the rank of ``A_eq``."""
    A, b = np.asarray(batch.A_eq, dtype=float), np.asarray(batch.b_eq, dtype=float)
    if A.shape[1] == 0:
        return np.ones(len(batch), bool)
    x = np.einsum("bnm,bm->bn", np.linalg.pinv(A), b)  # least squares for every case at once (stacked SVD)
    residual = row_max(np.abs(np.einsum("bmn,bn->bm", A, x) - b))
    return residual <= rtol * (1 + row_max(np.abs(b)))


def complete_unbounded(kind, batch, solution):
    """``solution`` with, on every case its reference solver called ``UNBOUNDED``, a ray
    (``extras['ray']``) and a feasible ``x`` where the solver returned none that verifies:
    the ray from ``min c@d`` over the recession cone cut to ``-1 <= d <= 1`` (``P d = 0``
    for a QP), the point from the problem with a zero objective, both solved by the same
    reference solver. The verifier then decides whether they prove the case unbounded
    (``qp_reference_rows``). Only the unbounded cases are walked (rare: none in the
    generated families)."""
    said = np.asarray(solution.status == Status.UNBOUNDED, dtype=bool)
    if not said.any():
        return solution
    from dataclasses import replace

    cls, _dist, profile = kind.reference_adapter()
    solver = cls(profile)
    rays, x = solution_rays(solution).copy(), np.array(solution.x, dtype=float)
    ok = ray_check(batch, rays, DEFAULT_TOLERANCES)["ray_ok"].to_numpy()
    for i in np.flatnonzero(said):
        case = batch.subset(np.array([i]))
        n = case.c.shape[1]
        lb = case.lb[0] if case.lb is not None else np.zeros(n)
        cones = {"cones": case.cones, "cone_mu": case.cone_mu[0]} if case.cones is not None else {}
        if not ok[i]:
            A_eq = case.A_eq[0] if case.P is None else np.vstack([case.A_eq[0], case.P[0]])
            d = solver.solve(case.c[0], A_eq, np.zeros(len(A_eq)), np.vstack([case.A_ub[0], np.eye(n)]),
                             np.concatenate([np.zeros(case.A_ub.shape[1]), np.ones(n)]),
                             lb=np.where(np.isfinite(lb), 0.0, -1.0), **cones)
            if d.status is Status.OPTIMAL:
                rays[i] = d.x
        if not finite_rows(x[i:i + 1])[0]:
            point = solver.solve(np.zeros(n), case.A_eq[0], case.b_eq[0], case.A_ub[0], case.b_ub[0], lb=lb, **cones)
            if point.status is Status.OPTIMAL:
                x[i] = point.x
    return replace(solution, x=x, extras={**solution.extras, "ray": rays})


class QpKind(Kind):
    """Standard-form QPs (see module docstring); ``socp`` and ``lp`` subclass it."""

    name = "qp"
    description = "convex QP (e.g. contact-force distribution): min c@x + x@P@x/2 over the standard form"
    problem_class = "qp"
    outcomes = ("correct", "suboptimal", "false_accept", "false_reject", "uncertain", "failed")
    reference_solver = QP_REFERENCE
    columns = {"verdict": "str", "primal_residual": "float64", "eq_residual": "float64",
               "max_cone_utilization": "float64", "ray_gap": "float64", "ray_value": "float64", "ray_ok": "bool",
               "dual_residual": "float64", "certified": "bool",
               "cert_gap": "float64", "cert_value": "float64", "qp_objective": "float64", "said": "str",
               "truth": "str", "ref_objective": "float64", "ref_dual_bound": "float64", "ref_verdict": "str", "ref_status": "str",
               "ref_primal_residual": "float64", "rel_gap": "float64", "outcome": "str", "ref_agrees": "bool"}

    def build(self, family: str, qps: list, meta: pd.DataFrame, params: dict[str, Any] | None = None,
              **options: Any) -> ProblemBatch:
        """A batch from same-shape problems: each item has ``c, A_eq, b_eq, A_ub, b_ub, P, lb``
        and, for cones, ``cones`` (the same for every item) and ``cone_mu`` (see
        ``solvers.types``)."""
        if not qps:
            raise ProblemError("qps: expected at least one problem")
        if len(meta) != len(qps):
            raise ProblemError(f"meta: expected {len(qps)} rows (one per problem), got {len(meta)}")
        shapes = {(np.shape(q.A_eq), np.shape(q.A_ub)) for q in qps}
        if len(shapes) != 1:
            raise ProblemError(f"qps: expected one shape across the batch, got {sorted(shapes)}")
        stack = lambda name: np.stack([np.asarray(getattr(q, name), float) for q in qps])  # noqa: E731
        cones = getattr(qps[0], "cones", None)
        if cones is not None and any(not np.array_equal(q.cones, cones) for q in qps):
            raise ProblemError("qps: expected the same cone indices in every problem of the batch")
        P = None if getattr(qps[0], "P", None) is None else stack("P")
        lb = None if getattr(qps[0], "lb", None) is None else stack("lb")
        return self.build_arrays(family, stack("c"), stack("A_eq"), stack("b_eq"), stack("A_ub"), stack("b_ub"),
                                 meta, params, P=P, lb=lb, cones=cones,
                                 cone_mu=None if cones is None else stack("cone_mu"))

    def build_arrays(self, family: str, c, A_eq, b_eq, A_ub, b_ub, meta: pd.DataFrame,
                     params: dict[str, Any] | None = None, *, P=None, lb=None, cones=None,
                     cone_mu=None) -> ProblemBatch:
        """A batch from stacked arrays (``build``'s stacks, for a family that computes them for
        the whole batch at once): ``c`` (B, n), ``A_eq`` (B, m_eq, n), ``b_eq`` (B, m_eq),
        ``A_ub`` (B, m_ub, n), ``b_ub`` (B, m_ub), ``P`` (B, n, n) or None, ``lb`` (B, n) or
        None, ``cones`` (C, 3) cone indices shared by every problem and ``cone_mu`` (B, C)."""
        if len(meta) != len(c):
            raise ProblemError(f"meta: expected {len(c)} rows (one per problem), got {len(meta)}")
        return ProblemBatch(
            family, self.name, c, A_eq, b_eq, A_ub, b_ub,
            meta.assign(scene_index=np.arange(len(c))).reset_index(drop=True), dict(params or {}),
            P, lb, None if cones is None else np.asarray(cones, dtype=np.int64), cone_mu)

    def solve_reference(self, batch):
        """The reference's answers, completed where it says ``UNBOUNDED`` (``complete_unbounded``)."""
        return complete_unbounded(self, batch, super().solve_reference(batch))

    def reference_rows(self, batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        return qp_reference_rows(batch, solution, tol)

    def verify(self, batch, solution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        return verify_qp(batch, solution, tol)

    def judge(self, checked, ref, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        return qp_outcomes(checked, ref, tol)

    def aggregations(self) -> dict[str, tuple[str, str]]:
        return {"max_rel_gap": ("rel_gap", "max"), "max_primal_res": ("primal_residual", "max"),
                "max_kkt_res": ("dual_residual", "max")}


KIND = QpKind()
