"""A run's lifecycle, owned in one place: ``Run`` and ``execute``.

A run is a directory ``out/<run id>``: one parquet file per cell, its problem sets
(``batches/``), ``run.json`` (command, grid, cells, skips, timeout, tolerances, engine,
deciding pass, resumptions) and ``grid.toml``; ``out/latest`` links to the newest run. While a
run writes it holds the run's lock, so two processes never write one run; ``resume``
continues the recorded grid, skipping finished cells. ``execute`` is the lifecycle for the
CLI and for Python alike, so a run started from Python resumes like one from the CLI::

    from bench.engine import grid
    from bench.engine.run import execute

    cells, skipped = grid.expand(["planar-box"], ["highs"], ["float64"], ["cpu"], [64], 0, 5)
    outcome = execute(cells, "results/runs", "mine")                 # run.json, grid.toml, latest
    outcome = execute(cells, "results/runs", "mine", resume=True)    # continues it"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ContextManager

from solvers.errors import ProblemError

from bench.engine import gridfile, rundir
from bench.engine.grid import Cell
from bench.engine.states import FINISHED, CellState, RunState
from bench.engine.verify import DEFAULT_TOLERANCES

#: ``progress(cells)``: a context that yields ``(on_start, on_done)`` for one batch of cells
#: (the screening cells, then each deciding batch); the CLI's draws a progress bar
Progress = Callable[[list[Cell]], ContextManager[tuple[Callable | None, Callable | None]]]
#: ``decider(run_dir, cells, run_more) -> (decisions, record)``: a pass after the screening
#: cells that runs more cells through ``run_more(cells) -> results`` and returns what it
#: decided and its run.json record
Decider = Callable[[Path, list[Cell], Callable[[list[Cell]], list]], tuple[list, dict]]


@dataclass
class Recorded:
    """The grid a run recorded, as ``--resume`` continues it: ``cells``, ``skipped`` (what,
    why), the per-cell ``timeout`` (None: not recorded), the grid options (``grid``), the
    ``command`` that started it, and ``from_grid_toml``: run.json did not read, so the grid
    came from grid.toml."""

    cells: list[Cell]
    skipped: list[tuple[str, str]]
    timeout: float | None
    grid: dict
    command: str = ""
    from_grid_toml: bool = False


@dataclass
class Run:
    """One run directory and its records: ``out`` (the folder of runs), ``dir`` (this run's),
    ``resume`` (continuing a recorded run) and ``manifest`` (run.json as last written)."""

    out: Path
    dir: Path
    resume: bool = False
    manifest: dict = field(default_factory=dict)

    @classmethod
    def open(cls, out: Path | str, run_id: str | None = None, resume: bool = False) -> "Run":
        """The run ``out/<run_id>`` (default id: a UTC timestamp; with ``resume``, default: the
        one ``out/latest`` links to). ``ProblemError`` naming ``--run-id`` / ``--out`` for a bad
        id, a run that already holds results (without ``resume``) or none to resume, or a
        ``latest`` that is not contactbench's link. Creates ``out``, nothing inside it."""
        out = Path(out)
        rundir.check_run_id(run_id)
        out.mkdir(parents=True, exist_ok=True)
        rundir.check_latest(out)
        return cls(out, rundir.open_run_dir(out, run_id, resume), resume)

    @property
    def id(self) -> str:
        """The run's id: its directory's name."""
        return self.dir.name

    def recorded(self, plan: Callable[[dict], tuple[list[Cell], list]] | None = None) -> Recorded:
        """The grid this run recorded (``run.json``; where it does not read, ``grid.toml``
        planned again by ``plan(grid options) -> (cells, skipped)``). ``ProblemError`` naming
        ``--resume`` when neither records a grid that reads."""
        manifest = rundir.read_manifest(self.dir)
        from_toml = False
        if not isinstance(manifest.get("cells"), list) and plan is not None and (self.dir / "grid.toml").is_file():
            options = gridfile.read(self.dir / "grid.toml")
            cells, skipped = plan(options)
            manifest = {"cells": [c.to_dict() for c in cells], "skipped": skipped, "grid": options}
            from_toml = True
        if not isinstance(manifest.get("cells"), list):
            raise ProblemError(f"--resume: {str(self.dir)!r} has no readable run.json or grid.toml recording its grid; "
                               "start a new run instead")
        try:
            cells = [Cell.from_dict(d) for d in manifest["cells"]]
        except (ProblemError, KeyError, TypeError, ValueError) as exc:
            raise ProblemError(f"--resume: the grid recorded in {str(self.dir / 'run.json')!r} does not read "
                               f"({type(exc).__name__}: {exc}); start a new run instead") from None
        timeout = manifest.get("timeout")
        return Recorded(cells, [tuple(s) for s in manifest.get("skipped", [])],
                        float(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else None,
                        manifest.get("grid") if isinstance(manifest.get("grid"), dict) else {},
                        str(manifest.get("command", "")), from_toml)

    @contextlib.contextmanager
    def locked(self) -> Iterator["Run"]:
        """Hold the run's lock while the block runs (``ProblemError`` naming ``--run-id`` when
        another process writes it), checking again that the directory may be started or
        resumed now that no other run can start it."""
        with rundir.run_lock(self.out, self.id):
            self.dir = rundir.open_run_dir(self.out, self.id, self.resume)
            yield self

    def start(self, cells: list[Cell], skipped: list, timeout: float, grid: dict, command: str,
              engine: dict, stage: Path | None = None) -> dict:
        """Move the problem sets made in ``stage`` into the run, write ``run.json`` and
        ``grid.toml`` and point ``latest`` here; returns the manifest. A resumed run keeps the
        command and start time it recorded first and lists each resumption under ``resumed``."""
        now = datetime.now(timezone.utc).isoformat()
        previous = rundir.read_manifest(self.dir) if self.resume else {}
        self.dir.mkdir(parents=True, exist_ok=True)
        if stage is not None:
            rundir.move_batches(stage, self.dir / "batches")
        manifest = {"run_id": self.id, "command": command, "started": now, "grid": grid,
                    "cells": [c.to_dict() for c in cells], "skipped": [list(s) for s in skipped], "timeout": timeout,
                    "tolerances": DEFAULT_TOLERANCES.as_dict(), "engine": engine}
        if previous.get("command"):
            manifest.update(command=previous["command"], started=previous.get("started", ""),
                            resumed=[*previous.get("resumed", []), {"command": command, "started": now}])
        if "decide" in previous:
            manifest["decide"] = previous["decide"]
        self.manifest = manifest
        self.write()
        (self.dir / "grid.toml").write_text(gridfile.to_toml(grid))
        rundir.point_latest(self.out, self.dir)
        return manifest

    def write(self) -> None:
        """Write ``run.json`` (atomically) as ``manifest`` holds it."""
        rundir.write_manifest(self.dir, self.manifest)

    def record_not_run(self, results: list) -> None:
        """Record the cells refused or unavailable on their worker beside the grid's skips."""
        extra = [[cell_title(r.cell), r.reason] for r in results
                 if r.state in (CellState.REFUSED, CellState.UNAVAILABLE)]
        if extra:
            self.manifest["skipped"] = [*self.manifest.get("skipped", []), *extra]
            self.write()

    def record_decisions(self, record: dict) -> None:
        """Record the deciding pass (``run.json`` ``decide``: its budget and decisions)."""
        self.manifest["decide"] = record
        self.write()

    @property
    def recorded_decide(self) -> dict:
        """The deciding pass this run recorded (run.json ``decide``; empty: it had none)."""
        decide = rundir.read_manifest(self.dir).get("decide") if self.resume else None
        return decide if isinstance(decide, dict) else {}


def cell_title(cell: Cell) -> str:
    """``family/kind solver dtype device n=N``: one cell in progress lines and skip records."""
    return f"{cell.family_label}/{cell.kind} {cell.solver} {cell.dtype} {cell.device} n={cell.n}"


def command_line() -> str:
    """This process's command line as a shell would take it (recorded in run.json)."""
    return shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])


