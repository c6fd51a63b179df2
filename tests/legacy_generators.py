"""The version-1 samplers of planar-box, cube-3d and quadruped, scene by scene, kept only to show that
the version-2 array samplers draw from the same distribution, and near-boundary's planar
sampler as it was before its blocks were built as arrays (one ``planar_box.scene`` per
candidate and height), kept to show that the array form gives its bytes, and its cube-3d
sampler of version 2 (candidate by candidate, two scipy LPs each), kept to show that version 3
draws the same distribution (``test_generation.py``).
They build every scene with the public single-scene constructors (``planar_box.scene``,
``cube.scene``, ``hold.pad``), as version 1 did."""

from __future__ import annotations

import numpy as np
import pandas as pd

from problems import cube, planar_box, planar_exact, quadruped
from problems.hold import SceneBatch, pad, with_need
from problems.robust import corners


def planar_v1(n: int, seed: int, *, mu=(0.1, 0.8), tilt=(-0.4, 0.4), push=(0.3, 0.3, 0.5), drop: float = 0.3,
              disk: bool = False, disk_fmax=(0.1, 1.0), mass=None, com=None):
    rng = np.random.default_rng(seed)
    scenes, rows = [], []
    for i in range(int(n)):
        p = {"mu": rng.uniform(*mu), "tilt": rng.uniform(*tilt), "push": tuple(rng.uniform(-h, h) for h in push),
             "corners": ("A" if rng.random() < 0.5 else "B") if rng.random() < drop else "AB"}
        if disk:
            p.update(disk_height=rng.uniform(-1, 1), disk_mu=rng.uniform(*mu), disk_fmax=rng.uniform(*disk_fmax))
        base = planar_box.scene(pad=True, **p)
        fx, fz, tau = p.pop("push")
        row = {"case": i, **p, "push_fx": fx, "push_fz": fz, "push_tau": tau}
        for label, m, c in corners(mass, com, 2):
            need = base.need if label == "nominal" else planar_box.robust_need(m, c, p["tilt"], (fx, fz, tau))
            scenes.append(with_need(base, need))
            rows.append({**row, "need_corner": label})
    return SceneBatch.of(scenes), pd.DataFrame(rows)


def _contacts(rng, count, mu, kinds, limits, fmax):
    out = []
    for i in range(count):
        kind = kinds[rng.integers(len(kinds))]
        face = "-z" if i == 0 else list(cube.FACES)[rng.integers(6)]
        size = rng.uniform(0.1, 0.6)
        center = tuple(rng.uniform(-(1 - size), 1 - size, 2)) if kind != "point" else tuple(rng.uniform(-0.9, 0.9, 2))
        out.append(cube.Contact(kind, face, center, size if kind != "point" else 0.0, rng.uniform(0, np.pi),
                                rng.uniform(*mu), rng.uniform(*fmax) if limits else None))
    return out


def cube_v1(n: int, seed: int, *, contacts=(1, 4), mu=(0.2, 1.0), push=(0.3, 0.3, 0.3, 0.2, 0.2, 0.2),
            kinds=cube.KINDS, edges: int = 8, inner: bool = True, limits: bool = False, fmax=(0.3, 1.5)):
    rng = np.random.default_rng(seed)
    k = contacts[1] * 4 * edges
    scenes, rows = [], []
    for case in range(int(n)):
        count = int(rng.integers(contacts[0], contacts[1] + 1))
        cs = _contacts(rng, count, mu, kinds, limits, fmax)
        p = np.array([rng.uniform(-h, h) for h in push])
        base = cube.scene(cs, push=p, edges=edges, inner=inner)
        scenes.append(pad(base, k, contacts[1] if limits else None))
        rows.append({"case": case, "contacts": count, "kinds": ",".join(c.kind for c in cs),
                     "faces": ",".join(c.face for c in cs), "mu_min": min(c.mu for c in cs),
                     **{f"push_{a}": v for a, v in zip(cube.AXES, p)}})
    return SceneBatch.of(scenes), pd.DataFrame(rows)


