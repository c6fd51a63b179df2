"""Run cells in isolated worker processes and write one parquet file per finished cell.

Per cell (in a ``spawn`` worker process, one per dtype, reused for the next cell of that
dtype so that imports and JAX start-up are paid once; float32 and float64 JAX never share
a process, and a crash or hang kills only its worker, which is replaced):

1. regenerate the batch (generators are pure) and load the cached float64 reference;
2. ``prepare`` (untimed), one warm-up ``run`` (JIT compile included, recorded as
   ``first_call_ms`` and ``compile_s``), then ``repeats`` timed ``run`` calls (median,
   min, IQR; JAX adapters block until ready inside ``run``);
3. ``collect``, verify, compare with the reference, stamp the environment;
4. write ``<cell_id>.parquet`` atomically (temp name, then rename).

The parent waits at most ``timeout`` seconds per cell; a hang is killed and a crash is
caught, and either becomes ``failed`` rows carrying the reason and the worker's log tail.
``resume`` skips cells whose parquet reads back as its manifest says (a truncated or
foreign file is re-run). Workers die with the parent (``PR_SET_PDEATHSIG``) and never
write once it is gone; a worker's start-up is waited for before a cell's clock starts.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

import problems
import solvers
from solvers import check_standard_form

from .env import host_environment, jax_devices
from .grid import Cell
from .reference import reference
from .rundir import cell_finished, read_cell, write_cell, write_json_atomic
from .verify import (DEFAULT_TOLERANCES, exit_outcomes, lp1_outcomes, qp_outcomes, verify_exit, verify_lp1,
                     verify_qp)

CASES_PER_REPORT = 256


@dataclass(frozen=True)
class CellResult:
    """What the parent learnt of one cell: ``state`` is done, failed, timeout, crashed or skipped."""

    cell: Cell
    state: str
    path: Path | None
    rows: pd.DataFrame | None
    seconds: float
    reason: str = ""


def batch_for(cell: Cell) -> problems.ProblemBatch:
    """The cell's problem batch (pure function of the cell's problem fields)."""
    return problems.generate(cell.family, cell.n, cell.seed, **cell.params)


def batch_name(cell: Cell) -> str:
    """File name of the cell's saved batch: one per distinct problem set of a run."""
    import hashlib

    return hashlib.sha256(repr(cell.problem_key).encode()).hexdigest()[:16]


def base_rows(cell: Cell, batch: problems.ProblemBatch, ref: pd.DataFrame, env: dict[str, str],
              run_id: str) -> pd.DataFrame:
    """Identity, parameters (``meta_*``) and reference columns, one row per LP of the batch."""
    name, settings = cell.adapter_settings()
    meta = batch.meta.add_prefix("meta_")
    head = pd.DataFrame({
        "run_id": run_id, "cell_id": cell.cell_id, "family": cell.family, "family_label": cell.family_label,
        "kind": cell.kind,
        "family_params": json.dumps(cell.params, sort_keys=True), "n_scenes": cell.n,
        "n_lps": len(batch), "seed": cell.seed, "solver": name, "solver_spec": cell.solver,
        "settings": json.dumps(settings, sort_keys=True), "dtype": cell.dtype, "device": cell.device,
        "lp_index": np.arange(len(batch)),
    })
    env_cols = pd.DataFrame({k: [v] * len(batch) for k, v in env.items()})
    return pd.concat([head, meta, ref.reset_index(drop=True), env_cols], axis=1)


def failed_rows(cell: Cell, batch: problems.ProblemBatch, ref: pd.DataFrame, env: dict[str, str],
                run_id: str, error_type: str, error: str) -> pd.DataFrame:
    """Rows for a cell that produced no answers: every case ``failed`` with the reason."""
    rows = base_rows(cell, batch, ref, env, run_id)
    return rows.assign(verdict="failed", outcome="failed", status="error", error_type=error_type,
                       error=error[-4000:], solver_label=cell.solver)


def _timed_solve(adapter, batch: problems.ProblemBatch, repeats: int):
    problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
    adapter.validate(problem)
    prepared = adapter.prepare(problem)
    t0 = time.perf_counter()
    raw = adapter.run(prepared)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        raw = adapter.run(prepared)
        times.append(time.perf_counter() - t0)
    return adapter.finish(raw, prepared), first, np.array(times)


