"""Robust hold tests (seed 002 §5): uncertain friction, mass and centre of mass.

* Friction given as an interval ``(low, high)``: the test uses the lower end.
* Mass in ``(low, high)`` (in m) and centre of mass in a box of half-widths ``com``
  (in l, around the nominal centre): one needed wrench per corner of the box. The
  verdict is supported only if every corner is; the margin is the worst corner's.

Spatial needs (3D, wrench order ``(f, tau / l)``, gravity ``-z``): gravity ``(0, 0, -m)``
at ``c`` has moment ``c x (0, 0, -m) = (-m c_y, m c_x, 0)``, so the contacts must supply
``(0, 0, m, m c_y, -m c_x, 0) - push``. Planar needs (``(f_x, f_z, tau_y / l)``, floor
tilted by ``t``): gravity ``(-m sin t, -m cos t)`` at ``c = (c_x, c_z)``, so the contacts
must supply ``(m sin t, m cos t, m (c_z sin t - c_x cos t)) - push``.
"""

from __future__ import annotations

import itertools

import numpy as np

from solvers.errors import ProblemError


def lower_mu(mu) -> float:
    """The friction coefficient to test with: ``mu`` itself, or the lower end of an interval."""
    if np.ndim(mu) == 0:
        return float(mu)
    if len(mu) != 2 or not (0 <= mu[0] <= mu[1]):
        raise ProblemError(f"mu: expected a number or an interval (low, high) with 0 <= low <= high, got {mu!r}")
    return float(mu[0])


def corners(mass=None, com=None, dim: int = 3) -> list[tuple[str, float, np.ndarray]]:
    """(label, mass, centre-of-mass offset) for each corner of the uncertainty box.

    ``mass`` is (low, high) in m or None (1); ``com`` holds ``dim`` half-widths in l or
    None (no offset). With neither, the single nominal corner ``("nominal", 1, 0)``.
    """
    masses = [1.0] if mass is None else list(mass)
    if mass is not None and (len(masses) != 2 or not 0 < masses[0] <= masses[1]):
        raise ProblemError(f"mass: expected (low, high) with 0 < low <= high, got {mass!r}")
    if com is None:
        offsets = [np.zeros(dim)]
    else:
        com = np.asarray(com, float)
        if com.shape != (dim,) or np.any(com < 0):
            raise ProblemError(f"com: expected {dim} half-widths >= 0, got {com!r}")
        offsets = [np.array(s) * com for s in itertools.product((-1.0, 1.0), repeat=dim)]
    if mass is None and com is None:
        return [("nominal", 1.0, offsets[0])]
    return [(f"m={m:g},c=({','.join(f'{v:+g}' for v in c)})", m, c) for m in masses for c in offsets]


def corner_needs(push, mass=None, com=None) -> tuple[list[str], np.ndarray]:
    """``(labels, needs)`` for the 3D cube: the corner labels (``corners``) and the needs
    (n, corners, 6) of pushes ``push`` (n, 6) (see module docstring)."""
    box = corners(mass, com, 3)
    m = np.array([mc[1] for mc in box])
    c = np.array([mc[2] for mc in box])
    zero = np.zeros_like(m)
    gravity = np.stack([zero, zero, m, m * c[:, 1], -m * c[:, 0], zero], axis=1)  # (C, 6)
    return [label for label, _, _ in box], gravity[None] - np.asarray(push, float)[:, None, :]
