"""Cells on Dask distributed: an embedded ``LocalCluster`` or an existing cluster.

The client (``contactbench run``) generates each problem set once (for its content hash,
its reference and the rows of a cell that never comes back), computes the references that
its cache lacks as Dask tasks, and submits one task per cell. A task runs on one worker:
it regenerates the batch from ``(family, params, n, seed)`` (generators are pure) and
refuses to run when its content hash differs from the client's, then runs the cell in a
supervised child process of that worker (``bench.execute.LocalPool``: timeout, crash and
stall isolation, exactly as on one machine) and returns the rows as an Arrow table (IPC
bytes). Problem arrays never travel through the scheduler. The client alone writes each
cell, atomically, under ``results/runs/<run_id>/``.

Placement: a ``gpu`` cell asks for the worker resource ``GPU`` (one cell per GPU at a
time); every cell asks for one ``CELL`` slot when the workers declare it (``--exclusive``:
one timed cell per host). A worker that dies is survived: the scheduler retries its cell
once on another worker (``distributed.scheduler.allowed-failures`` = 1 in the embedded
cluster), then the cell is recorded ``failed`` with the reason.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from solvers.errors import ProblemError

from .cell import CellResult, batch_for, batch_name, failed_rows, saved_or_new_batch
from .env import host_environment
from .grid import Cell
from .reference import cached_reference, solve_reference, store_reference
from .rundir import cell_finished, read_cell, write_cell

#: seconds the client waits for an existing scheduler before giving up (exit 2)
CONNECT_TIMEOUT = 10.0
#: settings of the embedded cluster (and advised for external ones, see README)
DASK_CONFIG = {
    # a task may start the cell's supervised child process (multiprocessing refuses
    # children of daemonic processes, which Dask workers are by default)
    "distributed.worker.daemon": False,
    # a cell whose worker died is retried once on another worker, then reported KilledWorker
    "distributed.scheduler.allowed-failures": 1,
}


def connect(scheduler: str | None = None, workers: int = 1, resources: dict[str, float] | None = None):
    """``(client, cluster)``: a client of the cluster at ``scheduler`` (cluster None), or of a
    new embedded ``LocalCluster`` of ``workers`` single-threaded worker processes.

    ``ProblemError`` naming ``--scheduler`` when it cannot be reached within
    ``CONNECT_TIMEOUT`` seconds, or ``--workers`` when it is not a positive integer."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            with dask.config.set(DASK_CONFIG):
                return Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s", set_as_default=False), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise ProblemError(f"--scheduler: cannot reach {scheduler!r} within {CONNECT_TIMEOUT:g} s "
                               f"({type(exc).__name__}: {exc})") from None
    if not isinstance(workers, int) or workers < 1:
        raise ProblemError(f"--workers: expected an integer >= 1, got {workers!r}")
    with dask.config.set(DASK_CONFIG):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               resources=resources, silence_logs=logging.ERROR)
        return Client(cluster, set_as_default=False), cluster


# ------------------------------------------------------------------ worker side
def _worker_pool():
    """This Dask worker's pool of supervised cell processes (one per dtype), kept on the
    worker object so that imports and JAX start-up are paid once per worker."""
    from distributed import get_worker

    from .execute import LocalPool

    worker = get_worker()
    pool = getattr(worker, "_contactbench_pool", None)
    if pool is None:
        pool = worker._contactbench_pool = LocalPool()
    return worker, pool


def reference_task(cell: Cell, expected_hash: str):
    """On a worker: the reference's answers for the cell's problem set (regenerated here)."""
    batch = batch_for(cell)
    if batch.content_hash() != expected_hash:
        raise ProblemError(f"{cell.family_label}: the worker generated other problems than the client "
                           "(content hash differs): different contactbench versions?")
    return solve_reference(batch)