def near_boundary_planar_scene_by_scene(n: int, seed: int, eps: float = 0.04, mu=(0.1, 0.8), tilt=(-0.3, 0.3),
                                        push=(0.2, 0.2, 0.3), disk_mu=(0.1, 0.8)):
    """near-boundary's planar sampler (base planar-box) before the array form: ``(scenes,
    meta)`` with a list of ``HoldScene``."""
    rng = np.random.default_rng(seed)
    scenes, rows = [], []
    grid = np.linspace(-1.0, 1.0, 9)
    while len(scenes) < n:
        block = max(3 * (n - len(scenes)), 32)
        cand = [{"mu": rng.uniform(*mu), "tilt": rng.uniform(*tilt),
                 "push": tuple(rng.uniform(-h, h) for h in push), "corners": "B",
                 "disk_mu": rng.uniform(*disk_mu)} for _ in range(block)]

        def at(heights):
            built = [planar_box.scene(pad=True, disk_height=h, **c) for c, h in zip(cand, heights)]
            return planar_exact.decide(np.stack([b.W for b in built]), np.stack([b.need for b in built]))["verdict"]

        verdicts = np.stack([at(np.full(block, h)) for h in grid], axis=1)
        lo, hi = np.full(block, np.nan), np.full(block, np.nan)
        low_supported = np.zeros(block, bool)
        for i in range(block):
            for j in range(len(grid) - 1):
                a, b = verdicts[i, j], verdicts[i, j + 1]
                if {a, b} == {"supported", "unsupported"}:
                    lo[i], hi[i], low_supported[i] = grid[j], grid[j + 1], a == "supported"
                    break
        keep = np.isfinite(lo)
        for _ in range(48):
            mid = np.where(keep, 0.5 * (lo + hi), 0.0)
            same_as_low = (at(mid) == "supported") == low_supported
            lo = np.where(keep & same_as_low, mid, lo)
            hi = np.where(keep & ~same_as_low, mid, hi)
        for i in np.flatnonzero(keep):
            if len(scenes) == n:
                break
            boundary = 0.5 * (lo[i] + hi[i])
            h = float(np.clip(boundary + rng.uniform(-eps, eps), -1.0, 1.0))
            distance = (boundary - h) if low_supported[i] else (h - boundary)
            c = cand[i]
            scenes.append(planar_box.scene(pad=True, disk_height=h, **c))
            fx, fz, tau = c["push"]
            rows.append({"case": len(rows), "base": "planar-box", "parameter": "disk_height", "value": h,
                         "boundary": boundary, "distance": distance, "ambiguous": abs(distance) < 1e-9,
                         "mu": c["mu"], "tilt": c["tilt"], "corners": c["corners"], "disk_mu": c["disk_mu"],
                         "push_fx": fx, "push_fz": fz, "push_tau": tau})
    return scenes, pd.DataFrame(rows)


def near_boundary_cube_v2(n: int, seed: int, eps: float = 0.01, cube_params: dict | None = None):
    """near-boundary's cube-3d sampler (base cube-3d) of generator version 2, candidate by
    candidate: one ``cube.sample(1, ...)`` and two HiGHS LPs per candidate (through the
    ``highs`` adapter, as scipy's ``linprog`` did then: the same solver, less overhead per
    LP); ``(scenes, meta)`` with a list of ``HoldScene``."""
    from types import SimpleNamespace

    import solvers
    from problems.hold import EXIT_CAP, exit_lp, lp1

    highs = solvers.get("highs")

    def solved(lp):
        s = highs.solve(lp.c, lp.A_eq, lp.b_eq, lp.A_ub, lp.b_ub)
        return SimpleNamespace(status=0 if s.status == solvers.Status.OPTIMAL else 1, fun=s.objective)

    rng = np.random.default_rng(seed)
    scenes, rows = [], []
    while len(scenes) < n:
        draw = int(rng.integers(2**31))
        [base], meta = cube.sample(1, draw, push=(0.0,) * 6, **(cube_params or {}))
        u = rng.normal(size=6)
        u /= np.linalg.norm(u)
        held = solved(lp1(base))
        if not (held.status == 0 and held.fun <= 1e-9):
            continue
        res = solved(exit_lp(base, -u, EXIT_CAP))
        boundary = float(-res.fun) if res.status == 0 else float("nan")
        if not (np.isfinite(boundary) and eps < boundary < EXIT_CAP * (1 - 1e-6)):
            continue
        s = boundary + rng.uniform(-eps, eps)
        scenes.append(with_need(base, base.need - s * u))
        row = meta.iloc[0].to_dict()
        row.update({"case": len(rows), "base": "cube-3d", "parameter": "push_magnitude", "value": s,
                    "boundary": boundary, "distance": boundary - s, "ambiguous": abs(boundary - s) < 1e-9,
                    **{f"u_{a}": v for a, v in zip(cube.AXES, u)}})
        rows.append(row)
    return scenes, pd.DataFrame(rows)


