"""Problem families: declarations, the family registry, ``FamilySpec`` and ``generate``.

A family is a generator ``sample(n, seed, **params) -> (items, meta)`` plus what it
declares about itself: its parameters (``Param``: name, type, default, doc), the kinds it
generates and its wrench axes. Families are plug-ins, like adapters: they are found, in
this order, in

1. the entry-point group ``contactbench.problems`` of installed packages (value: a
   ``Family``, or a module exposing ``FAMILY`` or a list ``FAMILIES``); the built-in
   families register through this group too (see ``pyproject.toml``);
2. modules named in the environment variable ``CONTACTBENCH_FAMILY_PLUGINS``
   (comma-separated importable names), for local families without packaging;
3. ``register_family`` calls (tests, Jupyter).

A family whose source fails to import is reported by ``broken_families()``, never a crash.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from solvers import plugins
from solvers.errors import ProblemError, did_you_mean

from .batch import ProblemBatch, frozen_batch
from .params import Param
from .kinds import get_kind
from .kinds.base import when_missing

ENTRY_POINT_GROUP = "contactbench.problems"
#: the largest seed (results store it as a 64-bit signed integer)
MAX_SEED = 2**63 - 1
#: deepest nesting of brackets a family value may have
MAX_VALUE_DEPTH = 20
PLUGINS_ENV = "CONTACTBENCH_FAMILY_PLUGINS"


@dataclass(frozen=True)
class Family:
    """A registered family (see module docstring).

    ``build(family, items, meta, kind, params) -> ProblemBatch`` is needed only when the
    items differ per kind (the quadruped gives a hold scene for ``lp1`` and a QP for
    ``qp``); by default the kind's own ``build`` takes the items. ``structures`` maps a
    kind to a special structure name an adapter may require (``Capabilities.structures``);
    ``unavailable()`` returns why the family cannot generate here (a missing package);
    ``version`` is the sampler's version (see the field).
    """

    name: str
    description: str
    sample: Callable[..., Any]
    axes: tuple[str, ...]
    kinds: tuple[str, ...]
    params: tuple[Param, ...] = ()
    build: Callable[..., ProblemBatch] | None = None
    structures: dict[str, str] = field(default_factory=dict)
    unavailable: Callable[[], str | None] | None = None
    #: the sampler's version: bumped whenever a seed draws other problems than before;
    #: recorded in every batch (``params['generator_version']``), row and reference-cache key
    version: int = 1

    @property
    def default_kind(self) -> str:
        """The kind a spec without ``kind=`` means: the first declared."""
        return self.kinds[0]

    def problem_class(self, params: dict[str, Any]) -> str:
        """``lp``, ``qp`` or ``socp``: what a solver must handle for ``params['kind']``."""
        return get_kind(params.get("kind", self.default_kind)).problem_class

    def axes_for(self, params: dict[str, Any]) -> tuple[str, ...]:
        """Wrench axes of the scenes generated with ``params``."""
        return self.axes

    def structure(self, params: dict[str, Any]) -> str | None:
        """Problem structure generated with ``params`` (e.g. ``hold-d3-lp1``, ``force-socp``;
        None for a general standard-form problem); see ``Capabilities.structures``."""
        kind = params.get("kind", self.default_kind)
        if kind in self.structures:
            return self.structures[kind]
        return get_kind(kind).structure(self.axes_for(params))

    def reason_unavailable(self) -> str | None:
        """None when the family can generate here, else why not."""
        return self.unavailable() if self.unavailable else None

    def most_scenes(self, params: dict[str, Any]) -> int | None:
        """The most scenes ``params`` can give (a fixed set, such as a ``files`` folder), or
        None where a seed draws as many as asked for. Recorded in every row
        (``family_cases``), so that ``recommend`` never asks for a rerun the family cannot give."""
        return None

    def parameters(self) -> dict[str, Any]:
        """Parameter name -> default, as ``generate`` accepts them (``kind`` and the kinds' own
        parameters included)."""
        return {"kind": self.default_kind, **{p.name: p.default for p in self.params},
                **{p.name: p.default for k in self.kinds for p in get_kind(k).params}}

    def kind_params(self) -> set[str]:
        """The names of the parameters that belong to a kind's build, not to the sampler."""
        return {p.name for k in self.kinds for p in get_kind(k).params}

    def items(self, n: int, seed: int, params: dict[str, Any]):
        """``(items, meta)``: the items of ``n`` cases from ``seed`` (``sample`` without
        ``kind``): ``n`` items, or the same number for each case (a robust family's corners),
        with one meta row per item; ``ProblemError`` naming the family otherwise (fewer items
        than cases, a count that is no multiple of ``n``, items without a length)."""
        skip = {"kind"} | self.kind_params()
        items, meta = self.sample(n, seed, **{k: v for k, v in params.items() if k not in skip})
        try:
            count = len(items)
        except TypeError:
            raise ProblemError(f"family {self.name!r}: its sampler returned {type(items).__name__} items without a "
                               "length; expected a sequence of n items") from None
        rows = len(meta) if meta is not None else count
        if count < n or count % n or rows != count:
            raise ProblemError(f"family {self.name!r}: its sampler returned {count} items and {rows} meta rows for "
                               f"n = {n}; expected {n} items (or the same number for each case), one meta row each")
        return items, meta

    def make(self, items: list, meta, kind: str, record: dict[str, Any]) -> ProblemBatch:
        """The batch of ``kind`` from sampled ``items`` (``build`` or the kind's own)."""
        if self.build is not None:
            return self.build(self.name, items, meta, kind, record)
        return get_kind(kind).build(self.name, items, meta, record, axes=self.axes_for(record))


