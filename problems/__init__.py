"""Problem families (generators), the hold-test LP builders and contact geometry.

``generate(family, n, seed, **params) -> ProblemBatch`` is a pure function: the same
inputs give the same bytes. ``families()`` lists each family with its parameters.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from solvers.errors import ProblemError

from . import cube, near_boundary, planar_box
from .batch import KINDS, ProblemBatch, hold_batch
from .hold import EXIT_CAP, LP, HoldScene, Limits, exit_lp, lp1, margin_directions


@dataclass(frozen=True)
class Family:
    """A registered family: ``sample(n, seed, **params) -> (scenes, meta)`` and its axes."""

    name: str
    description: str
    sample: Callable[..., Any]
    axes: tuple[str, ...]
    kinds: tuple[str, ...] = KINDS
    #: the problem class a solver must handle: "lp" (hold tests), "qp" or "socp".
    problem_class: str = "lp"

    def axes_for(self, params: dict[str, Any]) -> tuple[str, ...]:
        """Wrench axes of the scenes generated with ``params``."""
        return self.axes

    def structure(self, params: dict[str, Any]) -> str:
        """Problem structure generated with ``params``, e.g. ``hold-d3-lp1`` (see
        ``Capabilities.structures``)."""
        return f"hold-d{len(self.axes_for(params))}-{params.get('kind', 'lp1')}"

    def parameters(self) -> dict[str, Any]:
        """Parameter name -> default, as ``generate`` accepts them (``kind`` included)."""
        sig = inspect.signature(self.sample)
        params = {k: p.default for k, p in sig.parameters.items() if k not in ("n", "seed")}
        return {"kind": "lp1", **params}


# The family registry (with the solver registry, the only global state).
_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Add a family to the registry (its name must be new)."""
    if family.name in _FAMILIES:
        raise ProblemError(f"family: {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    return family


register_family(Family(
    "planar-box",
    "square box on the floor (corners A, B), random tilt, friction, push, dropped corner, "
    "optional disk with a force limit; d=3",
    planar_box.sample, planar_box.AXES,
))


register_family(Family(
    "cube-3d",
    "cube touched by 1-4 contacts (face patches, edge segments, points) on any face, 8-edge inner "
    "pyramids, random friction and push; d=6, up to 128 generators",
    cube.sample, cube.AXES,
))


class NearBoundaryFamily(Family):
    """near-boundary: its wrench axes (and so its structure) are those of its ``base``."""

    def axes_for(self, params: dict[str, Any]) -> tuple[str, ...]:
        base = params.get("base", "planar-box")
        if base not in near_boundary.BASES:
            raise ProblemError(f"base: expected one of {list(near_boundary.BASES)}, got {base!r}")
        return _FAMILIES[base].axes


register_family(NearBoundaryFamily(
    "near-boundary",
    "scenes within +-eps of the support boundary along one parameter of a base family "
    "(planar-box: disk height; cube-3d: push magnitude); meta has the signed distance",
    near_boundary.sample, planar_box.AXES,
))


def families() -> dict[str, Family]:
    """All registered families by name."""
    return dict(_FAMILIES)


def generate(family: str, n: int, seed: int = 0, **params: Any) -> ProblemBatch:
    """``n`` cases of ``family`` from ``seed``; ``kind`` ('lp1' or 'exit') picks the LPs.

    Raises ``ProblemError`` naming the argument for an unknown family or parameter.
    """
    if family not in _FAMILIES:
        raise ProblemError(f"family: expected one of {sorted(_FAMILIES)}, got {family!r}")
    fam = _FAMILIES[family]
    kind = params.pop("kind", "lp1")
    if kind not in fam.kinds:
        raise ProblemError(f"kind: family {family!r} generates {list(fam.kinds)}, got {kind!r}")
    unknown = sorted(set(params) - set(fam.parameters()))
    if unknown:
        raise ProblemError(f"params: family {family!r} does not take {unknown}; it takes {sorted(fam.parameters())}")
    if not isinstance(seed, (int,)) or isinstance(seed, bool):
        raise ProblemError(f"seed: expected an integer, got {seed!r}")
    scenes, meta = fam.sample(n, seed, **params)
    return hold_batch(family, scenes, meta, kind=kind, axes=fam.axes_for(params),
                      params={"n": n, "seed": seed, "kind": kind, **params})


__all__ = [
    "EXIT_CAP", "KINDS", "LP", "Family", "HoldScene", "Limits", "ProblemBatch", "exit_lp",
    "families", "generate", "hold_batch", "lp1", "margin_directions", "register_family",
]
