"""The adapter conformance suite: cases with known answers, and the per-adapter table.

Run by ``tests/test_conformance.py`` on every available adapter and by ``contactbench
check-adapter NAME``. Each case checks status, objective, primal and duals where the answer
is unique, and always the KKT conditions, so an answer is judged on its own merits; an
infeasible case passes with the right status, and duals, if returned, must form a Farkas
certificate.

Each adapter declares on its own class (``Adapter.CONFORMANCE``, a ``solvers.Conformance``)
its tolerances, the settings the suite runs it with (only where its defaults cannot finish a
case) and its known issues ``(dtype pattern, case pattern) -> reason``, shown as ``known
issue`` (pytest ``xfail``). A known issue that starts passing is an ``unexpected pass``, so a
declaration cannot go stale silently."""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

import solvers
from problems.kinds.checks import DEFAULT_TOLERANCES, farkas_check
from solvers import ProblemError, Status


@dataclass(frozen=True)
class Case:
    """A standard-form problem with what is known of its answer.

    ``expect`` is 'optimal', 'infeasible' or 'unbounded'. ``x``, ``y_eq``, ``y_ub`` are
    given only where they are unique; ``objective`` for every optimal case.
    """

    id: str
    description: str
    c: Any
    A_eq: Any
    b_eq: Any
    A_ub: Any
    b_ub: Any
    P: Any = None
    expect: str = "optimal"
    objective: float | None = None
    x: Any = None
    y_eq: Any = None
    y_ub: Any = None
    lb: Any = None
    cones: Any = None
    cone_mu: Any = None
    #: the problem structure (``Capabilities.structures``) the case has, if a special one.
    structure: str | None = None

    @property
    def is_qp(self) -> bool:
        return self.P is not None

    @property
    def is_socp(self) -> bool:
        return self.cones is not None

    def extra(self) -> dict[str, Any]:
        """Keyword arguments beyond the five arrays: ``P``, ``lb``, ``cones``, ``cone_mu``."""
        out: dict[str, Any] = {"P": self.P}
        if self.lb is not None:
            out["lb"] = np.asarray(self.lb, float)
        if self.cones is not None:
            out["cones"], out["cone_mu"] = np.asarray(self.cones), np.asarray(self.cone_mu, float)
        return out

    def lower(self) -> np.ndarray:
        return np.zeros(len(self.c)) if self.lb is None else np.asarray(self.lb, float)

    def arrays(self):
        """``(c, A_eq, b_eq, A_ub, b_ub)`` as float64 arrays."""
        return tuple(np.asarray(a, float) for a in (self.c, self.A_eq, self.b_eq, self.A_ub, self.b_ub))


def _none(n):
    return np.zeros((0, n)), np.zeros(0)


