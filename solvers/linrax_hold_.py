"""``linrax-hold``: seed 002's hardened linrax, each measure a setting (all on by default).

It runs the published, pinned linrax 0.3.0 (``linrax.optim.linprog``: its standard form,
tableau, phase 1 / phase 2 and Bland entering rule) with our own pivot loop in place of
``linrax.optim._simplex``. The swap lasts only while this adapter traces its jitted
function, so the published ``linrax`` adapter in the same process stays the published
code. At import the adapter checks linrax's version and the SHA-256 of the source of the
functions it relies on, and refuses (``SolverNotAvailable``) if they are not the ones it
was checked against. None of linrax's code is copied here.

Measures (seed 002 §6), each a boolean setting unless stated:

* ``cap``: at most ``max_pivots`` (300) pivots per phase. Under ``vmap`` the loop runs until
  the slowest LP of the batch finishes, so one cycling LP would hang the batch. A capped LP
  ends ``MAX_ITER`` (phase 1 included: a phase 1 stopped by the cap is not "infeasible"),
  and its answer is verified like any other.
* ``bland``: Bland's leaving rule, ties in the ratio test go to the basic variable with
  the lowest index (linrax takes the lowest row, which does not rule out cycling).
* ``artificial_ge``: artificial variables still basic in phase 2 are recognised with
  ``>=`` (linrax's ``>`` misses the one whose index equals the right-hand-side column's).
* ``spread``: the equality rows are multiplied by the Householder reflection ``H`` that
  maps ``b_eq`` to ``|b_eq| (1, ..., 1) / sqrt(m_eq)``; duals map back by ``y = H y'``.
* ``recompute``: the primal is recomputed from the final basis by one solve with ``B``
  instead of read off the tableau.
* ``pivot_tol`` (float, 1e-4): linrax's ``dual_tol``, its smallest pivot and optimality
  tolerance (linrax's default 1e-6 pivots on float32 noise).
* ``exit_cap``: exit LPs keep the cap row ``t / T <= 1`` with ``T = 10`` as generated; off,
  the row (recognised as the single-entry row ``t / 10 <= 1``) is rewritten with seed
  002's first ``T = 1000``.
* ``reinvert``: after phase 2, rebuild the tableau from the final basis
  (``B^-1 A`` and ``B^-1 b`` computed fresh, reduced costs ``c - A^T B^-T c_B``) and continue,
  ``reinversions`` (2) times. A fresh ``B^-1 b`` can show that the basis float32 pivoting called
  feasible is not (negative weights); dual simplex pivots restore primal feasibility first
  (the basis is still dual feasible), then primal pivots continue with the optimality
  tolerance ``pivot_tol / 100`` (fresh reduced costs are accurate enough for it), so the
  final duals pass the certificate check at 1e-5.

* ``small_witness`` (new here): among the optimal vertices, continue to one with the smallest
  ``sum(x)`` (only columns with zero reduced cost may enter, so the optimum is kept). A
  supported 3D pose often has optimal vertices whose weights are hundreds of times the
  weight; float32 cannot represent such a witness to the 1e-5 the check needs, while the
  smallest-weight witness it can.

Duals come from the final basis (``B^T y = c_B``, phase-1 costs when infeasible, so "no"
comes with a Farkas certificate), as in the published adapter.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import inspect

import numpy as np

from . import _jax
from ._linrax_std import basis_duals, standard_form
from .base import Adapter, Conformance, Option, module_api
from .errors import SolverNotAvailable
from .types import Capabilities, Status

LINRAX_VERSION = "0.3.0"
#: SHA-256 of the source of the linrax functions this adapter relies on, as checked.
CHECKED_SOURCES = {
    "linprog": "68b7f8ed377519b443cb8d5eb81a3915e5c1737959ee57a00acac88881fe6f17",
    "_simplex": "e4d4f15ec03631a02d5ed3fe688a073c8f725c0e17b221899b9a7fcc4295355b",
    "_standard_form": "1040bcc4ea9845463bfaa0b9bdcb3897b8e3ddb167878acbdeb16c694a0c8e5a",
    "_iteration_needed": "b6b8eb6f002ab5f27c7f110e6afc5b60b59233a369217035308753dfd499bc3d",
    "SimplexStep": "",
}
SEED_EXIT_CAP = 10.0
OLD_EXIT_CAP = 1000.0


def _source_digest(fn) -> str:
    fn = getattr(fn, "__wrapped__", fn)
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()


def check_linrax() -> None:
    """Raise ``SolverNotAvailable`` unless the installed linrax is the checked 0.3.0."""
    try:
        from linrax import optim
    except ImportError as exc:
        raise SolverNotAvailable(f"linrax is not installed ({exc}); pip install 'linrax=={LINRAX_VERSION}'") from None
    version = importlib.metadata.version("linrax")
    if version != LINRAX_VERSION:
        raise SolverNotAvailable(f"linrax-hold was checked against linrax {LINRAX_VERSION}; found {version} "
                                 f"(pip install 'linrax=={LINRAX_VERSION}')")
    for name, digest in CHECKED_SOURCES.items():
        fn = getattr(optim, name, None)
        if fn is None or (digest and _source_digest(fn) != digest):  # SimplexStep: presence only
            raise SolverNotAvailable(f"linrax-hold: linrax.optim.{name} is not the function it was checked against "
                                     f"(linrax {version}); refusing to swap its pivot loop")


def _dual_loop(cap: int, pivot_tol: float, primal_tol: float):
    """Dual simplex on a phase-2 tableau whose basis is dual feasible but primal infeasible
    (a reinverted basis whose fresh ``B^-1 b`` has negative entries): leaving row = most
    negative right-hand side, entering column = smallest ``d_j / -a_rj`` over ``a_rj < -pivot_tol``.
    Returns ``(tableau, basis, stuck)``; ``stuck`` when a negative row has no such column."""
    import jax
    import jax.numpy as jnp

    def run(tableau, basis):
        m = tableau.shape[0] - 1

        def needed(state):
            tableau, _basis, stuck, it = state
            return jnp.any(tableau[:m, -1] < -primal_tol) & ~stuck & (it < cap)

        def pivot(state):
            tableau, basis, _stuck, it = state
            rhs = tableau[:m, -1]
            row = jnp.argmin(jnp.where(rhs < -primal_tol, rhs, jnp.inf))
            a = tableau[row, :-1]
            ok = a < -pivot_tol
            col = jnp.argmin(jnp.where(ok, tableau[-1, :-1] / jnp.where(ok, -a, 1.0), jnp.inf))
            stuck = ~jnp.any(ok)
            pivot_row = tableau[row] / jnp.where(stuck, 1.0, tableau[row, col])
            new = tableau - tableau[:, col][:, None] * pivot_row[None, :]
            new = new.at[row].set(pivot_row)
            return (jnp.where(stuck, tableau, new), jnp.where(stuck, basis, basis.at[row].set(col)), stuck, it + 1)

        tableau, basis, stuck, _ = jax.lax.while_loop(needed, pivot, (tableau, basis, jnp.asarray(False), jnp.int32(0)))
        return tableau, basis, stuck

    return run


def _pivot_loop(settings: dict, optimality_tol: float | None = None):
    """Our replacement for ``linrax.optim._simplex(step, sol_type, num_cost_rows, dual_tol)``."""
    import jax
    import jax.numpy as jnp
    from linrax.optim import SimplexStep

    cap = int(settings["max_pivots"]) if settings["cap"] else 0
    bland = bool(settings["bland"])
    ge = bool(settings["artificial_ge"])

    def marked(tableau, basis, num_cost_rows):
        """The tableau's body columns, rows of basic artificials taken by absolute value."""
        body = tableau[:-num_cost_rows, :-1]
        n_cols = tableau.shape[1] - 1
        artificial = basis >= n_cols if ge else basis > n_cols
        return jnp.where(artificial[:, None], jnp.abs(body), body)

    def candidates(tableau, basis, num_cost_rows, dual_tol, opt_tol):
        """Columns that may enter: reduced cost < -opt_tol. When the optimality tolerance is finer
        than the pivot tolerance (after reinversion), a column whose reduced cost lies between
        the two and that has no pivot > dual_tol (a ray: e.g. contact forces that cancel) is
        rounding noise, not a descent direction; it may not enter (it would make a bounded LP
        "unbounded")."""
        reduced = tableau[-1, :-1]
        if opt_tol >= dual_tol:
            return reduced < -opt_tol
        has_pivot = jnp.any(marked(tableau, basis, num_cost_rows) > dual_tol, axis=0)
        return (reduced < -opt_tol) & (has_pivot | (reduced < -dual_tol))

    def simplex(step, sol_type, num_cost_rows, dual_tol):
        opt_tol = dual_tol if optimality_tol is None else optimality_tol

        def needed(state):
            step, feasible, bounded, it = state
            go = jnp.any(candidates(step.tableau, step.basis, num_cost_rows, dual_tol, opt_tol)) & feasible[0] & bounded[0]
            return go & (it < cap) if cap > 0 else go

        def pivot(state):
            step, feasible, bounded, it = state
            tableau = step.tableau
            # entering: lowest index that may enter (linrax's rule, noise rays excluded)
            entering = jnp.argmax(candidates(tableau, step.basis, num_cost_rows, dual_tol, opt_tol))
            rates = marked(tableau, step.basis, num_cost_rows)[:, entering]
            ok = rates > dual_tol
            ratios = jnp.where(ok, tableau[:-num_cost_rows, -1] / jnp.where(ok, rates, 1.0), jnp.inf)
            ties = ratios <= jnp.min(ratios) + 1e-6  # linrax's tie tolerance, kept
            if bland:
                key = jnp.where(ties, step.basis, jnp.iinfo(step.basis.dtype).max)
                row = jnp.argmin(key)
            else:
                row = jnp.argmin(jnp.where(ties, jnp.arange(ratios.shape[0]), ratios.shape[0]))
            bounded = jnp.any(ok).reshape(1)
            pivot_row = tableau[row] / tableau[row, entering]
            tableau = tableau - tableau[:, entering][:, None] * pivot_row[None, :]
            tableau = tableau.at[row].set(pivot_row)
            basis = step.basis.at[row].set(entering)
            x = jnp.zeros_like(step.x).at[basis].set(tableau[:-num_cost_rows, -1])
            return SimplexStep(tableau, basis, x), feasible, bounded, it + 1

        state = (step, sol_type.feasible, sol_type.bounded, jnp.int32(0))
        step, feasible, bounded, _ = jax.lax.while_loop(needed, pivot, state)
        sol_type.feasible, sol_type.bounded = feasible, bounded
        return step, sol_type

    def improvable(tableau, basis, dual_tol):
        """Whether a phase-2 tableau still has a column that may enter (not optimal yet)."""
        opt_tol = dual_tol if optimality_tol is None else optimality_tol
        return jnp.any(candidates(tableau, basis, 1, dual_tol, opt_tol))

    simplex.improvable = improvable
    return simplex