def cell_task(cell: Cell, run_id: str, timeout: float, expected_hash: str, ref_solution,
              exclusive: bool = False) -> dict[str, Any]:
    """On a worker: run one cell in a supervised child process and return ``state``,
    ``reason``, ``rows`` (Arrow IPC bytes), ``host`` and ``worker``. With ``exclusive`` the
    cell holds the cluster-wide lock of its host while it runs: one timed cell per host."""
    if exclusive:
        from distributed import Lock

        with Lock(f"contactbench-host-{os.environ.get('CONTACTBENCH_HOST') or socket.gethostname()}"):
            return cell_task(cell, run_id, timeout, expected_hash, ref_solution, exclusive=False)
    worker, pool = _worker_pool()
    work = Path(worker.local_directory) / "contactbench" / run_id
    (work / "logs").mkdir(parents=True, exist_ok=True)
    env = {**host_environment(), "env_worker": str(worker.name), "env_worker_address": str(worker.address)}
    batch, saved = saved_or_new_batch(cell, work / "batches")  # one generation per problem set and worker
    cache = work / "cache"
    ref = store_reference(batch, ref_solution, cache_dir=cache)  # the child reads it back, re-verified
    if batch.content_hash() != expected_hash:
        state, reason = "failed", ("the worker generated other problems than the client (content hash differs): "
                                   "different contactbench versions on client and worker?")
        rows = failed_rows(cell, batch, ref, env, run_id, state, reason)
    else:
        if not saved:  # only a batch whose hash matched is kept for the next cells
            batch.save(work / "batches", batch_name(cell))
        out, log = work / f"{cell.cell_id}.parquet", work / "logs" / f"{cell.cell_id}.log"
        job = (cell, env, run_id, str(out), str(log), str(cache), str(work / "batches"))
        state, reason = pool.run(job, cell.dtype, timeout)
        if state == "done" and out.exists():
            rows = read_cell(out)
        else:
            from .execute import log_tail

            reason = f"{reason or 'worker answered without writing results'}\n{log_tail(log)}"
            state = state if state != "done" else "crashed"
            rows = failed_rows(cell, batch, ref, env, run_id, state, reason)
        for path in (out, out.with_suffix(".json")):
            path.unlink(missing_ok=True)
    return {"state": state, "reason": reason, "rows": _to_arrow(rows), "host": socket.gethostname(),
            "worker": str(worker.name)}


def _to_arrow(rows: pd.DataFrame) -> bytes:
    import pyarrow as pa

    sink = io.BytesIO()
    table = pa.Table.from_pandas(rows, preserve_index=False)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _from_arrow(data: bytes) -> pd.DataFrame:
    import pyarrow as pa

    return pa.ipc.open_stream(io.BytesIO(data)).read_all().to_pandas()


# ------------------------------------------------------------------ client side
def run_cells_on(client, cells: list[Cell], run_dir: Path, run_id: str, *, timeout: float, resume: bool,
                 cache_dir: Path | None = None, on_start: Callable[[Cell], None] | None = None,
                 on_done: Callable[[CellResult], None] | None = None, exclusive: bool = False) -> list[CellResult]:
    """Run ``cells`` on the Dask cluster of ``client`` (see module docstring); one
    ``CellResult`` per cell, in order. Finished cells of a resumed run are skipped;
    ``exclusive``: at most one cell runs per host at a time (publishable timings)."""
    from distributed import as_completed

    run_dir.mkdir(parents=True, exist_ok=True)
    env = host_environment()
    results: dict[int, CellResult] = {}
    batches: dict[tuple, tuple] = {}
    todo = []
    for i, cell in enumerate(cells):
        path = run_dir / f"{cell.cell_id}.parquet"
        if resume and cell_finished(path):
            results[i] = CellResult(cell, "skipped", path, None, 0.0, "finished in an earlier attempt")
            if on_done:
                on_done(results[i])
            continue
        if cell.problem_key not in batches:
            folder = run_dir / "batches"
            batch, saved = saved_or_new_batch(cell, folder)
            if not saved:
                batch.save(folder, batch_name(cell))
            batches[cell.problem_key] = [batch, batch.content_hash(), None, None]
        todo.append(i)
    _references(client, cells, batches, cache_dir)
    futures = {}
    started = {}
    for i in todo:
        cell = cells[i]
        batch, digest, ref_rows, ref_solution = batches[cell.problem_key]
        resources = {"GPU": 1} if cell.device == "gpu" else None
        future = client.submit(cell_task, cell, run_id, timeout, digest, ref_solution, exclusive,
                               key=f"cell-{run_id}-{cell.cell_id}", pure=False, resources=resources)
        futures[future] = i
        started[i] = time.perf_counter()
        if on_start:
            on_start(cell)
    for future in as_completed(list(futures), loop=client.loop):
        i = futures[future]
        cell = cells[i]
        path = run_dir / f"{cell.cell_id}.parquet"
        batch, _digest, ref_rows, _solution = batches[cell.problem_key]
        try:
            answer = future.result()
            state, reason, rows = answer["state"], answer["reason"], _from_arrow(answer["rows"])
        except Exception as exc:  # KilledWorker (the worker died twice), a lost connection, ...
            state = "crashed"
            reason = f"the Dask task failed: {type(exc).__name__}: {exc}"
            rows = failed_rows(cell, batch, ref_rows, env, run_id, state, reason)
        write_cell(rows, path)
        rows = read_cell(path)
        if state == "done" and (rows["error_type"] != "").any():
            state, reason = "failed", str(rows["error"].iloc[0]).splitlines()[0]
        results[i] = CellResult(cell, state, path, rows, time.perf_counter() - started[i], reason)
        if on_done:
            on_done(results[i])
    return [results[i] for i in range(len(cells))]


