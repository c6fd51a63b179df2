"""Humanoid gravity compensation in single and double support (seed 001) as a torque QP.

Model: PAL Robotics' TALOS (``talos_reduced.urdf`` from ``example-robot-data``, loaded with
Pinocchio) on a free-flyer base: ``nv = 38`` (6 base + 32 actuated), 90.3 kg; world ``z``
up, newtons and newton-metres. Postures: the SRDF's ``half_sitting`` with every actuated
joint moved by ``N(0, spread)`` rad, clipped to its limits.

Variables ``x = (tau, f_l, f_r)`` (44) in double support, ``(tau, f)`` (38) in single: 32
joint torques, then each standing sole's wrench ``(force, moment)`` at the sole frame,
world-aligned. Statics (seed 001, eq. 3): ``[0, J_u^T; I, J_a^T] x = g(q)`` (6 base rows,
32 joint rows; ``g`` Pinocchio's generalized gravity, ``u`` / ``a`` the base / actuated rows
of the transposed sole Jacobians). Objective ``0.5 x@P@x``, ``P = diag(1 on torques, eps on
wrenches)``; bounds ``f_z >= 0``. ``friction`` adds inner 4-sided pyramids
``|f_x|, |f_y| <= mu / sqrt(2) f_z``, ``torque_limits`` the URDF's ``|tau_j| <= effort_j``.
The support is a batch parameter (one shape per batch). In full: docs/problems.md."""

from __future__ import annotations

import functools
import os
import sysconfig
from dataclasses import dataclass

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from . import params as valid
from .family import Family, Param

from .quadruped import QP

SUPPORTS = ("double", "left", "right")
URDF = "talos_data/robots/talos_reduced.urdf"
SRDF = "talos_data/srdf/talos.srdf"
SOLES = ("left_sole_link", "right_sole_link")
INSTALL_HINT = "pip install pin example-robot-data"


def _robots_dir() -> str:
    return os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots")


def model_reason() -> str | None:
    """None when the TALOS model loads here, else why not (with the install hint)."""
    try:
        import pinocchio  # noqa: F401
    except ImportError as exc:
        return f"pinocchio is not installed ({exc}); {INSTALL_HINT}"
    if not os.path.exists(os.path.join(_robots_dir(), URDF)):
        return f"example-robot-data's TALOS URDF is not installed; {INSTALL_HINT}"
    return None


@functools.lru_cache(maxsize=1)
def model():
    """The Pinocchio model of TALOS on a free flyer, with its reference configurations."""
    reason = model_reason()
    if reason:
        raise ProblemError(f"family 'humanoid': {reason}")
    import pinocchio as pin

    m = pin.buildModelFromUrdf(os.path.join(_robots_dir(), URDF), pin.JointModelFreeFlyer())
    pin.loadReferenceConfigurations(m, os.path.join(_robots_dir(), SRDF), False)
    return m


@dataclass(frozen=True)
class HumanoidCase:
    """Statics of one posture: ``g`` (38,), sole Jacobians ``J_l``, ``J_r`` (6, 38), effort limits (32,)."""

    q: np.ndarray
    g: np.ndarray
    J_l: np.ndarray
    J_r: np.ndarray
    effort: np.ndarray
    support: str

    @property
    def n_tau(self) -> int:
        return self.g.shape[0] - 6

    @property
    def soles(self) -> list[np.ndarray]:
        """Jacobians of the standing soles, left first."""
        return {"double": [self.J_l, self.J_r], "left": [self.J_l], "right": [self.J_r]}[self.support]

    def equality(self) -> tuple[np.ndarray, np.ndarray]:
        """``A`` (38, n_tau + 6 * standing feet) and ``b = g``."""
        A, b = equality_arrays(self.g[None], self.J_l[None], self.J_r[None], self.support)
        return A[0], b[0]

    def qp(self, eps: float = 1e-4, mu: float = 0.7, friction: bool = False, torque_limits: bool = False) -> QP:
        """The torque QP (see module docstring): ``qp_arrays`` of this one posture."""
        arrays = qp_arrays(self.g[None], self.J_l[None], self.J_r[None], self.effort, self.support, eps, mu,
                           friction, torque_limits)
        return QP(**{name: a[0] for name, a in arrays.items()})

    def unique_single_support_wrench(self) -> np.ndarray:
        """Seed 001's single-support wrench ``(J_u^T)^-1 g_u`` of the standing foot (6,)."""
        J = self.J_l if self.support == "left" else self.J_r
        return np.linalg.solve(J[:, :6].T, self.g[:6])

    def pinv_route(self) -> tuple[np.ndarray, np.ndarray]:
        """Seed 001's double-support pseudo-inverse route: wrenches ``pinv([J_l,u^T J_r,u^T]) g_u``
        (12,) and the torques ``g_a - J_l,a^T f_l - J_r,a^T f_r`` (n_tau,)."""
        Ju = np.hstack([self.J_l[:, :6].T, self.J_r[:, :6].T])
        f = np.linalg.pinv(Ju) @ self.g[:6]
        tau = self.g[6:] - self.J_l[:, 6:].T @ f[:6] - self.J_r[:, 6:].T @ f[6:]
        return f, tau


