"""``linrax-hold``: seed 002's hardened linrax, each measure a setting (all on by default).

It runs the published, pinned linrax 0.3.0 (``linrax.optim.linprog``: its standard form,
tableau, phase 1 / phase 2 and Bland entering rule) with our own pivot loop in place of
``linrax.optim._simplex``, only while this adapter traces its jitted function (the
published ``linrax`` adapter in the same process stays the published code). At import it
checks linrax's version and the SHA-256 of the functions it relies on and refuses
(``SolverNotAvailable``) others. None of linrax's code is copied here. The measures
(``cap``, ``bland``, ``artificial_ge``, ``spread``, ``recompute``, ``pivot_tol``,
``reinvert``, ``warm_exits``, ``lean_exits``, ``piece_kib``, ``dantzig``,
``small_witness``) are each described in docs/adapters.md ("linrax-hold's measures").
Duals come from the final basis (``B^T y = c_B``; phase-1 costs when infeasible, so "no"
comes with a Farkas certificate); the algebra on the basis is ``solvers._small_linalg``'s.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import inspect
from typing import NamedTuple

import numpy as np

from . import _jax
from . import _small_linalg as small
from ._linrax_std import StandardForm, basis_duals, standard_form
from .base import Adapter, Conformance, Option, module_api
from .errors import ProblemError, SolverNotAvailable
from .types import Capabilities, CodedText, Status

LINRAX_VERSION = "0.3.0"
#: SHA-256 of the source of the linrax functions this adapter relies on, as checked.
CHECKED_SOURCES = {
    "linprog": "68b7f8ed377519b443cb8d5eb81a3915e5c1737959ee57a00acac88881fe6f17",
    "_simplex": "e4d4f15ec03631a02d5ed3fe688a073c8f725c0e17b221899b9a7fcc4295355b",
    "_standard_form": "1040bcc4ea9845463bfaa0b9bdcb3897b8e3ddb167878acbdeb16c694a0c8e5a",
    "_iteration_needed": "b6b8eb6f002ab5f27c7f110e6afc5b60b59233a369217035308753dfd499bc3d",
    "SimplexStep": "",
}
#: lean exits per piece (the ``exit_chunk`` setting). A lean exit's work outside its pivot
#: loops is elementwise on small arrays, so per piece XLA:CPU's cost per operation weighs:
#: in pieces of 4,096 instead of ``chunk``'s 1,024, seed 002's planar exits took 0.79-0.80x
#: the time and its 3D exits 0.93-1.01x, with the same bits (LP-1 in pieces of 4,096 took
#: 1.06x on planar-box, 1.6x on cube-3d: ``chunk`` stays 1,024).
EXIT_CHUNK = 4096
#: on a CPU, a piece holds at most this many KiB of tableaux (``piece_kib``): the L2 cache of
#: a core of a typical x86 server (512 KiB to 2 MiB). A vmapped pivot loop runs until the slowest LP of its piece
#: is done, and a 3D tableau (8 x 150 float32, 4.6 KiB) is ten times a planar one: under a
#: cell's settings (one XLA thread), cube-3d LP-1 at 4,096 scenes took 169 ms in pieces of 64
#: against 288 in pieces of 1,024, and seed 002's 3D exits 23-26 ms per 256 scenes in pieces
#: of 64-128 against 30-31 in pieces of 4,096; planar LP-1 keeps its pieces of 1,024 and
#: planar exits in pieces of 1,280 took 0.91-1.02x the time of 4,096.
PIECE_KIB = 512


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
            col = small.argmin(jnp.where(ok, tableau[-1, :-1] / jnp.where(ok, -a, 1.0), jnp.inf))
            stuck = ~jnp.any(ok)
            pivot_row = tableau[row] / jnp.where(stuck, 1.0, tableau[row, col])
            new = small.with_row(tableau - tableau[:, col][:, None] * pivot_row[None, :], row, pivot_row)
            return (jnp.where(stuck, tableau, new), jnp.where(stuck, basis, small.with_row(basis, row, col)), stuck,
                    it + 1)

        tableau, basis, stuck, _ = jax.lax.while_loop(needed, pivot, (tableau, basis, jnp.asarray(False), jnp.int32(0)))
        return tableau, basis, stuck

    return run


def _pivot_loop(settings: dict, optimality_tol: float | None = None, dantzig: bool = False):
    """Our replacement for ``linrax.optim._simplex(step, sol_type, num_cost_rows, dual_tol)``.

    The entering column is the lowest index that may enter (linrax's rule); with ``dantzig``
    it is the one of most negative reduced cost for the first ``max_pivots // 2`` pivots,
    then the lowest index again (with ``bland``'s leaving rule that is Bland's rule, which
    cannot cycle, so the switch keeps termination)."""
    import jax
    import jax.numpy as jnp
    from linrax.optim import SimplexStep

    cap = int(settings["max_pivots"]) if settings["cap"] else 0
    bland = bool(settings["bland"])
    ge = bool(settings["artificial_ge"])
    switch = int(settings["max_pivots"]) // 2 if dantzig else 0  # pivots by Dantzig's rule, at most

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
            # entering: lowest index that may enter (linrax's rule, noise rays excluded), or
            # (dantzig) the most negative reduced cost for the first ``switch`` pivots
            may = candidates(tableau, step.basis, num_cost_rows, dual_tol, opt_tol)
            entering = small.first_true(may)
            if switch:
                steepest = small.argmin(jnp.where(may, tableau[-1, :-1], jnp.inf))
                entering = jnp.where(it < switch, steepest, entering)
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
            tableau = small.with_row(tableau - tableau[:, entering][:, None] * pivot_row[None, :], row, pivot_row)
            basis = small.with_row(step.basis, row, entering)
            return SimplexStep(tableau, basis, step.x), feasible, bounded, it + 1

        state = (step, sol_type.feasible, sol_type.bounded, jnp.int32(0))
        step, feasible, bounded, pivots = jax.lax.while_loop(needed, pivot, state)
        # the primal of the final basis, read off its tableau once after the loop (linrax's loop
        # writes it at every pivot; only the last is read): the given one where no pivot ran
        x = jnp.zeros_like(step.x).at[step.basis].set(step.tableau[:-num_cost_rows, -1])
        step = SimplexStep(step.tableau, step.basis, jnp.where(pivots > 0, x, step.x))
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
        "reinvert": Option(bool, True, "rebuild the tableau from the final basis and continue"),
        "reinversions": Option(int, 2, "how many times reinvert rebuilds", ge=0),
        "small_witness": Option(bool, True, "among optimal vertices, move to one with the smallest sum(x)"),
        "warm_exits": Option(bool, True, "LPs that differ in their last column only (a scene's exit LPs) share "
                                         "one phase 1 and start phase 2 from its basis"),
        "lean_exits": Option(bool, True, "exits started from LP-1's bases (prepare_exits_from) share their "
                                         "scene's factorisation, skip the reinversion rounds, and their small "
                                         "witness starts from their tableau"),
        "dantzig": Option(bool, True, "pivots from a given basis (warm phase 2, reinversion rounds, small witness) "
                                      "enter the most negative reduced cost (off: the lowest index)"),
        "chunk": _jax.JaxBatchedAdapter.chunk_option(1024),
        "exit_chunk": Option(int, EXIT_CHUNK, "lean exits (lean_exits) per vmapped piece (0 = all at once; "
                                              "with chunk = 0 they run at once too)", ge=0),
        "piece_kib": Option(int, PIECE_KIB, "on a CPU, pieces (chunk, exit_chunk) hold at most this many KiB of "
                                            "tableaux, at least 64 LPs (0 = pieces of chunk and exit_chunk alone)",
                            ge=0),
        "device": _jax.JaxBatchedAdapter.device_option(),
    }
    SETTINGS = {"default": {}, "published": {"cap": False, "bland": False, "artificial_ge": False, "spread": False,
                                             "recompute": False, "pivot_tol": 1e-6, "reinvert": False,
                                             "small_witness": False, "warm_exits": False, "lean_exits": False,
                                             "dantzig": False}}
    #: the measures ``contactbench ablate`` switches off one at a time, with their "off" values.
    #: (``lean_exits`` acts in ``bench.hold.check_batch`` only, never in an ablation cell: its
    #: switch is measured side by side by ``python -m bench.studies.margins``, ``with_margins_rounds``.)
    MEASURES = {"cap": False, "bland": False, "artificial_ge": False, "spread": False, "recompute": False,
                "pivot_tol": 1e-6, "reinvert": False, "small_witness": False,
                "warm_exits": False, "dantzig": False}

    @classmethod
    def check_available(cls) -> None:
        super().check_available()
        check_linrax()

    def prepare(self, problem):
        problem, (bounded, placed) = self._placed(problem)
        return problem, (bounded, placed, self._warm_groups(problem) if self.settings["warm_exits"] else None)

    def _placed(self, problem, place: bool = True):
        """The base preparation (cast, placed on the device): ``(problem, (bounded, placed
        arrays))``; without ``place`` the arrays stay on the host until read (``Unplaced``)."""
        if place:
            return super().prepare(problem)
        bounded, arrays = self.host_arrays(problem)
        return problem, (bounded, Unplaced(tuple(arrays), self.dtype, _jax.device(self.settings["device"])))

    def prepare_exits_from(self, problem, lp1_raw, scene_of_exit):
        """``prepare`` for exit LPs that start from LP-1's final bases: ``problem`` (validated,
        ``x = [lam, t]``, cap row first) holds exit LPs, LP ``i`` one of scene
        ``scene_of_exit[i]``, whose LP-1 (``x = [lam, s+, s-]``, same ``W``, need and limits)
        this adapter solved: ``lp1_raw`` is that ``run``'s output (its last entry the final
        bases). A basis of an LP-1 that ended optimal with no ``s`` basic is feasible for each
        of its scene's exits at ``t = 0``: those exits run phase 2 only, from it (no phase 1
        here at all); the others are solved cold. The caller asks only for exits of scenes
        whose LP-1 it verified supported (seed 002's LP with margins: an unsupported scene's
        margin is ``-delta``)."""
        if not self.settings["warm_exits"]:
            return self.prepare(problem)
        # the exit LPs' own arrays are read only by the exits solved on their own (cold, or
        # without lean_exits): placed when first read, not here (a float32 copy of every
        # exit's W: 14 MB at seed 002's 768 3D scenes, 1.7 ms of cast per check_batch)
        problem, (bounded, placed) = self._placed(problem, place=False)
        scene_of_exit = np.asarray(scene_of_exit, dtype=np.int64).reshape(-1)
        if scene_of_exit.shape != (len(problem.c),):
            raise ProblemError(f"scene_of_exit: expected one scene index per exit LP ({len(problem.c)}), "
                               f"got shape {scene_of_exit.shape}")
        k, d, limits = problem.n - 1, problem.m_eq, problem.m_ub - 1
        lp1_basis, lp1_code = np.asarray(lp1_raw[-1]), np.asarray(lp1_raw[3])
        if lp1_basis.ndim != 2 or lp1_basis.shape[1] != d + limits or np.any(scene_of_exit >= len(lp1_basis)) \
                or np.any(scene_of_exit < 0):
            raise ProblemError(f"lp1_raw: expected the run output of the LP-1 batch of these exits' scenes "
                               f"(bases of {d + limits} entries, at least {scene_of_exit.max(initial=-1) + 1} scenes), "
                               f"got bases of shape {lp1_basis.shape}")
        starts, usable = exit_starts(lp1_basis, lp1_code == 3, k, d, limits)
        dev = _jax.device(self.settings["device"])
        with _jax.precision(self.dtype):
            shared, basis = self._shared_exits(problem, starts, scene_of_exit,
                                               int(np.count_nonzero(usable[scene_of_exit])), dev)
        return problem, (bounded, placed, ExitStarts(basis, usable[scene_of_exit], shared))

    def _shared_exits(self, problem, starts, scene_of_exit, warm: int, dev):
        """``(SharedExits, basis)`` on ``dev``, in one transfer: ``basis`` is each exit's start
        (``starts[scene_of_exit]``, for the exits solved on their own), and the ``SharedExits`` are
        those of exit LPs started from LP-1's bases ``starts`` (for ``lean_exits``), of
        which ``warm`` start from one: consecutive exits of one scene that are equal but for
        their ``t`` column and its cost (a scene's directions) form a group, which shares one
        factorisation of the start (``one_exit_scene``). Equal means equal values (one
        comparison of each LP with the one before it, no tolerance), so an exit that differs
        is a group of its own.

        Where ``_pads_its_scenes`` (3D), the groups are padded (the last one repeated) to a
        multiple of the warm exits' piece size: XLA:CPU picks the kernels of a batched
        reduction or product by batch size (the 3D Householder spread's bits changed between
        512 and 768 cases), and at the exits' own size the answers on seed 002's four sets were
        the per-exit tableaux', bit for bit (48 of 48 output arrays; unpadded, 3 fewer of 4,584
        3D random exits were right). Planar scenes are not padded: their products are
        elementwise, with the same bits at any batch size."""
        B = len(problem.c)
        new = np.ones(B, dtype=bool)  # True where an exit starts a group
        new[1:] = scene_of_exit[1:] != scene_of_exit[:-1]
        _mark_unlike_neighbours(new, (Leading(problem.c, problem.n - 1), *_but_last_column(problem)))
        first = np.flatnonzero(new)
        group = (np.cumsum(new) - 1).astype(np.int32)
        chunk = self._exit_chunk(problem)
        size = _jax.piece_size(max(warm, 1), chunk or max(warm, 1)) if _pads_its_scenes(problem) else 1
        first = _jax.padded_index(first, -(-len(first) // size) * size)
        # both batches padded here to the size ``_warm_then_cold`` solves them as (chunked's
        # ``bucket``): a new count of exits then compiles nothing, where padding on the device
        # compiled a padding program per count and a trimming one: a 200-scene planar
        # ``check_batch`` call took about 0.19 s, against 6 ms now
        first = _jax.padded_index(first, _jax.at_once_size(len(first), chunk, bucket=True))
        rows = _jax.padded_index(np.arange(B), _jax.at_once_size(B, chunk, bucket=True))
        scenes = (problem.c[first, :-1], problem.A_eq[first, :, :-1], problem.b_eq[first], problem.A_ub[first, :, :-1],
                  problem.b_ub[first])
        group = group[rows]
        per_exit = (problem.A_eq[rows, :, -1], problem.A_ub[rows, :, -1], problem.c[rows, -1])
        f, i = self.dtype, np.int32
        scene_arrays, scene_types = (*scenes, starts[scene_of_exit[first]]), (f,) * len(scenes) + (i,)
        exit_parts, exit_types = (group, *per_exit), (i,) + (f,) * len(per_exit)
        placed = _jax.put_host((*scene_arrays, *exit_parts, starts[scene_of_exit]),
                               scene_types + exit_types + (i,), dev)
        split = len(scene_arrays)
        return SharedExits(placed[:split], placed[split:-1]), placed[-1]

    def _warm_groups(self, problem):
        """``(phase-1 arrays on the device, group of each LP, last columns of A_eq and A_ub)``
        for ``warm_exits``, or None.

        Consecutive LPs that differ only in their last column (and cost), as a scene's exit
        LPs do (the column of ``t``), share one phase 1: the LP without that column, whose
        feasible basis is feasible for each of them at ``x_last = 0``. Used when the batch has
        at least two LPs per group on average; a group is a run of neighbours with equal
        values (no tolerance; one comparison of each LP with the one before it, no sort).
        The shared LP minimises the sum of its variables: its optimal basis is a small-weight
        vertex."""
        B, n = problem.c.shape
        if B < 2 or n < 2:
            return None
        starts = np.zeros(B, dtype=bool)  # True where an LP differs from the one before it
        starts[0] = True
        if not _mark_unlike_neighbours(starts, _but_last_column(problem), most=B // 2):
            return None
        first = np.flatnonzero(starts)
        group = np.cumsum(starts) - 1
        dev = _jax.device(self.settings["device"])
        # phase 1, then the vertex of smallest total weight (a start float32 can factor well:
        # the smallest witness, as ``small_witness`` seeks; a feasibility-only vertex may
        # carry weights hundreds of times the load)
        arrays = (np.ones((len(first), n - 1)), problem.A_eq[first, :, :-1], problem.b_eq[first],
                  problem.A_ub[first, :, :-1], problem.b_ub[first])
        with _jax.precision(self.dtype):
            placed = _jax.put_host(arrays, self.dtype, dev)
        return placed, group.reshape(B), problem.A_eq[:, :, -1], problem.A_ub[:, :, -1]

    def run(self, prepared):
        """The batch, cold (``one_case``), or with ``warm_exits``: one phase 1 per group, then
        each LP of a feasible group from its basis (``one_warm_exit``; solved again cold when
        that does not end optimal); an LP of an infeasible group whose own column keeps the
        group's Farkas certificate valid (``a_last @ y <= 0``) is answered infeasible with it,
        unsolved; the others are solved cold. Prepared by ``prepare_exits_from``, each LP starts
        from its own LP-1 basis instead (no phase 1). Returns ``(x, y_eq, y_ub, code,
        iterations, basis)``: the last the final bases (what ``prepare_exits_from`` reads). Lean
        exits (``SharedExits``) may return more rows than LPs, a bucket's padding after the
        batch's own, which ``collect`` drops."""
        problem, (bounded, arrays, warm) = prepared
        if warm is None:
            return super().run((problem, (bounded, arrays)))
        B, n = problem.c.shape
        with _jax.precision(self.dtype):
            if isinstance(warm, ExitStarts):  # starts handed over from LP-1: no phase 1 here
                basis, group, ok = warm.basis, np.arange(B), warm.usable
                y_eq_, y_ub_ = np.zeros((B, problem.m_eq)), np.zeros((B, problem.m_ub))
                certified = np.zeros(B, dtype=bool)
            else:
                phase1, group, last_eq, last_ub = warm
                basis, feasible, y_eq, y_ub, proven = self.chunked(self._jitted("phase1", self.one_phase1), phase1,
                                                                   self.piece(problem))
                ok = np.asarray(feasible)[group]  # host: which LPs start warm
                y_eq_, y_ub_ = np.asarray(y_eq, np.float64)[group], np.asarray(y_ub, np.float64)[group]
                keeps = np.einsum("bi,bi->b", last_eq, y_eq_) + np.einsum("bi,bi->b", last_ub, y_ub_) <= 0
                certified = ~ok & np.asarray(proven)[group] & keeps
            # lean exits: this adapter's setting decides, whoever prepared the starts
            lean = isinstance(warm, ExitStarts) and self.settings["lean_exits"]
            return self._warm_then_cold(problem, bounded, arrays, basis, group, ok, certified, y_eq_, y_ub_,
                                        warm.shared if lean else None)

    def _warm_then_cold(self, problem, bounded, arrays, basis, group, ok, certified, y_eq_, y_ub_, shared=None):
        """The LPs where ``ok`` from ``basis[group]`` (``one_warm_exit``), then cold those that
        are neither ``ok`` nor ``certified`` (answered infeasible with the duals ``y_eq_``,
        ``y_ub_``), and the warm ones that did not end optimal; call inside ``precision``. With
        ``shared`` (``SharedExits``: lean exits, ``lean_exits``) the warm ones skip the
        reinversion rounds and their scenes share their start's factorisation
        (``one_exit_scene``, ``one_lean_exit``)."""
        import jax.numpy as jnp

        warm_at, cold_at = np.flatnonzero(ok), np.flatnonzero(~ok & ~certified)
        take, put = _index_ops()
        unplaced = arrays if isinstance(arrays, Unplaced) else None
        B, n = problem.c.shape
        # every LP from a basis of its own (LP-1's, in order): no rows to gather or to put back
        own = len(warm_at) == B and len(basis) == B and np.array_equal(group, np.arange(B))
        parts = []
        if len(warm_at) and shared is not None:
            pieces = self._exit_chunk(problem)
            # every batch here varies in size with LP-1's answers: solved as a bucket's size, so
            # that a new count of exits reuses the programs. The scenes and the exits come padded
            # to it (``_shared_exits``); a subset of the exits (not ``own``) is padded by chunked
            # (``bucket``). Scenes are read by index: their padded rows never are.
            scenes = self.chunked(self._jitted("exit-scene", self.one_exit_scene), shared.scenes, pieces, wait=False)
            per_exit = shared.per_exit if own else take(shared.per_exit, (warm_at,) * len(shared.per_exit))
            lean_fn = self._jitted("exit-lean", self.one_lean_exit, in_axes=(None, 0, 0, 0, 0))
            parts.append((warm_at, self.chunked(lambda *piece: lean_fn(scenes, *piece), per_exit, pieces,
                                                bucket=True)))
        elif len(warm_at):
            arrays = unplaced.placed() if unplaced is not None else arrays
            warm_fn = self._jitted("warm", self.one_warm_exit)
            starts = [*arrays[:5], basis] if own else \
                list(take((*arrays[:5], basis), (warm_at,) * 5 + (group[warm_at],)))
            parts.append((warm_at, self.chunked(warm_fn, starts, self.piece(problem), bucket=True)))
        if len(warm_at):
            # a warm start that does not end optimal is solved again cold (never worse than cold)
            code = np.asarray(parts[0][1][3])[:len(warm_at)]  # (lean exits' own rows: padded ones after)
            cold_at = np.union1d(cold_at, warm_at[code != 3])
            if own and not len(cold_at):  # every LP warm and optimal: its answers are the batch's (padded)
                return tuple(parts[0][1])
        if len(cold_at):
            rows = unplaced.rows(cold_at) if unplaced is not None else take(arrays, (cold_at,) * len(arrays))
            parts.append((cold_at, self.chunked(self._compiled(False, bounded), list(rows), self.piece(problem),
                                                bucket=True)))
        dtype = np.dtype(self.dtype)
        out = (jnp.zeros((B, n), dtype), jnp.asarray(y_eq_, dtype), jnp.asarray(y_ub_, dtype),
               jnp.zeros(B, jnp.int32), jnp.full(B, -1, jnp.int32),  # certified: code 0, infeasible
               jnp.zeros((B, problem.m_eq + problem.m_ub), jnp.int32))
        for where, values in parts:
            out = put(out, where, tuple(values))
        return _jax.import_jax().block_until_ready(out)

    def _exit_chunk(self, problem) -> int:
        """Lean exits of ``problem`` per piece: ``exit_chunk`` (``piece_kib`` on a CPU), or 0
        (at once) where ``chunk`` is 0."""
        return self.piece(problem, int(self.settings["exit_chunk"])) if int(self.settings.get("chunk") or 0) else 0

    def piece(self, problem, most: int | None = None) -> int:
        """LPs of ``problem`` (a validated batch) per vmapped piece: ``most`` (default the
        ``chunk`` setting; 0 = at once), and on a CPU device at most what ``piece_kib`` KiB of
        their tableaux hold (``tableau_bytes``), rounded down to a multiple of
        ``_jax.PIECE_QUANTUM``, at least one quantum."""
        most = super().piece(problem, most)
        kib = int(self.settings.get("piece_kib") or 0)
        if not most or not kib or _jax.device(self.settings["device"]).platform != "cpu":
            return most
        fits = kib * 1024 // tableau_bytes(problem, np.dtype(self.dtype).itemsize)
        return min(most, max(_jax.PIECE_QUANTUM, fits // _jax.PIECE_QUANTUM * _jax.PIECE_QUANTUM))

    def _jitted(self, key, fn, in_axes=0):
        """``jax.jit(jax.vmap(fn, in_axes))``, traced with our pivot loop swapped into linrax
        (by ``key``, shared with every adapter of these settings: ``_jax.shared_program``)."""
        def build():
            jax = _jax.import_jax()
            compiled = jax.jit(jax.vmap(fn, in_axes=in_axes))

            def traced(*args):  # trace (first call per shape) with our loop swapped in
                with _swapped(_pivot_loop(self.settings)):
                    return compiled(*args)

            return traced

        return _jax.shared_program(self, ("hold", key, in_axes), build)

    def _compiled(self, with_P: bool, bounded: tuple[int, ...]):
        def case(c, Ae, be, Au, bu, lb):
            return self.one_case(c, Ae, be, Au, bu)

        return self._jitted(("hold", bounded), case)

    def one_case(self, c, A_eq, b_eq, A_ub, b_ub, P=None, lb=None, bounded=()):
        """One LP through linrax's linprog (our pivot loop), then reinversion, primal and dual."""
        import jax.numpy as jnp
        from linrax import optim

        s = self.settings
        tol = s["pivot_tol"]
        H, A_eq_s, b_eq_s = self._spread(c, A_eq, b_eq)
        linprog = getattr(optim.linprog, "__wrapped__", optim.linprog)
        sol, kind = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq_s, b_eq=b_eq_s, primal_tol=tol, dual_tol=tol)
        form = standard_form(jnp, c, A_eq_s, b_eq_s, A_ub, b_ub)  # linrax's standard form, rebuilt
        return self._finish(form, b_eq.shape[0], H, sol.basis, sol.tableau, kind.feasible[0], kind.bounded[0], sol.x)

    def one_phase1(self, c, A_eq, b_eq, A_ub, b_ub):
        """Phase 1 of one LP (the part a group of LPs shares, ``warm_exits``): ``(basis,
        feasible, y_eq, y_ub, proven)``: linrax's final basis, whether phase 1 found it
        feasible, and, when it did not and its phase 1 ended optimal (``proven``), the
        Farkas duals of the rows (``A^T y <= 0`` on every column, ``b @ y > 0``)."""
        import jax.numpy as jnp
        from linrax import optim

        tol = self.settings["pivot_tol"]
        H, A_eq_s, b_eq_s = self._spread(c, A_eq, b_eq)
        linprog = getattr(optim.linprog, "__wrapped__", optim.linprog)
        sol, kind = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq_s, b_eq=b_eq_s, primal_tol=tol, dual_tol=tol)
        feasible = kind.feasible[0]
        form = standard_form(jnp, c, A_eq_s, b_eq_s, A_ub, b_ub)
        y, phase1 = basis_duals(jnp, form, sol.basis, feasible)
        proven = ~feasible & ~jnp.any(phase1 - small.vecmat(form.flip * y, form.A_full) < -tol)
        m_eq = b_eq.shape[0]
        return sol.basis, feasible, small.matmul(H, y[:m_eq]), y[m_eq:], proven

    def one_warm_exit(self, c, A_eq, b_eq, A_ub, b_ub, basis):
        """One exit LP from ``basis``: the phase-1 basis of its scene (``one_phase1`` without
        the ``t`` column; column ``j >= k`` is column ``j + 1`` here), or LP-1's with
        ``lean_exits`` off, feasible at ``t = 0`` for every direction. The tableau is built
        fresh from it, dual pivots repair float noise, and phase 2 runs at linrax's tolerance
        before the reinversion rounds: no phase 1. (Lean exits share that tableau per scene
        instead: ``one_exit_scene``, ``one_lean_exit``.)"""
        import jax.numpy as jnp

        k = c.shape[0] - 1
        H, A_eq_s, b_eq_s = self._spread(c, A_eq, b_eq)
        form = standard_form(jnp, c, A_eq_s, b_eq_s, A_ub, b_ub)
        basis = _with_t(basis, k)
        # the first round builds the tableau of ``basis`` fresh; the one given here is read only
        # where that one is not finite, and then the start proves nothing (not optimal: solved
        # cold), so no second factorisation is spent on it
        tableau = jnp.zeros((form.A_full.shape[0] + 1, form.c_std.shape[0] + 1), c.dtype)
        return self._finish(form, b_eq.shape[0], H, basis, tableau, jnp.asarray(True), jnp.asarray(True), None,
                            warm=True)

    def one_exit_scene(self, c, A_eq, b_eq, A_ub, b_ub, basis):
        """What a scene's lean exits from LP-1 share (``lean_exits``): the exit LP without its
        ``t`` column (``c`` (k,), ``A_eq`` (d, k), ``b_eq`` (d,), ``A_ub`` (1+L, k), ``b_ub``
        (1+L,): equal for every direction of the scene) and its start ``basis`` (d+1+L,) in that
        LP's columns. Returns ``(H, A_full, b_std, flip, c_std, B_inv, y, fresh, basis)``: the
        spread, the standard form of that LP, ``B^-1`` of the basis, ``y = c_B B^-1`` and its
        fresh phase-2 tableau (``_fresh_tableau``): one factorisation per scene instead of one
        per exit."""
        import jax.numpy as jnp

        H, A_eq_s, b_eq_s = self._spread(c, A_eq, b_eq)
        form = standard_form(jnp, c, A_eq_s, b_eq_s, A_ub, b_ub)
        basis = _index_type(basis)
        B_inv = small.inv(form.A_full[:, basis])
        fresh, y = self._fresh_tableau(form, basis, form.b_std.shape[0], B_inv=B_inv)
        return H, form.A_full, form.b_std, form.flip, form.c_std, B_inv, y, fresh, basis, jnp.all(jnp.isfinite(fresh))

    def one_lean_exit(self, scene, group, t_eq, t_ub, c_t):
        """One exit LP from LP-1's basis, lean (``lean_exits``): ``scene`` holds
        ``one_exit_scene``'s outputs for every group of exits (unbatched), ``group`` this exit's
        row there; ``t_eq`` (d,), ``t_ub`` (1+L,) and ``c_t`` () are its ``t`` column of
        ``A_eq``, ``A_ub`` and its cost. Its fresh tableau is the scene's with the ``t`` column
        ``B^-1 a_t`` (and reduced cost ``c_t - y a_t``) put in at ``k``; phase 2 and the small
        witness follow as for any lean exit (``_finish``)."""
        import jax.numpy as jnp

        H, form, fresh, basis, columns, finite = self.lean_exit_start(scene, group, t_eq, t_ub, c_t)
        return self._finish(form, t_eq.shape[0], H, basis, jnp.zeros_like(fresh), jnp.asarray(True),
                            jnp.asarray(True), None, warm=True, lean=True, fresh=fresh, columns=columns,
                            fresh_finite=finite)

    @staticmethod
    def lean_exit_start(scene, group, t_eq, t_ub, c_t):
        """``(H, form, fresh, basis, columns)`` of one lean exit (``one_lean_exit``'s arguments):
        its spread, standard form (without ``A_full``), fresh phase-2 tableau, start basis in
        its own columns, and ``columns(basis)``, its ``A_full[:, basis]``. The ``t`` column is
        spread and multiplied as that column of the whole exit LP's products
        (``matmul_column``): the tableau ``_fresh_tableau`` builds from the exit LP itself, by
        the same operations."""
        import jax.numpy as jnp

        H, A_full, b_std, flip, c_std, B_inv, y, fresh, basis, scene_finite = (a[group] for a in scene)
        k = fresh.shape[1] - 1 - t_ub.shape[0]  # the t column: after lam (k), before the slacks
        a_t = flip * jnp.concatenate([small.matmul_column(H, t_eq, k + 1), t_ub])
        reduced = c_t - small.vecmat(y, a_t[:, None])[0]
        t_col = jnp.concatenate([small.matmul_column(B_inv, a_t, fresh.shape[1] + 1), reduced[None]])
        fresh = jnp.concatenate([fresh[:, :k], t_col[:, None], fresh[:, k:]], axis=1)
        basis = _with_t(basis, k)
        form = StandardForm(None, b_std, flip, jnp.concatenate([c_std[:k], c_t[None], c_std[k:]]))

        def columns(basis):  # A_full[:, basis] of the exit LP: the scene's columns, a_t at k
            at = jnp.where(basis > k, basis - 1, basis)
            return jnp.where(basis == k, a_t[:, None], A_full[:, at])

        return H, form, fresh, basis, columns, scene_finite & jnp.all(jnp.isfinite(t_col))

    def _spread(self, c, A_eq, b_eq):
        """``(H, H A_eq, H b_eq)`` (``spread``; ``H = I`` when off or without equality rows)."""
        import jax.numpy as jnp

        m_eq = b_eq.shape[0]
        H = householder(jnp, b_eq) if (self.settings["spread"] and m_eq) else jnp.eye(m_eq, dtype=c.dtype)
        return H, small.matmul(H, A_eq), small.matmul(H, b_eq)

    @staticmethod
    def _fresh_tableau(form, basis, m, B_inv=None):
        """``(tableau, y)``: the phase-2 tableau of ``basis`` computed fresh, ``B^-1 [A b]`` and
        the reduced costs, and ``y = c_B B^-1`` (``B_inv``: that inverse, when the caller has it)."""
        import jax.numpy as jnp

        A_full, b_std, _flip, c_std = form
        A_std = A_full[:, :c_std.shape[0]]
        B_inv = small.inv(A_full[:, basis]) if B_inv is None else B_inv  # one factorisation
        body = small.matmul(B_inv, jnp.concatenate([A_std, b_std[:, None]], axis=1))
        c_B = jnp.concatenate([c_std, jnp.zeros(m, c_std.dtype)])[basis]
        y_ = small.vecmat(c_B, B_inv)
        cost = jnp.concatenate([c_std - small.vecmat(y_, A_std), -jnp.sum(b_std * y_)[None]])
        return jnp.concatenate([body, cost[None, :]], axis=0), y_

    def _finish(self, form, m_eq, H, basis, tableau, feasible, bounded, sol_x, warm=False, lean=False, fresh=None,
                columns=None, fresh_finite=None):
        """From a basis and its tableau: reinversion rounds, small witness, primal, duals and
        the status code (``one_case``'s second half). ``form`` is the LP's standard form (its
        ``A_full`` may be None when ``fresh`` and ``columns`` are given), ``m_eq`` its equality
        rows (spread by ``H``). ``warm``: a first round, from the fresh tableau of the warm
        basis (``fresh`` when given, else computed from ``form``) with linrax's phase-2
        tolerance, is phase 2; ``lean``: no reinversion rounds after it, and the small witness
        at ``pivot_tol`` from its tableau. ``columns(basis)`` gives ``A_full[:, basis]`` (by
        default read off ``form``). Without ``form.A_full`` a start that is not feasible ends
        code 2, not optimal (no Farkas check)."""
        import jax
        import jax.numpy as jnp

        s = self.settings
        tol = s["pivot_tol"]
        A_full, b_std, flip, c_std = form
        m, n_std = b_std.shape[0], c_std.shape[0]
        n = n_std - (m - m_eq)
        columns = columns or (lambda basis: A_full[:, basis])
        rounds = int(s["reinversions"]) if s["reinvert"] and not lean else 0
        opt_tol = tol / 100 if rounds else tol
        loop = _pivot_loop(s, opt_tol, dantzig=s["dantzig"])
        dual = _dual_loop(int(s["max_pivots"]) if s["cap"] else 10_000, tol, tol / 100)
        coarse = _pivot_loop(s, dantzig=s["dantzig"])  # linrax's phase-2 tolerance: the warm start's phase 2

        def one_round(pivots, basis, tableau, bounded, fresh=None, fresh_finite=None):
            """Rebuild the tableau of ``basis`` fresh (or take ``fresh``, that tableau), repair
            it by dual pivots, continue by ``pivots``; returns the new basis, tableau and
            boundedness, and whether the fresh tableau was finite."""
            fresh = self._fresh_tableau(form, basis, m)[0] if fresh is None else fresh
            # an 'unbounded' ray is re-examined on the fresh tableau too, but only a finite one:
            # linrax may have pivoted a ray column with no entry into the basis (x = inf), whose
            # singular basis gives no tableau to re-examine; its 'unbounded' then stands
            finite = jnp.all(jnp.isfinite(fresh)) if fresh_finite is None else fresh_finite
            go = feasible & finite
            fixed, basis_fixed, stuck = dual(fresh, basis)
            tableau = jnp.where(go, fixed, tableau)
            basis = jnp.where(go, basis_fixed, basis)
            x0 = jnp.zeros(n_std, b_std.dtype).at[basis].set(tableau[:m, -1], mode="drop")
            st = _solution_type(go & ~stuck)
            step, st = pivots(_step(tableau, basis, x0), st, 1, tol)
            return (jnp.where(go, step.basis, basis), jnp.where(go, step.tableau, tableau),
                    jnp.where(go & ~stuck, st.bounded[0], bounded), finite)

        if warm:  # the first round is phase 2, at linrax's tolerance
            basis, tableau, bounded, finite = one_round(coarse, basis, tableau, bounded, fresh, fresh_finite)
            feasible = feasible & finite  # a warm start that finds no finite tableau proves nothing: not optimal
        if rounds:
            # the reinversion rounds; a round that leaves the basis as it found it would be
            # repeated exactly by the next (its fresh tableau depends on the basis alone), so
            # the rounds stop there: under vmap a piece stops once each of its LPs has
            def again(state):
                r, changed = state[:2]
                return (r < rounds) & changed

            def reinversion(state):
                r, _, basis, tableau, bounded = state
                new_basis, tableau, bounded, _ = one_round(loop, basis, tableau, bounded)
                return r + 1, jnp.any(new_basis != basis), new_basis, tableau, bounded

            state = (jnp.int32(0), jnp.asarray(True), basis, tableau, bounded)
            _, _, basis, tableau, bounded = jax.lax.while_loop(again, reinversion, state)
        optimal = feasible & bounded & ~loop.improvable(tableau, basis, tol) & ~jnp.any(tableau[:m, -1] < -tol)
        if s["small_witness"]:
            basis, tableau = self._small_witness(loop, form, basis, tableau, optimal, n, opt_tol, tol, reuse=lean)
        B = columns(basis)  # the final basis: primal (recompute) and dual, by solves (more accurate than inv)
        if s["recompute"]:
            x = jnp.zeros(n_std + m, b_std.dtype).at[basis].set(small.solve(B, b_std))[:n]
        elif rounds or s["small_witness"] or sol_x is None:
            x = jnp.zeros(n_std + m, b_std.dtype).at[basis].set(tableau[:m, -1])[:n]
        else:
            x = sol_x[:n]
        y, phase1 = basis_duals(jnp, form, basis, feasible, solve=small.solve, B=B)
        if A_full is None:  # no Farkas check without the matrix: a start that is not feasible is not optimal
            phase1_done = jnp.asarray(False)
        else:  # infeasible only when phase 1 ended optimal; a phase 1 stopped by the cap is MAX_ITER
            phase1_done = ~jnp.any(phase1 - small.vecmat(flip * y, A_full) < -tol)
        y_eq = small.matmul(H, y[:m_eq])  # H is symmetric: y = H^T y' = H y'
        code = jnp.where(~feasible, jnp.where(phase1_done, 0, 2),
                         jnp.where(~bounded, 1, jnp.where(optimal, 3, 2))).astype(jnp.int32)
        return x, y_eq, y[m_eq:], code, jnp.int32(-1), basis.astype(jnp.int32)

    @staticmethod
    def _small_witness(loop, form, basis, tableau, optimal, n, opt_tol, tol, reuse=False):
        """From an optimal basis, primal pivots on the secondary cost ``sum(x[:n])`` with every
        column of positive main reduced cost (last row of ``tableau``) barred from entering;
        returns the new basis and its tableau (unchanged when the phase does not apply). The
        phase starts from ``B^-1 [A_std b]`` computed fresh, or with ``reuse`` from the body
        of ``tableau`` (a phase-2 tableau, ``n_std + 1`` columns: a lean exit's, fresh a few
        pivots before)."""
        import jax.numpy as jnp

        m, n_std = form.b_std.shape[0], form.c_std.shape[0]
        dtype = form.b_std.dtype
        reduced = tableau[-1, :-1]
        e = jnp.concatenate([jnp.ones(n, dtype), jnp.zeros(n_std - n, dtype)])
        e_B = jnp.concatenate([e, jnp.zeros(m, dtype)])[basis]
        if reuse:  # the tableau's own body: B^-1 [A_std b] as pivoted (no second factorisation)
            body = jnp.concatenate([tableau[:m, :n_std], tableau[:m, -1:]], axis=1)
            secondary = e - small.vecmat(e_B, body[:, :n_std])
            const = jnp.sum(e_B * body[:, -1])
        else:
            A_full, b_std = form.A_full, form.b_std
            A_std = A_full[:, :n_std]
            B_inv = small.inv(A_full[:, basis])
            body = small.matmul(B_inv, jnp.concatenate([A_std, b_std[:, None]], axis=1))
            w = small.vecmat(e_B, B_inv)
            secondary = e - small.vecmat(w, A_std)
            const = jnp.sum(b_std * w)
        barred = reduced > opt_tol  # entering these would raise the main objective
        secondary = jnp.where(barred, jnp.asarray(1e20, dtype), secondary)
        cost = jnp.concatenate([secondary, -const[None]])
        tableau_2 = jnp.concatenate([body, cost[None, :]], axis=0)
        x0 = jnp.zeros(n_std, dtype).at[basis].set(body[:, -1], mode="drop")
        feasible_basis = optimal & ~jnp.any(body[:, -1] < -tol)
        step, st = loop(_step(tableau_2, basis, x0), _solution_type(feasible_basis), 1, tol)
        keep = feasible_basis & st.bounded[0] & ~jnp.any(step.tableau[:m, -1] < -tol)
        return jnp.where(keep, step.basis, basis), jnp.where(keep, step.tableau, tableau)

    def status_of(self, code):
        """0 infeasible, 1 unbounded, 2 stopped by the cap (not optimal), 3 optimal."""
        names = np.array(["infeasible", "unbounded", "cap_reached", "optimal"], dtype=object)
        table = np.array([Status.INFEASIBLE, Status.UNBOUNDED, Status.MAX_ITER, Status.OPTIMAL], dtype=np.int8)
        code = np.asarray(code).astype(np.int32).reshape(-1)
        return table[code], CodedText(code, names)


