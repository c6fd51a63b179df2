"""The planar box: a square box on the floor, optionally pushed by a disk on its left face.

Frame and units (used by every planar family): x to the right, z up; half-side ``l = 1``,
centre of mass at the origin, floor corners ``A = (-1, -1)``, ``B = (+1, -1)``. Wrench order
``(f_x, f_z, tau_y / l)``, forces in m*g, moments in m*g*l, ``tau_y = p_z f_x - p_x f_z``.
``need = -(gravity + push)``, gravity on a floor tilted by ``tilt`` rad (positive pulls
towards -x in the box frame) being ``(-sin tilt, -cos tilt, 0)``.

Friction cone edges at a contact with inward normal ``n``: ``n + mu t`` (label ``+``) and
``n - mu t`` (label ``-``), unit normal component, ``t = (-n_z, n_x)`` (``n`` rotated by +90
degrees; floor ``t = -x``, disk ``t = +z``), so the flat box's witness reads ``lam_A+ =
lam_B- = 1/2`` as in seed 002. The disk pushes +x on the left face (x = -1) at height
``disk_height`` (0: the centre of mass' height), with friction ``disk_mu`` and normal-force
limit ``disk_fmax`` (an LP-3 row on its two edges)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from . import params as valid
from .family import Family, Param

from .hold import HoldScene, Limits, SceneBatch
from .robust import corners, lower_mu

AXES = ("f_x", "f_z", "tau_y")
CORNERS = {"A": np.array([-1.0, -1.0]), "B": np.array([1.0, -1.0])}
FLOOR_NORMAL = np.array([0.0, 1.0])
DISK_NORMAL = np.array([1.0, 0.0])


def edge_wrenches(point, normal, mu: float) -> np.ndarray:
    """(3, 2) wrenches of the two cone edges ``n + mu t`` and ``n - mu t`` at ``point``.

    ``normal`` is the inward unit normal ``(n_x, n_z)``; ``t = (-n_z, n_x)``.
    """
    tangent = np.array([-normal[1], normal[0]])
    cols = []
    for sign in (1.0, -1.0):
        f = normal + sign * mu * tangent
        cols.append([f[0], f[1], point[1] * f[0] - point[0] * f[1]])
    return np.array(cols).T


def _check_nonnegative(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ProblemError(f"{name}: expected a finite number >= 0, got {value!r}")
    return value


def scene(mu: float = 0.2, corners: str = "AB", push=(0.0, 0.0, 0.0), tilt: float = 0.0,
          disk_height: float | None = None, disk_fmax: float | None = None,
          disk_mu: float | None = None, pad: bool = False) -> HoldScene:
    """One planar hold scene (see the module docstring for frame and units).

    Parameters
    ----------
    mu : floor friction coefficient (>= 0), or an interval (low, high) whose lower end is used.
    corners : which floor corners touch: "AB", "A" or "B".
    push : external wrench ``(f_x, f_z, tau_y / l)`` on the box, in m*g, m*g*l.
    tilt : floor inclination in radians.
    disk_height : height of the disk contact on the left face in l (0 = centre of
        mass height, within [-1, 1]); None = no disk.
    disk_fmax : the disk's normal-force limit in m*g (None = unlimited).
    disk_mu : the disk's friction coefficient (defaults to ``mu``).
    pad : give a dropped corner duplicate columns of the other corner, so every scene
        has 4 floor columns (batches need one shape; zero columns would make some
        interior-point solvers return NaN).
    """
    mu = _check_nonnegative("mu", lower_mu(mu))
    if corners not in ("AB", "A", "B"):
        raise ProblemError(f"corners: expected 'AB', 'A' or 'B', got {corners!r}")
    push = np.asarray(push, dtype=float)
    if push.shape != (3,) or not np.all(np.isfinite(push)):
        raise ProblemError(f"push: expected 3 finite numbers (f_x, f_z, tau_y/l), got {push!r}")
    tilt = float(tilt)
    if not np.isfinite(tilt) or abs(tilt) >= np.pi / 2:
        raise ProblemError(f"tilt: expected radians in (-pi/2, pi/2), got {tilt!r}")
    blocks, labels = [], []
    touching = list(corners) * (2 if pad and len(corners) == 1 else 1)
    for name in touching:
        blocks.append(edge_wrenches(CORNERS[name], FLOOR_NORMAL, mu))
        labels += [f"{name}+", f"{name}-"]
    limits = None
    if disk_height is not None:
        h = float(disk_height)
        if not np.isfinite(h) or abs(h) > 1:
            raise ProblemError(f"disk_height: expected a height in [-1, 1] (units of l), got {disk_height!r}")
        dmu = mu if disk_mu is None else _check_nonnegative("disk_mu", disk_mu)
        blocks.append(edge_wrenches(np.array([-1.0, h]), DISK_NORMAL, dmu))
        labels += ["D+", "D-"]
        if disk_fmax is not None:
            fmax = _check_nonnegative("disk_fmax", disk_fmax)
            k = 2 * len(touching) + 2
            row = np.zeros((1, k))
            row[0, -2:] = 1.0
            limits = Limits(row, np.array([fmax]))
    elif disk_fmax is not None or disk_mu is not None:
        raise ProblemError("disk_fmax, disk_mu: expected disk_height to be set when the disk has limits or friction")
    need = np.array([np.sin(tilt), np.cos(tilt), 0.0]) - push
    return HoldScene(np.hstack(blocks), need, limits, tuple(labels))


def robust_need(m, c, tilt, push) -> np.ndarray:
    """Need (..., 3) for mass ``m`` (in m) and centre-of-mass offset ``c = (c_x, c_z)`` (..., 2)
    (in l) on a floor tilted by ``tilt`` (rad) under ``push`` (..., 3); the arguments
    broadcast (see ``problems.robust``)."""
    m, tilt, c = np.asarray(m, float), np.asarray(tilt, float), np.asarray(c, float)
    s, co = np.sin(tilt), np.cos(tilt)
    return np.stack([m * s, m * co, m * (c[..., 1] * s - c[..., 0] * co)], axis=-1) - np.asarray(push, float)


#: the sampler's version, recorded in every row (``generator_version``) and in the reference
#: cache key: version 2 draws with array operations (the same distribution as version 1's
#: scene-by-scene draws, in another order, so other bytes for a seed).
GENERATOR_VERSION = 2


def floor_wrenches(points: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """(n, 3, 2 P) floor edge wrenches (``+`` then ``-`` edge per point, point-major) of
    corner points ``points`` (n, P, 2) with friction ``mu`` (n,): the batched ``edge_wrenches``
    with normal ``+z`` (tangent ``-x``): ``f = (-+mu, 1)``."""
    sign = np.array([1.0, -1.0])
    fx = -mu[:, None, None] * sign  # (n, 1, 2)
    fz = np.ones_like(fx)
    px, pz = points[..., 0:1], points[..., 1:2]  # (n, P, 1)
    cols = np.stack(np.broadcast_arrays(fx, fz, pz * fx - px * fz), axis=1)  # (n, 3, P, 2)
    return cols.reshape(len(mu), 3, -1)


def disk_wrenches(height: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """(n, 3, 2) wrenches of the disk's two edges at ``(-1, height)`` with normal ``+x``
    (tangent ``+z``): ``f = (1, +-mu)``."""
    fz = mu[:, None] * np.array([1.0, -1.0])
    fx = np.ones_like(fz)
    return np.stack([fx, fz, height[:, None] * fx + fz], axis=1)


def sample(n: int, seed: int, *, mu=(0.1, 0.8), tilt=(-0.4, 0.4), push=(0.3, 0.3, 0.5),
           drop: float = 0.3, disk: bool = False, disk_fmax=(0.1, 1.0), mass=None,
           com=None) -> tuple[SceneBatch, pd.DataFrame]:
    """``n`` random padded scenes and their parameters (one ``meta`` row per scene), drawn
    with array operations (``GENERATOR_VERSION``).

    ``mu`` and ``tilt`` are uniform ranges; ``push`` gives the half-widths of uniform
    ranges around 0 for ``(f_x, f_z, tau_y / l)``; ``drop`` is the probability that one
    corner (A or B, equally likely) loses contact; with ``disk`` every scene has a disk
    at a uniform height in [-1, 1], with friction in the ``mu`` range and a normal
    force limit uniform in ``disk_fmax``. Robust scenes: ``mass`` (low, high) and/or ``com``
    (half-widths ``(c_x, c_z)`` in l) give one LP per corner of the uncertainty box
    (``meta.need_corner``); the robust verdict is the worst over a case's corners.
    A scene that keeps one corner repeats its columns (4 floor columns in every scene).
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ProblemError(f"n: expected a positive integer, got {n!r}")
    for name, rng_ in (("mu", mu), ("tilt", tilt), ("disk_fmax", disk_fmax)):
        if len(rng_) != 2 or not rng_[0] <= rng_[1]:
            raise ProblemError(f"{name}: expected a range (low, high) with low <= high, got {rng_!r}")
    if len(push) != 3:
        raise ProblemError(f"push: expected 3 half-widths (f_x, f_z, tau_y/l), got {push!r}")
    if not 0 <= drop <= 1:
        raise ProblemError(f"drop: expected a probability in [0, 1], got {drop!r}")
    n = int(n)
    rng = np.random.default_rng(seed)
    mu_ = rng.uniform(*mu, size=n)
    tilt_ = rng.uniform(*tilt, size=n)
    push_ = rng.uniform(-1.0, 1.0, size=(n, 3)) * np.asarray(push, float)
    dropped = rng.random(n) < drop
    keep_a = rng.random(n) < 0.5  # which corner stays when one is dropped
    corner_names = np.where(dropped, np.where(keep_a, "A", "B"), "AB")
    first = np.where((dropped & ~keep_a)[:, None], CORNERS["B"], CORNERS["A"])
    second = np.where((dropped & keep_a)[:, None], CORNERS["A"], CORNERS["B"])
    blocks = [floor_wrenches(np.stack([first, second], axis=1), mu_)]
    limit_B, limit_fmax = np.zeros((n, 0, 4)), np.zeros((n, 0))
    meta = {"case": np.arange(n), "mu": mu_, "tilt": tilt_, "corners": corner_names.astype(object)}
    if disk:
        height, disk_mu = rng.uniform(-1.0, 1.0, size=n), rng.uniform(*mu, size=n)
        fmax = rng.uniform(*disk_fmax, size=n)
        blocks.append(disk_wrenches(height, disk_mu))
        limit_B = np.broadcast_to(np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0]), (n, 1, 6)).copy()
        limit_fmax = fmax[:, None]
        meta.update(disk_height=height, disk_mu=disk_mu, disk_fmax=fmax)
    meta.update(push_fx=push_[:, 0], push_fz=push_[:, 1], push_tau=push_[:, 2])
    W = np.concatenate(blocks, axis=2)
    labels, needs = corner_needs(mass, com, tilt_, push_)
    count = len(labels)
    each = (lambda a: a) if count == 1 else (lambda a: np.repeat(a, count, axis=0))
    scenes = SceneBatch(each(W), needs.reshape(n * count, 3), each(limit_B), each(limit_fmax))
    rows = pd.DataFrame(meta).iloc[np.repeat(np.arange(n), count)].reset_index(drop=True)
    rows["need_corner"] = np.tile(np.asarray(labels, dtype=object), n)
    return scenes, rows


