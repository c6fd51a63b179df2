"""Conversions from the project's standard form to the forms solvers take.

The project's form: ``min c@x + 0.5 x@P@x  s.t.  A_eq@x == b_eq, A_ub@x <= b_ub, x >= 0``.
"""

from __future__ import annotations

import numpy as np

from .types import CodedText, StandardForm


def objective_matrix(problem: StandardForm) -> np.ndarray:
    """``P`` as a dense (n, n) array (zeros for an LP)."""
    return np.zeros((problem.n, problem.n)) if problem.P is None else problem.P


def bounded(problem: StandardForm) -> np.ndarray:
    """Indices of the variables with a finite lower bound (one case; all of them for ``x >= 0``)."""
    return np.flatnonzero(np.isfinite(problem.lb))


def bound_rows(problem: StandardForm) -> tuple[np.ndarray, np.ndarray]:
    """``-x[j] <= -lb[j]`` for each bounded ``j`` as rows: (len(bounded), n) and (len(bounded),)."""
    j = bounded(problem)
    return -np.eye(problem.n)[j], -problem.lb[j]


def inequalities_with_bounds(problem: StandardForm) -> tuple[np.ndarray, np.ndarray]:
    """``G x <= h`` holding ``A_ub x <= b_ub`` and then the finite bounds ``-x <= -lb``."""
    G_b, h_b = bound_rows(problem)
    return np.vstack([problem.A_ub, G_b]), np.concatenate([problem.b_ub, h_b])


def objective_value(problem: StandardForm, x: np.ndarray) -> float:
    """``c@x + 0.5 x@P@x`` in float64."""
    value = float(problem.c @ x)
    if problem.P is not None:
        value += 0.5 * float(x @ problem.P @ x)
    return value


def objective_values(problem: StandardForm, x: np.ndarray) -> np.ndarray:
    """``c@x + 0.5 x@P@x`` per case of a batched ``problem``, float64, ``x`` (B, n): one
    ``einsum`` each, no loop over cases."""
    value = np.einsum("bn,bn->b", problem.c, x)
    if problem.P is not None:
        value = value + 0.5 * np.einsum("bi,bij,bj->b", x, problem.P, x)
    return value


def status_table(codes: np.ndarray, table: dict) -> tuple[np.ndarray, CodedText]:
    """``(status, native)`` for integer native ``codes`` (B,): ``status`` (B,) int8
    ``Status`` codes and ``native`` the native names as ``CodedText``. Each distinct code is
    looked up once in ``table`` (code -> (Status, native name)); an unknown code is
    ``(default, "code N")`` with the table's ``None`` entry as default."""
    codes = np.asarray(codes).astype(np.int64).reshape(-1)
    lo, hi = (int(codes.min()), int(codes.max())) if codes.size else (0, -1)
    if hi - lo < 1024:  # native codes are small integers: count them, no sort of B cases
        present = np.flatnonzero(np.bincount(codes - lo, minlength=hi - lo + 1))
        distinct = present + lo
        lookup = np.zeros(hi - lo + 1, dtype=np.int64)
        lookup[present] = np.arange(len(present))
        inverse = lookup[codes - lo]
    else:
        distinct, inverse = np.unique(codes, return_inverse=True)
        inverse = inverse.reshape(-1)
    default = table.get(None)
    pairs = [table.get(int(c), (default, f"code {int(c)}")) for c in distinct]  # a few codes, not B cases
    status = np.array([int(p[0]) for p in pairs], dtype=np.int8)
    return status[inverse], CodedText(inverse.astype(np.int32), np.array([p[1] for p in pairs] + [None], dtype=object)[:-1])


def nan_solution_arrays(problem: StandardForm) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NaN-filled ``x``, ``y_eq``, ``y_ub`` for a solve that returned nothing."""
    return np.full(problem.n, np.nan), np.full(problem.m_eq, np.nan), np.full(problem.m_ub, np.nan)
