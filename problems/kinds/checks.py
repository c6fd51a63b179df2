"""What every kind's verifier shares: the tolerances, the one certificate rule, the
standard-form Farkas check, and the outcome names.

Units follow the problems: hold-test wrenches are in m*g (forces) and m*g*l (torques);
standard-form residuals are relative to ``1 + max |b|``.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from solvers.types import finite_rows  # the one owner (``Adapter.finish`` reads it too)

__all__ = ["Outcome", "OUTCOMES", "SEVERITY", "UNSAFE", "WRONG", "UNPROVEN", "Tolerances",
           "DEFAULT_TOLERANCES", "finite_rows", "row_max", "row_min", "certificate_passes", "farkas_check",
           "ray_check"]


class Outcome(str, enum.Enum):
    """What an answer is against the reference, in report order, each with its severity
    (0 the worst: a case answered several times counts with its most severe outcome)."""

    CORRECT = "correct", 5  # proven and agreeing with the reference
    SUBOPTIMAL = "suboptimal", 4  # feasible, proven, but off the reference optimum (safe, wrong)
    FALSE_ACCEPT = "false_accept", 0  # unsafe: "it holds" / forces that break a constraint
    FALSE_REJECT = "false_reject", 3  # "it does not hold" where it does (safe, wrong)
    UNCERTAIN = "uncertain", 2  # a claim without the proof it needs
    FAILED = "failed", 1  # no answer (the solver raised, timed out, crashed)

    def __new__(cls, value: str, severity: int):
        member = str.__new__(cls, value)
        member._value_ = value
        member.severity = severity
        return member

    def __str__(self) -> str:
        return self.value


#: every outcome a kind may give, in report order (a kind declares the ones it uses).
OUTCOMES = tuple(o.value for o in Outcome)
#: the outcomes, worst first
SEVERITY = tuple(o.value for o in sorted(Outcome, key=lambda o: o.severity))
#: unsafe answers (what ``max_false_accept`` bounds)
UNSAFE = (Outcome.FALSE_ACCEPT.value,)
#: safe but wrong answers (what ``max_wrong`` bounds)
WRONG = (Outcome.FALSE_REJECT.value, Outcome.SUBOPTIMAL.value)
#: answers with no proof: unproven claims and no answer at all (what ``max_uncertain`` bounds)
UNPROVEN = (Outcome.UNCERTAIN.value, Outcome.FAILED.value)


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


#: rows at most this wide are reduced column by column (``row_max``); wider ones by NumPy's
#: reduction, which is faster there (measured on a 2-core CPU, 52,566 rows: a
#: width of 5 took 1.57 ms by ``np.max(axis=1)`` against 0.14 column by column; 32, 2.8
#: against 1.2; 64 and more, the reduction was as fast or faster)
ROW_COLUMNS_MAX = 32


def _row_reduce(ufunc, a: np.ndarray, initial) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"a: expected a (cases, values) array, got shape {a.shape}")
    B, width = a.shape
    if width == 0:
        if initial is None:
            raise ValueError(f"a: {ufunc.__name__} of empty rows needs an initial value")
        return np.full(B, initial, dtype=np.result_type(a.dtype, np.asarray(initial).dtype))
    if width > ROW_COLUMNS_MAX:
        return ufunc.reduce(a, axis=1) if initial is None else ufunc.reduce(a, axis=1, initial=initial)
    out = a[:, 0].copy() if initial is None else ufunc(initial, a[:, 0])  # NumPy's order: a zero's sign agrees
    for j in range(1, width):
        ufunc(out, a[:, j], out=out)
    return out


def row_max(a: np.ndarray, initial: float | None = None) -> np.ndarray:
    """(B,) the largest value of each row of ``a`` (B, w): ``np.max(a, axis=1, initial=...)``,
    NaN where a row holds one, ``initial`` for rows of width 0 (required then, as NumPy's).

    The verifiers reduce many narrow rows (a case's 3 to 12 residuals, weights or duals),
    where NumPy's reduction along the last axis costs about 30 ns a row whatever the width;
    here a row of up to ``ROW_COLUMNS_MAX`` values is reduced by ``np.maximum`` over its
    columns, each one elementwise over every case. The largest value does not depend on the
    order, so the values are NumPy's; only where it is a zero held with both signs may its
    sign differ (NumPy's own reduction of 8 or more values picks by its SIMD order)."""
    return _row_reduce(np.maximum, a, initial)


def row_min(a: np.ndarray, initial: float | None = None) -> np.ndarray:
    """(B,) the smallest value of each row of ``a`` (B, w): ``np.min(a, axis=1, ...)``, as
    ``row_max`` computes the largest."""
    return _row_reduce(np.minimum, a, initial)


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


def farkas_check(A_eq: np.ndarray, b_eq: np.ndarray, A_ub: np.ndarray, b_ub: np.ndarray,
                 lb: np.ndarray | None, cones: np.ndarray | None, cone_mu: np.ndarray | None,
                 y_eq: np.ndarray, y_ub: np.ndarray, tol: Tolerances) -> pd.DataFrame:
    """``farkas_columns`` as a DataFrame (one row per case)."""
    return pd.DataFrame(farkas_columns(A_eq, b_eq, A_ub, b_ub, lb, cones, cone_mu, y_eq, y_ub, tol))


def farkas_columns(A_eq: np.ndarray, b_eq: np.ndarray, A_ub: np.ndarray, b_ub: np.ndarray,
                   lb: np.ndarray | None, cones: np.ndarray | None, cone_mu: np.ndarray | None,
                   y_eq: np.ndarray, y_ub: np.ndarray, tol: Tolerances) -> dict[str, np.ndarray]:
    """Float64 check that ``(y_eq, y_ub)`` proves a standard-form problem infeasible, as
    columns (name -> (B,) array; a verifier joins them into its one frame).

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
        scale = row_max(np.abs(y), initial=0.0)
        ye, yu = y_eq / scale[:, None], y_ub / scale[:, None]
        g = np.einsum("bmn,bm->bn", A_eq, ye) + np.einsum("bmn,bm->bn", A_ub, yu)
        plain_bounds = lb is None and (cones is None or not len(cones))
    if plain_bounds:  # every x >= 0 (an LP's or an exit's): the terms below, without the arrays of zeros
        return _farkas_rows(scale, [row_max(yu, initial=-np.inf), row_max(g, initial=-np.inf)],
                            _plain_bound_value(b_eq, b_ub, ye, yu, g), y_eq, y_ub, tol)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lb_ = np.zeros((B, n)) if lb is None else lb
        free = ~np.isfinite(lb_)
        lb0 = np.where(free, 0.0, lb_)
        in_cone = np.zeros(n, bool)
        gap_parts = [row_max(yu, initial=-np.inf)]
        g_b = np.where(free, 0.0, g)
        if cones is not None and len(cones):
            idx = np.asarray(cones)
            mu = np.broadcast_to(np.asarray(cone_mu, float), (B, len(idx)))
            in_cone[idx.ravel()] = True
            g_n, g_t = g[:, idx[:, 0]], np.hypot(g[:, idx[:, 1]], g[:, idx[:, 2]])
            residual = g_n + mu * g_t  # <= 0: -g on this cone lies in its dual cone
            gap_parts.append(row_max(residual))
            normal_lb = lb_[:, idx[:, 0]]
            use = np.isfinite(normal_lb) & (normal_lb >= 0)
            g_b[:, idx[:, 1]] = 0.0
            g_b[:, idx[:, 2]] = 0.0
            g_b[:, idx[:, 0]] = np.where(use, np.minimum(residual, 0.0), 0.0)
        plain = ~in_cone[None, :]
        gap_parts.append(row_max(np.where(plain & free, np.abs(g), np.where(plain, g, -np.inf)), initial=-np.inf))
        value = (np.einsum("bm,bm->b", b_eq, ye) + np.einsum("bm,bm->b", b_ub, yu)
                 - np.sum(lb0 * g_b, axis=1))
    return _farkas_rows(scale, gap_parts, value, y_eq, y_ub, tol)


def _plain_bound_value(b_eq, b_ub, ye, yu, g) -> np.ndarray:
    """``farkas_check``'s ``b @ y - lb @ g_b`` where every bound is 0 (no cones): ``lb @ g_b``
    is a sum of zeros, 0 (NumPy's sum of zeros starts from +0, whatever their signs), or NaN
    where ``g`` holds an infinity or a NaN (0 times those); so ``b @ y`` where ``g`` is finite,
    else NaN, bit for bit."""
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.einsum("bm,bm->b", b_eq, ye) + np.einsum("bm,bm->b", b_ub, yu)
    return np.where(finite_rows(g), value, np.nan)


def _farkas_rows(scale, gap_parts, value, y_eq, y_ub, tol: Tolerances) -> dict[str, np.ndarray]:
    """``farkas_columns``' columns from the duals' ``scale``, the parts of the gap (each (B,),
    their largest is ``cert_gap``) and ``value``."""
    with np.errstate(invalid="ignore"):
        gap = np.maximum.reduce(gap_parts)
    ok = (scale > 0) & certificate_passes(gap, value, tol)
    ok &= finite_rows(y_eq) & finite_rows(y_ub) & ~np.isnan(gap) & np.isfinite(value)
    return {"cert_gap": gap, "cert_value": value, "certificate_ok": ok}


def ray_check(batch, ray: np.ndarray, tol: Tolerances) -> pd.DataFrame:
    """Float64 check that ``ray`` (B, n) proves a standard-form problem of ``batch``
    unbounded below, should it be feasible: with ``d`` scaled to unit max-norm,
    ``A_eq d = 0``, ``A_ub d <= 0``, ``d >= 0`` on variables with a finite lower bound, ``d``
    in every cone, ``P d = 0``, and ``c @ d < 0``; then ``x + t d`` stays feasible and its
    objective falls without bound as ``t`` grows.

    Columns: ``ray_gap`` (the largest violation of those conditions, relative to
    ``1 + max |A|, |P|``), ``ray_value`` (``-c @ d``) and ``ray_ok`` (``certificate_passes``,
    the rule every certificate follows). A NaN ray (an adapter that gave none) is not ok."""
    B, n = batch.c.shape
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        scale = row_max(np.abs(ray), initial=0.0)
        d = ray / scale[:, None]
        parts = [row_max(np.abs(np.einsum("bmn,bn->bm", batch.A_eq, d)), initial=0.0),
                 row_max(np.einsum("bmn,bn->bm", batch.A_ub, d), initial=0.0)]
        mags = [row_max(np.abs(batch.A_eq.reshape(B, -1)), initial=0.0),
                row_max(np.abs(batch.A_ub.reshape(B, -1)), initial=0.0)]
        lb = batch.lb if batch.lb is not None else np.zeros((B, n))
        parts.append(row_max(np.where(np.isfinite(lb), -d, 0.0), initial=0.0))
        if batch.cones is not None and len(batch.cones):
            idx = batch.cones
            parts.append(row_max(np.hypot(d[:, idx[:, 1]], d[:, idx[:, 2]]) - batch.cone_mu * d[:, idx[:, 0]]))
        if batch.P is not None:
            parts.append(row_max(np.abs(np.einsum("bij,bj->bi", batch.P, d)), initial=0.0))
            mags.append(row_max(np.abs(batch.P.reshape(B, -1)), initial=0.0))
        gap = np.maximum.reduce(parts) / (1.0 + np.maximum.reduce(mags))
        value = -np.einsum("bn,bn->b", batch.c, d)
    ok = (scale > 0) & finite_rows(ray) & certificate_passes(gap, value, tol) & np.isfinite(value)
    return pd.DataFrame({"ray_gap": gap, "ray_value": value, "ray_ok": ok})