def solve_cell(cell: Cell, env: dict[str, str], run_id: str, cache_dir: Path | None = None,
               batch_dir: Path | None = None) -> pd.DataFrame:
    """Run one cell in this process and return its rows (solver exceptions become failed rows).

    The batch is read from ``batch_dir`` when the parent saved it there, else generated.
    """
    name = batch_name(cell)
    if batch_dir is not None and (batch_dir / f"{name}.json").exists():
        batch = problems.ProblemBatch.load(batch_dir, name)
    else:
        batch = batch_for(cell)
    ref = reference(batch, cache_dir=cache_dir)
    name, settings = cell.adapter_settings()
    try:
        adapter = solvers.get(name, **settings)
        solution, first, times = _timed_solve(adapter, batch, cell.repeats)
    except Exception as exc:  # recorded, never swallowed: the rows carry type and text
        env = {**env, "env_jax_devices": jax_devices()}
        return failed_rows(cell, batch, ref, env, run_id, type(exc).__name__,
                           f"{exc}\n{traceback.format_exc()}")
    env = {**env, "env_jax_devices": jax_devices(), "env_xla_flags": os.environ.get("XLA_FLAGS", "")}
    rows = base_rows(cell, batch, ref, env, run_id)  # (env after the solve: its import is not timed)
    if batch.kind == "lp1":
        checked = verify_lp1(batch, solution, DEFAULT_TOLERANCES)
        outcome = lp1_outcomes(checked["verdict"], ref["truth"], ref.get("ambiguous"))
    elif batch.kind in problems.QP_KINDS:
        checked = verify_qp(batch, solution, DEFAULT_TOLERANCES)
        judged = qp_outcomes(checked, ref, DEFAULT_TOLERANCES)
        checked = checked.assign(rel_gap=judged["rel_gap"])
        outcome = judged["outcome"].to_numpy()
        for key, values in solution.extras.items():  # e.g. altproj's max_utilization
            checked[f"extra_{key}"] = np.asarray(values, dtype=float)
    else:
        checked = verify_exit(batch, solution, DEFAULT_TOLERANCES)
        outcome = exit_outcomes(checked["verdict"], checked["exit"], ref["ref_exit"], ref["ref_verdict"],
                                DEFAULT_TOLERANCES)
    median_ms = float(np.median(times) * 1e3)
    q75, q25 = np.percentile(times * 1e3, [75, 25])
    cell_cols = {
        "solver_label": adapter.label, "profile": adapter.profile,
        "status": [s.value for s in solution.status], "native_status": solution.native_status.astype(str),
        "message": solution.message.astype(str), "iterations": solution.iterations,
        "objective": solution.objective, "outcome": outcome, "error_type": "", "error": "",
        "repeats": cell.repeats, "ms_batch_median": median_ms, "ms_batch_min": float(times.min() * 1e3),
        "ms_batch_iqr": float(q75 - q25), "first_call_ms": first * 1e3,
        "compile_s": max(first - float(np.median(times)), 0.0),
        "ms_per_256": median_ms * CASES_PER_REPORT / cell.n, "us_per_lp": median_ms * 1e3 / len(batch),
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    return pd.concat([rows, checked.reset_index(drop=True), pd.DataFrame(cell_cols)], axis=1)


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
    """Worker loop: say ``"ready"``, then receive a job, run its cell with C-level
    stdout/stderr in the cell's log file, write the cell's parquet, answer ``"ok"``; stop on
    ``None``. The worker dies with its parent and never writes once the parent is gone."""
    _die_with_parent(parent_pid)
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        cell_data, env, run_id, out, log, cache, batches = job
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        try:
            cell = Cell.from_dict(cell_data)
            rows = solve_cell(cell, env, run_id, Path(cache) if cache else None, Path(batches))
            if os.getppid() != parent_pid:
                os._exit(0)  # orphaned: the run is over, nothing may be written
            write_cell(rows, Path(out))
            answer = "ok"
        except Exception:  # the parent records it as a crashed cell with the log tail
            traceback.print_exc()
            answer = "error"
        sys.stdout.flush()
        sys.stderr.flush()
        conn.send(answer)


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


def worker_xla_flags(current: str | None) -> str:
    """XLA_FLAGS for a worker: the user's, plus ``WORKER_XLA_FLAG`` unless they set it."""
    current = current or ""
    if "xla_cpu_multi_thread_eigen" in current:
        return current
    return f"{current} {WORKER_XLA_FLAG}".strip()


class _Worker:
    """One reusable worker process (see module docstring); ``run`` returns (state, reason)."""

    def __init__(self, ctx) -> None:
        self.conn, child = ctx.Pipe()
        self.ready = False
        self.proc = ctx.Process(target=_serve, args=(child, os.getpid()), daemon=True)
        saved = os.environ.get("XLA_FLAGS")
        os.environ["XLA_FLAGS"] = worker_xla_flags(saved)  # inherited by the spawned worker
        try:
            self.proc.start()
        finally:
            if saved is None:
                os.environ.pop("XLA_FLAGS", None)
            else:
                os.environ["XLA_FLAGS"] = saved
        child.close()

    def cpu_seconds(self) -> float | None:
        """User + system CPU seconds of the worker (Linux ``/proc``), None where unknown."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def run(self, job: tuple, timeout: float, stall: float | None = None) -> tuple[str, str]:
        """Send a job and wait for it: ``done``, ``timeout``, ``stalled`` (no CPU used for
        ``stall`` seconds: a wedged runtime, see ``WORKER_XLA_FLAG``) or ``crashed``."""
        stall = STALL_SECONDS if stall is None else stall
        try:
            if not self.ready:  # start-up (spawn, imports) is not part of any cell's time
                if not self.conn.poll(STARTUP_SECONDS) or self.conn.recv() != "ready":
                    self.kill()
                    return "crashed", f"worker did not start within {STARTUP_SECONDS:g} s"
                self.ready = True
            self.conn.send(job)
            started = time.monotonic()
            last_cpu, last_change = self.cpu_seconds(), time.monotonic()
            while not self.conn.poll(min(STALL_POLL, max(timeout - (time.monotonic() - started), 0.0))):
                now = time.monotonic()
                if now - started >= timeout:
                    self.kill()
                    return "timeout", f"cell exceeded the {timeout:g} s timeout and was killed"
                cpu = self.cpu_seconds()
                if cpu is None or last_cpu is None or cpu - last_cpu > 0.05:
                    last_cpu, last_change = cpu, now
                elif now - last_change >= stall:
                    self.kill()
                    return "stalled", f"worker used no CPU for {stall:g} s (wedged) and was killed"
            answer = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.proc.join(5)
            return "crashed", f"worker exited with code {self.proc.exitcode} without results"
        return ("done", "") if answer == "ok" else ("crashed", "worker raised outside the solver")

    @property
    def alive(self) -> bool:
        return self.proc.is_alive()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(10)
        self.kill()


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_cells(cells: list[Cell], run_dir: Path, run_id: str, *, timeout: float = 600.0,
              resume: bool = False, cache_dir: Path | None = None,
              on_start: Callable[[Cell], None] | None = None,
              on_done: Callable[[CellResult], None] | None = None) -> list[CellResult]:
    """Run every cell in its own worker; returns one ``CellResult`` per cell, in order.

    ``timeout`` is in seconds per cell (warm-up and repeats included). References are
    computed here once per distinct problem set, before the workers start.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "logs").mkdir(exist_ok=True)
    env = host_environment()
    ctx = mp.get_context("spawn")
    results = []
    batches: dict[tuple, tuple] = {}
    workers: dict[str, _Worker] = {}
    try:
        for cell in cells:
            results.append(_run_one(cell, run_dir, run_id, timeout, resume, cache_dir, env, ctx, batches, workers,
                                    on_start, on_done))
    finally:
        for worker in workers.values():
            worker.close()
    return results


