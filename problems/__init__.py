"""Problem families (generators), the hold-test LP builders and contact geometry.

``generate(family, n, seed, **params) -> ProblemBatch`` is a pure function: the same
inputs give the same bytes. ``families()`` lists each family with its parameters.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from solvers.errors import ProblemError

from . import cube, humanoid, near_boundary, planar_box, quadruped
from .batch import KINDS, QP_KINDS, ProblemBatch, hold_batch, qp_batch
from .hold import EXIT_CAP, LP, HoldScene, Limits, exit_lp, lp1, margin_directions


#: problem class a solver must handle for each kind: "lp" (hold tests), "qp" or "socp".
KIND_CLASSES = {"lp1": "lp", "exit": "lp", "qp": "qp", "socp": "socp"}


@dataclass(frozen=True)
class Family:
    """A registered family: ``sample(n, seed, **params) -> (scenes, meta)`` and its axes.

    Hold-test families (the default) build LP-1 / exit batches from ``HoldScene`` items;
    others give ``build(name, items, meta, kind, params) -> ProblemBatch`` and, where a
    kind has a special structure an adapter may require, ``structures`` (kind -> name).
    """

    name: str
    description: str
    sample: Callable[..., Any]
    axes: tuple[str, ...]
    kinds: tuple[str, ...] = KINDS
    build: Callable[..., ProblemBatch] | None = None
    structures: dict[str, str] | None = None
    #: returns None when the family can generate here, else why not (a missing package).
    unavailable: Callable[[], str | None] | None = None
    #: the kind a spec without ``kind=`` means.
    default_kind: str = "lp1"

    def problem_class(self, params: dict[str, Any]) -> str:
        """``lp``, ``qp`` or ``socp``: what a solver must handle for ``params['kind']``."""
        return KIND_CLASSES[params.get("kind", self.default_kind)]

    def axes_for(self, params: dict[str, Any]) -> tuple[str, ...]:
        """Wrench axes of the scenes generated with ``params``."""
        return self.axes

    def structure(self, params: dict[str, Any]) -> str:
        """Problem structure generated with ``params``, e.g. ``hold-d3-lp1`` or ``force-socp``
        (see ``Capabilities.structures``)."""
        kind = params.get("kind", self.default_kind)
        if self.structures and kind in self.structures:
            return self.structures[kind]
        return f"hold-d{len(self.axes_for(params))}-{kind}"

    def reason_unavailable(self) -> str | None:
        """None when the family can generate here, else why not."""
        return self.unavailable() if self.unavailable else None

    def parameters(self) -> dict[str, Any]:
        """Parameter name -> default, as ``generate`` accepts them (``kind`` included)."""
        sig = inspect.signature(self.sample)
        params = {k: p.default for k, p in sig.parameters.items() if k not in ("n", "seed")}
        return {"kind": self.default_kind, **params}


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


def _quadruped_batch(name: str, scenes, meta, kind: str, params: dict[str, Any]) -> ProblemBatch:
    if kind == "lp1":
        return hold_batch(name, [s.hold() for s in scenes], meta, "lp1", axes=cube.AXES, params=params)
    cone = "pyramid" if kind == "qp" else "circular"
    return qp_batch(name, [s.qp(cone) for s in scenes], meta.assign(cone=cone), kind, params)


register_family(Family(
    "quadruped",
    "quadruped contact-force distribution (seed 000): 4 feet, all 11 stance sets, push, roll/pitch torque, "
    "weight, mu; qp: min sum|f|^2 with inner pyramids; socp: circular cones; lp1: the stance's hold test",
    quadruped.sample, cube.AXES, kinds=("qp", "socp", "lp1"), build=_quadruped_batch,
    structures={"qp": "quadruped-qp", "socp": "force-socp"}, default_kind="qp",
))


register_family(Family(
    "humanoid",
    "humanoid (TALOS, 38 dof) gravity compensation in single/double support (seed 001): "
    "min |tau|^2 + eps |f|^2 s.t. statics, f_z >= 0, optional friction pyramids and torque limits",
    humanoid.sample, cube.AXES, kinds=("qp",), build=qp_batch, structures={"qp": "humanoid-qp"},
    unavailable=humanoid.model_reason, default_kind="qp",
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
    kind = params.pop("kind", fam.default_kind)
    if kind not in fam.kinds:
        raise ProblemError(f"kind: family {family!r} generates {list(fam.kinds)}, got {kind!r}")
    unknown = sorted(set(params) - set(fam.parameters()))
    if unknown:
        raise ProblemError(f"params: family {family!r} does not take {unknown}; it takes {sorted(fam.parameters())}")
    if not isinstance(seed, (int,)) or isinstance(seed, bool):
        raise ProblemError(f"seed: expected an integer, got {seed!r}")
    reason = fam.reason_unavailable()
    if reason:
        raise ProblemError(f"family {family!r} is not available here: {reason}")
    scenes, meta = fam.sample(n, seed, **params)
    record = {"n": n, "seed": seed, "kind": kind, **params}
    if fam.build is not None:
        return fam.build(family, scenes, meta, kind, record)
    return hold_batch(family, scenes, meta, kind=kind, axes=fam.axes_for(params), params=record)


__all__ = [
    "EXIT_CAP", "KINDS", "LP", "QP_KINDS", "Family", "HoldScene", "Limits", "ProblemBatch", "exit_lp",
    "families", "generate", "hold_batch", "lp1", "margin_directions", "qp_batch", "register_family",
]
