"""The 3D cube: a cube touched by 1 to 4 contacts (face patches, edge segments, points).

Frame and units: the cube has half-side ``l = 1`` and its centre of mass at the origin,
faces at ``x, y, z = +-1``; gravity is ``-z``. Wrench order ``(f_x, f_y, f_z, tau_x,
tau_y, tau_z)`` (``problems.contacts``), forces in m*g, moments in m*g*l.
``need = -(gravity wrench + push)``, so a cube with nothing pushing it needs
``(0, 0, 1, 0, 0, 0)`` from its contacts.

A contact touches one face (``"+x"``, ``"-x"``, ``"+y"``, ``"-y"``, ``"+z"``, ``"-z"``) and
pushes into the cube along that face's inward normal. Positions on a face are given in
the face's two in-plane coordinates ``(u, v)`` (for ``"+-x"``: ``(y, z)``; ``"+-y"``:
``(z, x)``; ``"+-z"``: ``(x, y)``), each in [-1, 1]:

* ``face``: a square patch centred at ``center`` with half-side ``size`` (4 vertices);
* ``edge``: a segment centred at ``center``, half-length ``size``, direction ``angle`` (2 vertices);
* ``point``: the point ``center`` (1 vertex).

Each vertex gets an ``edges``-edge friction pyramid (inner by default): up to 4 contacts x
4 vertices x 8 edges = 128 generators. A contact's optional ``fmax`` limits its total
normal force (an LP-3 row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from . import params as valid
from .family import Family, Param

from . import contacts as geometry
from .hold import HoldScene, Limits, pad, with_need
from .robust import corner_needs, lower_mu

AXES = geometry.AXES
#: face -> (axis index, sign, (u axis, v axis))
FACES = {
    "+x": (0, 1.0, (1, 2)), "-x": (0, -1.0, (1, 2)),
    "+y": (1, 1.0, (2, 0)), "-y": (1, -1.0, (2, 0)),
    "+z": (2, 1.0, (0, 1)), "-z": (2, -1.0, (0, 1)),
}
KINDS = ("face", "edge", "point")
GRAVITY_NEED = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])


@dataclass(frozen=True)
class Contact:
    """One contact on the cube (see the module docstring for coordinates)."""

    kind: str
    face: str
    center: tuple[float, float] = (0.0, 0.0)
    size: float = 1.0
    angle: float = 0.0
    mu: float | None = None
    fmax: float | None = None

    def vertices(self) -> np.ndarray:
        """(V, 3) support points on the cube surface."""
        if self.kind not in KINDS:
            raise ProblemError(f"kind: expected one of {list(KINDS)}, got {self.kind!r}")
        if self.face not in FACES:
            raise ProblemError(f"face: expected one of {list(FACES)}, got {self.face!r}")
        axis, sign, (ua, va) = FACES[self.face]
        cu, cv = (float(c) for c in self.center)
        if self.kind == "face":
            uv = [(cu + su * self.size, cv + sv * self.size) for su, sv in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
        elif self.kind == "edge":
            du, dv = self.size * np.cos(self.angle), self.size * np.sin(self.angle)
            uv = [(cu - du, cv - dv), (cu + du, cv + dv)]
        else:
            uv = [(cu, cv)]
        uv = np.array(uv)
        if np.any(np.abs(uv) > 1 + 1e-12):
            raise ProblemError(f"center, size: the {self.kind} contact leaves face {self.face} ([-1, 1]^2): {uv.tolist()}")
        pts = np.zeros((len(uv), 3))
        pts[:, axis] = sign
        pts[:, ua], pts[:, va] = uv[:, 0], uv[:, 1]
        return pts

    def normal(self) -> np.ndarray:
        """Inward unit normal of the touched face."""
        axis, sign, _ = FACES[self.face]
        n = np.zeros(3)
        n[axis] = -sign
        return n


def scene(contacts: list[Contact] | tuple[Contact, ...], mu=0.5, push=(0.0,) * 6, edges: int = 8,
          inner: bool = True, offset: float = 0.0) -> HoldScene:
    """One cube hold scene.

    Parameters
    ----------
    contacts : the contacts; each uses its own ``mu`` when set, else ``mu``.
    mu : friction coefficient, or an interval ``(low, high)`` of which the lower end is
        used (robust to uncertain friction).
    push : external wrench on the cube ``(f, tau / l)`` in m*g, m*g*l.
    edges, inner, offset : friction pyramid of every vertex (``problems.contacts``).
    """
    if not contacts:
        raise ProblemError("contacts: expected at least one Contact")
    push = np.asarray(push, float)
    if push.shape != (6,) or not np.all(np.isfinite(push)):
        raise ProblemError(f"push: expected 6 finite numbers (f, tau/l), got {push!r}")
    blocks, labels, limit_rows, fmax = [], [], [], []
    for i, c in enumerate(contacts):
        mu_c = lower_mu(mu if c.mu is None else c.mu)
        G = geometry.polygon(c.vertices(), c.normal(), mu_c, edges, inner, offset)
        start = sum(b.shape[1] for b in blocks)
        blocks.append(G)
        labels += [f"c{i}:{c.kind}{c.face}:v{v}e{e}" for v in range(len(c.vertices())) for e in range(edges)]
        if c.fmax is not None:
            if not (np.isfinite(c.fmax) and c.fmax >= 0):
                raise ProblemError(f"fmax: expected a finite limit >= 0 for contact {i}, got {c.fmax!r}")
            limit_rows.append((start, start + G.shape[1]))
            fmax.append(float(c.fmax))
    W = np.hstack(blocks)
    limits = None
    if limit_rows:
        B = np.zeros((len(limit_rows), W.shape[1]))
        for r, (a, b) in enumerate(limit_rows):
            B[r, a:b] = 1.0
        limits = Limits(B, np.array(fmax))
    return HoldScene(W, GRAVITY_NEED - push, limits, tuple(labels))


def random_contacts(rng: np.random.Generator, count: int, mu, kinds, limits: bool, fmax) -> list[Contact]:
    """``count`` random contacts, the first on the bottom face (the cube rests on something)."""
    out = []
    for i in range(count):
        kind = kinds[rng.integers(len(kinds))]
        face = "-z" if i == 0 else list(FACES)[rng.integers(6)]
        size = rng.uniform(0.1, 0.6)
        center = tuple(rng.uniform(-(1 - size), 1 - size, 2)) if kind != "point" else tuple(rng.uniform(-0.9, 0.9, 2))
        out.append(Contact(kind, face, center, size if kind != "point" else 0.0, rng.uniform(0, np.pi),
                           rng.uniform(*mu), rng.uniform(*fmax) if limits else None))
    return out


def sample(n: int, seed: int, *, contacts=(1, 4), mu=(0.2, 1.0), push=(0.3, 0.3, 0.3, 0.2, 0.2, 0.2),
           kinds=KINDS, edges: int = 8, inner: bool = True, limits: bool = False, fmax=(0.3, 1.5),
           mass=None, com=None) -> tuple[list[HoldScene], pd.DataFrame]:
    """``n`` random cube scenes, padded to ``contacts[1] * 4 * edges`` generators.

    ``contacts`` is the (min, max) number of contacts; ``mu`` the per-contact friction
    range; ``push`` the half-widths of the uniform external wrench; ``limits`` gives every
    contact a normal-force limit uniform in ``fmax``. Robust scenes: ``mass`` (low, high)
    and/or ``com`` (half-widths of the centre-of-mass box, in l) expand each scene into one
    LP per corner of the uncertainty box (``meta.need_corner``); the verdict is the worst.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ProblemError(f"n: expected a positive integer, got {n!r}")
    if not (len(contacts) == 2 and 1 <= contacts[0] <= contacts[1] <= 4):
        raise ProblemError(f"contacts: expected (min, max) with 1 <= min <= max <= 4, got {contacts!r}")
    if len(push) != 6:
        raise ProblemError(f"push: expected 6 half-widths, got {push!r}")
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ProblemError(f"kinds: expected a non-empty subset of {list(KINDS)}, got {kinds!r}")
    rng = np.random.default_rng(seed)
    k = contacts[1] * 4 * edges
    scenes, rows = [], []
    for case in range(int(n)):
        count = int(rng.integers(contacts[0], contacts[1] + 1))
        cs = random_contacts(rng, count, mu, kinds, limits, fmax)
        p = np.array([rng.uniform(-h, h) for h in push])
        base = scene(cs, push=p, edges=edges, inner=inner)
        row = {"case": case, "contacts": count, "kinds": ",".join(c.kind for c in cs),
               "faces": ",".join(c.face for c in cs), "mu": ",".join(f"{c.mu:.4g}" for c in cs),
               "mu_min": min(c.mu for c in cs), **{f"push_{a}": v for a, v in zip(AXES, p)}}
        for corner, need in corner_needs(p, mass, com):
            scenes.append(pad(with_need(base, need), k, contacts[1] if limits else None))
            rows.append({**row, "need_corner": corner})
    return scenes, pd.DataFrame(rows)