CASES: list[Case] = [
    Case("lp_eq_and_ub", "equality and binding inequality", [-1, -2], [[1, -1]], [1], [[1, 1]], [4],
         objective=-5.5, x=[2.5, 1.5], y_eq=[0.5], y_ub=[-1.5]),
    Case("lp_negative_eq_rhs", "the same LP with its equality row negated", [-1, -2], [[-1, 1]], [-1], [[1, 1]], [4],
         objective=-5.5, x=[2.5, 1.5], y_eq=[-0.5], y_ub=[-1.5]),
    Case("lp_negative_ub_rhs", "a >= row written as <= with negative right-hand side", [1, 1], *_none(2),
         [[-1, -1], [1, 0]], [-2, 3], objective=2.0, y_ub=[-1.0, 0.0]),
    Case("lp_two_eq_rows", "two equality rows, one inequality-free", [1, 2, 3],
         [[1, 1, 1], [1, -1, 0]], [3, 1], *_none(3), objective=4.0, x=[2, 1, 0], y_eq=[1.5, -0.5]),
    Case("lp_infeasible", "x1 + x2 = -1 with x >= 0", [1, 1], [[1, 1]], [-1], *_none(2), expect="infeasible"),
    Case("lp_infeasible_ub", "x1 + x2 <= -1 with x >= 0", [1, 1], *_none(2), [[1, 1]], [-1], expect="infeasible"),
    Case("lp_unbounded", "min -x1 with x1 = x2 free to grow", [-1, 0], [[1, -1]], [0], *_none(2), expect="unbounded"),
    Case("lp_beale_cycling", "Beale's example: textbook simplex cycles without anti-cycling",
         [-0.75, 20, -0.5, 6], *_none(4), [[0.25, -8, -1, 9], [0.5, -12, -0.5, 3], [0, 0, 1, 0]], [0, 0, 1],
         objective=-1.25, x=[1, 0, 1, 0], y_ub=[0, -1.5, -1.25]),
    Case("lp_artificial_left_basic", "x1 = 0 written -x1 = 0 (phase 1 ends with that row's artificial basic at 0), "
         "x1 + x2 <= 1", [-2, -1], [[-1, 0]], [0], [[1, 1]], [1], objective=-1.0, x=[0, 1]),
    Case("lp_degenerate_vertex", "three constraints through one optimal vertex (primal degenerate)",
         [-1, -1], *_none(2), [[1, 0], [0, 1], [1, 1]], [1, 1, 2], objective=-2.0, x=[1, 1]),
    Case("lp_redundant_eq_rows", "linearly dependent equality rows", [1, 2, 3],
         [[1, 1, 1], [2, 2, 2], [1, -1, 0]], [3, 6, 1], *_none(3), objective=4.0, x=[2, 1, 0]),
    Case("lp_no_eq_rows", "inequalities only", [-1, -1], *_none(2), [[1, 2], [3, 1]], [4, 6],
         objective=-2.8, x=[1.6, 1.2], y_ub=[-0.4, -0.2]),
    Case("lp_no_ub_rows", "equalities only", [1, 2], [[1, 1]], [1], *_none(2), objective=1.0, x=[1, 0], y_eq=[1.0]),
    Case("lp_one_column", "one variable, one equality row", [2], [[1]], [3], *_none(1),
         objective=6.0, x=[3], y_eq=[2.0]),
    Case("lp_one_row", "one variable, one inequality row", [-1], *_none(1), [[1]], [2],
         objective=-2.0, x=[2], y_ub=[-1.0]),
    Case("lp_badly_scaled", "rows scaled 1e-6 and 1e3", [-1, -1], *_none(2), [[1e-6, 0], [0, 1e3]], [1e-6, 2e3],
         objective=-3.0, x=[1, 2], y_ub=[-1e6, -1e-3]),
    Case("qp_eq_and_ub", "strictly convex QP, equality active", [-1, -2], [[1, -1]], [1], [[1, 1]], [4],
         P=np.eye(2), objective=-1.5, x=[2, 1], y_eq=[1.0], y_ub=[0.0]),
    Case("qp_active_ub", "strictly convex QP, inequality active", [-3, -3], *_none(2), [[1, 1]], [2],
         P=np.eye(2), objective=-5.0, x=[1, 1], y_ub=[-2.0]),
    Case("qp_active_bound", "strictly convex QP, a bound x >= 0 active", [1, -1], *_none(2), *_none(2),
         P=np.eye(2), objective=-0.5, x=[0, 1]),
    Case("qp_rank_deficient_eq", "QP with a rank-deficient equality block (like a two-foot stance)",
         [0, 0], [[1, 1], [2, 2]], [2, 4], [[1, 0]], [5], P=np.eye(2), objective=1.0, x=[1, 1]),
    Case("qp_infeasible", "QP with x1 + x2 = -1 and x >= 0", [0, 0], [[1, 1]], [-1], *_none(2),
         P=np.eye(2), expect="infeasible"),
    Case("lp_free_variable", "x1 free, x2 >= 0: min x1 + x2 with x1 - x2 = -3", [1, 1], [[1, -1]], [-3],
         *_none(2), lb=[-np.inf, 0], objective=-3.0, x=[-3, 0], y_eq=[1.0]),
    Case("qp_free_variables", "all variables free: min 0.5|x|^2 with x1 + x2 = -2", [0, 0], [[1, 1]], [-2],
         *_none(2), P=np.eye(2), lb=[-np.inf, -np.inf], objective=1.0, x=[-1, -1], y_eq=[-1.0]),
    # Friction-cone SOCPs in the quadruped's layout: per foot (f_x, f_y, f_z), normal y, so each
    # cone is (n, t1, t2) = (1, 0, 2); objective sum |f|^2 (P = 2I); all variables free.
    Case("socp_one_foot", "one foot, the wrench fixes its force inside the cone (mu 0.5)", [0, 0, 0],
         np.eye(3), [0.3, 1, 0], *_none(3), P=2 * np.eye(3), lb=[-np.inf] * 3, cones=[[1, 0, 2]],
         cone_mu=[0.5], objective=1.09, x=[0.3, 1, 0], structure="force-socp"),
    Case("socp_two_feet_even", "two feet share a net force evenly: y = d obj / d b = b",
         [0] * 6, np.hstack([np.eye(3), np.eye(3)]), [0.4, 2, 0], *_none(6), P=2 * np.eye(6),
         lb=[-np.inf] * 6, cones=[[1, 0, 2], [4, 3, 5]], cone_mu=[0.5, 0.5], objective=2.08,
         x=[0.2, 1, 0, 0.2, 1, 0], y_eq=[0.4, 2, 0], structure="force-socp"),
    Case("socp_two_feet_cone_active", "uneven normal loads: the lightly loaded foot's cone binds",
         [0] * 6, np.vstack([np.hstack([np.eye(3), np.eye(3)]), [0, 1, 0, 0, -1, 0]]), [0.8, 2, 0, 1.2],
         *_none(6), P=2 * np.eye(6), lb=[-np.inf] * 6, cones=[[1, 0, 2], [4, 3, 5]], cone_mu=[0.5, 0.5],
         objective=3.12, x=[0.6, 1.6, 0, 0.2, 0.4, 0], structure="force-socp"),
    Case("socp_outside_cone", "one foot, the wrench demands a force outside its cone", [0, 0, 0],
         np.eye(3), [1, 1, 0], *_none(3), P=2 * np.eye(3), lb=[-np.inf] * 3, cones=[[1, 0, 2]],
         cone_mu=[0.5], expect="infeasible", structure="force-socp"),
    # Textbook edge LPs: each once broke an adapter's status or raised.
    Case("lp_unbounded_zero_column", "min -x0 - x1 s.t. x2 <= 2: x0, x1 appear in no row",
         [-1, -1, 0], *_none(3), [[0, 0, 1]], [2], expect="unbounded"),
    Case("lp_no_rows", "min x0 + x1 with no constraint rows (x >= 0 only)", [1, 1], *_none(2), *_none(2),
         objective=0.0, x=[0, 0]),
    Case("lp_no_rows_unbounded", "min -x0 with no constraint rows", [-1], *_none(1), *_none(1), expect="unbounded"),
    Case("lp_free_eq_only_unbounded", "min x0 + 2 x1 + 3 x2 s.t. x0 + x1 + x2 = 1, every variable free",
         [1, 2, 3], [[1, 1, 1]], [1], *_none(3), lb=[-np.inf] * 3, expect="unbounded"),
    Case("lp_degenerate_fan", "c = -1, A_eq = [cos t_k - 1; sin t_k], t_k = 2 pi k / 21 (k = 1..20), b = 0: "
         "only x = 0 is feasible", -np.ones(20),
         np.vstack([np.cos(2 * np.pi * np.arange(1, 21) / 21) - 1, np.sin(2 * np.pi * np.arange(1, 21) / 21)]),
         [0, 0], *_none(20), objective=0.0, x=np.zeros(20)),
    Case("lp_inconsistent_eq", "x0 + x1 = 1 and x0 + x1 = 2", [1, 1], [[1, 1], [1, 1]], [1, 2], *_none(2),
         expect="infeasible"),
    Case("socp_projection", "Euclidean projection of (f_y, f_x) = (0, 2) onto the mu = 0.5 cone",
         [-2, 0, 0], *_none(3), *_none(3), P=np.eye(3), lb=[-np.inf] * 3, cones=[[1, 0, 2]], cone_mu=[0.5],
         objective=-0.4, x=[0.4, 0.8, 0]),
]

