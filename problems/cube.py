"""The 3D cube: a cube touched by 1 to 4 contacts (face patches, edge segments, points).

Frame and units: half-side ``l = 1``, centre of mass at the origin, faces at ``x, y, z =
+-1``, gravity ``-z``. Wrench order ``(f_x, f_y, f_z, tau_x, tau_y, tau_z)``
(``problems.contacts``), forces in m*g, moments in m*g*l; ``need = -(gravity wrench + push)``,
so a cube with nothing pushing it needs ``(0, 0, 1, 0, 0, 0)``.

A contact touches one face (``"+x"`` ... ``"-z"``) and pushes along its inward normal.
Positions are the face's in-plane coordinates ``(u, v)`` in [-1, 1] (``+-x``: ``(y, z)``;
``+-y``: ``(z, x)``; ``+-z``: ``(x, y)``): a ``face`` is a square patch (``center``, half-side
``size``: 4 vertices), an ``edge`` a segment (``center``, half-length ``size``, direction
``angle``: 2 vertices), a ``point`` one vertex. Each vertex gets an ``edges``-edge friction
pyramid (inner by default): up to 128 generators. A contact's optional ``fmax`` limits its
total normal force (an LP-3 row)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from . import params as valid
from .family import Family, Param

from . import contacts as geometry
from .hold import HoldScene, Limits, SceneBatch
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


#: the sampler's version, recorded in every row (``generator_version``) and in the reference
#: cache key: version 2 draws with array operations (the same distribution as version 1's
#: contact-by-contact draws, in another order, so other bytes for a seed) and records each
#: contact's friction in ``mu_0`` ... (NaN for an absent contact) instead of one text column.
GENERATOR_VERSION = 2
FACE_NAMES = tuple(FACES)
#: per face: the point at (u, v) = (0, 0), the u and v axes (6, 2, 3), the inward normal (6, 3)
_FACE_ORIGIN = np.array([sign * np.eye(3)[axis] for axis, sign, _ in FACES.values()])
_FACE_UV = np.array([np.eye(3)[list(uv)] for _, _, uv in FACES.values()])
_FACE_NORMAL = -_FACE_ORIGIN
_FACE_TANGENTS = np.array([np.stack(geometry.tangent_basis(nrm)) for nrm in _FACE_NORMAL])
#: in-plane offsets of the 4 vertex slots: a face patch's corners (times ``size``), a
#: segment's two ends repeated (times ``size * (cos angle, sin angle)``), a point's centre
_PATCH = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
_SEGMENT = np.array([-1.0, 1.0, -1.0, 1.0])


def contact_generators(face, kind, center, size, angle, mu, edges: int, inner: bool = True,
                       offset: float = 0.0) -> np.ndarray:
    """(..., 4 * edges, 6) wrench generators of contacts given as arrays of one shape (...):
    ``face`` an index into ``FACE_NAMES``, ``kind`` into ``KINDS``, ``center`` (..., 2) and
    ``size``, ``angle``, ``mu`` as in ``Contact``. Every contact has 4 vertex slots (a
    segment repeats its ends, a point its centre: the same cone), vertex-major, each with
    the pyramid of ``problems.contacts``."""
    face, kind = np.asarray(face), np.asarray(kind)
    size, angle = np.asarray(size, float)[..., None, None], np.asarray(angle, float)[..., None]
    ends = np.stack([np.cos(angle), np.sin(angle)], axis=-1) * size  # (..., 1, 2)
    offsets = np.where((kind == KINDS.index("face"))[..., None, None], _PATCH * size,
                       np.where((kind == KINDS.index("edge"))[..., None, None], _SEGMENT[:, None] * ends, 0.0))
    uv = np.asarray(center, float)[..., None, :] + offsets  # (..., 4, 2)
    points = _FACE_ORIGIN[face][..., None, :] + np.einsum("...vi,...ij->...vj", uv, _FACE_UV[face])
    mu_edge = np.asarray(mu, float) if inner else np.asarray(mu, float) / np.cos(np.pi / edges)
    th = offset + 2 * np.pi * np.arange(edges) / edges
    t1, t2 = _FACE_TANGENTS[face][..., 0, :], _FACE_TANGENTS[face][..., 1, :]  # (..., 3)
    spread = np.cos(th)[:, None] * t1[..., None, :] + np.sin(th)[:, None] * t2[..., None, :]  # (..., E, 3)
    forces = _FACE_NORMAL[face][..., None, :] + mu_edge[..., None, None] * spread
    forces = np.broadcast_to(forces[..., None, :, :], points.shape[:-1] + (edges, 3))  # (..., 4, E, 3)
    torques = np.cross(points[..., :, None, :], forces)
    return np.concatenate([forces, torques], axis=-1).reshape(points.shape[:-2] + (4 * edges, 6))


def _joined(codes: np.ndarray, count: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Per scene, the names of its first ``count`` codes joined by commas (a lookup over the
    distinct combinations, not a loop over scenes)."""
    slots = np.where(np.arange(codes.shape[1]) < count[:, None], codes, -1)
    unique, inverse = np.unique(slots, axis=0, return_inverse=True)
    text = np.array([",".join(names[c] for c in row if c >= 0) for row in unique], dtype=object)
    return text[inverse.reshape(-1)]


