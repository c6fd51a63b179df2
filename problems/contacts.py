"""Contact geometry for spatial (3D) hold tests: friction-pyramid generators as wrenches.

Wrench order, used by every 3D family: ``(f_x, f_y, f_z, tau_x, tau_y, tau_z)``, with
``tau = p x f`` about the origin divided by ``length_scale`` (forces in m*g, moments in
m*g*l when ``length_scale = l``).

A point contact at ``p`` with inward unit normal ``n`` and friction ``mu`` becomes a pyramid
of ``edges`` edges ``n + mu' (cos th_j t1 + sin th_j t2)``, ``th_j = offset + 2 pi j / edges``,
each with unit normal component (a contact's normal force is the sum of its edge weights).
``inner=True``: ``mu' = mu``, the pyramid lies inside the circular cone and can only reject a
pose real friction holds; ``inner=False``: ``mu' = mu / cos(pi / edges)``, it circumscribes
the cone. ``(t1, t2, n)`` is a direct frame, ``t1`` the unit projection of the first of
``x, y, z`` not parallel to ``n``. A polygon contact reduces to its vertices, a segment to its
two ends (a force's moment is linear in its point of application)."""

from __future__ import annotations

import numpy as np

from solvers.errors import ProblemError

AXES = ("f_x", "f_y", "f_z", "tau_x", "tau_y", "tau_z")


def tangent_basis(n) -> tuple[np.ndarray, np.ndarray]:
    """``(t1, t2)`` orthonormal, with ``(t1, t2, n)`` a direct frame (see module docstring)."""
    n = np.asarray(n, float)
    for axis in np.eye(3):
        t = axis - (axis @ n) * n
        if np.linalg.norm(t) > 1e-6:
            t1 = t / np.linalg.norm(t)
            return t1, np.cross(n, t1)
    raise ProblemError(f"n: expected a nonzero normal, got {n!r}")  # pragma: no cover - n is unit


def _unit_normal(n) -> np.ndarray:
    n = np.asarray(n, float)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-12:
        raise ProblemError(f"n: expected a nonzero 3-vector, got {n!r}")
    return n / np.linalg.norm(n)


def _check(mu: float, edges: int, length_scale: float) -> None:
    if not (np.isfinite(mu) and mu >= 0):
        raise ProblemError(f"mu: expected a finite number >= 0, got {mu!r}")
    if not isinstance(edges, (int, np.integer)) or edges < 3:
        raise ProblemError(f"edges: expected an integer >= 3, got {edges!r}")
    if not (np.isfinite(length_scale) and length_scale > 0):
        raise ProblemError(f"length_scale: expected a number > 0, got {length_scale!r}")


def edge_forces(n, mu: float, edges: int = 8, inner: bool = True, offset: float = 0.0) -> np.ndarray:
    """(3, edges) edge forces of the pyramid at unit normal ``n`` (see module docstring)."""
    _check(mu, edges, 1.0)
    n = _unit_normal(n)
    t1, t2 = tangent_basis(n)
    mu_edge = mu if inner else mu / np.cos(np.pi / edges)
    th = offset + 2 * np.pi * np.arange(edges) / edges
    return n[:, None] + mu_edge * (np.outer(t1, np.cos(th)) + np.outer(t2, np.sin(th)))


def wrenches(points, forces, length_scale: float = 1.0) -> np.ndarray:
    """(6, P*F) wrenches ``(f, p x f / length_scale)`` of every force (3, F) at every point (P, 3)."""
    points = np.atleast_2d(np.asarray(points, float))
    cols = []
    for p in points:
        for f in forces.T:
            cols.append(np.concatenate([f, np.cross(p, f) / length_scale]))
    return np.array(cols).T


def point(p, n, mu: float, edges: int = 8, inner: bool = True, offset: float = 0.0,
          length_scale: float = 1.0) -> np.ndarray:
    """(6, edges) generators of a point contact at ``p`` with inward normal ``n``."""
    _check(mu, edges, length_scale)
    p = np.asarray(p, float)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ProblemError(f"p: expected a finite 3-vector, got {p!r}")
    return wrenches(p[None], edge_forces(n, mu, edges, inner, offset), length_scale)


def polygon(vertices, n, mu: float, edges: int = 8, inner: bool = True, offset: float = 0.0,
            length_scale: float = 1.0) -> np.ndarray:
    """(6, V*edges) generators of a contact polygon (or segment: 2 vertices): one column per
    (vertex, pyramid edge), vertex-major."""
    _check(mu, edges, length_scale)
    vertices = np.asarray(vertices, float)
    if vertices.ndim != 2 or vertices.shape[1] != 3 or len(vertices) < 1 or not np.all(np.isfinite(vertices)):
        raise ProblemError(f"vertices: expected a (V, 3) array of finite points, got shape {vertices.shape}")
    return wrenches(vertices, edge_forces(n, mu, edges, inner, offset), length_scale)
