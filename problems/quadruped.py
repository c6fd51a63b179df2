"""Quadruped contact-force distribution (seed 000): the QP, its SOCP form, and its hold test.

Body frame ``x`` forward, ``y`` up, ``z = x cross y`` to the right; newtons and newton-metres.
The feet stand at ``(+-HALF_LENGTH, -height, +-HALF_WIDTH)``; the wrench rows are written about
the ground point under the body centre (seed 000's demo): ``sum_i f_i = (push_x, weight,
push_z)``, ``sum_i p_i x f_i = (roll, 0, pitch)``. Variables ``x = (f_FL, f_FR, f_BL, f_BR)``,
each ``(f_x, f_y, f_z)``, all free; a swing foot's columns are zero, so every case of a batch
has one shape whatever its stance. Kinds: ``qp`` (minimise ``sum |f_i|^2`` within inner
``edges``-sided pyramids ``cos(phi_k) f_x + sin(phi_k) f_z <= mu cos(pi / edges) f_y``),
``socp`` (circular cones ``|(f_x, f_z)| <= mu f_y``) and ``lp1`` (the stance's hold test with
the same pyramids, in units of ``weight`` and ``weight * HALF_LENGTH``).

``sample`` draws ``draw="controller"`` (a share ``feasible`` built feasible, the rest stress
draws) or ``draw="stress"`` (seed 000's sampler; case 0 its overload); ``scene`` builds one
named case. Frames, draws and figures in full: docs/problems.md, "quadruped"."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from . import params as valid
from .family import Family, Param

from . import contacts
from .hold import HoldScene, SceneBatch

FEET = ("FL", "FR", "BL", "BR")
HALF_LENGTH = 0.20
HALF_WIDTH = 0.15
HEIGHT = 0.30
#: every stance set of at least two feet (11), as comma-joined names in FEET order.
STANCES = tuple(",".join(c) for r in (2, 3, 4) for c in combinations(FEET, r))
CONES = ("pyramid", "circular")


def foot_positions(height: float = HEIGHT) -> np.ndarray:
    """(4, 3) foot positions in the body frame (metres), rows in ``FEET`` order."""
    sx = np.array([1, 1, -1, -1]) * HALF_LENGTH
    sz = np.array([-1, 1, -1, 1]) * HALF_WIDTH
    return np.column_stack([sx, np.full(4, -height), sz])


def parse_stance(stance: str | tuple[str, ...]) -> tuple[str, ...]:
    """``"FL,BR"`` -> ``("FL", "BR")`` in ``FEET`` order; at least two distinct feet."""
    names = stance.split(",") if isinstance(stance, str) else list(stance)
    names = [s.strip().upper() for s in names if s.strip()]
    bad = sorted(set(names) - set(FEET))
    if bad or len(set(names)) != len(names) or len(names) < 2:
        raise ProblemError(f"stance: expected at least two distinct feet of {list(FEET)}, got {stance!r}")
    return tuple(f for f in FEET if f in names)


def _skew(p: np.ndarray) -> np.ndarray:
    return np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])


@dataclass(frozen=True)
class QP:
    """One problem in the project's standard form (see ``solvers.types``)."""

    c: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    A_ub: np.ndarray
    b_ub: np.ndarray
    P: np.ndarray
    lb: np.ndarray
    cones: np.ndarray | None = None
    cone_mu: np.ndarray | None = None


