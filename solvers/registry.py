"""The adapter registry: built-in drop-in files, entry-point plug-ins, extra modules.

Adapters are found, in this order, in

1. every module ``solvers/<name>_.py`` of this package (drop a file in, done);
2. the entry-point group ``contactbench.solvers`` of installed packages
   (value: a module exposing ``ADAPTER`` or a list ``ADAPTERS``, or ``module:Class``);
3. modules named in the environment variable ``CONTACTBENCH_PLUGINS``
   (comma-separated importable module names), for local adapters without packaging.

A module that fails to import is not a crash: ``available()`` reports the error.
"""

from __future__ import annotations

from typing import Any

from . import plugins
from .base import Adapter
from .errors import ProblemError, SolverNotAvailable, did_you_mean

ENTRY_POINT_GROUP = "contactbench.solvers"
PLUGINS_ENV = "CONTACTBENCH_PLUGINS"

# The registry is the one piece of global state: name -> adapter class, and
# name -> reason for sources that could not even be imported.
_ADAPTERS: dict[str, type[Adapter]] = {}
_BROKEN: dict[str, str] = {}
_LOADED = False


def register(cls: type[Adapter]) -> type[Adapter]:
    """Register an adapter class under ``cls.NAME`` (usable as a decorator).

    A name is taken once: registering another class under a name already registered raises
    ``ProblemError`` (a plug-in cannot replace a built-in adapter, nor the reference solvers;
    re-registering the same class is a no-op)."""
    if not (isinstance(cls, type) and issubclass(cls, Adapter)) or not cls.NAME:
        raise ProblemError(f"cls: expected an Adapter subclass with a NAME, got {cls!r}")
    taken = _ADAPTERS.get(cls.NAME)
    if taken is not None and taken is not cls:
        raise ProblemError(f"NAME: {cls.NAME!r} is already registered by {taken.__module__}.{taken.__qualname__}; "
                           f"{cls.__module__}.{cls.__qualname__} must use another name")
    _ADAPTERS[cls.NAME] = cls
    return cls


def _adapters_of(obj: Any) -> list[type[Adapter]]:
    """The adapter classes a module (``ADAPTER`` or ``ADAPTERS``) or a class stands for."""
    found = getattr(obj, "ADAPTERS", None) or [getattr(obj, "ADAPTER", obj)]
    for cls in found:
        if not (isinstance(cls, type) and issubclass(cls, Adapter)):
            raise TypeError(f"{obj!r} exposes no ADAPTER / ADAPTERS of Adapter subclasses (got {cls!r})")
    return list(found)


def _label_of(label: str, cls: type[Adapter]) -> str:
    return f"{label}:{cls.NAME}" if cls.NAME != label else f"{label} (plug-in)"


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    found = plugins.sources(__package__, lambda name: name[:-1] if name.endswith("_") and not name.startswith("_")
                            else None, ENTRY_POINT_GROUP, PLUGINS_ENV)
    plugins.load(found, _adapters_of, register, _BROKEN, _label_of)


def refresh() -> None:
    """Forget every registration and look again (after installing a plug-in or changing
    ``CONTACTBENCH_PLUGINS`` in a running process)."""
    global _LOADED
    _ADAPTERS.clear()
    _BROKEN.clear()
    _LOADED = False


def adapters() -> dict[str, type[Adapter]]:
    """All registered adapter classes by name (available or not)."""
    _load()
    return dict(sorted(_ADAPTERS.items()))


def available(names=None) -> dict[str, str | None]:
    """``{name: None}`` for usable adapters, ``{name: reason}`` for the others; with ``names``
    (an iterable of adapter names) only those, unknown names left out. Checking an adapter
    imports its packages (cvxpy alone takes about 2 s), so a caller that needs a few asks
    for those."""
    _load()
    wanted = None if names is None else set(names)
    out: dict[str, str | None] = {}
    for name, cls in sorted(_ADAPTERS.items()):
        if wanted is not None and name not in wanted:
            continue
        try:
            cls.check_available()
            out[name] = None
        except SolverNotAvailable as exc:
            out[name] = str(exc)
    for label, reason in _BROKEN.items():
        if wanted is None or label in wanted:
            out.setdefault(label, f"failed to load: {reason}")
    return out


def adapter_class(name: str) -> type[Adapter]:
    """The registered adapter class ``name``: ``ProblemError`` for an unknown name,
    ``SolverNotAvailable`` for one whose source failed to load."""
    _load()
    if name not in _ADAPTERS:
        if name in _BROKEN:
            raise SolverNotAvailable(f"solver {name!r} failed to load: {_BROKEN[name]}")
        raise ProblemError(f"solver: expected one of {sorted(_ADAPTERS)}, got {name!r}{did_you_mean(name, _ADAPTERS)}")
    return _ADAPTERS[name]