class Unplaced:
    """A batch's arrays for ``one_case`` (``host_arrays``), kept on the host until read:
    ``placed()`` casts and places them all, once; ``rows(at)`` places rows ``at`` only (the
    exits solved cold), each time. The rows' values are those of ``placed()``'s rows."""

    def __init__(self, arrays: tuple, dtype: str, dev) -> None:
        self.arrays, self.dtype, self.dev = arrays, dtype, dev
        self._placed: tuple | None = None

    def placed(self) -> tuple:
        """Every array, cast and on the device (placed at the first call)."""
        if self._placed is None:
            self._placed = _jax.put_host(self.arrays, self.dtype, self.dev)
        return self._placed

    def rows(self, at: np.ndarray) -> tuple:
        """Rows ``at`` of every array, cast and on the device (of ``placed()`` where it is)."""
        if self._placed is not None:
            take, _ = _index_ops()
            return take(self._placed, (at,) * len(self._placed))
        return _jax.put_host(tuple(np.asarray(a)[at] for a in self.arrays), self.dtype, self.dev)


class SharedExits(NamedTuple):
    """Exit LPs from LP-1 in groups that share their start (``lean_exits``; built by
    ``_shared_exits``), on the device: ``scenes``, per group (G rows) the exit LP without its
    ``t`` column and the start basis, ``(c (G, k), A_eq (G, d, k), b_eq (G, d), A_ub (G, 1+L,
    k), b_ub (G, 1+L), basis (G, d+1+L))``; ``per_exit``, per exit LP (B rows), ``(group (B,),
    t column of A_eq (B, d), of A_ub (B, 1+L), cost of t (B,))``. Both are padded by their
    last row to the size they are solved as (``_jax.at_once_size``; unpadded where solved in
    pieces), so ``G`` and ``B`` here may exceed the groups and the exit LPs."""

    scenes: tuple
    per_exit: tuple