@dataclass(frozen=True)
class QuadrupedScene:
    """A stance and a desired wrench (newtons, newton-metres; see module docstring)."""

    stance: tuple[str, ...]
    push: tuple[float, float]
    torque: tuple[float, float]
    mu: float
    weight: float
    height: float = HEIGHT
    edges: int = 4

    @property
    def wrench(self) -> np.ndarray:
        """(6,) ``(F_des, M_des)`` about O."""
        return np.array([self.push[0], self.weight, self.push[1], self.torque[0], 0.0, self.torque[1]])

    @property
    def in_stance(self) -> np.ndarray:
        """(4,) bool, in ``FEET`` order."""
        return np.array([f in self.stance for f in FEET])

    def wrench_matrix(self) -> np.ndarray:
        """(6, 12) map from the feet's forces to the wrench about O (swing columns zero)."""
        A = np.zeros((6, 12))
        for i, p in enumerate(foot_positions(self.height)):
            if self.in_stance[i]:
                lever = np.array([p[0], 0.0, p[2]])
                A[:3, 3 * i:3 * i + 3] = np.eye(3)
                A[3:, 3 * i:3 * i + 3] = _skew(lever)
        return A

    def pyramid_rows(self) -> np.ndarray:
        """(4 * edges, 12) rows ``G`` with ``G f <= 0`` the inner pyramids of all four feet."""
        phi = 2 * np.pi * np.arange(self.edges) / self.edges
        face = np.column_stack([np.cos(phi), np.full(self.edges, -self.mu * np.cos(np.pi / self.edges)),
                                np.sin(phi)])
        G = np.zeros((4 * self.edges, 12))
        for i in range(4):
            G[i * self.edges:(i + 1) * self.edges, 3 * i:3 * i + 3] = face
        return G

    def qp(self, cone: str = "pyramid") -> QP:
        """The force-distribution problem: ``cone="pyramid"`` a QP, ``"circular"`` an SOCP."""
        if cone not in CONES:
            raise ProblemError(f"cone: expected one of {list(CONES)}, got {cone!r}")
        n = 12
        common = dict(c=np.zeros(n), A_eq=self.wrench_matrix(), b_eq=self.wrench, P=2.0 * np.eye(n),
                      lb=np.full(n, -np.inf))
        if cone == "pyramid":
            G = self.pyramid_rows()
            return QP(A_ub=G, b_ub=np.zeros(len(G)), **common)
        cones = np.array([[3 * i + 1, 3 * i, 3 * i + 2] for i in range(4)])
        return QP(A_ub=np.zeros((0, n)), b_ub=np.zeros(0), cones=cones, cone_mu=np.full(4, self.mu), **common)

    def hold(self) -> HoldScene:
        """The hold test of this stance: inner-pyramid generators (6, 4 * edges), swing feet's
        columns zero; wrench in units of ``weight`` and ``weight * HALF_LENGTH``."""
        cols = []
        for i, p in enumerate(foot_positions(self.height)):
            lever = np.array([p[0], 0.0, p[2]])
            G = contacts.point(lever, (0.0, 1.0, 0.0), self.mu, self.edges, inner=True,
                               offset=np.pi / self.edges, length_scale=HALF_LENGTH)
            cols.append(G if self.in_stance[i] else np.zeros_like(G))
        need = self.wrench / np.array([self.weight] * 3 + [self.weight * HALF_LENGTH] * 3)
        labels = tuple(f"{f}{j}" for f in FEET for j in range(self.edges))
        return HoldScene(np.hstack(cols), need, labels=labels)

    def min_norm_forces(self) -> np.ndarray:
        """(4, 3) the pseudo-inverse (min-norm) forces, ignoring friction."""
        return (np.linalg.pinv(self.wrench_matrix()) @ self.wrench).reshape(4, 3)


def scene(stance: str = "FL,FR,BL,BR", push=(0.0, 0.0), torque=(0.0, 0.0), mu: float = 0.6,
          weight: float = 90.0, height: float = HEIGHT, edges: int = 4) -> QuadrupedScene:
    """A deterministic scene; ``push = (F_x, F_z)`` N, ``torque = (roll, pitch)`` N m about O."""
    if not (np.isfinite(mu) and mu > 0):
        raise ProblemError(f"mu: expected a number > 0, got {mu!r}")
    if not (np.isfinite(weight) and weight > 0):
        raise ProblemError(f"weight: expected a number > 0 (newtons), got {weight!r}")
    if not (np.isfinite(height) and height > 0):
        raise ProblemError(f"height: expected a number > 0 (metres), got {height!r}")
    if not isinstance(edges, (int, np.integer)) or edges < 3:
        raise ProblemError(f"edges: expected an integer >= 3, got {edges!r}")
    push, torque = tuple(float(v) for v in push), tuple(float(v) for v in torque)
    if len(push) != 2 or len(torque) != 2:
        raise ProblemError(f"push, torque: expected two numbers each, got {push!r}, {torque!r}")
    return QuadrupedScene(parse_stance(stance), push, torque, float(mu), float(weight), float(height), int(edges))