DEFAULT_ATOL = {"float32": 1e-3, "float64": 1e-6}


def declaration(name: str) -> solvers.Conformance:
    """The adapter's own ``CONFORMANCE`` declaration (tolerances, settings, known issues)."""
    return solvers.adapter_class(name).CONFORMANCE


def tolerance(name: str, dtype: str) -> float:
    """Absolute tolerance for the adapter at ``dtype``."""
    return declaration(name).atol.get(dtype, DEFAULT_ATOL[dtype])


def certificate_tolerance(name: str, dtype: str) -> float:
    """Tolerance of the adapter's infeasibility certificates at ``dtype`` (relative sign-
    condition gap): its ``certificate_atol`` where declared, else ``tolerance``."""
    return declaration(name).certificate_atol.get(dtype, tolerance(name, dtype))


def known_issue(name: str, dtype: str, case_id: str) -> str | None:
    """The declared reason when (adapter, dtype, check) is a known issue, else None."""
    for (dtype_pat, case_pat), reason in declaration(name).known.items():
        if fnmatch.fnmatch(dtype, dtype_pat) and fnmatch.fnmatch(case_id, case_pat):
            return reason
    return None


def traits(case: Case) -> solvers.ProblemTraits:
    """What ``Capabilities.accepts`` needs to know of a conformance case."""
    pclass = "socp" if case.is_socp else "qp" if case.is_qp else "lp"
    return solvers.ProblemTraits.of(case, pclass, case.structure)


