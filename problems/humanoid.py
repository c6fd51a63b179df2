"""Humanoid gravity compensation in single and double support (seed 001) as a torque QP.

Model: PAL Robotics' TALOS (``talos_reduced.urdf`` from the ``example-robot-data`` wheel,
loaded with Pinocchio, ``pip install pin example-robot-data``) on a free-flyer base:
``nv = 38`` (6 base + 32 actuated joints: 2 x 6 legs, 2 torso, 2 x 7 arms, 2 grippers,
2 head), 90.3 kg. World frame ``z`` up; forces in newtons, moments in newton-metres.

Configurations: the SRDF's ``half_sitting`` posture with every actuated joint moved by
``N(0, spread)`` radians, clipped to its limits, base at the origin, upright. The feet
are not required to touch a common floor: the statics below hold for any posture.

Variables ``x = (tau, f_l, f_r)`` in double support (44), ``(tau, f)`` with the standing
sole's wrench only in single support (38): 32 joint torques, then each standing sole's
contact wrench ``(force, moment)`` at the sole frame, world-aligned
(``LOCAL_WORLD_ALIGNED``). Statics without motion (seed 001, eq. 3)::

    [0        J_l,u^T   J_r,u^T] x = g(q)      (6 base rows)
    [I_32     J_l,a^T   J_r,a^T]                (32 joint rows)

``g(q)`` is Pinocchio's generalized gravity; ``u`` / ``a`` are the base / actuated rows of
the transposed sole Jacobians (the left sole's Jacobian is zero on right-leg joints and
vice versa: separate branches of the tree). In single support the lifted foot has no
variables, the equality block is square and the standing foot's wrench is the unique
``J_u^-T g_u``. The support is a batch parameter (one problem shape per batch). Objective ``0.5 x@P@x`` with ``P = diag(1 on torques, eps on wrenches)``
(minimise torques first, wrenches with a small weight). Bounds: ``f_z >= 0`` on each sole
(``lb = 0`` there, every other variable free). Optional rows: ``friction`` adds each sole's
inner 4-sided pyramid ``|f_x|, |f_y| <= mu / sqrt(2) f_z``; ``torque_limits`` adds
``|tau_j| <= effort limit_j`` from the URDF.
"""

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
        n_tau = self.n_tau
        A = np.hstack([np.vstack([np.zeros((6, n_tau)), np.eye(n_tau)])] + [J.T for J in self.soles])
        return A, self.g.copy()

    def qp(self, eps: float = 1e-4, mu: float = 0.7, friction: bool = False, torque_limits: bool = False) -> QP:
        """The torque QP (see module docstring)."""
        n_tau = self.n_tau
        feet = len(self.soles)
        n = n_tau + 6 * feet
        A, b = self.equality()
        lb = np.full(n, -np.inf)
        offsets = [n_tau + 6 * k for k in range(feet)]
        lb[[off + 2 for off in offsets]] = 0.0  # f_z >= 0 on each standing sole
        rows = []
        if friction:
            k = mu / np.sqrt(2)
            for off in offsets:
                for axis in (0, 1):
                    for sign in (1.0, -1.0):
                        r = np.zeros(n)
                        r[off + axis], r[off + 2] = sign, -k
                        rows.append((r, 0.0))
        if torque_limits:
            for j in range(n_tau):
                for sign in (1.0, -1.0):
                    r = np.zeros(n)
                    r[j] = sign
                    rows.append((r, self.effort[j]))
        A_ub = np.array([r for r, _ in rows]).reshape(len(rows), n)
        b_ub = np.array([h for _, h in rows])
        P = np.diag(np.concatenate([np.ones(n_tau), np.full(6 * feet, eps)]))
        return QP(c=np.zeros(n), A_eq=A, b_eq=b, A_ub=A_ub, b_ub=b_ub, P=P, lb=lb)

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


def posture(q_actuated_offset: np.ndarray | None = None, support: str = "double") -> HumanoidCase:
    """Statics at ``half_sitting`` plus ``q_actuated_offset`` (32,) radians, clipped to limits."""
    import pinocchio as pin

    if support not in SUPPORTS:
        raise ProblemError(f"support: expected one of {list(SUPPORTS)}, got {support!r}")
    m = model()
    q = np.array(m.referenceConfigurations["half_sitting"], dtype=float)
    if q_actuated_offset is not None:
        offset = np.asarray(q_actuated_offset, float)
        if offset.shape != (m.nq - 7,):
            raise ProblemError(f"q_actuated_offset: expected shape ({m.nq - 7},), got {offset.shape}")
        q[7:] = np.clip(q[7:] + offset, m.lowerPositionLimit[7:], m.upperPositionLimit[7:])
    q[:3] = 0.0
    q[3:7] = [0.0, 0.0, 0.0, 1.0]
    data = m.createData()
    g = np.array(pin.computeGeneralizedGravity(m, data, q))
    pin.computeJointJacobians(m, data, q)
    pin.updateFramePlacements(m, data)
    J = [np.array(pin.getFrameJacobian(m, data, m.getFrameId(name), pin.LOCAL_WORLD_ALIGNED)) for name in SOLES]
    return HumanoidCase(q, g, J[0], J[1], np.array(m.effortLimit[6:], float), support)


def sample(n: int, seed: int, support: str = "double", spread: float = 0.1, eps: float = 1e-4,
           mu: float = 0.7, friction: bool = False, torque_limits: bool = False):
    """``n`` random postures (see module docstring) and their meta rows.

    ``support``: ``double``, ``left`` or ``right`` (the whole batch);
    ``spread``: standard deviation of the joint offsets (rad). Returns ``(qps, meta)``.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ProblemError(f"n: expected a positive integer, got {n!r}")
    if support not in SUPPORTS:
        raise ProblemError(f"support: expected one of {list(SUPPORTS)}, got {support!r}")
    if not (np.isfinite(eps) and eps > 0):
        raise ProblemError(f"eps: expected a number > 0, got {eps!r}")
    m = model()
    rng = np.random.default_rng(seed)
    qps, rows = [], []
    for i in range(n):
        sup = support
        case = posture(rng.normal(0.0, spread, m.nq - 7), sup)
        qp = case.qp(eps, mu, friction, torque_limits)
        rank = int(np.linalg.matrix_rank(qp.A_eq))
        rows.append({"case": i, "support": sup, "spread": spread, "eps": eps, "mu": mu, "friction": friction,
                     "torque_limits": torque_limits, "weight_N": float(case.g[2]), "rank": rank,
                     "rank_deficient": rank < qp.A_eq.shape[0]})
        qps.append(qp)
    return qps, pd.DataFrame(rows)


FAMILY = Family(
    "humanoid",
    "humanoid (TALOS, 38 dof) gravity compensation in single/double support (seed 001): "
    "min |tau|^2 + eps |f|^2 s.t. statics, f_z >= 0, optional friction pyramids and torque limits",
    sample, ("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z"), kinds=("qp",), structures={"qp": "humanoid-qp"},
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