def _consistent_torque(stance: tuple[str, ...], push, torque, weight: float, height: float) -> np.ndarray:
    """For a two-foot stance, ``torque`` moved the least so that the wrench is realisable
    by the pair without friction limits: ``d . M = F . (p2 x p1)`` with ``d = p2 - p1``
    (``_consistent_torques`` of this one scene)."""
    in_stance = np.array([[f in stance for f in FEET]])
    return _consistent_torques(in_stance, np.asarray(push, float)[None], np.asarray(torque, float)[None],
                               np.array([float(weight)]), height)[0]


def _check_stance(value):
    """``Param`` check of ``stance``: 'random' or a stance ``parse_stance`` reads (ValueError otherwise)."""
    if not isinstance(value, str):
        raise ValueError
    if value != "random":
        try:
            parse_stance(value)
        except ProblemError:
            raise ValueError from None
    return value


@dataclass(frozen=True)
class QuadrupedBatch:
    """``n`` quadruped scenes of one ``height`` and ``edges`` as arrays (the sampler's output):
    ``in_stance`` (n, 4) bool in ``FEET`` order, ``push`` (n, 2) ``(F_x, F_z)`` N, ``torque``
    (n, 2) ``(roll, pitch)`` N m about O, ``mu`` (n,), ``weight`` (n,) N. ``batch[i]`` is case
    ``i``'s ``QuadrupedScene`` (for inspection; the builders never make one)."""

    in_stance: np.ndarray
    push: np.ndarray
    torque: np.ndarray
    mu: np.ndarray
    weight: np.ndarray
    height: float = HEIGHT
    edges: int = 4

    @classmethod
    def of(cls, scenes) -> "QuadrupedBatch":
        """The batch of ``scenes`` (``QuadrupedScene``s of one height and edge count; a
        ``QuadrupedBatch`` is returned as it is)."""
        if isinstance(scenes, QuadrupedBatch):
            return scenes
        if not len(scenes):
            raise ProblemError("scenes: expected at least one scene")
        height, edges = scenes[0].height, scenes[0].edges
        if any(s.height != height or s.edges != edges for s in scenes):
            raise ProblemError("scenes: expected one height and one number of edges across the batch")
        return cls(np.array([s.in_stance for s in scenes]), np.array([s.push for s in scenes], float),
                   np.array([s.torque for s in scenes], float), np.array([s.mu for s in scenes], float),
                   np.array([s.weight for s in scenes], float), height, edges)

    def __len__(self) -> int:
        return len(self.mu)

    def __getitem__(self, i: int) -> QuadrupedScene:
        stance = tuple(f for f, on in zip(FEET, self.in_stance[i]) if on)
        return QuadrupedScene(stance, tuple(float(v) for v in self.push[i]), tuple(float(v) for v in self.torque[i]),
                              float(self.mu[i]), float(self.weight[i]), self.height, self.edges)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def wrench(self) -> np.ndarray:
        """(n, 6) ``(F_des, M_des)`` about O, as ``QuadrupedScene.wrench``."""
        zero = np.zeros(len(self))
        return np.stack([self.push[:, 0], self.weight, self.push[:, 1], self.torque[:, 0], zero, self.torque[:, 1]],
                        axis=1)


#: ``STANCES`` as (11, 4) masks in ``FEET`` order
STANCE_MASKS = np.array([[f in s.split(",") for f in FEET] for s in STANCES])


