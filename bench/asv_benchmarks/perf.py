"""Shared pieces of the asv suite (this directory) and the pytest-benchmark benchmarks
(``tests/test_benchmarks.py``): which cells exist, generated from the registries, and a cell
prepared so that only the solve is left to time.

It lives in the benchmark directory, so asv takes it from the working tree when it measures
an older commit, and it uses only absolute imports of APIs older commits have (it also
runs as a script: ``python perf.py`` prints the suite's parameters).

A *config* string is ``solver/dtype/device`` (e.g. ``linrax/float32/cpu``). ``configs``
lists every config the registries make plausible for a family spec, including adapters
that are not installed and GPU devices that are not present: ``prepared_cell`` raises
``NotImplementedError`` for those (asv's way of skipping a parameter), with the reason.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

import problems
import solvers

#: bench's subpackages (commits before them kept every module in bench/ itself)
PACKAGES = ("engine", "analysis", "reporting", "studies", "tools")


def bench_module(name: str):
    """bench's module ``name`` wherever the commit under test keeps it: ``bench.<package>.name``
    or, in commits before the subpackages, ``bench.name``."""
    for package in PACKAGES:
        try:
            return importlib.import_module(f"bench.{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name not in (f"bench.{package}", f"bench.{package}.{name}"):
                raise
    return importlib.import_module(f"bench.{name}")


_grid = bench_module("grid")
DEVICES, DTYPES, Cell, expand, parse_family = (_grid.DEVICES, _grid.DTYPES, _grid.Cell, _grid.expand,
                                               _grid.parse_family)

#: scenes per cell in asv's time_ and track_ benchmarks (small: asv runs every cell).
ASV_N = 16
#: scenes in the peakmem_ benchmarks (a large batch).
PEAKMEM_N = 1024
def _default_kinds() -> tuple[str, ...]:
    """The problem kinds of ``make run``'s default preset (``bench.engine.grid.PRESETS``, the one
    definition; commits before it kept the presets in the CLI)."""
    presets = getattr(_grid, "PRESETS", None)
    if presets is None:
        from bench.cli import PRESETS as presets
    return tuple(presets["default"]["kinds"])


#: the problem kinds the suites cover (those of ``make run``'s default preset).
KINDS = _default_kinds()


def family_specs() -> list[str]:
    """``family[kind=...]`` for every registered family and each kind in ``KINDS`` it has."""
    return [f"{name}[kind={k}]" for name, fam in problems.families().items() for k in fam.kinds if k in KINDS]


#: names the only adapters the suite measures, comma-separated (unset: every one), e.g.
#: ``highs,osqp`` for a run across the releases of the packages in asv.conf.json's matrix
SOLVERS_ENV = "CONTACTBENCH_ASV_SOLVERS"


def _adapter_classes() -> dict[str, Any]:
    """name -> adapter class or None (registered but not importable here), fakes excluded,
    only those ``$CONTACTBENCH_ASV_SOLVERS`` names where it is set."""
    import os

    classes = solvers.adapters()
    wanted = {name.strip() for name in os.environ.get(SOLVERS_ENV, "").split(",") if name.strip()}
    return {name: classes.get(name) for name in solvers.available()
            if not name.startswith("fake-") and (not wanted or name in wanted)}


def _refusal(cls: Any, family_spec: str) -> str | None:
    """Why the adapter class does not take the family spec's problems (None: it does), by
    ``Capabilities.accepts`` (older commits: their own class and structure check)."""
    caps = cls.CAPABILITIES
    if hasattr(caps, "accepts"):
        return caps.accepts(_grid.traits(problems.FamilySpec.parse(family_spec)))
    fam_name, params = parse_family(family_spec)  # commits before the one capability filter
    family = problems.families()[fam_name]
    structure = family.structure(params)
    if not getattr(caps, family.problem_class(params)):
        return "problem class"
    return "structure" if caps.structures is not None and structure not in caps.structures else None


def configs(family_spec: str) -> list[str]:
    """Plausible ``solver/dtype/device`` configs for ``family_spec`` (see module docstring)."""
    out = []
    for name, cls in sorted(_adapter_classes().items()):
        if cls is None:
            out.append(f"{name}/float64/cpu")  # shown, then skipped with the reason it is missing
            continue
        if _refusal(cls, family_spec):
            continue
        caps = cls.CAPABILITIES
        out += [f"{name}/{dt}/{dev}" for dt in DTYPES if dt in caps.dtypes for dev in DEVICES if dev in caps.devices]
    return out


def cell_for(family_spec: str, config: str, n: int, seed: int = 0, repeats: int = 1) -> Cell:
    """The grid's cell for a config, or ``NotImplementedError`` with the reason it cannot run."""
    has_gpu = bench_module("env").has_gpu

    solver, dtype, device = config.split("/")
    fam_name, params = parse_family(family_spec)
    reason = problems.families()[fam_name].reason_unavailable()
    if reason:
        raise NotImplementedError(f"{fam_name}: {reason}")
    if solvers.available().get(solver):
        raise NotImplementedError(f"{solver}: {solvers.available()[solver]}")
    if device == "gpu" and not has_gpu():
        raise NotImplementedError("no GPU visible to JAX here")
    cells, skipped = expand([family_spec], [solver], [dtype], [device], [n], seed, repeats)
    if not cells:
        raise NotImplementedError("; ".join(reason for _what, reason in skipped) or "not a cell of the grid")
    return cells[0]