def quadruped_v1(n: int, seed: int, stance: str = "random", edges: int = 4, mu=(0.3, 1.0), weight=(60.0, 140.0),
                 push: float = 0.6, torque: float = 0.04, height: float = quadruped.HEIGHT):
    """quadruped's version-1 sampler, one scene at a time (``(scenes, meta)``)."""
    rng = np.random.default_rng(seed)
    scenes, rows = [], []
    for i in range(n):
        st = quadruped.parse_stance(quadruped.STANCES[rng.integers(len(quadruped.STANCES))]
                                    if stance == "random" else stance)
        mu_i = float(rng.uniform(*mu)) if isinstance(mu, (tuple, list)) else float(mu)
        w_i = float(rng.uniform(*weight)) if isinstance(weight, (tuple, list)) else float(weight)
        push_i = rng.uniform(-1, 1, 2) * push * mu_i * w_i
        torque_i = rng.uniform(-1, 1, 2) * torque * w_i
        consistent = len(st) == 2 and rng.random() < 0.5
        if consistent:
            torque_i = quadruped._consistent_torque(st, push_i, torque_i, w_i, height)
        s = quadruped.scene(",".join(st), push_i, torque_i, mu_i, w_i, height, edges)
        A = s.wrench_matrix()
        rank = int(np.linalg.matrix_rank(A))
        rows.append({"case": i, "stance": ",".join(st), "n_feet": len(st), "push_x": push_i[0], "push_z": push_i[1],
                     "roll": torque_i[0], "pitch": torque_i[1], "mu": mu_i, "weight": w_i, "height": height,
                     "edges": edges, "consistent_torque": consistent, "rank": rank, "rank_deficient": rank < 6})
        scenes.append(s)
    return scenes, pd.DataFrame(rows)


def humanoid_scene_by_scene(n: int, seed: int, support: str = "double", spread: float = 0.1, eps: float = 1e-4,
                            mu: float = 0.7, friction: bool = False, torque_limits: bool = False):
    """humanoid's sampler before its QPs were built as arrays: one posture, one QP (its rows
    appended one by one) and one rank per posture; ``(list of dicts of the QP arrays, meta)``."""
    import pinocchio as pin

    from problems import humanoid

    m = humanoid.model()
    rng = np.random.default_rng(seed)
    qps, rows = [], []
    for i in range(n):
        q = np.array(m.referenceConfigurations["half_sitting"], dtype=float)
        q[7:] = np.clip(q[7:] + rng.normal(0.0, spread, m.nq - 7), m.lowerPositionLimit[7:],
                        m.upperPositionLimit[7:])
        q[:3] = 0.0
        q[3:7] = [0.0, 0.0, 0.0, 1.0]
        data = m.createData()
        g = np.array(pin.computeGeneralizedGravity(m, data, q))
        pin.computeJointJacobians(m, data, q)
        pin.updateFramePlacements(m, data)
        J_l, J_r = [np.array(pin.getFrameJacobian(m, data, m.getFrameId(name), pin.LOCAL_WORLD_ALIGNED))
                    for name in humanoid.SOLES]
        effort = np.array(m.effortLimit[6:], float)
        soles = {"double": [J_l, J_r], "left": [J_l], "right": [J_r]}[support]
        n_tau, feet = g.shape[0] - 6, len(soles)
        v = n_tau + 6 * feet
        A = np.hstack([np.vstack([np.zeros((6, n_tau)), np.eye(n_tau)])] + [J.T for J in soles])
        lb = np.full(v, -np.inf)
        offsets = [n_tau + 6 * k for k in range(feet)]
        lb[[off + 2 for off in offsets]] = 0.0
        ub = []
        if friction:
            k = mu / np.sqrt(2)
            for off in offsets:
                for axis in (0, 1):
                    for sign in (1.0, -1.0):
                        r = np.zeros(v)
                        r[off + axis], r[off + 2] = sign, -k
                        ub.append((r, 0.0))
        if torque_limits:
            for j in range(n_tau):
                for sign in (1.0, -1.0):
                    r = np.zeros(v)
                    r[j] = sign
                    ub.append((r, effort[j]))
        qp = {"c": np.zeros(v), "A_eq": A, "b_eq": g.copy(), "A_ub": np.array([r for r, _ in ub]).reshape(len(ub), v),
              "b_ub": np.array([h for _, h in ub]), "P": np.diag(np.concatenate([np.ones(n_tau), np.full(6 * feet, eps)])),
              "lb": lb}
        rank = int(np.linalg.matrix_rank(A))
        rows.append({"case": i, "support": support, "spread": spread, "eps": eps, "mu": mu, "friction": friction,
                     "torque_limits": torque_limits, "weight_N": float(g[2]), "rank": rank,
                     "rank_deficient": rank < A.shape[0]})
        qps.append(qp)
    return qps, pd.DataFrame(rows)
