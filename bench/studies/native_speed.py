"""Adapters against their solver called directly: ``python -m bench.studies.native_speed`` (``make bench``).

For each loop adapter with a bare loop here, on the quadruped QP (128 scenes) and the
humanoid QP (64 scenes) (HiGHS: planar-box LP-1, 256, and cube-3d LP-1, 128): the adapter's timed ``run`` (``solvers.timing.PreparedSolve``,
exactly what a cell times as "solve") against a tight loop that calls the same solver with
the same options on the same arrays (per-case arguments built before the clock starts, the
answer's arrays copied out as the adapter must). Both run ``--rounds`` times interleaved;
the printed ratio is the median of adapter time / bare time. ``--check`` exits 1 when a
ratio is above ``--limit`` (1.15 by default) and the adapter's module does not say why
(a ``NATIVE_SPEED_NOTE`` on the adapter class).
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
import typer

from solvers import _forms

from bench import options

#: solver -> (per-case argument builder, bare call); both see one case as a StandardForm
BIG = 1e20


def _proxsuite():
    import proxsuite

    def build(case):
        n, m_eq, m_ub = case.n, case.m_eq, case.m_ub
        box = bool(np.isfinite(case.lb).any())
        P = _forms.objective_matrix(case)
        args = [P, case.c, case.A_eq if m_eq else None, case.b_eq if m_eq else None,
                case.A_ub if m_ub else None, np.full(m_ub, -BIG) if m_ub else None, case.b_ub if m_ub else None]
        if box:
            args += [np.where(np.isfinite(case.lb), case.lb, -BIG), np.full(n, BIG)]
        return (n, m_eq, m_ub, box), args

    def call(shape, args):
        qp = proxsuite.proxqp.dense.QP(*shape)
        qp.settings.verbose = False
        qp.init(*args)
        qp.solve()
        r = qp.results
        return np.array(r.x), np.array(r.y), np.array(r.z), r.info.status

    return build, call


def _piqp():
    import piqp

    def build(case):
        m_eq, m_ub = case.m_eq, case.m_ub
        f = lambda a: np.asfortranarray(a, dtype=float)  # noqa: E731
        P = _forms.objective_matrix(case)
        return None, [f(P), case.c, f(case.A_eq) if m_eq else None, case.b_eq if m_eq else None,
                      f(case.A_ub) if m_ub else None, None, case.b_ub if m_ub else None,
                      np.where(np.isfinite(case.lb), case.lb, -np.inf), None]

    def call(_shape, args):
        solver = piqp.DenseSolver()
        solver.settings.verbose = False
        solver.setup(*args)
        status = solver.solve()
        r = solver.result
        return np.array(r.x), np.array(r.y), np.array(r.z_u), status

    return build, call


def _quadprog():
    import quadprog

    def build(case):
        G_b, h_b = _forms.bound_rows(case)
        C = np.vstack([case.A_eq, -case.A_ub, -G_b]).T
        b = np.concatenate([case.b_eq, -case.b_ub, -h_b])
        return None, [np.array(case.P, dtype=float, order="C"), -case.c, C, b, case.m_eq]  # (writeable)

    def call(_shape, args):
        try:
            x, f, _xu, iters, lam, _act = quadprog.solve_qp(*args)
        except ValueError as exc:  # infeasible: quadprog raises, as the adapter must handle too
            return str(exc)
        return x, lam, iters

    return build, call


def _daqp():
    import daqp

    def build(case):
        n, m_eq, m_ub = case.n, case.m_eq, case.m_ub
        A = np.vstack([case.A_eq, case.A_ub])
        upper = np.concatenate([np.full(n, np.inf), case.b_eq, case.b_ub])
        lower = np.concatenate([case.lb, case.b_eq, np.full(m_ub, -np.inf)])
        sense = np.concatenate([np.zeros(n), np.full(m_eq, 5), np.zeros(m_ub)]).astype(np.int32)
        P = np.array(_forms.objective_matrix(case))  # writeable copies: DAQP's binding asks for them
        return None, [P, np.array(case.c), A, upper, lower, sense]

    def call(_shape, args):
        x, fval, flag, info = daqp.solve(*args)
        return np.array(x), np.array(info["lam"]), flag

    return build, call


def _highs():
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)

    def build(case):
        A = np.vstack([case.A_eq, case.A_ub])
        mask = A != 0.0
        starts = np.concatenate([[0], np.cumsum(mask.sum(axis=0))]).astype(np.int32)
        rows, cols = np.nonzero(mask.T)
        inf = highspy.kHighsInf
        return None, (case.n, A.shape[0], int(mask.sum()), int(highspy.MatrixFormat.kColwise), 1, 0.0, case.c,
                      np.where(np.isfinite(case.lb), case.lb, -inf), np.full(case.n, inf),
                      np.concatenate([case.b_eq, np.full(case.m_ub, -inf)]), np.concatenate([case.b_eq, case.b_ub]),
                      starts[:-1].copy(), cols.astype(np.int32), A.T[rows, cols], np.zeros(case.n, dtype=np.int32))

    def call(_shape, model):
        h.passModel(*model)
        h.run()
        sol = h.getSolution()
        return np.array(sol.col_value), np.array(sol.row_dual), h.getModelStatus(), h.getInfo().simplex_iteration_count

    return build, call


def _clarabel():
    import clarabel
    from scipy import sparse

    def build(case):
        G_b, h_b = _forms.bound_rows(case)
        A = sparse.csc_matrix(np.vstack([case.A_eq, case.A_ub, G_b]))
        b = np.concatenate([case.b_eq, case.b_ub, h_b])
        P = sparse.csc_matrix(np.triu(_forms.objective_matrix(case)))
        cones = ([clarabel.ZeroConeT(case.m_eq)] if case.m_eq else [])
        cones += [clarabel.NonnegativeConeT(case.m_ub + len(h_b))] if case.m_ub + len(h_b) else []
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        return None, (P, case.c, A, b, cones, settings)

    def call(_shape, args):
        result = clarabel.DefaultSolver(*args).solve()
        return np.array(result.x), np.array(result.z), result.status

    return build, call


def _osqp():
    import osqp
    from scipy import sparse

    state = {}

    def build(case):
        A = np.vstack([case.A_eq, case.A_ub, np.eye(case.n)])
        lower = np.concatenate([case.b_eq, np.full(case.m_ub, -np.inf), case.lb])
        upper = np.concatenate([case.b_eq, case.b_ub, np.full(case.n, np.inf)])
        P = np.triu(_forms.objective_matrix(case))
        upper_mask = np.triu(np.ones(P.shape))
        P_csc = sparse.csc_matrix(upper_mask)
        P_csc.data = P.T[upper_mask.T.astype(bool)]
        A_csc = sparse.csc_matrix(np.ones_like(A))
        A_csc.data = A.T.ravel().copy()
        return None, (P_csc, case.c, A_csc, lower, upper)

    def call(_shape, args):  # one solver, set up once, then updated per case (as the adapter does)
        P, q, A, lower, upper = args
        solver = state.get("solver")
        if solver is None:
            solver = state["solver"] = osqp.OSQP()
            solver.setup(P, q, A, lower, upper, verbose=False)
        else:
            solver.update(q=q, l=lower, u=upper, Px=P.data, Ax=A.data)
        res = solver.solve(raise_error=False)
        return np.array(res.x), np.array(res.y), res.info.status

    call.reset = state.clear  # a new solver per batch, as the adapter's run does
    return build, call


BARE = {"osqp": _osqp, "proxsuite": _proxsuite, "piqp": _piqp, "quadprog": _quadprog, "daqp": _daqp, "highs": _highs,
        "clarabel": _clarabel}
QP_PROBLEMS = {"quadruped[kind=qp]": 128, "humanoid[kind=qp]": 64}
#: the problems each solver is measured on (QP solvers: the legged QPs; HiGHS: hold LPs)
PROBLEMS = {name: QP_PROBLEMS for name in BARE} | {"highs": {"planar-box[kind=lp1]": 256, "cube-3d[kind=lp1]": 128}}


def measure(solver: str, family: str, n: int, rounds: int) -> tuple[float, float]:
    """``(median adapter seconds, median bare seconds)`` for one batch, interleaved rounds."""
    import problems
    import solvers
    from solvers import check_standard_form
    from solvers.timing import PreparedSolve

    batch = problems.generate(problems.FamilySpec.parse(family), n, 0)
    problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    ready = PreparedSolve(solvers.get(solver), problem)
    build, call = BARE[solver]()
    cases = [build(problem.case(i)) for i in range(problem.batch)]
    reset = getattr(call, "reset", lambda: None)  # solvers set up once per batch start each batch afresh

    def bare():
        reset()
        return [call(*c) for c in cases]

    ready.run()
    bare()  # warm both
    adapter_s, bare_s = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        ready.run()
        adapter_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        bare()
        bare_s.append(time.perf_counter() - t0)
    return float(np.median(adapter_s)), float(np.median(bare_s))


app = typer.Typer(add_completion=False)


@app.command()
def study(rounds: int = typer.Option(7, help="interleaved rounds (median taken)"),
          solver: Optional[list[str]] = typer.Option(None, "--solver", help="solvers to measure (default: all)"),
          limit: float = typer.Option(1.15, help="largest acceptable adapter / bare ratio"),
          check: bool = typer.Option(False, "--check", help="exit 1 when a ratio exceeds --limit unexplained"),
          scale: float = typer.Option(1.0, help="fraction of the batch sizes")) -> int:
    """Loop adapters against their bare solvers: end-to-end microseconds per case, and the ratio."""
    import solvers

    options.at_least(rounds, 1, "--rounds")
    options.share(scale, "--scale")
    names = options.comma_list(solver) or sorted(BARE)
    unknown = [s for s in names if s not in BARE]
    if unknown:
        raise typer.BadParameter(f"expected some of {sorted(BARE)}, got {unknown}", param_hint="--solver")
    available = solvers.available()
    over = []
    print(f"{'solver':<10} {'problem':<20} {'adapter us/case':>16} {'bare us/case':>13} {'ratio':>6}")
    for name in names:
        if available.get(name):
            print(f"{name:<10} skipped: {available[name]}")
            continue
        for family, n in PROBLEMS[name].items():
            n = max(4, int(n * scale))
            adapter_s, bare_s = measure(name, family, n, rounds)
            ratio = adapter_s / bare_s
            print(f"{name:<10} {family:<20} {adapter_s / n * 1e6:>16.1f} {bare_s / n * 1e6:>13.1f} {ratio:>6.2f}",
                  flush=True)
            note = getattr(solvers.adapter_class(name), "NATIVE_SPEED_NOTE", "")
            if ratio > limit and not note:
                over.append(f"{name} on {family}: {ratio:.2f}")
    if over:
        print(f"above {limit}: " + "; ".join(over))
    return 1 if (check and over) else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.studies.native_speed [--rounds 7] [--solver NAME ...] [--check]``."""
    return options.run(app, argv, "python -m bench.studies.native_speed")


if __name__ == "__main__":
    raise SystemExit(main())
