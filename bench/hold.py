"""``check(scene)`` and ``check_batch(scenes)``: the hold test for users, with witness,
certificate and margin (seed 002's LP with margins, batched)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from problems import EXIT_CAP, HoldScene, get_kind
from problems.kinds.lp1 import robust_verdict
from problems.hold import SceneBatch, direction_names
from problems.kinds.checks import row_min
from solvers import Adapter, ProblemError, check_standard_form, from_spec
from solvers._jax import padded_index
from solvers.timing import PreparedSolve

from bench.engine.verify import DEFAULT_TOLERANCES, Tolerances, verify_exit, verify_lp1

AXES_BY_DIM = {3: ("f_x", "f_z", "tau_y"), 6: ("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z")}


def default_axes(d: int) -> tuple[str, ...]:
    """The names of ``d`` wrench axes: ``AXES_BY_DIM``'s, else ``e0, e1, ...``."""
    return AXES_BY_DIM.get(d, tuple(f"e{i}" for i in range(d)))


@dataclass(frozen=True)
class HoldCheck:
    """Result of ``check``.

    verdict : 'supported', 'unsupported', 'uncertain' or 'failed' (verified, see ``bench.engine.verify``).
    delta : LP-1 optimum from the solver: l1 distance from need to the cone (0 = supported).
    witness : (k,) edge weights lam >= 0 with W lam = need, when supported; else None.
    certificate : (d,) dual y with W^T y <= 0 and need @ y > 0, when unsupported; else None.
        seed 002's Farkas plane is z = -y.
    exits : pure direction name -> checked exit distance t (0 where unchecked), when
        supported and margins were asked for.
    margin : signed l1 margin: min exit when supported, -delta when unsupported,
        NaN when uncertain or not asked for.
    """

    verdict: str
    delta: float
    witness: np.ndarray | None
    certificate: np.ndarray | None
    exits: dict[str, float]
    margin: float


def _adapter(solver: str | Adapter) -> Adapter:
    """The adapter ``solver`` names (a spec string) or is; ``ProblemError`` naming ``solver``
    for anything else (None, a class, a number)."""
    if isinstance(solver, str):
        return from_spec(solver)
    if isinstance(solver, Adapter):
        return solver
    raise ProblemError(f"solver: expected a solver spec such as 'highs' or an adapter instance "
                       f"(solvers.get(...)), got {solver!r}")


@dataclass(frozen=True)
class HoldChecks:
    """Result of ``check_batch``: S scenes of d wrench axes and k generators.

    verdict : (S,) 'supported', 'unsupported', 'uncertain' or 'failed' (see ``HoldCheck``).
    delta : (S,) LP-1 optimum from the solver (l1 distance from need to the cone).
    witness : (S, k) edge weights where supported, NaN elsewhere.
    certificate : (S, d) dual y (``W^T y <= 0``, ``need @ y > 0``) where unsupported, NaN elsewhere.
    directions : the 2d pure directions' names (``+f_x``, ``-f_x``, ...).
    exits : (S, 2d) checked exit distances (0 where unchecked), NaN where not supported or
        margins were not asked for.
    margin : (S,) signed l1 margin: min exit where supported, -delta where unsupported, NaN
        where uncertain, failed or not asked for.
    """

    verdict: np.ndarray
    delta: np.ndarray
    witness: np.ndarray
    certificate: np.ndarray
    directions: tuple[str, ...]
    exits: np.ndarray
    margin: np.ndarray

    def frame(self) -> pd.DataFrame:
        """One row per scene: verdict, delta, margin and one ``exit<direction>`` column each."""
        exits = pd.DataFrame(self.exits, columns=[f"exit{name}" for name in self.directions])
        return pd.concat([pd.DataFrame({"verdict": self.verdict, "delta": self.delta, "margin": self.margin}),
                          exits], axis=1)


def prepare_lp1(adapter: Adapter, scenes: SceneBatch):
    """``(batch, ready)``: the LP-1 batch of ``scenes`` and a ``PreparedSolve`` of it (validated,
    prepared: ``ready.run()`` is the timed solve)."""
    lp1 = get_kind("lp1").build("scene", scenes, pd.DataFrame({"case": np.arange(len(scenes))}))
    return lp1, PreparedSolve(adapter, check_standard_form(*lp1.arrays(), batched=True))


def prepare_exits(adapter: Adapter, scenes: SceneBatch, held: np.ndarray, lp1_raw, axes: tuple[str, ...],
                  cap: float = EXIT_CAP):
    """``(batch, prepared)``: the exit batch of the scenes at ``held`` (indices into ``scenes``)
    and the adapter's prepared form of it (``adapter.run(prepared)`` is the timed solve),
    started from LP-1's bases in ``lp1_raw`` (that LP-1 ``run``'s output) by an adapter with
    ``prepare_exits_from``."""
    held = np.asarray(held, dtype=np.intp)
    exit_batch = get_kind("exit").build("scene", scenes.take(held), pd.DataFrame({"case": held}), axes=axes, cap=cap)
    problem = check_standard_form(*exit_batch.arrays(), batched=True)
    adapter.validate(problem)
    scene_of_exit = held[exit_batch.meta["scene_index"].to_numpy()]
    starts = getattr(adapter, "prepare_exits_from", None)
    return exit_batch, starts(problem, lp1_raw, scene_of_exit) if starts is not None else adapter.prepare(problem)


