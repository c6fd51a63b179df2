"""The one plug-in loader: solver adapters, problem families and problem kinds are found the
same way.

A registry names where its plug-ins come from (``sources``): the modules of a package whose
names it selects (the built-in ones), an entry-point group of installed distributions, and
an environment variable of comma-separated importable module names (local plug-ins without
packaging). ``load`` imports each source, asks the registry what the module exposes and
registers it. A source that fails to import, even with ``SystemExit`` or
``KeyboardInterrupt`` from a plug-in's top level, or whose item the registry refuses (a name
already taken), is recorded in ``broken`` with the reason, never a crash; a registry that
passes no ``broken`` (the built-in kinds) lets the error through.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from importlib.metadata import entry_points
from typing import Any, Callable

from .errors import ProblemError

#: ``(label, loader)``: what a source is called in messages, and how to import it
Source = tuple[str, Callable[[], Any]]


def sources(package: str | None = None, select: Callable[[str], str | None] = lambda name: name,
            group: str | None = None, env: str | None = None,
            group_order: Callable[[Any], Any] | None = None) -> list[Source]:
    """The plug-in sources of a registry, in load order: ``package``'s modules for which
    ``select(module name)`` gives a label (None: not a plug-in), then the entry points of
    ``group`` (sorted by ``group_order`` when given), then the modules named in the
    environment variable ``env``."""
    out: list[Source] = []
    if package is not None:
        for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
            label = select(info.name)
            if label is not None:
                out.append((label, lambda n=info.name: importlib.import_module(f"{package}.{n}")))
    if group is not None:
        found = list(entry_points(group=group))
        for ep in sorted(found, key=group_order) if group_order else found:
            out.append((ep.name, ep.load))
    if env is not None:
        for name in filter(None, (m.strip() for m in os.environ.get(env, "").split(","))):
            out.append((name, lambda m=name: importlib.import_module(m)))
    return out


def load(found: list[Source], exposed: Callable[[Any], list], register: Callable[[Any], Any],
         broken: dict[str, str] | None = None,
         label_of: Callable[[str, Any], str] = lambda label, item: label) -> None:
    """Import every source of ``found``, and ``register`` each item ``exposed(module)`` lists.
    Failures go to ``broken`` (label -> reason; ``label_of(source label, item)`` names a
    refused item) when given, else they propagate."""
    for label, loader in found:
        try:
            items = exposed(loader())
        except BaseException as exc:
            if broken is None:
                raise
            broken[label] = f"{type(exc).__name__}: {exc}"
            continue
        for item in items:
            try:
                register(item)
            except ProblemError as exc:
                if broken is None:
                    raise
                broken[label_of(label, item)] = str(exc)