def corner_needs(mass, com, tilt: np.ndarray, push: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``(labels, needs)``: the corner labels of the uncertainty box (``problems.robust.corners``)
    and the needs (n, corners, 3) of scenes with floor tilts ``tilt`` (n,) and pushes ``push``
    (n, 3); the single ``nominal`` corner without ``mass`` and ``com``."""
    box = corners(mass, com, 2)
    m = np.array([mc[1] for mc in box])  # (C,)
    c = np.array([mc[2] for mc in box])  # (C, 2)
    return [label for label, _, _ in box], robust_need(m[None], c[None], tilt[:, None], push[:, None, :])


def generate(n: int, seed: int = 0, **params):
    """``problems.generate("planar-box", n, seed, **params)``: a ``ProblemBatch`` of random scenes.

    ``kind`` ('lp1' or 'exit') picks the LPs; the other parameters are ``sample``'s.
    """
    from . import generate as generate_family  # the registry lives in the package

    return generate_family("planar-box", n, seed, **params)


FAMILY = Family(
    "planar-box",
    "square box on the floor (corners A, B), random tilt, friction, push, dropped corner, "
    "optional disk with a force limit; d=3",
    sample, AXES, kinds=("lp1", "exit"),
    params=(
        Param("mu", "(low, high), 0 < low <= high", (0.1, 0.8), "friction coefficient range at the corners (and the disk)",
              valid.interval(gt=0)),
        Param("tilt", "(low, high) in [-1.5, 1.5]", (-0.4, 0.4), "range of the floor tilt, rad",
              valid.interval(ge=-1.5, le=1.5)),
        Param("push", "(f_x, f_z, tau_y/l) half-widths", (0.3, 0.3, 0.5), "half-widths of the uniform push, m*g and m*g*l",
              valid.widths(3)),
        Param("drop", "float in [0, 1]", 0.3, "probability that one corner (A or B) loses contact",
              valid.number(ge=0, le=1)),
        Param("disk", "bool", False, "add a disk on the left face at a uniform height in [-1, 1] l", valid.boolean),
        Param("disk_fmax", "(low, high), 0 < low <= high", (0.1, 1.0), "range of the disk's normal-force limit, m*g",
              valid.interval(gt=0)),
        Param("mass", "(low, high), 0 < low <= high, or None", None, "robust test: mass range, one LP per corner of the box",
              valid.optional(valid.interval(gt=0))),
        Param("com", "(c_x, c_z) half-widths or None", None, "robust test: half-widths of the centre-of-mass box, l",
              valid.optional(valid.widths(2))),
    ),
    version=GENERATOR_VERSION,
)
