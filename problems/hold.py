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


def lp1(scene: HoldScene) -> LP:
    """LP-1: ``delta = min 1@s+ + 1@s-  s.t.  W lam + s+ - s- = need, B lam <= fmax``.

    Variables ``x = [lam (k), s+ (d), s- (d)]``, all >= 0. Always feasible and bounded;
    ``delta`` is the l1 distance from ``need`` to the (limited) cone, so ``delta = 0``
    means supported. Its dual ``y_eq`` satisfies ``W^T y <= 0`` at an optimum; when
    ``delta > 0`` it is the Farkas certificate (``need @ y = delta > 0``).
    """
    d, k = scene.d, scene.k
    B, fmax = scene.limit_rows
    eye = np.eye(d)
    return LP(
        c=np.concatenate([np.zeros(k), np.ones(2 * d)]),
        A_eq=np.hstack([scene.W, eye, -eye]),
        b_eq=scene.need.copy(),
        A_ub=np.hstack([B, np.zeros((B.shape[0], 2 * d))]),
        b_ub=fmax.copy(),
        layout="lam,s_plus,s_minus",
    )


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
    if not (np.isfinite(T) and T > 0):
        raise ProblemError(f"T: expected a finite cap > 0, got {T!r}")
    k = scene.k
    B, fmax = scene.limit_rows
    cap = np.zeros((1, k + 1))
    cap[0, k] = 1.0 / T
    return LP(
        c=np.concatenate([np.zeros(k), [-1.0]]),
        A_eq=np.hstack([scene.W, -u[:, None]]),
        b_eq=scene.need.copy(),
        A_ub=np.vstack([cap, np.hstack([B, np.zeros((B.shape[0], 1))])]),
        b_ub=np.concatenate([[1.0], fmax]),
        layout="lam,t",
    )


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