def _consistent_torques(in_stance: np.ndarray, push: np.ndarray, torque: np.ndarray, weight: np.ndarray,
                        height: float) -> np.ndarray:
    """For many two-foot scenes, each ``torque`` moved the least so that its wrench is
    realisable by its pair without friction limits: ``d . M = F . (p2 x p1)`` with
    ``d = p2 - p1``. ``in_stance`` (n, 4) with two feet each, ``push``, ``torque`` (n, 2) N
    and N m, ``weight`` (n,) N; returns the moved torques (n, 2) ``(roll, pitch)``."""
    lever = foot_positions(height) * np.array([1.0, 0.0, 1.0])  # (4, 3): (x, 0, z)
    feet = np.argsort(~in_stance, axis=1, kind="stable")[:, :2]  # the two stance feet, in FEET order
    p1, p2 = lever[feet[:, 0]], lever[feet[:, 1]]
    d = p2 - p1
    F = np.stack([push[:, 0], weight, push[:, 1]], axis=1)
    M = np.stack([torque[:, 0], np.zeros(len(weight)), torque[:, 1]], axis=1)
    dot = lambda a, b: np.einsum("ij,ij->i", a, b)  # noqa: E731
    M = M + ((dot(F, np.cross(p2, p1)) - dot(d, M)) / dot(d, d))[:, None] * d
    return M[:, [0, 2]]


#: the draws ``sample`` knows: what a controller asks for, and the stress set
DRAWS = ("controller", "stress")
#: seed 000's overload: four feet, a 200 N forward push, mu 0.6, 90 N (every foot at 370 %
#: of its cone); case 0 of a stress draw whose parameters admit it
OVERLOAD = {"push": (200.0, 0.0), "torque": (0.0, 0.0), "mu": 0.6, "weight": 90.0}
#: a built-feasible case's tangential forces stay within this share of the inscribed disk
FEASIBLE_MARGIN = 0.9