def _run_one(cell: Cell, run_dir: Path, run_id: str, timeout: float, resume: bool, cache_dir: Path | None,
             env: dict[str, str], ctx, batches: dict, workers: dict, on_start, on_done) -> CellResult:
    """Run one cell in the worker of its dtype and return what the parent learnt."""
    path = run_dir / f"{cell.cell_id}.parquet"
    if on_start:
        on_start(cell)
    started = time.perf_counter()
    if resume and cell_finished(path):
        result = CellResult(cell, "skipped", path, None, 0.0, "finished in an earlier attempt")
    else:
        if cell.problem_key not in batches:
            name = batch_name(cell)
            if (run_dir / "batches" / f"{name}.json").exists():  # resumed run: same bytes as before
                batch = problems.ProblemBatch.load(run_dir / "batches", name)
            else:
                batch = batch_for(cell)
                batch.save(run_dir / "batches", name)
            batches[cell.problem_key] = (batch, reference(batch, cache_dir=cache_dir))
        batch, ref = batches[cell.problem_key]
        log = run_dir / "logs" / f"{cell.cell_id}.log"
        worker = workers.get(cell.dtype)
        if worker is None or not worker.alive:
            worker = workers[cell.dtype] = _Worker(ctx)
        job = (cell.to_dict(), env, run_id, str(path), str(log), str(cache_dir) if cache_dir else None,
               str(run_dir / "batches"))
        state, reason = worker.run(job, timeout)
        if state == "stalled":  # wedged, not slow: once more in a fresh worker
            worker = workers[cell.dtype] = _Worker(ctx)
            state, reason = worker.run(job, timeout)
            if state != "done":
                reason = f"{reason} (also on a retry in a fresh worker)"
        if state == "done" and not path.exists():
            state, reason = "crashed", "worker answered without writing results"
        if state != "done":
            worker.kill()  # a fresh worker takes the next cell of this dtype
            reason = f"{reason}\n{_log_tail(log)}"
            write_cell(failed_rows(cell, batch, ref, env, run_id, state, reason), path)
        rows = read_cell(path)
        if state == "done" and (rows["error_type"] != "").any():
            state, reason = "failed", str(rows["error"].iloc[0]).splitlines()[0]
        result = CellResult(cell, state, path, rows, time.perf_counter() - started, reason)
    if on_done:
        on_done(result)
    return result


def write_manifest(run_dir: Path, data: dict) -> None:
    """Write ``run.json`` (run id, command line, grid, skipped cells, tolerances) atomically."""
    write_json_atomic(run_dir / "run.json", data)


def point_latest(out: Path, run_dir: Path) -> None:
    """Make ``out/latest`` a relative symlink to ``run_dir`` (replaced atomically)."""
    link = out / "latest"
    tmp = out / f".latest.{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(os.path.relpath(run_dir, out), tmp)
    os.replace(tmp, link)