@dataclass
class PreparedCell:
    """A cell whose batch is generated, cast, placed and (for JAX adapters) compiled:
    ``ready`` is the one timed-solve routine's prepared solve (``solvers.timing``)."""

    cell: Cell
    batch: problems.ProblemBatch
    ready: Any
    problem: Any = None

    def run(self):
        """One timed solve of the whole batch; blocks until JAX results are ready."""
        return self.ready.run()

    def end_to_end(self):
        """Host arrays in, host ``BatchSolution`` out: validate, prepare (conversion, host to
        device), run and finish, with the same adapter (its compiled functions reused)."""
        return type(self.ready)(self.ready.adapter, self.problem).solution()

    def solution(self):
        """The batch solution of one run (``BatchSolution``)."""
        return self.ready.solution()


class _LegacyPrepared:
    """``PreparedSolve`` for commits before ``solvers.timing`` (asv measures old commits)."""

    def __init__(self, adapter, problem):
        self.adapter, self.prepared = adapter, adapter.prepare(problem)

    def run(self):
        raw = self.adapter.run(self.prepared)
        jax = sys.modules.get("jax")
        return jax.block_until_ready(raw) if jax is not None else raw

    def solution(self):
        finish = getattr(self.adapter, "finish", None) or self.adapter.collect
        return finish(self.run(), self.prepared)


def prepared_cell(family_spec: str, config: str, n: int, seed: int = 0) -> PreparedCell:
    """Generate, prepare and warm up (compile) one cell; ``NotImplementedError`` when it
    cannot run here."""
    from solvers.types import check_standard_form

    try:
        batch_for = bench_module("cell").batch_for
    except ImportError:  # an older commit
        batch_for = bench_module("runner").batch_for

    cell = cell_for(family_spec, config, n, seed)
    batch = batch_for(cell)
    problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    try:
        from solvers.timing import PreparedSolve

        ready = PreparedSolve(cell.adapter_spec.build(), problem)
    except ImportError:  # an older commit
        name, settings = cell.adapter_settings()
        ready = _LegacyPrepared(solvers.get(name, **settings), problem)
    prepared = PreparedCell(cell, batch, ready, problem)
    prepared.run()  # JIT compile and warm-up, untimed
    return prepared


def outcome_counts(family_spec: str, n: int = ASV_N, seed: int = 0, timeout: float = 120.0) -> dict[str, dict[str, Any]]:
    """``{"counts": {config: {outcome: count}}, "skipped": {config: reason}}`` over every
    config of ``family_spec``. The configs that run here go through the runner exactly as a
    ``contactbench run`` would (its Dask engine, an isolated process with a ``timeout`` per cell, a wedged worker
    killed and the cell retried, failures recorded as ``failed`` rows), so one solver that
    hangs cannot stall the suite."""
    import tempfile
    from pathlib import Path

    import pandas as pd

    run_cells = bench_module("runner").run_cells

    cells, skipped = {}, {}
    for config in configs(family_spec):
        try:
            cells[config] = cell_for(family_spec, config, n, seed)
        except NotImplementedError as exc:
            skipped[config] = str(exc)
    counts = {}
    with tempfile.TemporaryDirectory(prefix="contactbench-asv-") as tmp:
        results = run_cells(list(cells.values()), Path(tmp) / "run", "asv", timeout=timeout)
        for config, result in zip(cells, results):
            rows = result.rows
            if rows is None and result.path is not None and Path(result.path).exists():
                rows = pd.read_parquet(result.path)
            counts[config] = _counts(rows)
    return {"counts": counts, "skipped": skipped}


def _counts(rows) -> dict[str, int]:
    """Outcome counts of one cell's rows (every outcome, 0 where absent: asv tracks a fixed
    set), through the results schema's aggregation where the commit has one."""
    OUTCOMES = bench_module("verify").OUTCOMES

    if rows is None:
        return {o: 0 for o in OUTCOMES}
    try:
        summarize = bench_module("results").summarize
    except (ImportError, AttributeError):  # an older commit
        found = rows["outcome"].value_counts()
        return {o: int(found.get(o, 0)) for o in OUTCOMES}
    table = summarize(rows, ["cell_id"]).iloc[0]
    return {o: int(table[o]) if o in table else 0 for o in OUTCOMES}


def peakmem_configs() -> list[str]:
    """``family_spec|config`` for the peak-memory benchmarks: every adapter on one large
    batch of the problem class it solves (LP: planar-box LP-1, QP: quadruped QP, SOCP:
    quadruped SOCP); the first family that has it wins."""
    out = []
    seen = set()
    for spec in ("planar-box[kind=lp1]", "quadruped[kind=qp]", "quadruped[kind=socp]"):
        for config in configs(spec):
            key = config
            if key not in seen:
                seen.add(key)
                out.append(f"{spec}|{config}")
    return out


def suite_plan() -> dict[str, Any]:
    """What the asv suite parametrises over: ``{"families": {spec: [config, ...]},
    "peakmem": [family_spec|config, ...]}``. ``python perf.py`` prints it as JSON: the
    suite reads it from a subprocess so that asv's fork server never initialises JAX (a
    process forked from an initialised XLA runtime can deadlock)."""
    return {"families": {spec: configs(spec) for spec in family_specs()}, "peakmem": peakmem_configs()}


if __name__ == "__main__":
    import json

    print(json.dumps(suite_plan()))