def sample(n: int, seed: int, stance: str = "random", edges: int = 4,
           mu=(0.3, 1.0), weight=(60.0, 140.0), push: float = 0.6, torque: float = 0.04,
           height: float = HEIGHT, draw: str = "controller",
           feasible: float = 0.9) -> tuple[QuadrupedBatch, pd.DataFrame]:
    """``n`` random scenes and their meta rows, drawn with array operations.

    Both draws: ``stance`` one of ``STANCES`` or ``"random"`` (uniform over the 11); ``mu``
    and ``weight`` (N) uniform in their intervals.

    ``draw="stress"`` (seed 000's sampler): each push component uniform in
    ``+-push * mu * weight`` (within the four feet's friction at the default ``push``: the
    four-foot cases hold, but for the overload); roll and pitch uniform in
    ``+-torque * weight`` N m (about half of the three-foot cases tip); half of the
    two-foot cases get their torque made consistent with the pair (see module docstring);
    about 45 % of the cases are feasible.
    Case 0 is seed 000's overload (``OVERLOAD``) where ``stance``, ``mu`` and ``weight``
    admit it.

    ``draw="controller"`` (the default): ``round(feasible * n)`` cases, at random positions,
    are feasible by construction: each stance foot gets a share of the weight (Dirichlet)
    as its normal force and a tangential force inside ``FEASIBLE_MARGIN`` of its cone's
    inscribed disk (radius ``mu cos(pi / edges)`` times the normal force, inside both the
    pyramid and the circular cone), the tangential forces mixed so that the yaw moment is
    zero; the wrench is what those forces exert. The other cases are stress draws (as
    above, without the overload case). Meta ``drawn`` says which (``"feasible"`` or
    ``"stress"``).
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ProblemError(f"n: expected a positive integer, got {n!r}")
    if draw not in DRAWS:
        raise ProblemError(f"draw: expected one of {list(DRAWS)}, got {draw!r}")
    if isinstance(feasible, bool) or not isinstance(feasible, (int, float)) or not 0.0 <= feasible <= 1.0:
        raise ProblemError(f"feasible: expected a share from 0 to 1, got {feasible!r}")
    if stance != "random" and parse_stance(stance) not in [parse_stance(s) for s in STANCES]:
        raise ProblemError(f"stance: expected 'random' or one of {list(STANCES)}, got {stance!r}")
    # mu, weight, height and edges checked as one scene checks them (the lower ends of ranges)
    checked = scene(mu=float(np.min(mu)), weight=float(np.min(weight)), height=height, edges=edges)
    n = int(n)
    rng = np.random.default_rng(seed)
    which = rng.integers(len(STANCES), size=n) if stance == "random" else \
        np.full(n, STANCES.index(",".join(parse_stance(stance))))
    uniform = lambda r: rng.uniform(*r, size=n) if isinstance(r, (tuple, list)) else np.full(n, float(r))  # noqa: E731
    mu_, w_ = uniform(mu), uniform(weight)
    push_ = rng.uniform(-1, 1, (n, 2)) * push * mu_[:, None] * w_[:, None]
    torque_ = rng.uniform(-1, 1, (n, 2)) * torque * w_[:, None]
    in_stance = STANCE_MASKS[which]
    n_feet = in_stance.sum(axis=1)
    consistent = (n_feet == 2) & (rng.random(n) < 0.5)
    if consistent.any():
        torque_[consistent] = _consistent_torques(in_stance[consistent], push_[consistent], torque_[consistent],
                                                  w_[consistent], checked.height)
    drawn = np.full(n, "stress", dtype=object)
    if draw == "stress":
        if _admits_overload(stance, mu, weight):
            which[0] = STANCES.index(",".join(FEET))
            in_stance, n_feet = STANCE_MASKS[which], STANCE_MASKS[which].sum(axis=1)
            push_[0], torque_[0] = OVERLOAD["push"], OVERLOAD["torque"]
            mu_[0], w_[0], consistent[0] = OVERLOAD["mu"], OVERLOAD["weight"], False
    else:
        built = np.zeros(n, bool)
        built[rng.permutation(n)[:int(round(feasible * n))]] = True
        if built.any():
            push_[built], torque_[built] = _feasible_wrenches(rng, in_stance[built], mu_[built], w_[built],
                                                              checked.height, checked.edges)
            consistent[built] = n_feet[built] == 2
        drawn[built] = "feasible"
    ranks = np.array([np.linalg.matrix_rank(QuadrupedScene(tuple(s.split(",")), (0.0, 0.0), (0.0, 0.0), 1.0, 1.0,
                                                           checked.height, checked.edges).wrench_matrix())
                      for s in STANCES])[which]
    batch = QuadrupedBatch(in_stance, push_, torque_, mu_, w_, checked.height, checked.edges)
    rows = pd.DataFrame({"case": np.arange(n), "drawn": drawn, "stance": np.array(STANCES, dtype=object)[which],
                         "n_feet": n_feet,
                         "push_x": push_[:, 0], "push_z": push_[:, 1], "roll": torque_[:, 0], "pitch": torque_[:, 1],
                         "mu": mu_, "weight": w_, "height": checked.height, "edges": checked.edges,
                         "consistent_torque": consistent, "rank": ranks, "rank_deficient": ranks < 6})
    return batch, rows


def _admits_overload(stance: str, mu, weight) -> bool:
    """Whether seed 000's overload scene lies inside these ``stance``, ``mu`` and ``weight``."""
    inside = lambda r, v: (r[0] <= v <= r[1]) if isinstance(r, (tuple, list)) else float(r) == v  # noqa: E731
    return ((stance == "random" or parse_stance(stance) == FEET) and inside(mu, OVERLOAD["mu"])
            and inside(weight, OVERLOAD["weight"]))