@dataclass(frozen=True)
class FamilySpec:
    """A parsed and validated family spec: ``planar-box[kind=exit,disk=True]``.

    ``params`` holds every given parameter (values as Python literals) and ``kind``.
    Built by ``FamilySpec.parse`` (a string) or ``FamilySpec.of`` (name and keywords).
    """

    name: str
    params: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.params["kind"]

    @property
    def family(self) -> Family:
        return families()[self.name]

    @property
    def label(self) -> str:
        """``family`` or ``family[key=value,...]`` with every parameter but ``kind``."""
        extra = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()) if k != "kind")
        return f"{self.name}[{extra}]" if extra else self.name

    @classmethod
    def of(cls, name: str, **params: Any) -> "FamilySpec":
        """Validate a family name and its parameters: ``ProblemError`` naming the argument
        for an unknown family, parameter or kind, or a value its ``Param.check`` refuses."""
        return cls._checked(name, f"family {name!r}", params)

    @classmethod
    def _checked(cls, name: str, where: str, params: dict[str, Any]) -> "FamilySpec":
        """``of``, naming a refused value as found in ``where`` (the family, or the spec)."""
        fams = families()
        if name not in fams:
            raise ProblemError(f"family: expected one of {sorted(fams)}, got {name!r}{did_you_mean(name, fams)}")
        fam = fams[name]
        unknown = sorted(set(params) - set(fam.parameters()))
        if unknown:
            raise ProblemError(f"params: family {name!r} does not take {unknown}; it takes {sorted(fam.parameters())}")
        kind = params.get("kind", fam.default_kind)
        if not isinstance(kind, str) or kind not in fam.kinds:
            raise ProblemError(f"kind: family {name!r} generates {list(fam.kinds)}, got {kind!r}")
        checked = dict(params)
        owned = {p.name for p in get_kind(kind).params}
        foreign = sorted((set(params) & fam.kind_params()) - owned)
        if foreign:
            raise ProblemError(f"params: kind {kind!r} does not take {foreign} (a parameter of another kind)")
        for p in (*fam.params, *get_kind(kind).params):
            if p.name in checked and p.check is not None:
                try:
                    checked[p.name] = p.check(checked[p.name])
                except (ValueError, TypeError, OverflowError):
                    raise ProblemError(f"{where}: {p.name}: expected {p.type}, got {checked[p.name]!r}") from None
        return cls(name, {**checked, "kind": kind})

    @classmethod
    def parse(cls, spec: "str | FamilySpec") -> "FamilySpec":
        """``planar-box[kind=exit,disk=True]`` -> ``FamilySpec('planar-box', {'kind': 'exit', 'disk': True})``."""
        if isinstance(spec, FamilySpec):
            return spec
        from solvers.specs import split_spec

        name, items = split_spec(spec, "family spec")
        if None in items:
            raise ProblemError(f"family spec: expected key=value items in {spec!r}, got {items[None]!r}")
        return cls._checked(name, f"family spec {spec!r}", {k: _literal(v) for k, v in items.items()})

    def key(self) -> str:
        """The parameters as canonical JSON (kind included): equal specs, equal keys."""
        return json.dumps(self.params, sort_keys=True, default=str)


