"""``SolverSpec``: a solver spec string parsed and validated once, at the edge.

Syntax (the same for ``solvers.get``, ``bench.hold.check``, the CLI and the grid)::

    name                     e.g. highs
    name[profile]            e.g. highs[fast]
    name[key=value,...]      e.g. linrax[dtype=float64,primal_tol=1e-5]
    name[profile,key=value]  e.g. osqp[high_accuracy,max_iter=8000]

Values may hold commas inside parentheses or quotes (``planar-box[mass=(0.9, 1.1)]``,
``quadruped[stance='FL,FR,BL,BR']``: family specs use the same splitter). Settings are
coerced to each option's type when parsed, so a bad name, profile, option or value is a
``ProblemError`` naming it before anything runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import ProblemError
from .registry import adapter_class

_SPEC = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[(.*)\])?\s*$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses and quotes: ``"a=(1, 2),b='x,y',c=3"`` ->
    ``["a=(1, 2)", "b='x,y'", "c=3"]``."""
    parts, depth, start, quote = [], 0, 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
            continue
        if ch in "'\"":
            quote = ch
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def split_spec(spec: str, what: str = "solver spec") -> tuple[str, dict[str | None, str]]:
    """``name[key=value,...]`` -> ``(name, {key: raw value})``; a bare word inside the
    brackets is stored under the key None (a profile, for solvers)."""
    match = _SPEC.match(spec) if isinstance(spec, str) else None
    if not match:
        raise ProblemError(f"{what}: expected name or name[key=value,...], got {spec!r}")
    name, body = match.group(1), match.group(2)
    items: dict[str | None, str] = {}
    for item in filter(None, (p.strip() for p in _split_top_level(body or ""))):
        if "=" in item:
            key, value = (s.strip() for s in item.split("=", 1))
            if not key:
                raise ProblemError(f"{what}: empty setting name in {spec!r}")
            if key in items:
                raise ProblemError(f"{what}: {key!r} given twice ({items[key]!r}, {value!r}) in {spec!r}; "
                                   "expected each setting once")
            items[key] = value
        elif None in items:
            raise ProblemError(f"{what}: two bare words ({items[None]!r}, {item!r}) in {spec!r}; "
                               "expected one profile and key=value items")
        else:
            items[None] = item
    return name, items


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Parse ``name[key=value,...]`` into ``(name, raw settings)`` (a bare word: ``profile``).

    >>> parse_spec("linrax[dtype=float64,primal_tol=1e-5]")
    ('linrax', {'dtype': 'float64', 'primal_tol': '1e-5'})
    >>> parse_spec("highs[fast]")
    ('highs', {'profile': 'fast'})
    """
    name, items = split_spec(spec)
    return name, {("profile" if k is None else k): v for k, v in items.items()}


@dataclass(frozen=True)
class SolverSpec:
    """A validated solver configuration: adapter ``name``, ``profile`` and typed ``settings``
    (only those given; ``dtype`` / ``device`` among them when given).

    >>> str(SolverSpec("osqp", "high_accuracy", {"max_iter": 8000}))
    'osqp[high_accuracy,max_iter=8000]'
    """

    name: str
    profile: str = "default"
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: "str | SolverSpec", **extra: Any) -> "SolverSpec":
        """Parse and validate ``spec`` against the registry; ``extra`` settings win over the
        spec's. ``ProblemError`` for an unknown name, profile, option or a bad value;
        ``SolverNotAvailable`` when the adapter failed to load."""
        if isinstance(spec, SolverSpec):
            name, raw = spec.name, {"profile": spec.profile, **spec.settings}
        else:
            name, raw = parse_spec(spec)
        raw = {**raw, **extra}
        cls_ = adapter_class(name)
        profile = raw.pop("profile", "default")
        if profile not in cls_.SETTINGS:
            raise ProblemError(f"profile: adapter {name!r} has profiles {sorted(cls_.SETTINGS)}, got {profile!r}")
        options = cls_.options()
        unknown = sorted(set(raw) - set(options))
        if unknown:
            raise ProblemError(f"settings: adapter {name!r} does not accept {unknown}; accepted: {sorted(options)}")
        settings = {k: options[k].coerce(k, v) for k, v in sorted(raw.items())}
        return cls(name, profile, settings)

    def with_settings(self, **settings: Any) -> "SolverSpec":
        """This spec with ``settings`` added or replaced (validated again)."""
        return SolverSpec.parse(self, **settings)

    def without(self, *keys: str) -> "SolverSpec":
        """This spec with the settings ``keys`` removed."""
        return SolverSpec(self.name, self.profile, {k: v for k, v in self.settings.items() if k not in keys})

    def build(self):
        """The adapter instance (``SolverNotAvailable`` when its package is missing)."""
        return adapter_class(self.name)(self.profile, **self.settings)

    def __str__(self) -> str:
        """The canonical spec string: ``name[profile,key=value,...]`` (profile omitted when default)."""
        parts = [] if self.profile == "default" else [self.profile]
        parts += [f"{k}={v}" for k, v in sorted(self.settings.items())]
        return f"{self.name}[{','.join(parts)}]" if parts else self.name

    @property
    def label(self) -> str:
        """What reports show: the canonical spec without ``dtype`` / ``device`` (they have columns)."""
        return str(self.without("dtype", "device"))


def get(spec: "str | SolverSpec", **settings: Any):
    """An adapter instance from a name or a spec: ``get("highs[fast]")``,
    ``get("highs", profile="fast")``, ``get("linrax", dtype="float64")``; keyword settings
    win over the spec's.

    Raises ``ProblemError`` for an unknown name, profile or setting and ``SolverNotAvailable``
    when the solver's package is missing.
    """
    return SolverSpec.parse(spec, **settings).build()


#: ``get`` under its older name.
from_spec = get