class ExitStarts(NamedTuple):
    """Starting bases of exit LPs handed over from LP-1 (``prepare_exits_from``): ``basis``
    (B, d + 1 + L) on the device, in the column order of the exit LP without its ``t``
    column (``one_warm_exit``'s), ``usable`` (B,) host bools: where it is a start, and
    ``shared`` (``SharedExits``: what lean exits share, read where ``lean_exits`` is on)."""

    basis: object
    usable: np.ndarray
    shared: SharedExits | None = None


def exit_starts(lp1_basis: np.ndarray, optimal: np.ndarray, k: int, d: int, limits: int):
    """``(starts, usable)``: LP-1's final bases ``lp1_basis`` (S, d + L), columns of linrax's
    standard form of LP-1 (``lam`` k, ``s+`` d, ``s-`` d, limit slacks L, artificials d + L),
    as bases of its exit LPs without the ``t`` column (``lam`` k, cap slack, limit slacks L,
    artificials d + 1 + L; the cap row's slack, 1 at ``t = 0``, is added basic). ``usable``
    where the LP-1 ended ``optimal`` and no ``s`` column is basic (an ``s`` at 0 has no
    counterpart in an exit LP)."""
    j = np.asarray(lp1_basis, dtype=np.int64)
    slack0, art0 = k + 2 * d, k + 2 * d + limits  # LP-1: first limit slack, first artificial
    exit_art0 = k + 1 + limits  # the exit LP without t: first artificial (row order: eq d, cap, limits)
    mapped = np.select([j < k, j < slack0, j < art0, j - art0 < d],
                       [j, -1, j - slack0 + k + 1, j - art0 + exit_art0], default=j - art0 + exit_art0 + 1)
    usable = np.asarray(optimal, dtype=bool) & np.all(mapped >= 0, axis=1)
    starts = np.concatenate([np.where(usable[:, None], mapped, 0), np.full((len(j), 1), k)], axis=1)
    return starts, usable