def applicable(cls: type[solvers.Adapter], case: Case) -> str | None:
    """None when the adapter's capabilities cover the case, else why not (``Capabilities.accepts``)."""
    why = cls.CAPABILITIES.accepts(traits(case))
    return f"adapter {why}" if why else None


def _farkas_failures(case: Case, s, atol: float) -> list[str]:
    """When the adapter offers duals on an infeasible case, they must pass the verifier's
    Farkas check (``problems.kinds.checks.farkas_check``: bounds and cones included) at the
    adapter's tolerance."""
    if not (np.all(np.isfinite(s.y_eq)) and np.all(np.isfinite(s.y_ub))):
        return []  # no certificate offered: nothing more to check
    c, A_eq, b_eq, A_ub, b_ub = case.arrays()
    cones = np.asarray(case.cones) if case.is_socp else None
    mu = np.asarray(case.cone_mu, float)[None] if case.is_socp else None
    checked = farkas_check(A_eq[None], b_eq[None], A_ub[None], b_ub[None], case.lower()[None], cones, mu,
                           s.y_eq[None], s.y_ub[None], replace(DEFAULT_TOLERANCES, certificate=atol)).iloc[0]
    if checked["certificate_ok"]:
        return []
    return [f"certificate: the duals do not prove infeasibility (sign-condition gap {checked['cert_gap']:.3g}, "
            f"value {checked['cert_value']:.3g})"]