def _references(client, cells: list[Cell], batches: dict, cache_dir: Path | None) -> None:
    """Fill each problem set's reference rows and answers: from the client's cache, or
    computed as Dask tasks (once per problem set) and cached here."""
    from .reference import _load_solution, cache_path

    pending = {}
    for cell in cells:
        entry = batches.get(cell.problem_key)
        if entry is None or entry[2] is not None or cell.problem_key in pending:
            continue
        batch, digest = entry[0], entry[1]
        rows = cached_reference(batch, cache_dir=cache_dir)
        if rows is not None:
            entry[2], entry[3] = rows, _load_solution(cache_path(batch, cache_dir=cache_dir))[0]
        else:
            pending[cell.problem_key] = client.submit(reference_task, cell, digest, pure=False,
                                                      key=f"reference-{batch_name(cell)}-{os.getpid()}")
    for key, future in pending.items():
        solution = future.result()
        entry = batches[key]
        entry[2], entry[3] = store_reference(entry[0], solution, cache_dir=cache_dir), solution


# ------------------------------------------------------------------ HPC clusters
def slurm_cluster(jobs: int, cores: int, memory: str, gpus: int = 0, walltime: str = "01:00:00",
                  queue: str | None = None, account: str | None = None, python: str | None = None,
                  env: dict[str, str] | None = None):
    """A ``dask_jobqueue.SLURMCluster`` whose jobs each run one Dask worker with ``cores``
    single-threaded processes (one cell at a time each) or, with ``gpus``, one worker process
    per GPU holding the resource ``GPU=1`` (``dask-cuda``'s layout), with the settings of
    ``DASK_CONFIG`` in the job's environment. Not started: call ``.scale(jobs=...)``; its
    ``job_script()`` is what ``sbatch`` receives. The user's dask config
    (``jobqueue.slurm``) fills what is not given."""
    from dask_jobqueue import SLURMCluster

    if jobs < 1 or cores < 1 or gpus < 0:
        raise ProblemError(f"--jobs, --cores: expected >= 1 and --gpus >= 0, got {jobs}, {cores}, {gpus}")
    processes = gpus if gpus else cores
    prologue = [f"export {key}={value}" for key, value in sorted({
        "DASK_DISTRIBUTED__WORKER__DAEMON": "False", "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
        "CONTACTBENCH_CACHE": "${TMPDIR:-/tmp}/contactbench-cache", **(env or {})}.items())]
    extra_directives = [f"--gres=gpu:{gpus}"] if gpus else []
    worker_args = ["--nthreads", "1"] + (["--resources", "GPU=1"] if gpus else [])  # (the last --nthreads wins)
    return SLURMCluster(cores=cores, processes=processes, memory=memory, walltime=walltime, queue=queue,
                        account=account, python=python, job_extra_directives=extra_directives,
                        worker_extra_args=worker_args, job_script_prologue=prologue, n_workers=0,
                        job_name="contactbench")