@functools.cache
def _index_ops():
    """``(take, put)``, jitted: ``take(arrays, indices)`` gathers rows ``indices[i]`` of
    ``arrays[i]``; ``put(outs, where, values)`` sets rows ``where`` of every ``outs[i]`` to
    the first ``len(where)`` rows of ``values[i]`` (rows past them are a bucket's padding),
    one dispatch each instead of one per array."""
    jax = _jax.import_jax()
    import jax.numpy as jnp

    take = jax.jit(lambda arrays, indices: tuple(jnp.take(a, i, axis=0) for a, i in zip(arrays, indices)))
    put = jax.jit(lambda outs, where, values: tuple(o.at[where].set(v[:where.shape[0]])
                                                    for o, v in zip(outs, values)))
    return take, put


class Leading(NamedTuple):
    """A block for ``_mark_unlike_neighbours``: ``array``'s values in the first ``columns``
    entries of its last axis only (its contiguous whole is compared, then the rest ignored:
    a comparison of the view ``array[..., :columns]`` ran element rows of a few values and
    took 10 to 20 times as long)."""

    array: np.ndarray
    columns: int


def _but_last_column(problem):
    """``(b_eq, b_ub, A_eq, A_ub)`` of a batch, the matrices without their last column
    (``Leading`` blocks), the small right-hand sides first: an LP-1 batch (a scene per LP) is
    told apart by them alone, before its matrices are read."""
    return (problem.b_eq, problem.b_ub, Leading(problem.A_eq, problem.n - 1),
            Leading(problem.A_ub, problem.n - 1))