def sample(n: int, seed: int, *, contacts=(1, 4), mu=(0.2, 1.0), push=(0.3, 0.3, 0.3, 0.2, 0.2, 0.2),
           kinds=KINDS, edges: int = 8, inner: bool = True, limits: bool = False, fmax=(0.3, 1.5),
           mass=None, com=None) -> tuple[SceneBatch, pd.DataFrame]:
    """``n`` random cube scenes with ``contacts[1] * 4 * edges`` generators each, drawn with
    array operations (``GENERATOR_VERSION``).

    ``contacts`` is the (min, max) number of contacts, the first on the bottom face (the
    cube rests on something), the others on uniform faces; ``kinds`` the contact kinds
    drawn from (uniformly); a patch or segment has a half-size uniform in [0.1, 0.6] and
    lies inside its face, a point is uniform in [-0.9, 0.9]^2, a segment's direction is
    uniform in [0, pi); ``mu`` the per-contact friction range; ``push`` the half-widths of
    the uniform external wrench; ``limits`` gives every contact a normal-force limit
    uniform in ``fmax``. A scene with fewer contacts than ``contacts[1]`` repeats its
    contacts cyclically (limit rows included), which leaves its cone unchanged. Robust
    scenes: ``mass`` (low, high) and/or ``com`` (half-widths of the centre-of-mass box, in
    l) expand each scene into one LP per corner of the uncertainty box
    (``meta.need_corner``); the verdict is the worst.
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
    n, slots = int(n), int(contacts[1])
    rng = np.random.default_rng(seed)
    count = rng.integers(contacts[0], slots + 1, size=n)
    kind = np.array([KINDS.index(k) for k in kinds])[rng.integers(len(kinds), size=(n, slots))]
    face = rng.integers(6, size=(n, slots))
    face[:, 0] = FACE_NAMES.index("-z")
    size = rng.uniform(0.1, 0.6, size=(n, slots))
    unit = rng.uniform(-1.0, 1.0, size=(n, slots, 2))
    center = unit * np.where(kind == KINDS.index("point"), 0.9, 1.0 - size)[..., None]
    angle = rng.uniform(0.0, np.pi, size=(n, slots))
    mu_ = rng.uniform(*mu, size=(n, slots))
    fmax_ = rng.uniform(*fmax, size=(n, slots)) if limits else None
    p = rng.uniform(-1.0, 1.0, size=(n, 6)) * np.asarray(push, float)
    source = np.arange(slots)[None, :] % count[:, None]  # a missing contact repeats contact j % count
    pick = lambda a: np.take_along_axis(a, source.reshape(source.shape + (1,) * (a.ndim - 2)), axis=1)  # noqa: E731
    G = contact_generators(pick(face), pick(kind), pick(center), pick(size), pick(angle), pick(mu_), edges, inner)
    W = G.reshape(n, slots * 4 * edges, 6).transpose(0, 2, 1)
    if limits:  # row r covers every slot that repeats contact r % count
        row_of = np.arange(slots)[None, :] % count[:, None]
        B = (source[:, None, :] == row_of[:, :, None]).astype(float)  # (n, rows, slots)
        limit_B = np.repeat(B, 4 * edges, axis=2)
        limit_fmax = np.take_along_axis(fmax_, row_of, axis=1)
    else:
        limit_B, limit_fmax = np.zeros((n, 0, W.shape[2])), np.zeros((n, 0))
    labels, needs = corner_needs(p, mass, com)
    C = len(labels)
    active = np.arange(slots)[None, :] < count[:, None]
    meta = pd.DataFrame({"case": np.arange(n), "contacts": count, "kinds": _joined(kind, count, KINDS),
                         "faces": _joined(face, count, FACE_NAMES),
                         **{f"mu_{j}": np.where(active[:, j], mu_[:, j], np.nan) for j in range(slots)},
                         "mu_min": np.min(np.where(active, mu_, np.inf), axis=1),
                         **{f"push_{a}": p[:, i] for i, a in enumerate(AXES)}})
    rows = meta.iloc[np.repeat(np.arange(n), C)].reset_index(drop=True)
    rows["need_corner"] = np.tile(np.asarray(labels, dtype=object), n)
    each = (lambda a: a) if C == 1 else (lambda a: np.repeat(a, C, axis=0))
    scenes = SceneBatch(each(W), needs.reshape(n * C, 6), each(limit_B), each(limit_fmax))
    return scenes, rows


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
    version=GENERATOR_VERSION,
)
