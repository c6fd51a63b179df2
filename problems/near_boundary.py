"""Near-boundary sampling: scenes within +-eps of the support boundary along one parameter.

These are the cases where float32 solvers break. Each case draws a base scene, locates its
support boundary along one scalar parameter with a float64 decider, and draws the parameter
uniformly within ``+-eps`` of it, so about half are supported. ``meta`` records the
parameter, the boundary and the signed ``distance`` (positive on the supported side), and
flags ``ambiguous`` cases (``|distance| < 1e-9``).

* ``base="planar-box"``: the box on corner B, held by a frictional disk with no force limit
  on its left face; the parameter is the disk height (``eps = 0.04 l``: seed 002's "within
  2 mm" for a 10 cm box), the boundary found by bisection with the exact planar test.
* ``base="cube-3d"``: the parameter is the magnitude ``s`` of a push ``s u`` along a random
  unit wrench direction on a cube that holds under gravity; the boundary is one float64
  exit LP (``eps = 0.01 m*g``). Candidates come in blocks, decided by HiGHS as batches
  (generator version 3). In full: docs/problems.md."""

from __future__ import annotations

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from . import params as valid
from .family import Family, Param

from . import cube, planar_box, planar_exact
from .hold import EXIT_CAP, SceneBatch, exit_arrays, lp1_arrays

BASES = ("planar-box", "cube-3d")
AMBIGUOUS = 1e-9


def _planar_scenes(mu, tilt, push, disk_mu, height) -> SceneBatch:
    """The padded corner-B scenes with a disk at ``height`` (l), as ``planar_box.scene(pad=True,
    corners="B", disk_height=height, ...)`` builds them one at a time: ``mu``, ``tilt``,
    ``disk_mu``, ``height`` (n,), ``push`` (n, 3) (m*g, m*g*l)."""
    n = len(mu)
    points = np.broadcast_to(planar_box.CORNERS["B"], (n, 2, 2))
    W = np.concatenate([planar_box.floor_wrenches(points, mu), planar_box.disk_wrenches(height, disk_mu)], axis=2)
    need = np.stack([np.sin(tilt), np.cos(tilt), np.zeros(n)], axis=1) - push
    return SceneBatch(W, need, np.zeros((n, 0, W.shape[2])), np.zeros((n, 0)))


def _uniform(rng_draws: np.ndarray, low: float, high: float) -> np.ndarray:
    """``rng.uniform(low, high)`` of each ``rng.random()`` draw: the same numbers, in arrays."""
    low, high = float(low), float(high)
    return low + (high - low) * rng_draws


def _planar(n: int, rng: np.random.Generator, eps: float, mu, tilt, push, disk_mu):
    """Planar candidates are drawn in blocks and bracketed on a grid of disk heights, with
    array operations: each block's scenes are built, decided and bisected as arrays. The
    numbers drawn are those of generator version 2 (one candidate at a time), in the same
    order, so a seed gives version 2's scenes."""
    grid = np.linspace(-1.0, 1.0, 9)
    pieces, metas, have, drawn = [], [], 0, 0
    while have < n:
        if drawn > 200 * n + 1000:
            raise ProblemError("near-boundary: too few candidate scenes have a support boundary in disk height; "
                               "widen the mu / tilt / push ranges")
        block = max(3 * (n - have), 32)
        drawn += block
        u = rng.random((block, 6))  # per candidate: mu, tilt, push (f_x, f_z, tau), disk_mu
        mu_, tilt_, disk_mu_ = _uniform(u[:, 0], *mu), _uniform(u[:, 1], *tilt), _uniform(u[:, 5], *disk_mu)
        push_ = np.stack([_uniform(u[:, 2 + a], -h, h) for a, h in enumerate(push)], axis=1)

        def at(heights, rows=slice(None)):
            scenes = _planar_scenes(mu_[rows], tilt_[rows], push_[rows], disk_mu_[rows], heights)
            return planar_exact.decide(scenes.W, scenes.need, margin=False)["verdict"]

        verdicts = np.stack([at(np.full(block, h)) for h in grid], axis=1)  # (block, grid)
        supported, unsupported = verdicts == "supported", verdicts == "unsupported"
        change = (supported[:, :-1] & unsupported[:, 1:]) | (unsupported[:, :-1] & supported[:, 1:])
        # the first candidates with a boundary, as many as are still needed: only they are bisected
        take = np.flatnonzero(change.any(axis=1))[:n - have]
        first = np.argmax(change[take], axis=1)  # each one's first bracket
        lo, hi = grid[first], grid[first + 1]
        low_supported = supported[take, first]
        for _ in range(48):  # bisection to ~1e-14 l
            mid = 0.5 * (lo + hi)
            same_as_low = (at(mid, take) == "supported") == low_supported
            lo, hi = np.where(same_as_low, mid, lo), np.where(same_as_low, hi, mid)
        boundary = 0.5 * (lo + hi)
        h = np.clip(boundary + rng.uniform(-eps, eps, size=len(take)), -1.0, 1.0)
        distance = np.where(low_supported, boundary - h, h - boundary)
        pieces.append(_planar_scenes(mu_[take], tilt_[take], push_[take], disk_mu_[take], h))
        metas.append(pd.DataFrame({
            "case": np.arange(have, have + len(take)), "base": "planar-box", "parameter": "disk_height", "value": h,
            "boundary": boundary, "distance": distance, "ambiguous": np.abs(distance) < AMBIGUOUS,
            "mu": mu_[take], "tilt": tilt_[take], "corners": "B", "disk_mu": disk_mu_[take],
            "push_fx": push_[take, 0], "push_fz": push_[take, 1], "push_tau": push_[take, 2]}))
        have += len(take)
    scenes = SceneBatch(*(np.concatenate([getattr(p, f) for p in pieces]) for f in ("W", "need", "limit_B",
                                                                                    "limit_fmax")))
    return scenes, pd.concat(metas, ignore_index=True)


