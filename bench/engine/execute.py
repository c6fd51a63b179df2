"""The execution backend: isolated, reusable worker processes that run cells.

One worker process per dtype (float32 and float64 JAX never share a process), reused for
the next cell of that dtype so that imports and JAX start-up are paid once. The parent
waits at most ``timeout`` seconds per cell; a hang is killed, a crash is caught, a worker
that uses no CPU for ``STALL_SECONDS`` (a wedged XLA runtime) is killed and the cell retried
once in a fresh worker. Workers die with the parent (``PR_SET_PDEATHSIG``) and never write
once it is gone; a worker's start-up is waited for before a cell's clock starts.

Each Dask worker of a run (``bench.engine.cluster.cell_task``) keeps one ``LocalPool`` and runs
its cells through ``LocalPool.run(job, dtype, timeout, stall)``. (``PR_SET_PDEATHSIG``
follows the thread that started the child: a Dask worker's task threads live as long as
the worker.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from pathlib import Path

from bench.engine.states import CellState

#: modules a worker imports before it says it is ready: those of a cell job, so that their
#: import is start-up (outside every cell's timeout) while this module stays light to import
#: (a Dask worker imports it before it registers, ``bench.engine.dask_worker``)
WORKER_IMPORTS = ("bench.engine.cell", "bench.engine.rundir")


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this worker when its parent dies (``PR_SET_PDEATHSIG``), and exit
    now if the parent is already gone; elsewhere the liveness check in ``_serve`` remains."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the getppid checks still hold
        pass
    if os.getppid() != parent_pid:
        os._exit(0)


def _serve(conn, parent_pid: int) -> None:
    """Worker loop: say ``"ready"``, then receive a job ``(function, args)``, call
    ``function(*args, parent_pid=parent_pid)`` and answer ``"ok"`` or ``"error: <type>:
    <text>"``; stop on ``None``. The worker dies with its parent, and a job never writes once
    the parent is gone (``exit_if_orphaned``)."""
    _die_with_parent(parent_pid)
    import importlib

    for module in WORKER_IMPORTS:
        importlib.import_module(module)
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        function, args = job
        try:
            function(*args, parent_pid=parent_pid)
            answer = "ok"
        except Exception as exc:  # the parent records it with the log tail
            answer = f"error: {type(exc).__name__}: {exc}"
            with contextlib.suppress(OSError):  # a full disk must not end the worker before it answers
                traceback.print_exc()
        with contextlib.suppress(OSError):
            sys.stdout.flush()
            sys.stderr.flush()
        conn.send(answer)


def serve_fd(fd: int, parent_pid: int) -> None:
    """A worker process's entry point: ``_serve`` on the socket ``fd`` its parent passed."""
    from multiprocessing.connection import Connection

    _serve(Connection(fd), parent_pid)


def exit_if_orphaned(parent_pid: int) -> None:
    """End this worker at once (nothing written) when its parent is gone: the run is over."""
    if os.getppid() != parent_pid:
        os._exit(0)