@contextlib.contextmanager
def _swapped(loop):
    from linrax import optim

    original = optim._simplex
    optim._simplex = loop
    try:
        yield
    finally:
        optim._simplex = original


def householder(xp, b):
    """``H`` (m, m) symmetric orthogonal with ``H b = |b| (1, ..., 1) / sqrt(m)`` (I when b = 0)."""
    m = b.shape[0]
    target = xp.linalg.norm(b) * xp.ones(m, b.dtype) / np.sqrt(m)
    v = b - target
    vv = v @ v
    scale = xp.where(vv > 0, 2.0 / xp.where(vv > 0, vv, 1.0), 0.0)
    return xp.eye(m, dtype=b.dtype) - scale * xp.outer(v, v)


class LinraxHoldAdapter(_jax.JaxBatchedAdapter, Adapter):
    """linrax 0.3.0 with seed 002's pivot loop and float32 measures (see module docstring)."""

    NAME = "linrax-hold"
    #: what the conformance suite expects of this adapter (``bench.conformance``)
    CONFORMANCE = Conformance(
        atol={"float32": 0.0002, "float64": 1e-07},
        known={
            ("*", "lp_badly_scaled"):
                "like linrax, the ratio test skips pivots <= pivot_tol (1e-4), so the row scaled "
                "1e-6 is ignored and the LP is declared unbounded",
        },
    )
    CAPABILITIES = Capabilities(lp=True, qp=False, batched=True, devices=("cpu", "gpu"),
                                dtypes=("float32", "float64"), general_bounds=False)
    REQUIRES = ("jax", "linrax")
    NEEDS_A_ROW = "any"
    INSTALL_HINT = f"pip install 'linrax=={LINRAX_VERSION}' jax"
    OPTIONS = {
        "cap": Option(bool, True, "cap the pivots per phase (at max_pivots)"),
        "max_pivots": Option(int, 300, "the cap: pivots per phase at most", ge=1),
        "bland": Option(bool, True, "Bland's leaving rule (lowest basic index among ratio ties)"),
        "artificial_ge": Option(bool, True, "recognise basic artificials with >= (linrax: >)"),
        "spread": Option(bool, True, "Householder-spread the equality right-hand side"),
        "recompute": Option(bool, True, "recompute the primal from the final basis"),
        "pivot_tol": Option(float, 1e-4, "smallest pivot and optimality tolerance (linrax default 1e-6)", gt=0),
        "exit_cap": Option(bool, True, "keep exit caps at T = 10 (off: T = 1000)"),
        "reinvert": Option(bool, True, "rebuild the tableau from the final basis and continue"),
        "reinversions": Option(int, 2, "how many times reinvert rebuilds", ge=0),
        "small_witness": Option(bool, True, "among optimal vertices, move to one with the smallest sum(x)"),
        "chunk": _jax.JaxBatchedAdapter.chunk_option(1024),
        "device": _jax.JaxBatchedAdapter.device_option(),
    }
    SETTINGS = {"default": {}, "published": {"cap": False, "bland": False, "artificial_ge": False, "spread": False,
                                             "recompute": False, "pivot_tol": 1e-6, "reinvert": False,
                                             "small_witness": False}}
    #: the measures ``contactbench ablate`` switches off one at a time, with their "off" values.
    MEASURES = {"cap": False, "bland": False, "artificial_ge": False, "spread": False, "recompute": False,
                "pivot_tol": 1e-6, "exit_cap": False, "reinvert": False, "small_witness": False}

    @classmethod
    def check_available(cls) -> None:
        super().check_available()
        check_linrax()

    def prepare(self, problem):
        if not self.settings["exit_cap"] and problem.m_ub:
            problem = _old_exit_cap(problem)
        return super().prepare(problem)

    def _compiled(self, with_P: bool, bounded: tuple[int, ...]):
        cache = self.__dict__.setdefault("_jitted", {})
        key = ("hold", bounded)
        if key not in cache:
            jax = _jax.import_jax()

            def case(c, Ae, be, Au, bu, lb):
                return self.one_case(c, Ae, be, Au, bu)

            compiled = jax.jit(jax.vmap(case))

            def traced(*args):  # trace (first call per shape) with our loop swapped in
                with _swapped(_pivot_loop(self.settings)):
                    return compiled(*args)

            cache[key] = traced
        return cache[key]

    def one_case(self, c, A_eq, b_eq, A_ub, b_ub, P=None, lb=None, bounded=()):
        """One LP through linrax's linprog (our pivot loop), then reinversion, primal and dual."""
        import jax.numpy as jnp
        from linrax import optim

        s = self.settings
        tol = s["pivot_tol"]
        m_eq, m_ub, n = b_eq.shape[0], b_ub.shape[0], c.shape[0]
        H = householder(jnp, b_eq) if (s["spread"] and m_eq) else jnp.eye(m_eq, dtype=c.dtype)
        A_eq_s, b_eq_s = H @ A_eq, H @ b_eq
        linprog = getattr(optim.linprog, "__wrapped__", optim.linprog)
        sol, kind = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq_s, b_eq=b_eq_s, primal_tol=tol, dual_tol=tol)
        form = standard_form(jnp, c, A_eq_s, b_eq_s, A_ub, b_ub)  # linrax's standard form, rebuilt
        A_full, b_std, flip, c_std = form
        m = m_eq + m_ub
        n_std = n + m_ub
        A_std = A_full[:, :n_std]
        feasible = kind.feasible[0]
        basis = sol.basis
        bounded = kind.bounded[0]
        tableau = sol.tableau
        rounds = int(s["reinversions"]) if s["reinvert"] else 0
        opt_tol = tol / 100 if rounds else tol
        loop = _pivot_loop(s, opt_tol)
        dual = _dual_loop(int(s["max_pivots"]) if s["cap"] else 10_000, tol, tol / 100)
        for _ in range(rounds):
            B_inv = jnp.linalg.inv(A_full[:, basis])  # one factorisation per reinversion
            body = B_inv @ jnp.concatenate([A_std, b_std[:, None]], axis=1)
            c_B = jnp.concatenate([c_std, jnp.zeros(m, c.dtype)])[basis]
            y_ = B_inv.T @ c_B
            cost = jnp.concatenate([c_std - A_std.T @ y_, -(b_std @ y_)[None]])
            fresh = jnp.concatenate([body, cost[None, :]], axis=0)
            # an 'unbounded' ray is re-examined on the fresh tableau too, but only a finite one:
            # linrax may have pivoted a ray column with no entry into the basis (x = inf), whose
            # singular basis gives no tableau to re-examine; its 'unbounded' then stands
            go = feasible & jnp.all(jnp.isfinite(fresh))
            fixed, basis_fixed, stuck = dual(fresh, basis)
            tableau = jnp.where(go, fixed, tableau)
            basis = jnp.where(go, basis_fixed, basis)
            x0 = jnp.zeros(n_std, c.dtype).at[basis].set(tableau[:m, -1], mode="drop")
            step = optim.SimplexStep(tableau, basis, x0)
            st = optim.SimplexSolutionType((go & ~stuck).reshape(1), jnp.array([True]))
            step, st = loop(step, st, 1, tol)
            basis = jnp.where(go, step.basis, basis)
            tableau = jnp.where(go, step.tableau, tableau)
            bounded = jnp.where(go & ~stuck, st.bounded[0], bounded)
        optimal = feasible & bounded & ~loop.improvable(tableau, basis, tol) & ~jnp.any(tableau[:m, -1] < -tol)
        if s["small_witness"]:
            basis, tableau = self._small_witness(loop, A_full, A_std, b_std, basis, tableau, optimal, n, opt_tol, tol)
        B = A_full[:, basis]  # the final basis: primal (recompute) and dual, by solves (more accurate than inv)
        if s["recompute"]:
            x = jnp.zeros(n_std + m, c.dtype).at[basis].set(jnp.linalg.solve(B, b_std))[:n]
        elif rounds or s["small_witness"]:
            x = jnp.zeros(n_std + m, c.dtype).at[basis].set(tableau[:m, -1])[:n]
        else:
            x = sol.x[:n]
        y, phase1 = basis_duals(jnp, form, basis, feasible)
        # infeasible only when phase 1 ended optimal; a phase 1 stopped by the cap is MAX_ITER
        phase1_done = ~jnp.any(phase1 - A_full.T @ (flip * y) < -tol)
        y_eq = H @ y[:m_eq]  # H is symmetric: y = H^T y' = H y'
        code = jnp.where(~feasible, jnp.where(phase1_done, 0, 2),
                         jnp.where(~bounded, 1, jnp.where(optimal, 3, 2))).astype(jnp.int32)
        return x, y_eq, y[m_eq:], code, jnp.int32(-1)

    @staticmethod
    def _small_witness(loop, A_full, A_std, b_std, basis, tableau, optimal, n, opt_tol, tol):
        """From an optimal basis, primal pivots on the secondary cost ``sum(x[:n])`` with every
        column of positive main reduced cost (last row of ``tableau``) barred from entering;
        returns the new basis and its tableau (unchanged when the phase does not apply)."""
        import jax.numpy as jnp
        from linrax import optim

        m, n_std = A_std.shape
        reduced = tableau[-1, :-1]
        B_inv = jnp.linalg.inv(A_full[:, basis])
        body = B_inv @ jnp.concatenate([A_std, b_std[:, None]], axis=1)
        e = jnp.concatenate([jnp.ones(n, A_std.dtype), jnp.zeros(n_std - n, A_std.dtype)])
        e_B = jnp.concatenate([e, jnp.zeros(m, A_std.dtype)])[basis]
        w = B_inv.T @ e_B
        secondary = e - A_std.T @ w
        barred = reduced > opt_tol  # entering these would raise the main objective
        secondary = jnp.where(barred, jnp.asarray(1e20, A_std.dtype), secondary)
        cost = jnp.concatenate([secondary, -(b_std @ w)[None]])
        tableau_2 = jnp.concatenate([body, cost[None, :]], axis=0)
        x0 = jnp.zeros(n_std, A_std.dtype).at[basis].set(body[:, -1], mode="drop")
        feasible_basis = optimal & ~jnp.any(body[:, -1] < -tol)
        st = optim.SimplexSolutionType(feasible_basis.reshape(1), jnp.array([True]))
        step, st = loop(optim.SimplexStep(tableau_2, basis, x0), st, 1, tol)
        keep = feasible_basis & st.bounded[0] & ~jnp.any(step.tableau[:m, -1] < -tol)
        return jnp.where(keep, step.basis, basis), jnp.where(keep, step.tableau, tableau)

    def status_of(self, code):
        """0 infeasible, 1 unbounded, 2 stopped by the cap (not optimal), 3 optimal."""
        names = np.array(["infeasible", "unbounded", "cap_reached", "optimal"], dtype=object)
        table = np.array([Status.INFEASIBLE, Status.UNBOUNDED, Status.MAX_ITER, Status.OPTIMAL], dtype=object)
        return table[code], names[code]


def _old_exit_cap(problem):
    """Rewrite exit LPs' cap row ``t / 10 <= 1`` (one nonzero entry 0.1, right-hand side 1)
    with ``T = 1000`` (the ``exit_cap=False`` ablation)."""
    from dataclasses import replace

    A_ub, b_ub = problem.A_ub.copy(), problem.b_ub.copy()
    nonzero = np.count_nonzero(A_ub, axis=2) == 1
    is_cap = nonzero & np.isclose(A_ub.sum(axis=2), 1.0 / SEED_EXIT_CAP) & np.isclose(b_ub, 1.0)
    A_ub[is_cap] *= SEED_EXIT_CAP / OLD_EXIT_CAP
    return replace(problem, A_ub=A_ub, b_ub=b_ub)


ADAPTER = LinraxHoldAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