#: a block's LPs with at most this many values each are compared value by value (one
#: elementwise ``|=`` over every LP per value); wider ones by one ``np.any`` over each LP
NEIGHBOUR_VALUES_MAX = 32


def _leading(block) -> Leading:
    """``block`` (an array with the batch axis first, or a ``Leading``) as a ``Leading`` (an
    array: every column of its last axis)."""
    return block if isinstance(block, Leading) else Leading(block, block.shape[-1] if block.ndim > 1 else 1)


def _compared(blocks):
    """The ``Leading`` form of each of ``blocks`` that has values to compare."""
    for block in map(_leading, blocks):
        if len(block.array) > 1 and block.array[0].size and block.columns:
            yield block


def _unlike_previous(block) -> np.ndarray:
    """(B - 1,) True where LP ``i`` of ``block`` (an array with the batch axis first, or a
    ``Leading``) differs from LP ``i - 1`` in any value compared (no tolerance)."""
    block = _leading(block)
    array = block.array
    last = array.shape[-1] if array.ndim > 1 else 1
    differ = (array[1:] != array[:-1]).reshape(len(array) - 1, -1, last)[:, :, :block.columns]
    if differ.shape[1] * differ.shape[2] > NEIGHBOUR_VALUES_MAX:
        return np.any(differ, axis=(1, 2))
    out = np.zeros(len(array) - 1, dtype=bool)
    for row in range(differ.shape[1]):  # a few values per LP, each over every LP at once
        for column in range(differ.shape[2]):
            out |= differ[:, row, column]
    return out