#: ``check_batch``'s default block: as many scenes at once as keep one block's exit LPs'
#: matrices under this many entries (2d exits per scene, each ``d + 1 + L`` rows of ``k + 1``):
#: 6,193 cube-3d scenes, under 2 GB of memory whatever the batch (a cube-3d scene's exits hold
#: about 10,800 entries; 65,536 scenes at once would need about 16 GB). A planar scene holds
#: 168-210 entries (over 300,000 scenes per block).
BLOCK_ENTRIES = 1 << 26


def block_scenes(d: int, k: int, limits: int, entries: int | None = None) -> int:
    """Scenes of ``d`` wrench axes, ``k`` generators and ``limits`` limit rows per block of
    ``check_batch``: ``entries`` (default ``BLOCK_ENTRIES``) over the entries of one scene's
    exit LPs' matrices, at least 1."""
    entries = BLOCK_ENTRIES if entries is None else entries
    return max(1, entries // (2 * d * (d + 1 + limits) * (k + 1)))


def block_sizes(scenes: int, block: int) -> list[int]:
    """How ``check_batch`` cuts ``scenes`` scenes into blocks of at most ``block``: in order, as
    equal as can be (so a batched solver compiles one or two shapes), ``[scenes]`` when
    they fit one block."""
    edges = np.linspace(0, scenes, -(-scenes // block) + 1).round().astype(int)
    return np.diff(edges).tolist()


def check_batch(scenes: "SceneBatch | list[HoldScene]", solver: str | Adapter = "highs", margin: bool = True,
                tolerances: Tolerances = DEFAULT_TOLERANCES, cap: float = EXIT_CAP,
                axes: tuple[str, ...] | None = None, block: int | None = None) -> HoldChecks:
    """The hold test of seed 002 for a batch of same-shape scenes, as one problem: LP-1 for
    every scene, then the 2d exit LPs (``margin``) of the scenes whose LP-1 verified
    supported only (an unsupported scene's margin is ``-delta``). Both batches are solved
    batched and verified with array operations (``bench.engine.verify``).

    An adapter with ``prepare_exits_from`` (``linrax-hold`` with ``warm_exits``) starts each
    exit from its scene's final LP-1 basis, with the witness and ``t = 0``: no phase 1.
    ``axes`` names the wrench axes (default: ``f_x, f_z, tau_y`` planar, six names in 3D);
    ``cap`` is the exit cap T in m*g (m*g*l for torques). ``block`` is how many scenes are
    solved at once (default ``block_scenes``: under 2 GB of memory, 6,193 cube-3d scenes); a
    larger batch is solved block after block, in equal blocks, each as above, and the results
    joined in order. A solver that answers each case on its own (HiGHS) gives the
    same answers in any block; a batched float32 solve may differ in its last bits with the
    block's size (XLA picks some kernels by batch size: cube-3d margins by 1e-7 with linrax-hold).
    """
    adapter = _adapter(solver)
    if isinstance(scenes, HoldScene):
        raise ProblemError("scenes: expected a SceneBatch or a list of HoldScene (check() takes one scene)")
    scenes = SceneBatch.of(scenes)
    S, d, k = scenes.W.shape
    axes = tuple(axes) if axes is not None else default_axes(d)
    if len(axes) != d:
        raise ProblemError(f"axes: expected {d} names (one per wrench axis), got {len(axes)}")
    if block is None:
        block = block_scenes(d, k, scenes.limit_B.shape[1])
    elif isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ProblemError(f"block: expected a positive number of scenes solved at once, got {block!r}")
    if S <= block:
        return _check_block(scenes, adapter, margin, tolerances, cap, axes)
    edges = np.cumsum([0, *block_sizes(S, block)])
    parts = [_check_block(scenes.take(np.arange(begin, end)), adapter, margin, tolerances, cap, axes)
             for begin, end in zip(edges[:-1], edges[1:])]
    joined = {name: np.concatenate([getattr(p, name) for p in parts])
              for name in ("verdict", "delta", "witness", "certificate", "exits", "margin")}
    return HoldChecks(directions=parts[0].directions, **joined)


def _check_block(scenes: SceneBatch, adapter: Adapter, margin: bool, tolerances: Tolerances, cap: float,
                 axes: tuple[str, ...]) -> HoldChecks:
    """``check_batch`` of ``scenes`` in one block (arguments checked by the caller).

    Both batches are solved as ``adapter.batch_size`` cases, padded with copies of their last
    scene whose answers are dropped: a JAX adapter compiles a program per batch size, so a
    caller whose scene count (or held count) changes from call to call would compile LP-1
    (about 2 s for 200 planar scenes here) and the exits again each time. linrax-hold pads
    its exits itself (``prepare_exits_from``, by exit LP)."""
    S, d, k = scenes.W.shape
    size = adapter.batch_size(S)
    lp1, ready = prepare_lp1(adapter, scenes if size == S else scenes.take(padded_index(np.arange(S), size)))
    raw = ready.run()
    solution = ready.finish(raw)
    checked = verify_lp1(lp1, solution, tolerances)
    verdict, delta = checked["verdict"].to_numpy(dtype=object)[:S], checked["delta"].to_numpy(dtype=float)[:S]
    supported, unsupported = verdict == "supported", verdict == "unsupported"
    witness = np.where(supported[:, None], solution.x[:S, :k], np.nan)
    certificate = np.where(unsupported[:, None], solution.y_eq[:S], np.nan)
    names = tuple(direction_names(axes))
    exits = np.full((S, 2 * d), np.nan)
    value = np.where(unsupported, -delta, np.nan)
    held = np.flatnonzero(supported)
    if margin and len(held):
        solved = held if hasattr(adapter, "prepare_exits_from") else padded_index(held, adapter.batch_size(len(held)))
        exit_batch, prepared = prepare_exits(adapter, scenes, solved, raw, axes, cap)
        checked_exits = verify_exit(exit_batch, adapter.finish(adapter.run(prepared), prepared), tolerances)
        exits[held] = checked_exits["exit"].to_numpy(dtype=float)[:2 * d * len(held)].reshape(len(held), 2 * d)
        value[held] = row_min(exits[held])
    return HoldChecks(verdict, delta, witness, certificate, names, exits, value)


def check(scene: HoldScene, solver: str | Adapter = "highs", margin: bool = True,
          tolerances: Tolerances = DEFAULT_TOLERANCES, cap: float = EXIT_CAP) -> HoldCheck:
    """Can the contacts of ``scene`` hold it? Solves LP-1 (and the 2d exits) and verifies:
    ``check_batch`` of this one scene.

    ``solver`` is an adapter or a spec such as ``"highs"`` or ``"linrax[dtype=float64]"``.
    """
    if not isinstance(scene, HoldScene):
        raise ProblemError(f"scene: expected a problems.HoldScene, got {type(scene).__name__}")
    return _one_check(check_batch([scene], solver, margin, tolerances, cap), 0, scene.k, margin)


def _one_check(checks: HoldChecks, i: int, k: int, margin: bool) -> HoldCheck:
    """Scene ``i`` of ``checks`` (its ``k`` generators) as a ``HoldCheck``: the witness only
    when supported, the certificate only when unsupported, the exits only when supported
    and asked for (``margin``)."""
    verdict = str(checks.verdict[i])
    witness = checks.witness[i, :k].copy() if verdict == "supported" else None
    certificate = checks.certificate[i].copy() if verdict == "unsupported" else None
    exits = dict(zip(checks.directions, checks.exits[i].astype(float))) if margin and verdict == "supported" else {}
    return HoldCheck(verdict, float(checks.delta[i]), witness, certificate, exits, float(checks.margin[i]))


def check_robust(scenes: list[HoldScene], solver: str | Adapter = "highs", margin: bool = True,
                 tolerances: Tolerances = DEFAULT_TOLERANCES, cap: float = EXIT_CAP) -> HoldCheck:
    """The robust hold test (seed 002 §5): ``scenes`` are one pose's corners of the mass /
    centre-of-mass box (or any set of needs); the result is the worst over them.

    Supported only if every corner is (witness of the first corner, each exit the smallest
    over corners, margin the smallest); unsupported if any corner is certified
    unsupported (that corner's delta and certificate, the largest delta); else uncertain
    (or failed, if any corner failed).

    The corners are solved as batches (``check_batch``), one per shape of ``W`` and limits
    (the corners of one pose share theirs: one batch), not one solve per corner.
    """
    scenes = list(scenes)
    if not scenes:
        raise ProblemError("scenes: expected at least one scene (one per corner of the uncertainty box)")
    strays = sorted({type(s).__name__ for s in scenes if not isinstance(s, HoldScene)})
    if strays:
        raise ProblemError(f"scenes: expected problems.HoldScene corners, got {', '.join(strays)}")
    adapter = _adapter(solver)
    shapes = [(s.W.shape, s.limit_rows[0].shape) for s in scenes]
    results: list[HoldCheck] = [None] * len(scenes)  # type: ignore[list-item]
    for shape in dict.fromkeys(shapes):
        at = [i for i, other in enumerate(shapes) if other == shape]
        checks = check_batch([scenes[i] for i in at], adapter, margin, tolerances, cap)
        for row, i in enumerate(at):
            results[i] = _one_check(checks, row, scenes[i].k, margin)
    verdict = robust_verdict([r.verdict for r in results])
    if verdict == "unsupported":  # the corner certified furthest from holding
        return max((r for r in results if r.verdict == "unsupported"), key=lambda r: r.delta)
    if verdict == "supported":
        exits = {k: min(r.exits[k] for r in results) for k in results[0].exits}
        return HoldCheck("supported", max(r.delta for r in results), results[0].witness, None, exits,
                         min(r.margin for r in results) if margin else float("nan"))
    return HoldCheck(verdict, float("nan"), None, None, {}, float("nan"))
