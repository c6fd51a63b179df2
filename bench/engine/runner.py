"""Run cells into a run directory on Dask: one parquet file per finished cell, nothing lost.

There is one engine. Without a ``client`` the cells run on an embedded ``LocalCluster`` of
one single-threaded worker process (one cell at a time, started here and stopped with the
run); with one, on that client's cluster (``--workers N``, ``--scheduler ADDR``).

For each cell, in order: skip it when ``resume`` and its file reads back as its manifest
says; else generate (or read back) its problem set once per run, saved under ``batches/``,
and the problem set's float64 reference, from the reference cache or computed as a Dask
task once per problem set. Each cell is one Dask task (``bench.engine.cluster.cell_task``) that
regenerates the problems on its worker, checks their content hash and runs the cell in a
supervised child process (``bench.engine.execute``: timeout, crash, stall); the rows come back as
Arrow and are written here, atomically, with the cell's log under ``logs/``. A cell that
hangs, crashes or wedges, or whose worker dies twice, becomes ``failed`` rows carrying the
reason. The run directory's layout and files are ``bench.engine.rundir``'s.
"""

from __future__ import annotations

import contextlib
import queue
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

import solvers
from solvers.errors import ProblemError

from bench.engine.cell import batch_name, failed_rows
from bench.engine.env import host_environment
from bench.engine.grid import Cell, check_timeout, traits
from bench.engine.problemsets import ProblemSet
from bench.engine.rundir import cell_finished, read_cell, write_bytes_atomic, write_cell
from bench.engine.states import CellState

#: seconds between two looks at the cluster for finished and newly started cells
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class CellResult:
    """What the parent learnt of one cell: ``state`` is done, failed, timeout, crashed,
    stalled, skipped (finished earlier), refused (its adapter does not take the generated
    problem set, e.g. lower bounds other than 0: ``Capabilities.accepts``), unavailable (its
    worker lacks the adapter's package) or lost (the scheduler was lost first); ``rows``
    the cell's rows as written (None when skipped, refused, unavailable or lost: nothing
    was written)."""

    cell: Cell
    state: str
    path: Path | None
    rows: pd.DataFrame | None
    seconds: float
    reason: str = ""


def run_cells(cells: list[Cell], run_dir: Path, run_id: str, *, timeout: float = 600.0,
              resume: bool = False, cache_dir: Path | None = None,
              on_start: Callable[[Cell], None] | None = None,
              on_done: Callable[[CellResult], None] | None = None, client=None,
              exclusive: bool = False, stall_seconds: float | None = None) -> list[CellResult]:
    """Run every cell (see module docstring); returns one ``CellResult`` per cell, in order.

    ``timeout`` is in seconds per cell (warm-up and repeats included); ``stall_seconds``
    (default ``bench.engine.execute.STALL_SECONDS``) is how long a cell's process may use no CPU
    before it counts as wedged. ``client``: a Dask client (default: an embedded
    ``LocalCluster``, one cell at a time); ``exclusive``: at most one cell per host at a
    time. ``on_start`` is called when a worker starts a cell, ``on_done`` when its rows are
    written. A cell whose adapter a worker lacks comes back ``unavailable`` with the reason
    and writes nothing (as ``grid.expand`` skips it on one machine); a cell the cluster
    never answered because the scheduler was lost comes back ``lost`` and writes nothing,
    so that ``resume`` runs it."""
    from bench.engine import cluster, execute

    check_timeout(timeout, required=True)
    if stall_seconds is not None and not (isinstance(stall_seconds, (int, float)) and stall_seconds > 0):
        raise ProblemError(f"stall_seconds: expected a number of seconds > 0, got {stall_seconds!r}")
    stall = execute.STALL_SECONDS if stall_seconds is None else float(stall_seconds)
    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(cluster.embedded(workers=1, resources=cluster.local_resources(cells)))
        stack.enter_context(cluster.replicas_kept(client))  # the scattered answers stay on every worker
        return _run_on(client, cells, run_dir, run_id, timeout=timeout, stall=stall, resume=resume,
                       cache_dir=cache_dir, on_start=on_start, on_done=on_done, exclusive=exclusive)


