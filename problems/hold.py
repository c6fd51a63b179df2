"""The hold test as linear programs (seed 002): LP-1 feasibility, LP-2 exits, LP-3 limits.

A ``HoldScene`` is the data every LP is built from:

* ``W`` (d, k): generators, one column per friction-cone edge at each support point,
  as a wrench; every edge has unit normal component, so a contact's normal force is
  the sum of its edge weights.
* ``need`` (d,): the wrench the contacts must supply (minus gravity, minus any known
  external wrench).
* ``limits``: optional LP-3 force limits ``B @ lam <= fmax`` with ``B`` (L, k), ``fmax`` (L,).

Wrench order and units are set by the family that builds the scene (planar:
``(f_x, f_z, tau_y / l)`` in m*g and m*g*l; spatial: ``(f, tau / l)``).

Standard form is the project's: ``min c@x  s.t. A_eq@x == b_eq, A_ub@x <= b_ub, x >= 0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.errors import ProblemError

#: default exit cap T (units of m*g and m*g*l): seed 002 §6, measure 4.
EXIT_CAP = 10.0


@dataclass(frozen=True)
class Limits:
    """LP-3 force limits ``B @ lam <= fmax``: ``B`` (L, k), ``fmax`` (L,), in m*g."""

    B: np.ndarray
    fmax: np.ndarray


@dataclass(frozen=True)
class HoldScene:
    """Generators, needed wrench and optional force limits of one hold test.

    ``labels`` names the columns of ``W`` (e.g. ``"A+"``: corner A, +mu edge).
    """

    W: np.ndarray
    need: np.ndarray
    limits: Limits | None = None
    labels: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        W = np.asarray(self.W, dtype=float)
        need = np.asarray(self.need, dtype=float)
        if W.ndim != 2:
            raise ProblemError(f"W: expected a (d, k) matrix, got shape {W.shape}")
        if need.shape != (W.shape[0],):
            raise ProblemError(f"need: expected shape ({W.shape[0]},) to match W's rows, got {need.shape}")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(need))):
            raise ProblemError("W, need: expected finite values")
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "need", need)
        if self.limits is not None:
            B = np.asarray(self.limits.B, dtype=float)
            fmax = np.asarray(self.limits.fmax, dtype=float)
            if B.ndim != 2 or B.shape[1] != W.shape[1] or fmax.shape != (B.shape[0],):
                raise ProblemError(
                    f"limits: expected B (L, k={W.shape[1]}) and fmax (L,), got {B.shape} and {fmax.shape}"
                )
            object.__setattr__(self, "limits", Limits(B, fmax))
        if self.labels and len(self.labels) != W.shape[1]:
            raise ProblemError(f"labels: expected {W.shape[1]} names (one per column of W), got {len(self.labels)}")

    @property
    def d(self) -> int:
        """Wrench dimension (3 planar, 6 spatial)."""
        return int(self.W.shape[0])

    @property
    def k(self) -> int:
        """Number of generators."""
        return int(self.W.shape[1])

    @property
    def limit_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(B, fmax)``, with 0 rows when the scene has no limits."""
        if self.limits is None:
            return np.zeros((0, self.k)), np.zeros(0)
        return self.limits.B, self.limits.fmax