def _highs(arrays: tuple[np.ndarray, ...]):
    """``(optimal, objective)`` (B,) of a batch of LPs ``(c, A_eq, b_eq, A_ub, b_ub)`` over
    ``x >= 0``, solved in float64 by HiGHS (the project's reference solver, ``highs``; one
    reused ``Highs`` object, no Python object per LP on this side). Presolve is off and one
    thread runs: on these small dense LPs that is the faster setting, and the answer is a
    basic solution all the same."""
    import solvers

    solution = solvers.get("highs", presolve="off", threads=1).solve_batch(*arrays)
    return np.asarray(solution.status == solvers.Status.OPTIMAL), np.asarray(solution.objective, dtype=float)


def _block_size(remaining: int, accepted: int, drawn: int) -> int:
    """Candidates to draw next: ``remaining`` scenes at the acceptance rate seen so far
    (``accepted`` of ``drawn``; about 1 in 4 by default), with 20 % to spare, in [16, 4096]."""
    rate = (accepted + 1) / (drawn + 4)
    return int(min(4096, max(16, np.ceil(1.2 * remaining / rate))))


def _cube(n: int, rng: np.random.Generator, eps: float, cube_params: dict):
    """Blocks of candidates, each decided as a batch: a block draws one seed for ``cube.sample``
    (its base scenes, no push), then one unit direction ``u`` (6,) per candidate; HiGHS decides
    LP-1 for every candidate and solves the exit LP along ``-u`` for those that hold; a
    candidate is kept when its boundary ``s*`` lies in ``(eps, cap)``, and then draws its push
    magnitude ``s*`` + uniform(-eps, eps). Kept candidates are taken in order until ``n``."""
    budget = 200 * n + 1000
    pieces, metas = [], []
    accepted = drawn = 0
    while accepted < n:
        if drawn >= budget:
            raise ProblemError("near-boundary: too few cube scenes hold under gravity with a boundary below the cap")
        block = min(_block_size(n - accepted, accepted, drawn), budget - drawn)
        drawn += block
        base, meta = cube.sample(block, int(rng.integers(2**31)), push=(0.0,) * 6, **cube_params)
        u = rng.normal(size=(block, 6))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        optimal, delta = _highs(lp1_arrays(base))
        held = np.flatnonzero(optimal & (delta <= AMBIGUOUS))
        boundary = np.full(block, np.nan)
        if len(held):
            optimal, objective = _highs(exit_arrays(base.take(held), -u[held], EXIT_CAP))
            boundary[held] = np.where(optimal, -objective, np.nan)
        with np.errstate(invalid="ignore"):
            keep = np.flatnonzero(np.isfinite(boundary) & (eps < boundary) & (boundary < EXIT_CAP * (1 - 1e-6)))
        keep = keep[:n - accepted]
        s = boundary[keep] + rng.uniform(-eps, eps, size=len(keep))
        pieces.append(base.take(keep).with_needs(base.need[keep] - s[:, None] * u[keep]))
        meta = meta.iloc[keep].reset_index(drop=True)
        meta["case"] = np.arange(accepted, accepted + len(keep))
        meta = meta.assign(base="cube-3d", parameter="push_magnitude", value=s, boundary=boundary[keep],
                           distance=boundary[keep] - s, ambiguous=np.abs(boundary[keep] - s) < AMBIGUOUS,
                           **{f"u_{a}": u[keep, i] for i, a in enumerate(cube.AXES)})
        metas.append(meta)
        accepted += len(keep)
    scenes = SceneBatch(*(np.concatenate([getattr(p, f) for p in pieces]) for f in ("W", "need", "limit_B",
                                                                                    "limit_fmax")))
    return scenes, pd.concat(metas, ignore_index=True)