def _mark_unlike_neighbours(new: np.ndarray, blocks, most: int | None = None) -> bool:
    """Set ``new[i]`` where LP ``i`` differs from LP ``i - 1`` in any value of ``blocks``
    (arrays with the batch axis first, or ``Leading`` blocks: no copy of their values, no
    tolerance). Stops and returns False once more than ``most`` are set; else True.

    With ``most``, each block's first value per LP is compared first (one strided 1-D
    comparison): a batch of distinct scenes (LP-1) usually differs there in most LPs, and is
    then refused without reading the rest. The marks it sets are a subset of the block's, so
    the answer is the full comparison's. (At 65,536 planar LP-1 scenes the full comparison
    of ``A_eq`` took 0.68 ms, 1.4 % of linrax-hold's solve on a CPU.)"""
    given = list(blocks)
    blocks = list(_compared(given))
    if most is not None:
        for block in blocks:
            first = block.array[(slice(None),) + (0,) * (block.array.ndim - 1)]
            new[1:] |= first[1:] != first[:-1]
            if np.count_nonzero(new) > most:
                return False
    for block in blocks:
        new[1:] |= _unlike_previous(block)
        if most is not None and np.count_nonzero(new) > most:
            return False
    return most is None or not given or np.count_nonzero(new) <= most  # (the marks set before the call count)


