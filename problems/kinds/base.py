"""The ``Kind`` base class and the kind registry.

A kind is what a batch of problems *is* and what a right answer to it is. It owns, in one
place: its payload (the per-case arrays beyond the standard form its verifier reads,
``payload``) and how a batch is built from a family's items (``build``); its float64
reference (``reference_solver``, ``solve_reference``, ``reference_rows``); its verification
and outcome rules (``verify``, ``judge``); its result columns (``columns``: name -> pandas
dtype); its aggregation into report columns (``aggregations``) and any report section of its
own (``report_sections``).

The runner, the reference cache, the report and the dashboard call these and hold no branch
on a kind's name, so a new kind is one new module: a module of this package that defines
``KIND`` is registered when the registry is first read, and a plug-in calls
``register_kind``."""

from __future__ import annotations

import functools
import importlib
import json
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from solvers import plugins
from solvers.errors import ProblemError

from .checks import DEFAULT_TOLERANCES, Tolerances

if TYPE_CHECKING:
    from solvers import BatchSolution

    from ..batch import ProblemBatch


@functools.cache
def _adapter_class(spec: str) -> type:
    """The class a ``module:Class`` spec names (imported once)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ProblemError(f"reference_solver: expected 'module:Class', got {spec!r}")
    return getattr(importlib.import_module(module), name)


class Kind:
    """Base class of every problem kind (see module docstring). Instances are stateless."""

    #: the name families and specs use (``planar-box[kind=NAME]``).
    name: ClassVar[str] = ""
    #: one line for ``contactbench list``.
    description: ClassVar[str] = ""
    #: what a solver must handle: ``lp``, ``qp`` or ``socp`` (``Capabilities.accepts``).
    problem_class: ClassVar[str] = "lp"
    #: per-case arrays (batch axis first) the verifier reads beyond the standard form.
    payload: ClassVar[tuple[str, ...]] = ()
    #: the outcomes this kind's ``judge`` gives (a subset of ``checks.OUTCOMES``, in order).
    outcomes: ClassVar[tuple[str, ...]] = ("correct", "false_accept", "false_reject", "uncertain", "failed")
    #: ``("module:Class", pip distribution, profile)`` of the float64 reference, e.g.
    #: ``("solvers.highs_:HighsAdapter", "highspy", "default")``, or None when the kind
    #: computes its reference itself (override ``solve_reference``). Named by spec, imported
    #: when first used (``reference_adapter``): built-in code, never through the solver
    #: registry, and no kind imports an adapter.
    reference_solver: ClassVar[tuple[str, str, str] | None] = None
    #: result columns the kind adds to every row (verifier's, reference's, judge's): name -> dtype.
    columns: ClassVar[dict[str, str]] = {}
    #: parameters of the build (not of the sampler) this kind takes in a family spec, e.g. the
    #: exit kind's ``cap``; checked like a family's, given to ``build`` in ``params``
    params: ClassVar[tuple] = ()

    # ------------------------------------------------------------------ build
    def build(self, family: str, items: list, meta: pd.DataFrame, params: dict[str, Any],
              **options: Any) -> "ProblemBatch":
        """A ``ProblemBatch`` of this kind from a family's same-shape ``items`` and their
        ``meta`` rows (one per item); ``params`` is recorded in the batch."""
        raise NotImplementedError(f"kind {self.name!r} does not build batches")

    def structure(self, axes: tuple[str, ...]) -> str | None:
        """The problem structure a batch of this kind has (``Capabilities.structures``), given
        the family's wrench axes; None for a general standard-form problem."""
        return None

    # -------------------------------------------------------------- reference
    def reference_adapter(self) -> tuple[type, str, str] | None:
        """``(adapter class, pip distribution, profile)`` of ``reference_solver`` (its class
        imported from its ``module:Class`` spec), or None."""
        if self.reference_solver is None:
            return None
        spec, dist, profile = self.reference_solver
        return _adapter_class(spec), dist, profile

    def reference_identity(self) -> dict[str, str]:
        """Which solver, at which version and with which options, computes the reference
        (part of the reference cache's key)."""
        if self.reference_solver is None:
            return {"solver": f"{type(self).__module__}.{type(self).__qualname__}", "package": "", "version": "",
                    "profile": "", "options": "{}"}
        cls, dist, profile = self.reference_adapter()
        try:
            dist_version = version(dist)
        except PackageNotFoundError:
            dist_version = "unknown"
        return {"solver": f"{cls.__module__}.{cls.__qualname__}", "package": dist, "version": dist_version,
                "profile": profile, "options": json.dumps(cls(profile).native_options(), sort_keys=True, default=str)}

    def check_batch(self, batch: "ProblemBatch") -> None:
        """Refuse, before any cell runs, a batch no cell could be judged on: ``ProblemError``
        naming the first bad case (its index and meta row) when the standard form does not
        validate (``check_standard_form``: shapes, NaN, inf, an asymmetric or indefinite
        ``P``), a payload array holds NaN, or the kind's reference solver refuses it (a
        value at its infinity)."""
        from solvers import check_standard_form

        def check(part: "ProblemBatch") -> None:
            problem = check_standard_form(*part.arrays(), **part.extra(), batched=True)
            for name, arr in sorted(part.payload.items()):
                if np.isnan(np.asarray(arr, dtype=float)).any():
                    raise ProblemError(f"payload {name!r}: holds NaN")
            if self.reference_solver is not None:
                cls, _dist, profile = self.reference_adapter()
                cls(profile).validate(problem)

        try:
            check(batch)
        except ProblemError as whole:
            for i in range(len(batch)):  # the error path alone walks the cases, to name the first bad one
                try:
                    check(batch.subset(np.array([i])))
                except ProblemError as exc:
                    where = ", ".join(f"{k}={v}" for k, v in batch.meta.iloc[i].items())
                    raise ProblemError(f"problem {i} ({where}): {exc}") from None
            raise ProblemError(f"the batch: {whole}") from None

    def solve_reference(self, batch: "ProblemBatch") -> "BatchSolution":
        """The reference's raw float64 answers for ``batch`` (built-in code path)."""
        if self.reference_solver is None:
            raise NotImplementedError(f"kind {self.name!r} names no reference_solver and computes none")
        cls, _dist, profile = self.reference_adapter()
        return cls(profile).solve_batch(*batch.arrays(), **batch.extra())

    def reference_rows(self, batch: "ProblemBatch", solution: "BatchSolution",
                       tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        """One row per case from the reference's answers; must hold ``ref_verdict`` (the
        verifier's verdict of the reference's own answer), which the cache re-checks, and
        ``truth`` where the kind has one."""
        raise NotImplementedError

    # ----------------------------------------------------------- verification
    def verify(self, batch: "ProblemBatch", solution: "BatchSolution",
               tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        """One row per case: ``verdict`` and the checks behind it, from the answer alone
        (no solver flag decides a verdict)."""
        raise NotImplementedError

    def judge(self, checked: pd.DataFrame, ref: pd.DataFrame, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        """``outcome`` per case (one of ``outcomes``) from ``verify``'s rows and the
        reference rows, plus any column comparing the two."""
        raise NotImplementedError

    def result_rows(self, batch: "ProblemBatch", solution: "BatchSolution", ref: pd.DataFrame,
                    tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
        """``verify`` then ``judge``: the columns a cell adds per case (``outcome`` included),
        plus ``extra_<key>`` for every per-case extra the adapter returned."""
        checked = self.verify(batch, solution, tol).reset_index(drop=True)
        judged = self.judge(checked, ref.reset_index(drop=True), tol).reset_index(drop=True)
        out = pd.concat([checked.drop(columns=[c for c in judged if c in checked]), judged], axis=1)
        for key, values in solution.extras.items():  # e.g. altproj's max_utilization, exact-planar's margin
            values = np.asarray(values, dtype=float)
            if values.shape == (len(out),):
                out[f"extra_{key}"] = values
        return out

    # ------------------------------------------------------------ aggregation
    def aggregations(self) -> dict[str, tuple[str, str]]:
        """Report columns this kind adds to a summary: ``{summary column: (row column, pandas
        aggregation)}``, e.g. ``{"max_rel_gap": ("rel_gap", "max")}``."""
        return {}

    def report_sections(self, rows: pd.DataFrame, group: list[str]) -> list[tuple[str, str, pd.DataFrame]]:
        """Extra report tables built from this kind's rows, one row per ``group``:
        ``(title, csv file stem, table)``."""
        return []

    def __repr__(self) -> str:
        return f"<kind {self.name}>"


# The kind registry (with the solver and family registries, the only global state).
_KINDS: dict[str, Kind] = {}
_LOADED = False
#: what to call when a kind is not registered: plug-in loaders that may register it (the
#: family registry adds its own when it is imported: a family package may bring a kind).
_MORE: list = []


def when_missing(loader) -> None:
    """Have ``get_kind`` call ``loader()`` (once per miss) before it refuses a name: how the
    family registry, which imports this module, loads the family plug-ins that register
    kinds, without this module importing it."""
    if loader not in _MORE:
        _MORE.append(loader)


def register_kind(kind: Kind) -> Kind:
    """Add a kind instance to the registry; its name must be new (re-registering the same
    class is a no-op)."""
    if not isinstance(kind, Kind) or not kind.name:
        raise ProblemError(f"kind: expected a Kind instance with a name, got {kind!r}")
    _load()  # the built-in kinds first: a plug-in cannot take their names
    taken = _KINDS.get(kind.name)
    if taken is not None and type(taken) is not type(kind):
        raise ProblemError(f"kind: {kind.name!r} is already registered by {type(taken).__module__}")
    _KINDS.setdefault(kind.name, kind)
    return _KINDS[kind.name]


def _load() -> None:
    """Register the ``KIND`` of every module of this package (once)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    package = __name__.rsplit(".", 1)[0]
    found = plugins.sources(package, lambda name: None if name.startswith("_") or name in ("base", "checks") else name)
    plugins.load(found, lambda module: [module.KIND] if isinstance(getattr(module, "KIND", None), Kind) else [],
                 register_kind)  # built-in: an error here is a bug, raised


def kinds() -> dict[str, Kind]:
    """Every registered kind by name."""
    _load()
    return dict(_KINDS)


def get_kind(name: str) -> Kind:
    """The registered kind ``name``; ``ProblemError`` naming the known ones otherwise."""
    _load()
    for loader in (_MORE if name not in _KINDS else ()):  # a family plug-in may register it when it loads
        loader()
        if name in _KINDS:
            break
    if name not in _KINDS:
        raise ProblemError(f"kind: expected one of {sorted(_KINDS)}, got {name!r}")
    return _KINDS[name]