def kkt_failures(case: Case, s, atol: float) -> list[str]:
    """KKT conditions of an optimal answer in the project's sign convention."""
    c, A_eq, b_eq, A_ub, b_ub = case.arrays()
    P = np.zeros((len(c), len(c))) if case.P is None else np.asarray(case.P, float)
    x, y_eq, y_ub = s.x, s.y_eq, s.y_ub
    out = []
    scale = 1.0 + max(np.max(np.abs(np.concatenate([c, b_eq, b_ub]))) if len(b_eq) + len(b_ub) else 0.0,
                      np.max(np.abs(c)))
    tol = atol * scale
    if case.is_socp:
        return _cone_failures(case, x, tol)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y_eq)) and np.all(np.isfinite(y_ub))):
        return ["non-finite primal or dual"]
    lb = case.lower()
    free = ~np.isfinite(lb)
    x_off = np.where(free, 0.0, x - np.where(free, 0.0, lb))  # distance above the bound, 0 if free
    if np.any(x_off < -tol):
        out.append(f"x >= lb violated by {-x_off.min():.3g}")
    if len(b_eq) and np.max(np.abs(A_eq @ x - b_eq)) > tol:
        out.append(f"A_eq x = b_eq violated by {np.max(np.abs(A_eq @ x - b_eq)):.3g}")
    if len(b_ub) and np.max(A_ub @ x - b_ub) > tol:
        out.append(f"A_ub x <= b_ub violated by {np.max(A_ub @ x - b_ub):.3g}")
    if len(y_ub) and np.max(y_ub) > tol:
        out.append(f"y_ub <= 0 (project sign) violated: max {np.max(y_ub):.3g}")
    rc = P @ x + c - A_eq.T @ y_eq - A_ub.T @ y_ub
    if np.any(free) and np.max(np.abs(rc[free])) > tol:
        out.append(f"stationarity: reduced costs of free variables = 0 violated by {np.max(np.abs(rc[free])):.3g}")
    rc_b = np.where(free, 0.0, rc)
    if np.min(rc_b) < -tol:
        out.append(f"stationarity: reduced costs >= 0 violated by {-rc_b.min():.3g}")
    if np.max(np.abs(x_off * rc_b)) > tol * (1 + np.max(np.abs(x))):
        out.append(f"complementary slackness (x - lb)*rc = {np.max(np.abs(x_off * rc_b)):.3g}")
    if len(b_ub) and np.max(np.abs(y_ub * (A_ub @ x - b_ub))) > tol * (1 + np.max(np.abs(y_ub))):
        out.append(f"complementary slackness y_ub*(A_ub x - b_ub) = {np.max(np.abs(y_ub * (A_ub @ x - b_ub))):.3g}")
    primal = c @ x + x @ P @ x
    dual = b_eq @ y_eq + b_ub @ y_ub + np.where(free, 0.0, np.where(free, 0.0, lb) * rc_b).sum()
    if abs(primal - dual) > 10 * tol * (1 + abs(primal)):
        out.append(f"strong duality: c@x + x@P@x = {primal:.6g} but b@y = {dual:.6g}")
    return out


def _cone_failures(case: Case, x: np.ndarray, tol: float) -> list[str]:
    """Primal feasibility of an SOCP answer (the Solution carries no cone multipliers)."""
    c, A_eq, b_eq, A_ub, b_ub = case.arrays()
    if not np.all(np.isfinite(x)):
        return ["non-finite primal"]
    out = []
    if len(b_eq) and np.max(np.abs(A_eq @ x - b_eq)) > tol:
        out.append(f"A_eq x = b_eq violated by {np.max(np.abs(A_eq @ x - b_eq)):.3g}")
    for (i_n, i_1, i_2), mu in zip(np.asarray(case.cones), np.asarray(case.cone_mu, float)):
        if np.hypot(x[i_1], x[i_2]) > mu * x[i_n] + tol:
            out.append(f"cone ({i_n}, {i_1}, {i_2}) violated: |f_t| = {np.hypot(x[i_1], x[i_2]):.6g} > "
                       f"mu f_n = {mu * x[i_n]:.6g}")
    return out


def case_failures(adapter: solvers.Adapter, case: Case, atol: float, certificate_atol: float | None = None) -> list[str]:
    """Why the adapter's answer to ``case`` is wrong (empty list: it passes). A certificate
    of infeasibility is checked at ``certificate_atol`` (default ``atol``)."""
    s = adapter.solve(*case.arrays(), **case.extra())
    if case.expect != "optimal":
        want = Status.INFEASIBLE if case.expect == "infeasible" else Status.UNBOUNDED
        if s.status is not want:
            return [f"status {s.status.text} ({s.native_status}), expected {want.text}"]
        return _farkas_failures(case, s, atol if certificate_atol is None else certificate_atol) \
            if case.expect == "infeasible" else []
    out = []
    if s.status is not Status.OPTIMAL:
        out.append(f"status {s.status.text} ({s.native_status}), expected optimal")
    if not np.isfinite(s.objective) or abs(s.objective - case.objective) > atol * (1 + abs(case.objective)):
        out.append(f"objective {s.objective:.8g}, expected {case.objective:.8g}")
    for name in ("x", "y_eq", "y_ub"):
        want = getattr(case, name)
        if want is not None:
            got = getattr(s, name)
            want = np.asarray(want, float)
            if got.shape != want.shape or not np.allclose(got, want, atol=atol, rtol=atol):
                out.append(f"{name} {np.array2string(got, precision=6)}, expected {np.array2string(want, precision=6)}")
    return out + kkt_failures(case, s, atol)