def _pads_its_scenes(problem) -> bool:
    """Whether the shared scenes of lean exits of ``problem`` (a batch of exit LPs,
    ``SharedExits``) are padded to the exits' piece size: where a fresh tableau's product
    ``B^-1 [A b]`` is a library product (more than ``small.ELEMENTWISE_MAX`` entries; a 3D
    exit's 7 x 131), whose kernels, and so its last bits, XLA:CPU picks by batch size. A
    planar exit's products are elementwise: unpadded, its answers were the per-exit path's
    bit for bit (seed 002's two planar sets, 12 of 12 output arrays), while padded, planar
    near-boundary's 212 scenes ran as 640 (its exits shared took 1.13-1.20x the time)."""
    return (problem.m_eq + problem.m_ub) * (problem.n + problem.m_ub + 1) > small.ELEMENTWISE_MAX


def tableau_bytes(problem, itemsize: int) -> int:
    """Bytes of one LP's simplex tableau in linrax's standard form, about: ``m + 2`` rows
    (the constraints, phase 2's and phase 1's costs) by ``n + m_ub + m + 1`` columns (the
    variables, the slacks, the artificials and the right-hand side), ``m = m_eq + m_ub``."""
    m = problem.m_eq + problem.m_ub
    return (m + 2) * (problem.n + problem.m_ub + m + 1) * itemsize


def _index_type(basis):
    """``basis`` in the pivots' index type (int64 with x64, else int32)."""
    import jax
    import jax.numpy as jnp

    return basis.astype(jax.dtypes.canonicalize_dtype(jnp.int64))


def _with_t(basis, k: int):
    """An exit start ``basis`` in the columns of the exit LP without ``t`` as the exit LP's
    (column ``j >= k`` is ``j + 1``), in the pivots' index type."""
    import jax.numpy as jnp

    basis = _index_type(basis)
    return jnp.where(basis >= k, basis + 1, basis)


def _step(tableau, basis, x):
    from linrax.optim import SimplexStep

    return SimplexStep(tableau, basis, x)


def _solution_type(feasible):
    """linrax's ``SimplexSolutionType`` of one LP: ``feasible`` (a traced bool), bounded."""
    import jax.numpy as jnp
    from linrax.optim import SimplexSolutionType

    return SimplexSolutionType(feasible.reshape(1), jnp.array([True]))


ADAPTER = LinraxHoldAdapter
NAME, CAPABILITIES, SETTINGS = ADAPTER.NAME, ADAPTER.CAPABILITIES, ADAPTER.SETTINGS
solve, solve_batch = module_api(ADAPTER)
