"""Run cells into a run directory: one parquet file per finished cell, nothing lost.

For each cell, in order: skip it when ``resume`` and its file reads back as its manifest
says; else save its batch once per distinct problem set (``batches/``) and compute the
float64 reference here, once per problem set, before any worker needs it; run it on the
execution backend (``bench.execute``: isolated worker processes, timeout, stall detection)
which computes it (``bench.cell.solve_cell``) and writes ``<cell_id>.parquet``; a cell that
hangs, crashes or wedges becomes ``failed`` rows carrying the reason and the worker's log
tail. The run directory's layout and files are ``bench.rundir``'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


from .cell import CellResult, batch_for, batch_name, failed_rows, saved_or_new_batch  # noqa: F401  (batch_for: asv's perf.py reads it here)
from .execute import LocalPool, log_tail
from .env import host_environment
from .grid import Cell
from .reference import reference
from .rundir import cell_finished, read_cell, write_cell


def run_cells(cells: list[Cell], run_dir: Path, run_id: str, *, timeout: float = 600.0,
              resume: bool = False, cache_dir: Path | None = None,
              on_start: Callable[[Cell], None] | None = None,
              on_done: Callable[[CellResult], None] | None = None, client=None,
              exclusive: bool = False) -> list[CellResult]:
    """Run every cell (see module docstring); returns one ``CellResult`` per cell, in order.

    ``timeout`` is in seconds per cell (warm-up and repeats included). With a Dask
    ``client`` the cells run on its cluster (``bench.cluster``), with the same isolation;
    ``exclusive`` then allows one cell per host at a time (locally there is only ever one)."""
    if client is not None:
        from .cluster import run_cells_on

        return run_cells_on(client, cells, run_dir, run_id, timeout=timeout, resume=resume, cache_dir=cache_dir,
                            on_start=on_start, on_done=on_done, exclusive=exclusive)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "logs").mkdir(exist_ok=True)
    context = _RunContext(run_dir, run_id, host_environment(), cache_dir)
    results = []
    with LocalPool() as pool:
        for cell in cells:
            if on_start:
                on_start(cell)
            result = _run_one(cell, context, pool, timeout, resume)
            if on_done:
                on_done(result)
            results.append(result)
    return results


@dataclass
class _RunContext:
    """What every cell of a run shares: its directory, id, host environment, reference
    cache and the batches (with references) already prepared."""

    run_dir: Path
    run_id: str
    env: dict[str, str]
    cache_dir: Path | None
    batches: dict = field(default_factory=dict)

    def batch(self, cell: Cell):
        """``(batch, reference rows)`` of the cell's problem set, saved under ``batches/`` once
        (a resumed run reads the saved bytes back)."""
        if cell.problem_key not in self.batches:
            folder = self.run_dir / "batches"
            batch, saved = saved_or_new_batch(cell, folder)
            if not saved:
                batch.save(folder, batch_name(cell))
            self.batches[cell.problem_key] = (batch, reference(batch, cache_dir=self.cache_dir))
        return self.batches[cell.problem_key]


def _run_one(cell: Cell, context: _RunContext, pool: LocalPool, timeout: float, resume: bool) -> CellResult:
    """Run one cell on the pool and return what the parent learnt."""
    path = context.run_dir / f"{cell.cell_id}.parquet"
    started = time.perf_counter()
    if resume and cell_finished(path):
        return CellResult(cell, "skipped", path, None, 0.0, "finished in an earlier attempt")
    batch, ref = context.batch(cell)
    log = context.run_dir / "logs" / f"{cell.cell_id}.log"
    job = (cell, context.env, context.run_id, str(path), str(log),
           str(context.cache_dir) if context.cache_dir else None, str(context.run_dir / "batches"))
    state, reason = pool.run(job, cell.dtype, timeout)
    if state == "done" and not path.exists():
        state, reason = "crashed", "worker answered without writing results"
    if state != "done":
        reason = f"{reason}\n{log_tail(log)}"
        write_cell(failed_rows(cell, batch, ref, context.env, context.run_id, state, reason), path)
    rows = read_cell(path)
    if state == "done" and (rows["error_type"] != "").any():
        state, reason = "failed", str(rows["error"].iloc[0]).splitlines()[0]
    return CellResult(cell, state, path, rows, time.perf_counter() - started, reason)