def batch_case(cls: type[solvers.Adapter]) -> Case | None:
    """The first optimal case with equality rows that the adapter takes (for the batch check)."""
    return next((c for c in CASES if c.expect == "optimal" and len(c.b_eq) and applicable(cls, c) is None), None)


def batch_failures(adapter: solvers.Adapter, atol: float) -> list[str]:
    """``solve_batch`` must equal a loop of ``solve`` on a batch of scaled right-hand sides."""
    case = batch_case(type(adapter))
    c, A_eq, b_eq, A_ub, b_ub = case.arrays()
    rhs = np.outer([1.0, 0.5, 2.0], b_eq)
    stack = lambda a: None if a is None else np.stack([np.asarray(a)] * 3)  # noqa: E731
    extra = case.extra()
    batched = {k: (v if k == "cones" else stack(v)) for k, v in extra.items()}
    batch = adapter.solve_batch(stack(c), stack(A_eq), rhs, stack(A_ub), stack(b_ub), **batched)
    out = []
    for i in range(3):
        single = adapter.solve(c, A_eq, rhs[i], A_ub, b_ub, **extra)
        if not np.allclose(batch.x[i], single.x, atol=atol, equal_nan=True):
            out.append(f"batch case {i}: x {batch.x[i]} differs from single solve {single.x}")
    return out


def bad_input_failures(adapter: solvers.Adapter) -> list[str]:
    """NaN and shape mismatches must raise ProblemError before the solver runs."""
    out = []
    called = []
    original = adapter.run
    adapter.run = lambda prepared: called.append(1) or original(prepared)  # type: ignore[method-assign]
    try:
        for label, args in (
            ("NaN in b_eq", ([1.0, 1.0], [[1.0, 1.0]], [np.nan], np.zeros((0, 2)), np.zeros(0))),
            ("A_eq with 3 columns for 2 variables", ([1.0, 1.0], [[1.0, 1.0, 1.0]], [1.0], np.zeros((0, 2)), np.zeros(0))),
            ("complex c", (np.array([1.0 + 1j, 1.0]), [[1.0, 1.0]], [1.0], np.zeros((0, 2)), np.zeros(0))),
            ("no variables", (np.zeros(0), np.zeros((1, 0)), [1.0], np.zeros((0, 0)), np.zeros(0))),
            ("b_ub at 1e25, past every solver's infinity", ([-1.0], np.zeros((0, 1)), np.zeros(0), [[1.0]], [1e25])),
        ):
            try:
                adapter.solve(*args)
                out.append(f"{label}: no ProblemError")
            except ProblemError:
                pass
    finally:
        adapter.run = original  # type: ignore[method-assign]
    if called:
        out.append("the solver ran on bad input")
    return out


def conformance_adapter(name: str, dtype: str, cache: dict | None = None) -> solvers.Adapter:
    """The adapter as the suite runs it: its defaults plus the table's ``settings``.

    ``cache`` (owned by the caller) keeps one instance per (name, dtype), so a JAX
    adapter compiles each shape once per suite run rather than once per check.
    """
    if cache is None:
        return solvers.get(name, dtype=dtype, **declaration(name).settings)
    if (name, dtype) not in cache:
        cache[(name, dtype)] = conformance_adapter(name, dtype)
    return cache[(name, dtype)]