def equality_arrays(g, J_l, J_r, support: str) -> tuple[np.ndarray, np.ndarray]:
    """The statics of ``n`` postures: ``A`` (n, 38, n_tau + 6 * standing feet) and ``b = g``
    (n, 38), from ``g`` (n, 38) and the sole Jacobians ``J_l``, ``J_r`` (n, 6, 38)."""
    n, nv = g.shape
    n_tau = nv - 6
    soles = {"double": [J_l, J_r], "left": [J_l], "right": [J_r]}[support]
    joints = np.broadcast_to(np.vstack([np.zeros((6, n_tau)), np.eye(n_tau)]), (n, nv, n_tau))
    return np.concatenate([joints] + [np.swapaxes(J, 1, 2) for J in soles], axis=2), g.copy()


def qp_arrays(g, J_l, J_r, effort, support: str, eps: float = 1e-4, mu: float = 0.7, friction: bool = False,
              torque_limits: bool = False) -> dict[str, np.ndarray]:
    """The torque QPs of ``n`` postures (see module docstring) as stacked arrays for
    ``QpKind.build_arrays``: ``c`` (n, v), ``A_eq`` (n, 38, v), ``b_eq`` (n, 38), ``A_ub``
    (n, rows, v), ``b_ub`` (n, rows), ``P`` (n, v, v), ``lb`` (n, v) with ``v = n_tau + 6 *
    standing feet``; only the statics depend on the posture (``g``, ``J_l``, ``J_r`` as in
    ``equality_arrays``; ``effort`` (n_tau,) the joint torque limits, N m)."""
    A, b = equality_arrays(g, J_l, J_r, support)
    count, v = len(g), A.shape[2]
    n_tau = g.shape[1] - 6
    feet = (v - n_tau) // 6
    offsets = [n_tau + 6 * k for k in range(feet)]
    lb = np.full(v, -np.inf)
    lb[[off + 2 for off in offsets]] = 0.0  # f_z >= 0 on each standing sole
    rows, bounds = [], []
    if friction:  # |f_x|, |f_y| <= mu / sqrt(2) f_z
        k = mu / np.sqrt(2)
        for off in offsets:
            for axis in (0, 1):
                for sign in (1.0, -1.0):
                    r = np.zeros(v)
                    r[off + axis], r[off + 2] = sign, -k
                    rows.append(r)
                    bounds.append(0.0)
    if torque_limits:  # |tau_j| <= effort_j
        for j in range(n_tau):
            for sign in (1.0, -1.0):
                r = np.zeros(v)
                r[j] = sign
                rows.append(r)
                bounds.append(effort[j])
    A_ub = np.array(rows).reshape(len(rows), v)
    P = np.diag(np.concatenate([np.ones(n_tau), np.full(6 * feet, eps)]))
    each = lambda a: np.broadcast_to(a, (count,) + a.shape).copy()  # noqa: E731
    return {"c": np.zeros((count, v)), "A_eq": A, "b_eq": b, "A_ub": each(A_ub), "b_ub": each(np.array(bounds)),
            "P": each(P), "lb": each(lb)}