@dataclass
class Outcome:
    """What a run came to: the ``run``, one ``CellResult`` per cell (screening, then the
    deciding cells), the deciding pass's ``decisions`` and the run's ``state``."""

    run: Run
    results: list
    decisions: list
    state: RunState


def engine_record(client, embedded: bool, exclusive: bool) -> dict:
    """How the cells ran, for run.json: the Dask cluster (embedded or not), its workers, how
    many cells it runs at once (more than one per host: timings share the host)."""
    info = client.scheduler_info()
    workers = info.get("workers", {}).values()
    hosts = {w.get("host") for w in workers}
    at_once = sum(w.get("nthreads", 1) for w in workers)
    return {"kind": "dask", "embedded": embedded, "scheduler": str(client.scheduler.address),
            "workers": len(workers), "cells_at_once": at_once, "hosts": len(hosts),
            "timings_share_a_host": at_once > len(hosts), "exclusive": exclusive}


def _no_progress(cells: list[Cell]) -> ContextManager[tuple[None, None]]:
    return contextlib.nullcontext((None, None))


def execute(cells: list[Cell], out: Path | str, run_id: str | None = None, *, resume: bool = False,
            timeout: float = 600.0, skipped: list | tuple = (), grid: dict | None = None, command: str | None = None,
            client: Any = None, embedded: bool = True, exclusive: bool = False, decider: Decider | None = None,
            progress: Progress = _no_progress, generating: Callable[[], ContextManager] | None = None,
            on_started: Callable[[Run], None] | None = None) -> Outcome:
    """Run ``cells`` as the run ``out/<run_id>`` (see the module docstring): generate and
    check their problem sets (supervised, before anything of the run is written; inside
    ``generating()`` when given), take the run's lock, write run.json, grid.toml and
    ``latest`` (then ``on_started(run)``), run the cells (``timeout`` seconds each), then the
    ``decider``'s pass where one is given (``bench.analysis.decide.decider``: more cells,
    run into the same run, and its record in run.json ``decide``), and record what did not
    run.

    ``client``: a Dask client, a callable returning one (called once the problem sets are
    made, so a cluster can start meanwhile) or None (an embedded one-worker cluster);
    ``embedded``: whether that cluster is this process's own (recorded in run.json).
    ``progress(cells)`` yields the ``on_start`` / ``on_done`` callbacks of each batch of
    cells. ``grid``: the grid options to record (grid.toml); ``command``: the command line
    to record (default: this process's). Raises ``ProblemError`` (bad id, a run in use, a
    bad problem set) before the run is written, ``OSError`` when the disk refuses a write
    (finished cells are kept: ``resume=True`` continues)."""
    from bench.engine import cluster, problemsets

    run = Run.open(out, run_id, resume)
    with contextlib.ExitStack() as stack:
        stage = stack.enter_context(rundir.staging_dir(run.out))
        with generating() if generating is not None else contextlib.nullcontext():
            problemsets.prepare(cells, stage, timeout, also_in=[run.dir / "batches"],
                                recheck=run.dir / "batches" if resume else None)
        if client is None:
            client, embedded = stack.enter_context(cluster.embedded(workers=1,
                                                                    resources=cluster.local_resources(cells))), True
        elif not hasattr(client, "scheduler_info"):  # a factory: the cluster started meanwhile
            client = client()
        stack.enter_context(run.locked())
        run.start(cells, list(skipped), timeout, grid or {}, command or command_line(),
                  engine_record(client, embedded, exclusive), stage)
        if on_started is not None:
            on_started(run)
        results = _run_batch(cells, run, timeout, resume, client, exclusive, progress)
        decisions = []
        if decider is not None and any(r.state in FINISHED for r in results):
            decisions, record = decider(run.dir, cells, lambda more: _run_batch(more, run, timeout, True, client,
                                                                                  exclusive, progress))
            run.record_decisions(record)
        run.record_not_run(results)
        return Outcome(run, results, decisions, RunState.of(results))


def _run_batch(cells: list[Cell], run: Run, timeout: float, resume: bool, client, exclusive: bool,
               progress: Progress) -> list:
    from bench.engine import runner

    with progress(cells) as (on_start, on_done):
        return runner.run_cells(cells, run.dir, run.id, timeout=timeout, resume=resume, client=client,
                                exclusive=exclusive, on_start=on_start, on_done=on_done)


__all__ = ["Run", "Recorded", "Outcome", "execute", "cell_title", "command_line", "engine_record"]