def check_ids() -> list[str]:
    """Every check the suite runs per (adapter, dtype): the cases, then the generic checks."""
    return [c.id for c in CASES] + ["solve_batch_equals_loop", "float32_close_to_float64", "bad_input",
                                    "optimal_implies_finite", "proofs_returned"]


def missing_proofs(adapter: solvers.Adapter) -> list[str]:
    """The infeasible and unbounded cases this adapter takes on which it returns no proof: no
    certificate (finite duals) for an infeasible one, no ray (``extras['ray']``) for an
    unbounded one. Without them its infeasibility and unboundedness answers count
    ``uncertain`` in every run (``check-adapter`` warns; it is no failure)."""
    out = []
    for case in CASES:
        if case.expect not in ("infeasible", "unbounded") or applicable(type(adapter), case):
            continue
        try:
            s = adapter.solve(*case.arrays(), **case.extra())
        except Exception:
            continue
        if case.expect == "infeasible" and not (np.all(np.isfinite(s.y_eq)) and np.all(np.isfinite(s.y_ub))):
            out.append(f"{case.id}: no certificate")
        elif case.expect == "unbounded" and not np.all(np.isfinite(np.asarray(s.extras.get("ray", np.nan), float))):
            out.append(f"{case.id}: no ray")
    return out


def optimal_finite_failures(adapter: solvers.Adapter) -> list[str]:
    """On every case the adapter takes: it returns a status (or refuses with ProblemError),
    and OPTIMAL comes with a finite ``x`` and objective (the base class's contract)."""
    out = []
    for case in CASES:
        if applicable(type(adapter), case):
            continue
        try:
            s = adapter.solve(*case.arrays(), **case.extra())
        except ProblemError:
            continue
        if not isinstance(s.status, Status):
            out.append(f"{case.id}: status {s.status!r} is not a Status")
        elif s.status is Status.OPTIMAL and not (np.all(np.isfinite(s.x)) and np.isfinite(s.objective)):
            out.append(f"{case.id}: OPTIMAL with x = {s.x}, objective {s.objective}")
    return out


def run_check(name: str, dtype: str, check_id: str, cache: dict | None = None) -> tuple[str, str]:
    """Run one check: (result, reason) with result in pass, fail, known issue,
    unexpected pass, not applicable, or warn (``proofs_returned``: no failure).
    ``cache``: see ``conformance_adapter``."""
    cls = solvers.adapters()[name]
    atol = tolerance(name, dtype)
    case = next((c for c in CASES if c.id == check_id), None)
    if case is not None and (why := applicable(cls, case)):
        return "not applicable", why
    if check_id == "solve_batch_equals_loop" and batch_case(cls) is None:
        return "not applicable", "no conformance case with equality rows fits this adapter"
    if check_id == "float32_close_to_float64" and not {"float32", "float64"} <= set(cls.CAPABILITIES.dtypes):
        return "not applicable", "adapter has one precision"
    if check_id == "float32_close_to_float64" and dtype != "float32":
        return "not applicable", "checked once, on the float32 run"
    adapter = conformance_adapter(name, dtype, cache)
    try:
        if case is not None:
            failures = case_failures(adapter, case, atol, certificate_tolerance(name, dtype))
        elif check_id == "solve_batch_equals_loop":
            failures = batch_failures(adapter, atol)
        elif check_id == "bad_input":
            failures = bad_input_failures(adapter)
        elif check_id == "optimal_implies_finite":
            failures = optimal_finite_failures(adapter)
        elif check_id == "proofs_returned":
            missing = missing_proofs(adapter)
            return ("warn", "; ".join(missing) + ": such answers count uncertain in every run") if missing \
                else ("pass", "")
        else:
            failures = float32_failures(name, atol, cache)
    except Exception as exc:  # an adapter crash is a failure of that check, reported with its type
        failures = [f"raised {type(exc).__name__}: {exc}"]
    reason = known_issue(name, dtype, check_id)
    if failures:
        return ("known issue", f"{reason} | seen: {failures[0]}") if reason else ("fail", "; ".join(failures))
    return ("unexpected pass", f"listed as known issue: {reason}") if reason else ("pass", "")