def output_to(path: Path | str, append: bool = False) -> None:
    """Send this process's C-level stdout and stderr to the file ``path`` (truncated first
    unless ``append``): a job's output never reaches the user's terminal unasked."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def cell_job(cell, env, run_id, out, log, cache, batches, *, parent_pid: int) -> None:
    """A worker's cell job: run the cell with C-level stdout/stderr in the file ``log`` and
    write its parquet to ``out`` (see ``bench.engine.cell.solve_cell``)."""
    from bench.engine.cell import solve_cell
    from bench.engine.rundir import write_cell

    output_to(log)
    rows = solve_cell(cell, env, run_id, Path(cache) if cache else None, Path(batches))
    exit_if_orphaned(parent_pid)
    write_cell(rows, Path(out))


#: XLA flag given to worker processes: XLA's multi-threaded Eigen pool on CPU intermittently
#: wedges (every thread idle, ``block_until_ready`` never returns) on large vmapped while
#: loops; we saw it twice on linrax-hold exit batches. Single-threaded Eigen avoids it and
#: cost no measurable time on these problems. A user's own XLA_FLAGS setting of it wins.
WORKER_XLA_FLAG = "--xla_cpu_multi_thread_eigen=false"
#: a worker that uses no CPU for this long while it holds a job is wedged (seen with XLA on
#: CPU: every thread waits, ``block_until_ready`` never returns); it is killed and the cell
#: retried once in a fresh worker. ``STALL_POLL``: seconds between checks.
STALL_SECONDS = 30.0
STALL_POLL = 2.0
#: how long a new worker may take to start (spawn and imports), outside any cell's timeout
STARTUP_SECONDS = 300.0


#: glibc allocator settings given to worker processes (unless the user set them): large
#: buffers freed by one solve stay in the process's heap for the next instead of going back
#: to the kernel (glibc's default for blocks of a few MB), so a repeat does not pay a page
#: fault per 4 KiB again. On a 2-core CPU that was 3 ms of a 65,536-case
#: linrax cell's 6 ms of host-side work, and 10 ms of its 88 ms solve (``python -m
#: bench.studies.overhead``); every adapter of a run gets the same setting, and rows record it
#: (``env_malloc``).
WORKER_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 32)}


#: XLA:CPU's intra-op thread pool in worker processes: one thread (``PJRT_NPROC``, read when
#: JAX starts its CPU client; the default is one thread per core), unless the user set it.
#: jaxlib 0.10.0 - 0.11.0 split a batched LAPACK kernel (Cholesky, triangular solve, ...) into
#: pieces on that pool and block their own pool thread until the pieces are done; when as many
#: such kernels run at once as the pool has threads, every thread waits and the solve never
#: returns. Seen here: qpax float64 on cube-3d at 64 scenes wedged in 8 of 13 tries on 2 cores
#: (gdb: both pool threads in ``lapack_dtrsm_ffi`` -> ``ParallelBatchMap``, waiting) and in 8
#: of 8 default-preset runs; with one thread, where the pieces run inline, it finished in every
#: try. Cells are single-threaded already (``WORKER_XLA_FLAG``); rows record the setting
#: (``env_pjrt_nproc``).
WORKER_THREAD_ENV = {"PJRT_NPROC": "1"}

#: GPU memory in worker processes: allocated as needed, not 75 % of the card up front (JAX's
#: default, ``XLA_PYTHON_CLIENT_PREALLOCATE``), unless the user set it. Every worker process
#: that starts JAX starts its CUDA client too, a CPU cell's included, and several such
#: processes on one GPU (a Dask worker's cell process, ``bench.studies.overhead``'s, the reference
#: workers') would otherwise each claim three quarters of it, more than the card has between
#: them. Rows record the setting (``env_xla_preallocate``).
WORKER_GPU_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def _unset_by_user(settings: dict[str, str]) -> dict[str, str]:
    """The entries of ``settings`` the user's environment does not set already."""
    return {k: v for k, v in settings.items() if k not in os.environ}


def worker_malloc_env() -> dict[str, str]:
    """The ``WORKER_MALLOC_ENV`` entries the user's environment does not set already."""
    return _unset_by_user(WORKER_MALLOC_ENV)


def worker_thread_env() -> dict[str, str]:
    """The ``WORKER_THREAD_ENV`` entries the user's environment does not set already (set them
    before JAX starts, as tests and asv do, to solve in-process as a worker does)."""
    return _unset_by_user(WORKER_THREAD_ENV)


def worker_gpu_env() -> dict[str, str]:
    """The ``WORKER_GPU_ENV`` entries the user's environment does not set already."""
    return _unset_by_user(WORKER_GPU_ENV)


def worker_xla_flags(current: str | None) -> str:
    """XLA_FLAGS for a worker: the user's, plus ``WORKER_XLA_FLAG`` unless they set it."""
    current = current or ""
    if "xla_cpu_multi_thread_eigen" in current:
        return current
    return f"{current} {WORKER_XLA_FLAG}".strip()


#: how the reason of a job that raised starts (``_Worker.run``; the rest is "<type>: <text>")
RAISED = "worker raised outside the solver: "