FAMILY = Family(
    "cube-3d",
    "cube touched by 1-4 contacts (face patches, edge segments, points) on any face, 8-edge inner "
    "pyramids, random friction and push; d=6, up to 128 generators",
    sample, AXES, kinds=("lp1", "exit"),
    params=(
        Param("contacts", "(min, max) integers, 1 <= min <= max <= 4", (1, 4), "number of contacts per scene",
              valid.interval(ge=1, le=4, whole=True)),
        Param("mu", "(low, high), 0 < low <= high", (0.2, 1.0), "per-contact friction coefficient range",
              valid.interval(gt=0)),
        Param("push", "6 half-widths", (0.3, 0.3, 0.3, 0.2, 0.2, 0.2),
              "half-widths of the uniform external wrench (f: m*g, tau: m*g*l)", valid.widths(6)),
        Param("kinds", "subset of ('face', 'edge', 'point')", KINDS, "contact kinds drawn from", valid.subset(KINDS)),
        Param("edges", "int >= 3", 8, "edges of each inner friction pyramid", valid.integer(ge=3, le=64)),
        Param("inner", "bool", True, "inner (conservative) pyramids; False: outer", valid.boolean),
        Param("limits", "bool", False, "give every contact a normal-force limit", valid.boolean),
        Param("fmax", "(low, high), 0 < low <= high", (0.3, 1.5), "range of the normal-force limits, m*g",
              valid.interval(gt=0)),
        Param("mass", "(low, high), 0 < low <= high, or None", None, "robust test: mass range, one LP per corner",
              valid.optional(valid.interval(gt=0))),
        Param("com", "3 half-widths or None", None, "robust test: centre-of-mass box half-widths, l",
              valid.optional(valid.widths(3))),
    ),
)