def float32_failures(name: str, atol32: float, cache: dict | None = None) -> list[str]:
    """On every optimal LP/QP case both precisions solve, float32 is within its tolerance of float64."""
    cls = solvers.adapters()[name]
    out = []
    a32, a64 = conformance_adapter(name, "float32", cache), conformance_adapter(name, "float64", cache)
    for case in CASES:
        if case.expect != "optimal" or applicable(cls, case) or known_issue(name, "float32", case.id) \
                or known_issue(name, "float64", case.id):
            continue
        s32, s64 = a32.solve(*case.arrays(), **case.extra()), a64.solve(*case.arrays(), **case.extra())
        if not np.allclose(s32.x, s64.x, atol=atol32, rtol=atol32):
            out.append(f"{case.id}: float32 x {s32.x} vs float64 {s64.x}")
    return out


@functools.lru_cache(maxsize=None)
def _process_cache() -> dict:
    """The adapter cache of this process's checks (``conformance_adapter``): a supervised
    worker runs many checks, and a JAX adapter compiles each shape once there."""
    return {}


def check_job(name: str, dtype: str, check_id: str, out: str, log: str, *, parent_pid: int) -> None:
    """A worker job (``bench.engine.execute``): ``run_check`` with the adapter's output in the file
    ``log``, its ``(result, reason)`` written to ``out`` as JSON."""
    import json

    from bench.engine.execute import exit_if_orphaned, output_to

    output_to(log, append=True)
    result = run_check(name, dtype, check_id, _process_cache())
    exit_if_orphaned(parent_pid)
    Path(out).write_text(json.dumps(result))


def run_adapter_supervised(name: str, dtypes: list[str] | None = None, timeout: float = 120.0,
                           on_check: Callable[[str, str], None] | None = None,
                           checks: list[str] | None = None) -> pd.DataFrame:
    """``run_adapter`` with every check in a supervised worker process (``bench.engine.execute``): an
    adapter that ends its process (``sys.exit``, a crash) or does not return within
    ``timeout`` seconds fails that check, with the reason and its output's last lines, and
    the other checks still run. ``on_check(dtype, check)`` is called as each one starts;
    ``checks``: only these check ids (default every one; ``ProblemError`` naming an unknown
    one)."""
    import json
    import tempfile

    from bench.engine.execute import LocalPool, log_tail

    cls = solvers.adapters()[name]
    unknown = sorted(set(checks or []) - set(check_ids()))
    if unknown:
        raise ProblemError(f"checks: expected ids of {check_ids()}, got {unknown}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="contactbench-check-") as tmp, LocalPool() as pool:
        log = Path(tmp) / "adapter.log"
        for dtype in dtypes or list(cls.CAPABILITIES.dtypes):
            for check_id in [c for c in check_ids() if not checks or c in checks]:
                if on_check is not None:
                    on_check(dtype, check_id)
                out = Path(tmp) / f"{dtype}-{check_id}.json"
                state, why = pool.run((check_job, (name, dtype, check_id, str(out), str(log))), dtype, timeout)
                if state == "done" and out.is_file():
                    result, reason = json.loads(out.read_text())
                else:
                    tail = log_tail(log, 5)
                    result, reason = "fail", f"{state}: {why}" + (f"; its output ended: {tail}" if tail else "")
                rows.append({"adapter": name, "dtype": dtype, "check": check_id, "result": result, "reason": reason})
    return pd.DataFrame(rows)


def run_adapter(name: str, dtypes: list[str] | None = None) -> pd.DataFrame:
    """Every check for one adapter: columns adapter, dtype, check, result, reason."""
    cls = solvers.adapters()[name]
    rows, cache = [], {}
    for dtype in dtypes or list(cls.CAPABILITIES.dtypes):
        for check_id in check_ids():
            result, reason = run_check(name, dtype, check_id, cache)
            rows.append({"adapter": name, "dtype": dtype, "check": check_id, "result": result, "reason": reason})
    return pd.DataFrame(rows)