def worker_environment(defaults: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a worker process starts with: this process's, plus the worker settings
    the user did not set (``WORKER_MALLOC_ENV``, ``WORKER_THREAD_ENV``, ``WORKER_GPU_ENV``,
    ``defaults``, ``worker_xla_flags``) and this process's import path. Built as a copy: the
    process-wide ``os.environ`` is never changed, so threads that read it meanwhile (Dask's
    config) see it whole."""
    env = dict(os.environ)
    env.update({**worker_malloc_env(), **worker_thread_env(), **worker_gpu_env(), **_unset_by_user(defaults or {})})
    env["XLA_FLAGS"] = worker_xla_flags(os.environ.get("XLA_FLAGS"))
    paths = [p for p in sys.path if p] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class _Worker:
    """One reusable worker process (see module docstring); ``run`` returns (state, reason).

    The process is started with its own environment (``worker_environment``) and talks over
    a socket pair (``multiprocessing.connection.Connection``: pickled jobs and answers)."""

    def __init__(self, defaults: dict[str, str] | None = None) -> None:
        import socket
        import subprocess
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        with ours, theirs:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", f"from bench.engine.execute import serve_fd; serve_fd({theirs.fileno()}, {os.getpid()})"],
                env=worker_environment(defaults), pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                process_group=0)  # the terminal's Ctrl-C goes to contactbench, which ends its workers
            self.conn = Connection(os.dup(ours.fileno()))
        self.ready = False

    def cpu_seconds(self) -> float | None:
        """User + system CPU seconds of the worker (Linux ``/proc``), None where unknown."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def _join(self, seconds: float | None) -> None:
        import subprocess

        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(seconds)

    def run(self, job: tuple, timeout: float, stall: float | None = None) -> tuple[str, str]:
        """Send a job and wait for it: ``done``, ``timeout``, ``stalled`` (no CPU used for
        ``stall`` seconds: a wedged runtime, see ``WORKER_XLA_FLAG``) or ``crashed``."""
        stall = STALL_SECONDS if stall is None else stall
        try:
            if not self.ready:  # start-up (spawn, imports) is not part of any cell's time
                if not self.conn.poll(STARTUP_SECONDS) or self.conn.recv() != "ready":
                    self.kill()
                    return CellState.CRASHED, f"worker did not start within {STARTUP_SECONDS:g} s"
                self.ready = True
            self.conn.send(job)
            started = time.monotonic()
            last_cpu, last_change = self.cpu_seconds(), time.monotonic()
            while not self.conn.poll(min(STALL_POLL, max(timeout - (time.monotonic() - started), 0.0))):
                now = time.monotonic()
                if now - started >= timeout:
                    self.kill()
                    return CellState.TIMEOUT, f"cell exceeded the {timeout:g} s timeout and was killed"
                cpu = self.cpu_seconds()
                if cpu is None or last_cpu is None or cpu - last_cpu > 0.05:
                    last_cpu, last_change = cpu, now
                elif now - last_change >= stall:
                    self.kill()
                    return CellState.STALLED, f"worker used no CPU for {stall:g} s (wedged) and was killed"
            answer = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self._join(5)
            return CellState.CRASHED, f"worker exited with code {self.proc.returncode} without results"
        if answer == "ok":
            return CellState.DONE, ""
        return CellState.CRASHED, f"{RAISED}{str(answer).removeprefix('error: ')}"

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()
        self._join(None)
        self.conn.close()

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self._join(10)
        self.kill()


def cap_file(path: Path, limit: int) -> None:
    """Keep at most about ``limit`` bytes of the text file ``path``: its first and last halves,
    with a line saying how much was cut between them. Nothing happens to a smaller or missing
    file."""
    try:
        size = path.stat().st_size
        if size <= limit:
            return
        with open(path, "rb") as file:
            head = file.read(limit // 2)
            file.seek(size - limit // 2)
            tail = file.read()
    except OSError:
        return
    cut = f"\n[... {size - len(head) - len(tail)} bytes of output cut ...]\n".encode()
    with contextlib.suppress(OSError):
        path.write_bytes(head + cut + tail)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class LocalPool:
    """Workers of this machine, one per dtype (see module docstring). Use as a context
    manager; ``run(job, dtype, timeout)`` returns ``(state, reason)``. ``defaults``:
    environment variables the workers get unless the user's environment sets them."""

    def __init__(self, defaults: dict[str, str] | None = None) -> None:
        import threading

        self.defaults = dict(defaults or {})
        self.workers: dict[str, _Worker] = {}
        self._lock = threading.Lock()  # ``warm`` (a Dask worker's event loop) beside ``run`` (its task thread)

    def __enter__(self) -> "LocalPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, job: tuple, dtype: str, timeout: float, stall: float | None = None) -> tuple[str, str]:
        """Run ``job`` (see ``_serve``) in the worker of ``dtype``: ``done``, ``timeout``
        (seconds), ``stalled`` (no CPU for ``stall`` seconds, default ``STALL_SECONDS``, also
        on the retry in a fresh worker) or ``crashed``. A worker that did not finish cleanly
        is replaced for the next job."""
        with self._lock:
            worker = self.workers.get(dtype)
            if worker is None or not worker.alive:
                worker = self.workers[dtype] = _Worker(self.defaults)
        state, reason = worker.run(job, timeout, stall)
        if state == CellState.STALLED:  # wedged, not slow: once more in a fresh worker
            with self._lock:
                worker = self.workers[dtype] = _Worker(self.defaults)
            state, reason = worker.run(job, timeout, stall)
            if state != CellState.DONE:
                reason = f"{reason} (also on a retry in a fresh worker)"
        if state != CellState.DONE:
            worker.kill()  # a fresh worker takes the next cell of this dtype
        return state, reason

    def warm(self, dtype: str) -> bool:
        """Start the worker of ``dtype`` now, without waiting for it (its start-up then
        overlaps whatever this process does next; ``run`` waits for it to be ready, outside
        the cell's timeout). True when one was started, False when one is already there."""
        with self._lock:
            worker = self.workers.get(dtype)
            if worker is not None and worker.alive:
                return False
            self.workers[dtype] = _Worker(self.defaults)
            return True

    def _take_all(self) -> list[_Worker]:
        with self._lock:
            workers, self.workers = list(self.workers.values()), {}
        return workers

    def close(self) -> None:
        """End every worker once it has finished its job (at most 10 s each, then killed)."""
        for worker in self._take_all():
            worker.close()

    def kill(self) -> None:
        """End every worker now (SIGKILL), whatever it is running: nothing waits for it."""
        for worker in self._take_all():
            worker.kill()