@dataclass(frozen=True)
class LP:
    """A standard-form LP (see module docstring) with ``x`` laid out as ``layout`` says."""

    c: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    A_ub: np.ndarray
    b_ub: np.ndarray
    layout: str

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(c, A_eq, b_eq, A_ub, b_ub)``."""
        return self.c, self.A_eq, self.b_eq, self.A_ub, self.b_ub


@dataclass(frozen=True)
class SceneBatch:
    """``n`` hold scenes of one shape as arrays: the generators' batched form.

    ``W`` (n, d, k) generators, ``need`` (n, d) needed wrenches, ``limit_B`` (n, L, k) and
    ``limit_fmax`` (n, L) force limits ``B lam <= fmax`` (L = 0: no limits); units as in
    ``HoldScene``. ``scenes[i]`` is the ``HoldScene`` of case ``i`` (for inspection; the
    batched path never builds one).

    The arrays are held C-contiguous (copied once here when given in another layout, such as
    cube-3d's generators computed as (n, k, 6) and transposed), so every batch built from them
    and the verifiers' products read memory in order.
    """

    W: np.ndarray
    need: np.ndarray
    limit_B: np.ndarray
    limit_fmax: np.ndarray

    def __post_init__(self) -> None:
        W, need = np.ascontiguousarray(self.W, float), np.ascontiguousarray(self.need, float)
        B, fmax = np.ascontiguousarray(self.limit_B, float), np.ascontiguousarray(self.limit_fmax, float)
        if W.ndim != 3 or need.shape != W.shape[:2]:
            raise ProblemError(f"W, need: expected (n, d, k) and (n, d), got {W.shape} and {need.shape}")
        if B.shape[::2] != W.shape[::2] or fmax.shape != B.shape[:2]:
            raise ProblemError(f"limit_B, limit_fmax: expected (n, L, k={W.shape[2]}) and (n, L), "
                               f"got {B.shape} and {fmax.shape}")
        if not all(np.all(np.isfinite(a)) for a in (W, need, B, fmax)):
            raise ProblemError("W, need, limit_B, limit_fmax: expected finite values")
        for name, value in (("W", W), ("need", need), ("limit_B", B), ("limit_fmax", fmax)):
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, scenes: "SceneBatch | list[HoldScene] | tuple[HoldScene, ...]") -> "SceneBatch":
        """The batch of same-shape ``scenes`` (a ``SceneBatch`` is returned as it is)."""
        if isinstance(scenes, SceneBatch):
            return scenes
        if not len(scenes):
            raise ProblemError("scenes: expected at least one scene")
        shapes = {(s.W.shape, s.limit_rows[0].shape) for s in scenes}
        if len(shapes) != 1:
            raise ProblemError(f"scenes: expected one shape of W and limits across the batch, got {sorted(shapes)}")
        return cls(np.stack([s.W for s in scenes]), np.stack([s.need for s in scenes]),
                   np.stack([s.limit_rows[0] for s in scenes]), np.stack([s.limit_rows[1] for s in scenes]))

    def __len__(self) -> int:
        return int(self.W.shape[0])

    def __getitem__(self, i: int) -> HoldScene:
        B, fmax = self.limit_B[i], self.limit_fmax[i]
        return HoldScene(self.W[i], self.need[i], Limits(B, fmax) if len(fmax) else None)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def d(self) -> int:
        """Wrench dimension."""
        return int(self.W.shape[1])

    @property
    def k(self) -> int:
        """Generators per scene."""
        return int(self.W.shape[2])

    def take(self, index) -> "SceneBatch":
        """The scenes at ``index`` (an integer array; repeats allowed), in that order. Their
        values were checked when this batch was made, so they are not read again (the exits'
        batch of ``bench.hold.check_batch`` takes twice: 1.1 ms each at 52,566 planar exits)."""
        index = np.asarray(index, dtype=np.intp)
        taken = object.__new__(SceneBatch)
        for name in ("W", "need", "limit_B", "limit_fmax"):
            object.__setattr__(taken, name, getattr(self, name)[index])
        return taken

    def with_needs(self, need) -> "SceneBatch":
        """The same generators and limits with other needed wrenches ``need`` (n, d)."""
        return SceneBatch(self.W, need, self.limit_B, self.limit_fmax)


def lp1_arrays(scenes: SceneBatch) -> tuple[np.ndarray, ...]:
    """Batched LP-1 (see ``lp1``): ``(c, A_eq, b_eq, A_ub, b_ub)`` with shapes (n, m),
    (n, d, m), (n, d), (n, L, m), (n, L), ``m = k + 2d``, ``x = [lam, s+, s-]``."""
    n, d, k = scenes.W.shape
    L = scenes.limit_B.shape[1]
    eye = np.broadcast_to(np.eye(d), (n, d, d))
    c = np.broadcast_to(np.concatenate([np.zeros(k), np.ones(2 * d)]), (n, k + 2 * d)).copy()
    A_eq = np.concatenate([scenes.W, eye, -eye], axis=2)
    A_ub = np.concatenate([scenes.limit_B, np.zeros((n, L, 2 * d))], axis=2)
    return c, A_eq, scenes.need.copy(), A_ub, scenes.limit_fmax.copy()


def exit_arrays(scenes: SceneBatch, directions, T: float = EXIT_CAP) -> tuple[np.ndarray, ...]:
    """Batched LP-2 (see ``exit_lp``): scene ``i`` along ``directions[i]`` (n, d); shapes
    (n, k+1), (n, d, k+1), (n, d), (n, 1+L, k+1), (n, 1+L), ``x = [lam, t]``, cap row first."""
    u = np.asarray(directions, dtype=float)
    n, d, k = scenes.W.shape
    if u.shape != (n, d):
        raise ProblemError(f"u: expected directions of shape ({n}, {d}), got {u.shape}")
    if not (np.isfinite(T) and T > 0):
        raise ProblemError(f"T: expected a finite cap > 0, got {T!r}")
    L = scenes.limit_B.shape[1]
    c = np.zeros((n, k + 1))
    c[:, k] = -1.0
    A_eq = np.concatenate([scenes.W, -u[:, :, None]], axis=2)
    cap = np.zeros((n, 1, k + 1))
    cap[:, 0, k] = 1.0 / T
    A_ub = np.concatenate([cap, np.concatenate([scenes.limit_B, np.zeros((n, L, 1))], axis=2)], axis=1)
    b_ub = np.concatenate([np.ones((n, 1)), scenes.limit_fmax], axis=1)
    return c, A_eq, scenes.need.copy(), A_ub, b_ub


def _single(scene: HoldScene) -> SceneBatch:
    B, fmax = scene.limit_rows
    return SceneBatch(scene.W[None], scene.need[None], B[None], fmax[None])


def lp1(scene: HoldScene) -> LP:
    """LP-1: ``delta = min 1@s+ + 1@s-  s.t.  W lam + s+ - s- = need, B lam <= fmax``.

    Variables ``x = [lam (k), s+ (d), s- (d)]``, all >= 0. Always feasible and bounded;
    ``delta`` is the l1 distance from ``need`` to the (limited) cone, so ``delta = 0``
    means supported. Its dual ``y_eq`` satisfies ``W^T y <= 0`` at an optimum; when
    ``delta > 0`` it is the Farkas certificate (``need @ y = delta > 0``).
    """
    return LP(*(a[0] for a in lp1_arrays(_single(scene))), layout="lam,s_plus,s_minus")


def exit_lp(scene: HoldScene, u, T: float = EXIT_CAP) -> LP:
    """LP-2 (with LP-3 rows when the scene has limits): the exit distance along ``u``.

    ``t(u) = max t  s.t.  W lam = need + t u,  0 <= t <= T,  B lam <= fmax``, posed as
    ``min -t`` over ``x = [lam (k), t]``. The cap row reads ``t / T <= 1`` and is the
    first row of ``A_ub``. ``u`` (d,) is the extra wrench the contacts must supply; a
    disturbance of ``-t u`` acts on the body. Infeasible when ``need`` is outside the cone.
    """
    u = np.asarray(u, dtype=float)
    if u.shape != (scene.d,):
        raise ProblemError(f"u: expected a direction of shape ({scene.d},), got {u.shape}")
    return LP(*(a[0] for a in exit_arrays(_single(scene), u[None], T)), layout="lam,t")


def margin_directions(d: int) -> np.ndarray:
    """The 2d pure directions ``+e_0, -e_0, +e_1, -e_1, ...`` as rows of a (2d, d) array."""
    if not isinstance(d, (int, np.integer)) or d < 1:
        raise ProblemError(f"d: expected a positive integer, got {d!r}")
    eye = np.eye(int(d))
    return np.stack([s * eye[i] for i in range(int(d)) for s in (1.0, -1.0)])


def direction_names(axes: tuple[str, ...]) -> list[str]:
    """Names of ``margin_directions(len(axes))`` rows, e.g. ``['+f_x', '-f_x', ...]``."""
    return [f"{s}{a}" for a in axes for s in ("+", "-")]


def pad(scene: HoldScene, k: int, rows: int | None = None) -> HoldScene:
    """The same cone with exactly ``k`` columns and ``rows`` limit rows, for batching.

    Extra columns repeat existing ones cyclically (never zero columns: they make some
    interior-point solvers return NaN); each duplicate joins the limit rows of the column
    it copies, so a limit still bounds the contact's whole normal force. Extra limit rows
    repeat the last row. Neither changes the set of feasible wrenches.
    """
    if k < scene.k:
        raise ProblemError(f"k: expected at least the scene's {scene.k} columns, got {k}")
    src = np.arange(k) % scene.k
    W = scene.W[:, src]
    labels = tuple(scene.labels[i] for i in src) if scene.labels else ()
    limits = None
    if scene.limits is not None:
        B, fmax = scene.limits.B[:, src], scene.limits.fmax
        want = B.shape[0] if rows is None else rows
        if want < B.shape[0]:
            raise ProblemError(f"rows: expected at least the scene's {B.shape[0]} limit rows, got {want}")
        extra = np.arange(want) % B.shape[0] if B.shape[0] else np.zeros(0, int)
        B, fmax = B[np.r_[np.arange(B.shape[0]), extra[B.shape[0]:]].astype(int)], \
            fmax[np.r_[np.arange(B.shape[0]), extra[B.shape[0]:]].astype(int)]
        limits = Limits(B, fmax)
    elif rows:
        raise ProblemError(f"rows: the scene has no limits to pad to {rows} rows")
    return HoldScene(W, scene.need, limits, labels)


def with_need(scene: HoldScene, need) -> HoldScene:
    """The scene with another needed wrench (same generators and limits)."""
    return HoldScene(scene.W, need, scene.limits, scene.labels)