def sample(n: int, seed: int, *, base: str = "planar-box", eps: float | None = None, mu=(0.1, 0.8),
           tilt=(-0.3, 0.3), push=(0.2, 0.2, 0.3), disk_mu=(0.1, 0.8), cube_params: dict | None = None):
    """``n`` near-boundary scenes of ``base`` (see the module docstring).

    ``eps`` is the half-width in the parameter's units (planar: l, default 0.04; cube:
    m*g, default 0.01). ``mu``, ``tilt``, ``push``, ``disk_mu`` are the planar ranges (as in
    ``planar_box.sample``); ``cube_params`` go to ``cube.sample``.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ProblemError(f"n: expected a positive integer, got {n!r}")
    if base not in BASES:
        raise ProblemError(f"base: expected one of {list(BASES)}, got {base!r}")
    if eps is not None and not (np.isfinite(eps) and eps > 0):
        raise ProblemError(f"eps: expected a half-width > 0, got {eps!r}")
    rng = np.random.default_rng(seed)
    if base == "planar-box":
        return _planar(int(n), rng, 0.04 if eps is None else eps, mu, tilt, push, disk_mu)
    cube_params = dict(cube_params or {})
    fixed = sorted(set(cube_params) & {"push", "mass", "com"})
    if fixed:
        raise ProblemError(f"cube_params: {fixed} cannot be set here (near-boundary draws the push itself, "
                           f"and a robust scene's corners have no single boundary)")
    known = {p.name for p in cube.FAMILY.params} - {"push", "mass", "com"}
    unknown = sorted(set(cube_params) - known)
    if unknown:
        raise ProblemError(f"cube_params: unknown cube-3d parameters {unknown}; expected some of {sorted(known)}")
    return _cube(int(n), rng, 0.01 if eps is None else eps, cube_params)


class NearBoundaryFamily(Family):
    """near-boundary: its wrench axes (and so its structure) are those of its ``base``."""

    def axes_for(self, params):
        base = params.get("base", "planar-box")
        if base not in BASES:
            raise ProblemError(f"base: expected one of {list(BASES)}, got {base!r}")
        return cube.AXES if base == "cube-3d" else planar_box.AXES


FAMILY = NearBoundaryFamily(
    "near-boundary",
    "scenes within +-eps of the support boundary along one parameter of a base family "
    "(planar-box: disk height; cube-3d: push magnitude); meta has the signed distance",
    sample, planar_box.AXES, kinds=("lp1", "exit"),
    params=(
        Param("base", "planar-box or cube-3d", "planar-box", "the family whose boundary is sampled",
              valid.one_of("planar-box", "cube-3d")),
        Param("eps", "float or None", None, "half-width around the boundary (planar: l, default 0.04; "
              "cube: m*g, default 0.01)", valid.optional(valid.number(gt=0))),
        Param("mu", "(low, high), 0 < low <= high", (0.1, 0.8), "planar: corner friction range", valid.interval(gt=0)),
        Param("tilt", "(low, high) in [-1.5, 1.5]", (-0.3, 0.3), "planar: floor tilt range, rad",
              valid.interval(ge=-1.5, le=1.5)),
        Param("push", "(f_x, f_z, tau_y/l) half-widths", (0.2, 0.2, 0.3), "planar: push half-widths", valid.widths(3)),
        Param("disk_mu", "(low, high), 0 < low <= high", (0.1, 0.8), "planar: disk friction range",
              valid.interval(gt=0)),
        Param("cube_params", "dict or None", None, "cube: parameters passed to cube-3d's sampler",
              valid.optional(valid.mapping)),
    ),
    # 2: the cube-3d base scenes come from cube-3d's version-2 sampler; 3: cube-3d bases in
    # blocks decided as batches (a seed's cube scenes differ; planar scenes are version 2's)
    version=3,
)