def _feasible_wrenches(rng: np.random.Generator, in_stance: np.ndarray, mu: np.ndarray, weight: np.ndarray,
                       height: float, edges: int) -> tuple[np.ndarray, np.ndarray]:
    """Pushes (m, 2) N and torques (m, 2) N m that forces inside every stance foot's cone
    exert (see ``sample``): normal forces ``weight`` times Dirichlet(2) shares over the
    stance feet; tangential forces the mix ``a t1 + (1 - a) t2`` of two draws uniform in the
    scaled inscribed disks (``t2`` negated where its yaw moment has ``t1``'s sign), with
    ``a`` setting the yaw moment ``sum z_i f_x,i - x_i f_z,i`` to zero. A disk is convex and
    symmetric, so the mix stays inside it."""
    m = len(mu)
    gamma = rng.gamma(2.0, size=(m, 4)) * in_stance
    normal = weight[:, None] * gamma / gamma.sum(axis=1, keepdims=True)  # (m, 4)
    radius = FEASIBLE_MARGIN * mu[:, None] * np.cos(np.pi / edges) * normal

    def disk_draw():
        angle, size = rng.uniform(0, 2 * np.pi, (m, 4)), np.sqrt(rng.random((m, 4))) * radius
        return size * np.cos(angle), size * np.sin(angle)  # (f_x, f_z) per foot

    x, z = foot_positions(height)[:, 0], foot_positions(height)[:, 2]
    yaw = lambda fx, fz: (z * fx - x * fz).sum(axis=1)  # noqa: E731
    (fx1, fz1), (fx2, fz2) = disk_draw(), disk_draw()
    y1, y2 = yaw(fx1, fz1), yaw(fx2, fz2)
    flip = np.where(y1 * y2 > 0, -1.0, 1.0)
    fx2, fz2, y2 = fx2 * flip[:, None], fz2 * flip[:, None], y2 * flip
    gap = y2 - y1
    a = np.divide(y2, gap, out=np.ones(m), where=gap != 0)[:, None]
    fx, fz = a * fx1 + (1 - a) * fx2, a * fz1 + (1 - a) * fz2
    push = np.stack([fx.sum(axis=1), fz.sum(axis=1)], axis=1)
    torque = np.stack([(-z * normal).sum(axis=1), (x * normal).sum(axis=1)], axis=1)  # (p x f)_x, (p x f)_z
    return push, torque


def hold_batch(scenes) -> SceneBatch:
    """The hold tests of ``scenes`` (a ``QuadrupedBatch``, or ``QuadrupedScene``s of one
    ``height`` and ``edges``) as arrays: ``QuadrupedScene.hold`` of each, computed for the
    batch at once by the same operations (the same bytes), with no ``HoldScene`` per scene."""
    batch = QuadrupedBatch.of(scenes)
    height, edges, mu, weight, in_stance, wrench = (batch.height, batch.edges, batch.mu, batch.weight,
                                                    batch.in_stance, batch.wrench)
    normal = np.array([0.0, 1.0, 0.0])
    t1, t2 = contacts.tangent_basis(normal)
    th = np.pi / edges + 2 * np.pi * np.arange(edges) / edges
    forces = normal[:, None] + mu[:, None, None] * (np.outer(t1, np.cos(th)) + np.outer(t2, np.sin(th)))  # (n, 3, E)
    blocks = []
    for i, p in enumerate(foot_positions(height)):
        lever = np.array([p[0], 0.0, p[2]])
        moment = np.cross(lever, np.swapaxes(forces, 1, 2)) / HALF_LENGTH  # (n, E, 3)
        G = np.concatenate([forces, np.swapaxes(moment, 1, 2)], axis=1)  # (n, 6, E)
        blocks.append(np.where(in_stance[:, i, None, None], G, 0.0))
    scale = np.stack([weight] * 3 + [weight * HALF_LENGTH] * 3, axis=1)
    n = len(batch)
    return SceneBatch(np.concatenate(blocks, axis=2), wrench / scale, np.zeros((n, 0, 4 * edges)), np.zeros((n, 0)))


def build(name: str, scenes, meta, kind: str, params):
    """``lp1``: the stance's hold test; ``qp``: inner pyramids; ``socp``: circular cones."""
    from .kinds import get_kind

    if kind == "lp1":
        return get_kind("lp1").build(name, hold_batch(scenes), meta, params, axes=contacts.AXES)
    cone = "pyramid" if kind == "qp" else "circular"
    return get_kind(kind).build_arrays(name, **qp_arrays(scenes, cone), meta=meta.assign(cone=cone), params=params)