def _run_on(client, cells: list[Cell], run_dir: Path, run_id: str, *, timeout: float, stall: float, resume: bool,
            cache_dir: Path | None, on_start, on_done, exclusive: bool) -> list[CellResult]:
    """``run_cells`` on the cluster of ``client``."""
    from distributed import as_completed

    from bench.engine import cluster

    from bench.engine import problemsets

    pending = [c for c in cells if not (resume and cell_finished(run_dir / f"{c.cell_id}.parquet"))]
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "logs").mkdir(exist_ok=True)
    problemsets.prepare(pending, run_dir / "batches", timeout)  # isolated, checked; the CLI did it already
    env = host_environment()
    results: dict[int, CellResult] = {}
    batches: dict[tuple, ProblemSet] = {}  # problem key -> its problem set
    todo = []
    for i, cell in enumerate(cells):
        path = run_dir / f"{cell.cell_id}.parquet"
        if resume and cell_finished(path):
            results[i] = CellResult(cell, CellState.SKIPPED, path, None, 0.0, "finished in an earlier attempt")
            if on_done:
                on_done(results[i])
            continue
        if cell.problem_key not in batches:
            batches[cell.problem_key] = ProblemSet.load(run_dir / "batches", batch_name(cell))
        todo.append(i)
    _refuse(cells, todo, batches, results, on_done)
    no_gpu = cluster.no_gpu_reason(client) if any(cells[i].device == "gpu" for i in todo) else None
    if no_gpu:  # a GPU cell would wait for ever for a worker that has one
        for i in [i for i in todo if cells[i].device == "gpu"]:
            results[i] = CellResult(cells[i], CellState.UNAVAILABLE, None, None, 0.0, no_gpu)
            todo.remove(i)
            if on_done:
                on_done(results[i])
    cluster.references(client, [cells[i] for i in todo], batches, cache_dir)

    starts: queue.Queue = queue.Queue()  # keys of cells a worker has started (Dask events)
    topic = cluster.start_topic(run_id)
    client.subscribe_topic(topic, lambda event: starts.put(event[1]))
    futures, keys, submitted, started = {}, {}, {}, {}
    try:
        for i in todo:
            cell = cells[i]
            problem_set = batches[cell.problem_key]
            key = cluster.cell_key(run_id, cell)
            future = client.submit(cluster.cell_task, cell, run_id, timeout, stall, problem_set.digest,
                                   problem_set.answers, exclusive,
                                   topic, key=key, pure=False,
                                   resources={"GPU": 1} if cell.device == "gpu" else None)
            futures[future], keys[key], submitted[i] = i, i, time.perf_counter()
        finished = as_completed(list(futures), loop=client.loop)
        while not finished.is_empty():
            _announce(starts, keys, cells, started, on_start)
            batch_done = finished.next_batch(block=False)
            if not batch_done:
                time.sleep(POLL_SECONDS)
                continue
            for future in batch_done:
                i = futures[future]
                results[i] = _collect(future, cells[i], run_dir, run_id, batches, env,
                                      time.perf_counter() - started.get(i, submitted[i]))
                _announce(starts, keys, cells, started, on_start)
                if i not in started and on_start:  # finished before its start event arrived
                    started[i] = submitted[i]
                    on_start(cells[i])
                if on_done:
                    on_done(results[i])
    finally:
        try:
            client.unsubscribe_topic(topic)
        except Exception:
            pass
    return [results[i] for i in range(len(cells))]


def _refuse(cells: list[Cell], todo: list[int], batches: dict[tuple, ProblemSet], results: dict, on_done) -> None:
    """Take out of ``todo`` the cells whose adapter refuses their generated problem set
    (``Capabilities.accepts`` on the family's and the batch's traits: lower bounds other than
    0 for an ``x >= 0`` solver, say): a skip with the reason (state ``refused``), not failed rows."""
    for i in list(todo):
        batch = batches[cells[i].problem_key].batch
        why = solvers.adapter_class(cells[i].solver.name).CAPABILITIES.accepts(traits(cells[i].family, batch))
        if why:
            results[i] = CellResult(cells[i], CellState.REFUSED, None, None, 0.0, f"{cells[i].solver.name} {why}")
            todo.remove(i)
            if on_done:
                on_done(results[i])


def _announce(starts: queue.Queue, keys: dict, cells: list[Cell], started: dict, on_start) -> None:
    """Call ``on_start`` once per cell whose start event arrived (a retried cell starts twice)."""
    while True:
        try:
            key = starts.get_nowait()
        except queue.Empty:
            return
        i = keys.get(key)
        if i is not None and i not in started:
            started[i] = time.perf_counter()
            if on_start:
                on_start(cells[i])


def _collect(future, cell: Cell, run_dir: Path, run_id: str, batches: dict[tuple, ProblemSet], env: dict,
             seconds: float) -> CellResult:
    """Write a finished task's rows and log under ``run_dir`` and return its ``CellResult``."""
    from bench.engine import cluster

    path = run_dir / f"{cell.cell_id}.parquet"
    problem_set = batches[cell.problem_key]
    log = ""
    try:
        answer = future.result()
        if answer["state"] == CellState.UNAVAILABLE:  # the worker lacks the adapter's package: no rows, as locally
            return CellResult(cell, CellState.UNAVAILABLE, None, None, seconds, answer["reason"])
        state, reason, rows, log = (answer["state"], answer["reason"], cluster.from_arrow(answer["rows"]),
                                    answer["log"])
    except Exception as exc:  # KilledWorker (its worker died twice), an error outside the cell, ...
        if future.status == "cancelled":  # the scheduler was lost: nothing known of the cell, --resume runs it
            return CellResult(cell, CellState.LOST, None, None, seconds,
                              f"not run: {type(exc).__name__}: {exc}".splitlines()[0] + "; --resume runs it")
        state = CellState.CRASHED
        reason = f"the Dask task failed: {type(exc).__name__}: {exc}"
        rows = failed_rows(cell, problem_set.batch, problem_set.rows, env, run_id, state, reason)
    write_bytes_atomic(run_dir / "logs" / f"{cell.cell_id}.log", lambda tmp: tmp.write_text(log))
    write_cell(rows, path)
    rows = read_cell(path)
    if state == CellState.DONE and (rows["error_type"] != "").any():
        state, reason = CellState.FAILED, str(rows["error"].iloc[0]).splitlines()[0]
    return CellResult(cell, state, path, rows, seconds, reason)