def _literal(value: str) -> Any:
    """Parse a spec value: Python literal when it is one ('0.5', '(0.1, 0.8)', 'True'), else str.

    ``ProblemError`` for a value nested deeper than ``MAX_VALUE_DEPTH`` brackets (Python's
    parser would run out of stack on one nested thousands deep)."""
    depth = deepest = 0
    for ch in value:
        depth += 1 if ch in "([{" else -1 if ch in ")]}" else 0
        deepest = max(deepest, depth)
    if deepest > MAX_VALUE_DEPTH:
        raise ProblemError(f"family spec: a value is nested {deepest} brackets deep; expected at most "
                           f"{MAX_VALUE_DEPTH}")
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


# The family registry (with the solver and kind registries, the only global state).
_FAMILIES: dict[str, Family] = {}
_BROKEN: dict[str, str] = {}
_LOADED = False


def register_family(family: Family) -> Family:
    """Add a family to the registry; its name must be new and its kinds registered."""
    if not isinstance(family, Family):
        raise ProblemError(f"family: expected a Family, got {family!r}")
    taken = _FAMILIES.get(family.name)
    if taken is not None and taken is not family:
        raise ProblemError(f"family: {family.name!r} is already registered")
    for kind in family.kinds:
        get_kind(kind)  # ProblemError naming the registered kinds
    _FAMILIES[family.name] = family
    return family


def _families_of(obj: Any) -> list[Family]:
    found = obj if isinstance(obj, Family) else (getattr(obj, "FAMILIES", None) or getattr(obj, "FAMILY", None))
    found = [found] if isinstance(found, Family) else list(found or [])
    if not found or not all(isinstance(f, Family) for f in found):
        raise TypeError(f"{obj!r} exposes no FAMILY / FAMILIES of Family objects")
    return found


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    # the built-in families (this package's entry points) first: a plug-in cannot take their names
    found = plugins.sources(group=ENTRY_POINT_GROUP, env=PLUGINS_ENV,
                            group_order=lambda ep: not ep.value.startswith("problems."))
    plugins.load(found, _families_of, register_family, _BROKEN)


def families() -> dict[str, Family]:
    """All registered families by name."""
    _load()
    return dict(_FAMILIES)


def broken_families() -> dict[str, str]:
    """Family sources that failed to load: entry-point or module name -> reason."""
    _load()
    return dict(_BROKEN)


def refresh_families() -> None:
    """Forget every registration and look again (after installing a plug-in)."""
    global _LOADED
    _FAMILIES.clear()
    _BROKEN.clear()
    _LOADED = False


def generate(family: "str | FamilySpec", n: int, seed: int = 0, **params: Any) -> ProblemBatch:
    """``n`` cases of ``family`` (a name with ``params``, or a ``FamilySpec``) from ``seed``;
    ``kind`` picks what is built (``lp1``, ``exit``, ``qp``, ...). A pure function: the
    same inputs give the same bytes.

    Raises ``ProblemError`` naming the argument for an unknown family, parameter or kind.
    """
    spec = family if isinstance(family, FamilySpec) else FamilySpec.of(family, **params)
    if isinstance(family, FamilySpec) and params:
        raise ProblemError("params: give them in the FamilySpec, not as keywords")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise ProblemError(f"seed: expected an integer from 0 to {MAX_SEED} (2**63 - 1), got {seed!r}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ProblemError(f"n: expected a positive integer, got {n!r}")
    fam = spec.family
    reason = fam.reason_unavailable()
    if reason:
        raise ProblemError(f"family {spec.name!r} is not available here: {reason}")
    items, meta = fam.items(n, seed, spec.params)
    record = {"n": n, "seed": seed, **spec.params, "generator_version": fam.version}
    return frozen_batch(fam.make(items, meta, spec.kind, record))


when_missing(families)  # a kind a family plug-in brings is found by get_kind (problems.kinds.base)