def statics(m, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(g (n, 38), J_l (n, 6, 38), J_r (n, 6, 38))``: generalized gravity (N, N m) and the
    world-aligned sole Jacobians of configurations ``q`` (n, nq), by Pinocchio, one
    configuration at a time (it has no batched kinematics) through one reused ``Data``
    (making a ``Data`` per posture cost more than the kinematics themselves)."""
    import pinocchio as pin

    data = m.createData()
    frames = [m.getFrameId(name) for name in SOLES]
    g, J_l, J_r = np.empty((len(q), m.nv)), np.empty((len(q), 6, m.nv)), np.empty((len(q), 6, m.nv))
    for i, q_i in enumerate(q):
        g[i] = pin.computeGeneralizedGravity(m, data, q_i)
        pin.computeJointJacobians(m, data, q_i)
        pin.updateFramePlacements(m, data)
        J_l[i] = pin.getFrameJacobian(m, data, frames[0], pin.LOCAL_WORLD_ALIGNED)
        J_r[i] = pin.getFrameJacobian(m, data, frames[1], pin.LOCAL_WORLD_ALIGNED)
    return g, J_l, J_r


def configurations(m, offsets: np.ndarray) -> np.ndarray:
    """``half_sitting`` plus ``offsets`` (n, 32) radians on the actuated joints, clipped to
    their limits, base at the origin and upright: (n, nq)."""
    q = np.repeat(np.array(m.referenceConfigurations["half_sitting"], dtype=float)[None], len(offsets), axis=0)
    q[:, 7:] = np.clip(q[:, 7:] + offsets, m.lowerPositionLimit[7:], m.upperPositionLimit[7:])
    q[:, :3] = 0.0
    q[:, 3:7] = [0.0, 0.0, 0.0, 1.0]
    return q


def posture(q_actuated_offset: np.ndarray | None = None, support: str = "double") -> HumanoidCase:
    """Statics at ``half_sitting`` plus ``q_actuated_offset`` (32,) radians, clipped to limits."""
    if support not in SUPPORTS:
        raise ProblemError(f"support: expected one of {list(SUPPORTS)}, got {support!r}")
    m = model()
    offset = np.zeros(m.nq - 7) if q_actuated_offset is None else np.asarray(q_actuated_offset, float)
    if offset.shape != (m.nq - 7,):
        raise ProblemError(f"q_actuated_offset: expected shape ({m.nq - 7},), got {offset.shape}")
    q = configurations(m, offset[None])
    g, J_l, J_r = statics(m, q)
    return HumanoidCase(q[0], g[0], J_l[0], J_r[0], np.array(m.effortLimit[6:], float), support)


@dataclass(frozen=True)
class HumanoidBatch:
    """The torque QPs of ``n`` postures as stacked arrays (``qp_arrays``' dict in ``arrays``),
    the sampler's output: no Python object per posture."""

    arrays: dict

    def __len__(self) -> int:
        return len(self.arrays["c"])


def sample(n: int, seed: int, support: str = "double", spread: float = 0.1, eps: float = 1e-4,
           mu: float = 0.7, friction: bool = False, torque_limits: bool = False):
    """``n`` random postures (see module docstring) and their meta rows.

    ``support``: ``double``, ``left`` or ``right`` (the whole batch);
    ``spread``: standard deviation of the joint offsets (rad). Returns ``(HumanoidBatch,
    meta)``. The offsets are drawn in one call, the same numbers as one draw per posture;
    Pinocchio computes each posture's gravity and Jacobians (``statics``: it has no batched
    kinematics, the one loop left), and the QPs and ranks are array operations.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ProblemError(f"n: expected a positive integer, got {n!r}")
    if support not in SUPPORTS:
        raise ProblemError(f"support: expected one of {list(SUPPORTS)}, got {support!r}")
    if not (np.isfinite(eps) and eps > 0):
        raise ProblemError(f"eps: expected a number > 0, got {eps!r}")
    m = model()
    rng = np.random.default_rng(seed)
    q = configurations(m, rng.normal(0.0, spread, (int(n), m.nq - 7)))
    g, J_l, J_r = statics(m, q)
    arrays = qp_arrays(g, J_l, J_r, np.array(m.effortLimit[6:], float), support, eps, mu, friction, torque_limits)
    rank = np.linalg.matrix_rank(arrays["A_eq"])
    meta = pd.DataFrame({"case": np.arange(n), "support": support, "spread": spread, "eps": eps, "mu": mu,
                         "friction": friction, "torque_limits": torque_limits, "weight_N": g[:, 2], "rank": rank,
                         "rank_deficient": rank < arrays["A_eq"].shape[1]})
    return HumanoidBatch(arrays), meta


def build(name: str, batch: HumanoidBatch, meta, kind: str, params):
    """``qp``: the torque QPs, from the sampler's stacked arrays."""
    from .kinds import get_kind

    return get_kind(kind).build_arrays(name, **batch.arrays, meta=meta, params=params)


FAMILY = Family(
    "humanoid",
    "humanoid (TALOS, 38 dof) gravity compensation in single/double support (seed 001): "
    "min |tau|^2 + eps |f|^2 s.t. statics, f_z >= 0, optional friction pyramids and torque limits",
    sample, ("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z"), kinds=("qp",), structures={"qp": "humanoid-qp"},
    build=build,
    unavailable=model_reason,
    params=(
        Param("support", "double, left or right", "double", "feet in contact (the whole batch)",
              valid.one_of("double", "left", "right")),
        Param("spread", "float >= 0", 0.1, "standard deviation of the joint offsets, rad", valid.number(ge=0)),
        Param("eps", "float > 0", 1e-4, "weight of |f|^2 in the objective", valid.number(gt=0)),
        Param("mu", "float > 0", 0.7, "friction coefficient of the pyramids", valid.number(gt=0)),
        Param("friction", "bool", False, "add friction pyramids", valid.boolean),
        Param("torque_limits", "bool", False, "add the robot's joint torque limits", valid.boolean),
    ),
)