def qp_arrays(scenes, cone: str = "pyramid") -> dict[str, np.ndarray]:
    """``QuadrupedScene.qp(cone)`` of every scene (a ``QuadrupedBatch``, or scenes of one
    ``height`` and ``edges``) as stacked
    arrays for ``QpKind.build_arrays``, by the same operations (the same bytes)."""
    if cone not in CONES:
        raise ProblemError(f"cone: expected one of {list(CONES)}, got {cone!r}")
    batch = QuadrupedBatch.of(scenes)
    height, edges, in_stance = batch.height, batch.edges, batch.in_stance
    B, n = len(batch), 12
    A_eq = np.zeros((B, 6, 12))
    for i, p in enumerate(foot_positions(height)):  # each foot's columns, as wrench_matrix writes them
        block = np.vstack([np.eye(3), _skew(np.array([p[0], 0.0, p[2]]))])  # (6, 3), its -0.0 entries kept
        A_eq[:, :, 3 * i:3 * i + 3] = np.where(in_stance[:, i, None, None], block, 0.0)
    arrays = {"c": np.zeros((B, n)), "A_eq": A_eq, "b_eq": batch.wrench,
              "P": np.broadcast_to(2.0 * np.eye(n), (B, n, n)).copy(), "lb": np.full((B, n), -np.inf)}
    mu = batch.mu
    if cone == "pyramid":
        phi = 2 * np.pi * np.arange(edges) / edges
        G = np.zeros((B, 4 * edges, 12))
        for i in range(4):
            G[:, i * edges:(i + 1) * edges, 3 * i] = np.cos(phi)
            G[:, i * edges:(i + 1) * edges, 3 * i + 1] = -mu[:, None] * np.cos(np.pi / edges)
            G[:, i * edges:(i + 1) * edges, 3 * i + 2] = np.sin(phi)
        return {**arrays, "A_ub": G, "b_ub": np.zeros((B, 4 * edges))}
    cones = np.array([[3 * i + 1, 3 * i, 3 * i + 2] for i in range(4)])
    return {**arrays, "A_ub": np.zeros((B, 0, n)), "b_ub": np.zeros((B, 0)), "cones": cones,
            "cone_mu": np.repeat(mu[:, None], 4, axis=1)}


FAMILY = Family(
    "quadruped",
    "quadruped contact-force distribution (seed 000): 4 feet, all 11 stance sets, push, roll/pitch torque, "
    "weight, mu; qp: min sum|f|^2 with inner pyramids; socp: circular cones; lp1: the stance's hold test",
    sample, contacts.AXES, kinds=("qp", "socp", "lp1"), build=build,
    structures={"qp": "quadruped-qp", "socp": "force-socp"},
    params=(
        Param("stance", "one of the 11 stances or 'random'", "random", "feet in contact, e.g. 'FL,FR,BL,BR'",
              _check_stance),
        Param("edges", "int >= 3", 4, "edges of each foot's friction pyramid (qp, lp1)", valid.integer(ge=3, le=64)),
        Param("mu", "(low, high), 0 < low <= high, or one number > 0", (0.3, 1.0), "friction coefficient range",
              valid.either(valid.interval(gt=0), valid.number(gt=0))),
        Param("weight", "(low, high), 0 < low <= high, or one number > 0", (60.0, 140.0), "body weight range, N",
              valid.either(valid.interval(gt=0), valid.number(gt=0))),
        Param("push", "float >= 0", 0.6, "push components uniform in +-push * mu * weight, N", valid.number(ge=0)),
        Param("torque", "float >= 0", 0.04, "roll and pitch torque uniform in +-torque * weight, N m",
              valid.number(ge=0)),
        Param("height", "float > 0", HEIGHT, "hip height, m", valid.number(gt=0)),
        Param("draw", "'controller' or 'stress'", "controller",
              "controller: mostly feasible wrenches; stress: seed 000's pushes and torques, about 55 % infeasible",
              valid.one_of(*DRAWS)),
        Param("feasible", "float in [0, 1]", 0.9, "share of a controller draw built feasible (the rest: stress)",
              valid.number(ge=0, le=1)),
    ),
    version=3,  # 3: the controller draw by default (2: the stress draw alone, array operations)
)
