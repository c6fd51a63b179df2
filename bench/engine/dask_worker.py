"""What runs inside a Dask worker of a run before and around its cells: Dask's preload hook
(``dask_setup``, named in ``bench.engine.cluster.DASK_CONFIG``), the worker's pool of cell
processes (``worker_pool``) and its early start (``warm_pool``).

Kept apart from ``bench.engine.cluster`` and light to import (no pandas, no problem families):
Dask imports the preload module before the worker registers, so every import here delays
the worker, and with it the cell processes it starts.
"""

from __future__ import annotations

import contextlib
import logging
import os

#: how a Dask worker's heartbeat failure begins (``distributed.worker``, logged at ERROR)
HEARTBEAT_FAILURE = "Failed to communicate with scheduler during heartbeat"

#: environment variable of an embedded worker: the dtypes (comma-separated) whose cell
#: processes it starts as it starts (``bench.engine.cluster.connect``'s ``warm``)
WARM_ENV = "CONTACTBENCH_WARM_DTYPES"


class ClosingHeartbeatFilter(logging.Filter):
    """Drops a worker's heartbeat-failure record (``HEARTBEAT_FAILURE``, with its traceback)
    while that worker is closing: a heartbeat still waiting for the scheduler when the worker
    closes its own connections fails, and Dask logs it at ERROR (dask/distributed#7192). It
    said nothing about the run, yet it put a traceback after the run's own last words. A
    heartbeat that fails while the worker runs is kept, and so is every other record."""

    def __init__(self, worker):
        from distributed.core import Status

        super().__init__()
        self.worker = worker
        self.closing = (Status.closing, Status.closing_gracefully, Status.closed)

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.worker.status in self.closing and str(record.msg).startswith(HEARTBEAT_FAILURE))


#: set (to 1) in the environment of an embedded cluster's workers (``bench.engine.cluster.connect``)
EMBEDDED_ENV = "CONTACTBENCH_EMBEDDED_WORKER"


def dask_setup(worker) -> None:
    """Dask's preload hook (``distributed.worker.preload`` in ``bench.engine.cluster.DASK_CONFIG``),
    run by every worker as it starts: its logger ``distributed.worker`` gets a
    ``ClosingHeartbeatFilter``, and it starts the cell processes of the dtypes named in
    ``WARM_ENV`` (``warm_pool``). An embedded cluster's worker (``EMBEDDED_ENV``) leaves
    the terminal's process group (``os.setpgrp``), so Ctrl-C reaches the ``contactbench``
    process alone, which then closes the cluster in order."""
    if os.environ.get(EMBEDDED_ENV) == "1":
        with contextlib.suppress(OSError):  # (already a group or session leader)
            os.setpgrp()
    worker._contactbench_filter = ClosingHeartbeatFilter(worker)
    logging.getLogger("distributed.worker").addFilter(worker._contactbench_filter)
    dtypes = [d for d in os.environ.get(WARM_ENV, "").split(",") if d]
    if dtypes:
        warm_pool(dtypes, worker)


def dask_teardown(worker) -> None:
    """Dask's hook as a worker closes: its cell processes are killed and its ``ClosingHeartbeatFilter``
    leaves the logger. A worker that ran as a thread of the ``contactbench`` process leaves
    that process running: neither may outlive the worker (the next run's worker gets its own)."""
    found = getattr(worker, "_contactbench_filter", None)
    if found is not None:
        logging.getLogger("distributed.worker").removeFilter(found)
    pool = getattr(worker, "_contactbench_pool", None)
    if pool is not None:  # a cell still running (Ctrl-C) would not finish in time anyway
        pool.kill()


def worker_pool(worker=None):
    """``(worker, pool)``: this Dask worker and its pool of supervised cell processes
    (``bench.engine.execute.LocalPool``, one process per dtype), kept on the worker object so that
    imports and JAX start-up are paid once per worker. ``worker``: default the one running
    this task."""
    if worker is None:
        from distributed import get_worker

        worker = get_worker()
    from bench.engine.execute import LocalPool

    pool = getattr(worker, "_contactbench_pool", None)
    if pool is None:
        from solvers._jax import DEVICE_INDEX_ENV

        # the cells' processes solve on this worker's device: the embedded cluster's worker i
        # on device i (modulo the count), unless the user's environment names one
        name = str(worker.name)
        pool = worker._contactbench_pool = LocalPool({DEVICE_INDEX_ENV: name if name.isdigit() else "0"})
    return worker, pool


def warm_pool(dtypes: list[str], dask_worker=None) -> list[str]:
    """Start this worker's cell process of each of ``dtypes`` (``LocalPool.warm``) without
    waiting for it; returns the dtypes started (none where they run already). Called by
    ``dask_setup`` or by ``client.run`` (``bench.engine.cluster.warm_pools``), both on the worker's
    event-loop thread, which lives as long as the worker: a cell process dies with the thread
    that started it (``bench.engine.execute``)."""
    _worker, pool = worker_pool(dask_worker)
    return [dtype for dtype in dtypes if pool.warm(dtype)]
