"""Cells on Dask distributed: an embedded ``LocalCluster`` or an existing cluster.

The client (``contactbench run``, ``bench.engine.runner``) generates each problem set once,
computes the references its cache lacks as Dask tasks (in chunks of
``bench.engine.reference.CHUNK_CASES``), and submits one task per cell. A task regenerates its
batch from ``(family, params, n, seed)`` (generators are pure) and refuses to run when its
content hash differs from the client's, runs the cell in a supervised child process
(``bench.engine.execute.LocalPool``: timeout, crash and stall isolation, as on one machine) and
returns the rows as Arrow IPC bytes. Problem arrays never travel through the scheduler; the
client alone writes each cell, atomically.

Placement: a ``gpu`` cell asks for the worker resource ``GPU``; with ``--exclusive`` a cell
holds a cluster-wide lock named after its host while it runs. A worker that dies is
survived: the scheduler retries its cell once elsewhere (``allowed-failures`` = 1), then the
cell is recorded ``failed`` with the reason. In full: docs/dask-engine.md."""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import socket
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from solvers import BatchSolution
from solvers.errors import BenchError, ProblemError

from bench.engine import dask_worker
from bench.engine.cell import batch_for, batch_name, failed_rows, saved_or_new_batch
from bench.engine.env import host_environment
from bench.engine.grid import Cell
from bench.engine.reference import cached_answers, cached_reference, chunks, missing_chunks, solve_reference, store_reference
from bench.engine.rundir import read_cell
from bench.engine.states import CellState

#: seconds the client waits for an existing scheduler before giving up (exit 2)
CONNECT_TIMEOUT = 10.0
#: settings of the embedded cluster (and advised for external ones, see README)
DASK_CONFIG = {
    # a task may start the cell's supervised child process (multiprocessing refuses
    # children of daemonic processes, which Dask workers are by default)
    "distributed.worker.daemon": False,
    # a cell whose worker died is retried once on another worker, then reported KilledWorker
    "distributed.scheduler.allowed-failures": 1,
    # a worker holds only the cells it runs (one per thread), not a queue of them: a cell
    # waits at the scheduler, so a worker that dies takes only its running cell along
    "distributed.scheduler.worker-saturation": 1.0,
    # every worker runs ``bench.engine.dask_worker.dask_setup`` when it starts (quiet shutdown, warm pools)
    "distributed.worker.preload": ["bench.engine.dask_worker"],
    # the reference answers scattered to every worker stay on every worker: the Active Memory
    # Manager (ReduceReplicas, every 2 s) would drop all copies but one, and the cells that
    # need them were cancelled ("lost", unwritten) when that one's worker died
    "distributed.scheduler.active-memory-manager.start": False,
}


@contextlib.contextmanager
def replicas_kept(client):
    """While the block runs, the scheduler of ``client`` keeps every replica of scattered
    data: its Active Memory Manager is stopped (and started again after, if it ran). A run
    scatters its reference answers to every worker (``references``) so that a copy survives
    a worker that dies; on a cluster not started here (``--scheduler``), the manager would
    reduce them to one. (Stopping it holds for the whole cluster while the run lasts.)"""
    try:
        running = bool(client.amm.running())
    except Exception:
        running = False
    if running:
        client.amm.stop()
    try:
        yield
    finally:
        if running:
            try:
                client.amm.start()
            except Exception:
                pass


def connect(scheduler: str | None = None, workers: int = 1, resources: dict[str, float] | None = None,
            warm: tuple[str, ...] = ()):
    """``(client, cluster)``: a client of the cluster at ``scheduler`` (cluster None), or of a
    new embedded ``LocalCluster`` of ``workers`` single-threaded worker processes (one CPU
    worker runs as a thread of this process instead: ``in_process``).

    ``warm``: the dtypes whose cell processes every worker starts at once (``warm_pools``),
    so that their start-up overlaps the client's work before the first cell: an embedded
    worker as it starts (``bench.engine.dask_worker.WARM_ENV``), the workers of ``scheduler``
    once connected.

    ``resources`` are the embedded cluster's, in all (``{"GPU": 2}``: two GPUs here), not each
    worker's: each unit goes to one worker (``gpu_worker_specs``), so a GPU runs one cell at a
    time however many workers share the machine.

    ``ProblemError`` naming ``--scheduler`` when it cannot be reached within
    ``CONNECT_TIMEOUT`` seconds, or ``--workers`` when it is not a positive integer."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        check_scheduler_address(scheduler)
        try:
            with dask.config.set(DASK_CONFIG):
                client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s", set_as_default=False)
        except Exception as exc:
            raise ProblemError(f"--scheduler: cannot reach {scheduler!r} within {CONNECT_TIMEOUT:g} s "
                               f"({type(exc).__name__}: {exc})") from None
        warm_pools(client, warm)
        return client, None
    check_workers(workers)
    gpus = int((resources or {}).get("GPU", 0))
    threaded = in_process(workers, gpus)
    with dask.config.set(DASK_CONFIG):
        cluster = LocalCluster(n_workers=0, threads_per_worker=1, processes=not threaded, dashboard_address=":0",
                               silence_logs=logging.ERROR)
        specs = gpu_worker_specs(cluster.new_spec, workers, gpus)
        if not threaded:  # (a thread shares this process's environment: it is warmed below instead)
            for spec in specs.values():
                options = spec.setdefault("options", {})
                options["env"] = {**options.get("env", {}), dask_worker.WARM_ENV: ",".join(warm),
                                  dask_worker.EMBEDDED_ENV: "1"}
        cluster.worker_spec.update(specs)
        cluster.scale(workers)  # starts the workers just specified
        client = Client(cluster, set_as_default=False)
        from bench.engine.execute import STARTUP_SECONDS

        try:
            client.wait_for_workers(workers, timeout=STARTUP_SECONDS)
        except TimeoutError:
            started = len(client.scheduler_info().get("workers", {}))
            client.close()
            cluster.close()
            raise BenchError(f"--workers: {started} of {workers} embedded Dask worker(s) started within "
                             f"{STARTUP_SECONDS:g} s; see the workers' log above") from None
        if threaded:  # its cell processes start from the worker's event loop, as a process's would
            warm_pools(client, warm)
        return client, cluster


def in_process(workers: int, gpus: int) -> bool:
    """Whether an embedded cluster of ``workers`` workers, ``gpus`` of them holding a GPU,
    runs its one worker as a thread of this process (one CPU worker: no worker process to
    start and import) rather than in worker processes. Either way each cell runs in its own
    supervised child process (``bench.engine.dask_worker.worker_pool``)."""
    return workers == 1 and gpus == 0


def gpu_worker_specs(template: dict, workers: int, gpus: int) -> dict[int, dict]:
    """Dask worker specs (``SpecCluster.worker_spec``) of ``workers`` workers built from
    ``template``, the first ``min(gpus, workers)`` of which hold one GPU each: the worker
    resource ``GPU: 1`` and ``CUDA_VISIBLE_DEVICES`` set to that GPU (its index, or the
    ``i``-th entry of the user's own ``CUDA_VISIBLE_DEVICES``; dask-cuda's layout), the others
    no GPU resource.

    A ``gpu`` cell asks for ``GPU: 1``, so at most one cell runs on each GPU at a time. Before,
    every worker of an embedded cluster was given all the GPUs: on one H200 with 8 workers,
    8 GPU cells ran at once, shared the card and timed each other (``make gpu-check``'s scaling
    step, docs/gpu-scale.md)."""
    import copy

    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    specs = {}
    for i in range(workers):
        spec = copy.deepcopy(template)
        if i < gpus:
            options = spec.setdefault("options", {})
            options["resources"] = {**options.get("resources", {}), "GPU": 1}
            options["env"] = {**options.get("env", {}), "CUDA_VISIBLE_DEVICES": visible[i] if i < len(visible) else str(i)}
        specs[i] = spec
    return specs


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; ``os.cpu_count()`` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_workers(workers) -> int:
    """``workers`` when it is an integer from 1 to ``usable_cores()`` (each embedded worker
    runs one cell, on one core: more would only queue cells behind each other's start-up and
    share cores between timings), else ``ProblemError`` naming ``--workers``."""
    cores = usable_cores()
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ProblemError(f"--workers: expected an integer >= 1, got {workers!r}")
    if workers > cores:
        raise ProblemError(f"--workers: this machine lets contactbench use {cores} core(s), and each worker "
                           f"runs one cell on one core; expected at most {cores}, got {workers}")
    return workers


#: the address schemes ``--scheduler`` takes: plain TCP (``tls``/``wss`` need a security
#: configuration contactbench does not take; ``ucx`` needs UCX-Py and its network)
SCHEDULER_SCHEMES = ("tcp",)


def check_scheduler_address(address: str) -> None:
    """``ProblemError`` naming ``--scheduler`` unless ``address`` is ``HOST:PORT`` or
    ``tcp://HOST:PORT`` (``SCHEDULER_SCHEMES``) with a port from 1 to 65535: a bad address
    fails now, not after a connection timeout."""
    from distributed.comm.addressing import parse_address, parse_host_port

    expected = f"expected an address like tcp://HOST:8786, got {address!r}"
    try:
        scheme, location = parse_address(address, strict=False)
    except (TypeError, ValueError) as exc:
        raise ProblemError(f"--scheduler: {expected} ({exc})") from None
    if scheme not in SCHEDULER_SCHEMES:
        raise ProblemError(f"--scheduler: {expected}: the scheme {scheme!r} is not supported (only "
                           f"{', '.join(SCHEDULER_SCHEMES)}; TLS and UCX need settings contactbench does not take)")
    try:
        _host, port = parse_host_port(location)
    except (TypeError, ValueError):
        port = None
    if port is None or not 0 < int(port) < 65536:
        raise ProblemError(f"--scheduler: {expected}: give the scheduler's port (HOST:PORT)")


def local_resources(cells: list[Cell]) -> dict[str, float] | None:
    """Resources of an embedded cluster for ``cells``, in all: ``GPU`` = the GPUs JAX sees
    here when a cell needs one (JAX is imported only then), else none. ``connect`` gives each
    GPU to one worker."""
    from bench.engine.env import gpu_count

    return {"GPU": gpu_count()} if any(c.device == "gpu" for c in cells) else None


def no_gpu_reason(client) -> str | None:
    """Why no ``gpu`` cell can run on the cluster of ``client`` (no worker declares the
    resource ``GPU``), or None."""
    workers = client.scheduler_info().get("workers", {}).values()
    if any(w.get("resources", {}).get("GPU", 0) > 0 for w in workers):
        return None
    return ("no worker of the Dask cluster has a GPU (the worker resource GPU): start one worker per GPU "
            "with --resources GPU=1")


@contextlib.contextmanager
def embedded(workers: int = 1, resources: dict[str, float] | None = None):
    """A client of a new embedded ``LocalCluster`` (see ``connect``), closed with its cluster
    on leaving the block. Whatever it started dies with this process (SIGKILL included): a
    worker process's nanny watches its parent, and a cell's child process has ``PR_SET_PDEATHSIG``."""
    client, cluster = connect(None, workers, resources)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


# ------------------------------------------------------------------ worker side
def warm_pools(client, dtypes: list[str]) -> None:
    """Start every worker's cell processes of ``dtypes`` now (spawn and imports, about half a
    second each), while the client still generates the problem sets and references, instead
    of when each worker's first cell arrives. Best effort: a worker that cannot (an older
    contactbench, gone) starts them with its first cell, as before."""
    try:
        client.run(dask_worker.warm_pool, list(dtypes))
    except Exception:
        pass


def _worker_batch(cell: Cell, expected_hash: str):
    """The cell's problem set on this worker, generated once and kept for the next chunk of
    its reference (the last one only); ``ProblemError`` when it is not the client's."""
    from distributed import get_worker

    worker = get_worker()
    kept = getattr(worker, "_contactbench_batch", None)
    if kept is not None and kept[0] == expected_hash:
        return kept[1]
    worker._contactbench_batch = None  # free the last one before generating the next
    batch = batch_for(cell)
    if batch.content_hash() != expected_hash:
        raise ProblemError(f"{cell.family_label}: the worker generated other problems than the client "
                           "(content hash differs): different contactbench versions?")
    worker._contactbench_batch = (expected_hash, batch)
    return batch


def reference_task(cell: Cell, expected_hash: str, part: slice):
    """On a worker: the reference's answers for the cases ``part`` (one chunk,
    ``bench.engine.reference.chunks``) of the cell's problem set (generated on the worker)."""
    return solve_reference(_worker_batch(cell, expected_hash).subset(part))


def cell_task(cell: Cell, run_id: str, timeout: float, stall: float, expected_hash: str, ref_solution,
              exclusive: bool = False, topic: str | None = None) -> dict[str, Any]:
    """On a worker: run one cell in a supervised child process (``timeout`` and ``stall`` in
    seconds, see ``bench.engine.execute``) against the reference answers ``ref_solution`` (scattered
    once by the client: a future in the task, the data on the worker) and return ``state``, ``reason``, ``rows`` (Arrow IPC
    bytes), ``log`` (the tail of the cell's output), ``host`` and ``worker``. With
    ``exclusive`` the cell holds the cluster-wide lock of its host while it runs: one timed
    cell per host. The cell's key is announced on the event ``topic`` when it starts."""
    if exclusive:
        from distributed import Lock

        with Lock(f"contactbench-host-{os.environ.get('CONTACTBENCH_HOST') or socket.gethostname()}"):
            return cell_task(cell, run_id, timeout, stall, expected_hash, ref_solution, False, topic)
    worker, pool = dask_worker.worker_pool()
    if topic:
        worker.log_event(topic, worker.get_current_task())
    missing = _missing_adapter(cell)
    if missing:  # as on one machine: skipped with the reason, not counted against the solver
        return {"state": CellState.UNAVAILABLE, "reason": f"on worker {worker.name} ({socket.gethostname()}): {missing}",
                "rows": None, "log": "", "host": socket.gethostname(), "worker": str(worker.name)}
    work = Path(worker.local_directory) / "contactbench" / run_id
    (work / "logs").mkdir(parents=True, exist_ok=True)
    env = {**host_environment(), "env_worker": str(worker.name), "env_worker_address": str(worker.address)}
    batch, saved = saved_or_new_batch(cell, work / "batches")  # one generation per problem set and worker
    cache = work / "cache"
    # the answers in this worker's cache (verified once per problem set and worker, when written);
    # the cell's process reads them back and verifies them, once per cell
    _cache_reference(batch, ref_solution, cache)
    if batch.content_hash() != expected_hash:
        state, reason = CellState.FAILED, ("the worker generated other problems than the client (content hash differs): "
                                   "different contactbench versions on client and worker?")
        rows = failed_rows(cell, batch, _worker_reference(batch, ref_solution, cache), env, run_id, state, reason)
    else:
        if not saved:  # only a batch whose hash matched is kept for the next cells
            batch.save(work / "batches", batch_name(cell))
        out, log = work / f"{cell.cell_id}.parquet", work / "logs" / f"{cell.cell_id}.log"
        from bench.engine.execute import cell_job

        job = (cell_job, (cell, env, run_id, str(out), str(log), str(cache), str(work / "batches")))
        state, reason = pool.run(job, cell.dtype, timeout, stall)
        if state == CellState.DONE and out.exists():
            rows = read_cell(out)
        else:
            from bench.engine.execute import log_tail

            reason = f"{reason or 'worker answered without writing results'}\n{log_tail(log)}"
            state = state if state != CellState.DONE else CellState.CRASHED
            rows = failed_rows(cell, batch, _worker_reference(batch, ref_solution, cache), env, run_id, state, reason)
        for path in (out, out.with_suffix(".json")):
            path.unlink(missing_ok=True)
    log = _read_tail(work / "logs" / f"{cell.cell_id}.log")
    return {"state": state, "reason": reason, "rows": _to_arrow(rows), "log": log, "host": socket.gethostname(),
            "worker": str(worker.name)}


def _cache_reference(batch, ref_solution, cache: Path) -> None:
    """Write the reference answers ``ref_solution`` of ``batch`` into this worker's cache
    where an earlier cell of the problem set has not (``store_reference``)."""
    if missing_chunks(batch, cache_dir=cache):
        store_reference(batch, ref_solution, cache_dir=cache)


def _worker_reference(batch, ref_solution, cache: Path) -> pd.DataFrame:
    """The reference rows of ``batch`` on this worker, from its cache when an earlier cell of
    the problem set wrote it there, else from the scattered answers (then cached for the
    cell's process and the next cells)."""
    if not missing_chunks(batch, cache_dir=cache):
        rows = [cached_reference(batch.subset(part), cache_dir=cache) for part in chunks(batch)]
        if all(r is not None for r in rows):
            return pd.concat(rows, ignore_index=True)
    return store_reference(batch, ref_solution, cache_dir=cache)


def _missing_adapter(cell: Cell) -> str | None:
    """Why this worker cannot run the cell's adapter (its package is missing), or None."""
    import solvers
    from solvers.errors import SolverNotAvailable

    try:
        solvers.adapter_class(cell.adapter_spec.name).check_available()
    except SolverNotAvailable as exc:
        return str(exc)
    return None


#: at most this many characters of a cell's output travel back to the client
LOG_CHARS = 200_000


def _read_tail(path: Path) -> str:
    """The last ``LOG_CHARS`` characters of a log file ('' when there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text if len(text) <= LOG_CHARS else f"[... {len(text) - LOG_CHARS} characters cut]\n" + text[-LOG_CHARS:]


def _to_arrow(rows: pd.DataFrame) -> bytes:
    import pyarrow as pa

    sink = io.BytesIO()
    table = pa.Table.from_pandas(rows, preserve_index=False)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def from_arrow(data: bytes) -> pd.DataFrame:
    """The rows a ``cell_task`` returned (Arrow IPC stream bytes) as a DataFrame."""
    import pyarrow as pa

    return pa.ipc.open_stream(io.BytesIO(data)).read_all().to_pandas()


# ------------------------------------------------------------------ client side
def references(client, cells: list[Cell], batches: dict, cache_dir: Path | None) -> None:
    """Fill the reference ``rows`` and ``answers`` of each problem set of ``batches``
    (problem key -> ``bench.engine.problemsets.ProblemSet``): chunk by chunk
    (``bench.engine.reference.chunks``) from the client's cache, or computed as Dask tasks, one per
    missing chunk, spread over every worker, and cached here. The answers are scattered to
    the cluster once per problem set (``answers`` is that future): cell tasks carry the
    future, never the arrays."""
    submitted: dict[tuple, list] = {}
    for cell in cells:
        entry = batches.get(cell.problem_key)
        if entry is None or entry.rows is not None or cell.problem_key in submitted:
            continue
        batch, digest = entry.batch, entry.digest
        parts = []
        for part in chunks(batch):
            found = cached_answers(batch.subset(part), cache_dir=cache_dir)
            parts.append((part, found) if found is not None else
                         (part, client.submit(reference_task, cell, digest, part, pure=False,
                                              key=f"contactbench-reference-{uuid.uuid4().hex}")))
        submitted[cell.problem_key] = parts
    for key, parts in submitted.items():
        entry = batches[key]
        rows, answers = [], []
        for part, found in parts:
            if not isinstance(found, tuple):  # a future: solved on a worker, cached here
                solution = found.result()
                found = (store_reference(entry.batch.subset(part), solution, cache_dir=cache_dir), solution)
            rows.append(found[0])
            answers.append(found[1])
        solution = answers[0] if len(answers) == 1 else BatchSolution.concat(answers)
        entry.rows = pd.concat(rows, ignore_index=True)
        # on every worker (a copy survives a worker that dies; one transfer per worker)
        entry.answers = client.scatter(solution, hash=False, broadcast=True)


def cell_key(run_id: str, cell: Cell) -> str:
    """The Dask key of a cell's task: one key group (``contactbench-cell``) for every cell, so
    that the scheduler queues them and hands a worker only as many as it has threads."""
    return f"contactbench-cell-{hashlib.sha256(f'{run_id}/{cell.cell_id}'.encode()).hexdigest()[:32]}"


def start_topic(run_id: str) -> str:
    """The Dask event topic on which a worker announces the key of each cell it starts."""
    return f"contactbench-start-{run_id}"


def dask_environment(config: dict | None = None) -> dict[str, str]:
    """``DASK_CONFIG`` (or ``config``) as the environment variables Dask reads at start-up
    (``distributed.scheduler.worker-saturation`` -> ``DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION``):
    how a worker started elsewhere (a SLURM job, ``dask worker`` by hand) gets the same
    settings as the embedded cluster."""
    out = {}
    for key, value in (DASK_CONFIG if config is None else config).items():
        name = "DASK_" + "__".join(part.upper().replace("-", "_") for part in key.split("."))
        out[name] = str(value)
    return out


# ------------------------------------------------------------------ HPC clusters
def shell_export(name: str, value: str) -> str:
    """``export NAME="value"``, a line of a job script: inside the double quotes the shell
    neither splits nor globs the value (``['bench.engine.cluster']`` arrives as written, quotes
    and brackets included), while ``$VAR`` and ``${VAR:-default}`` still expand. ``\\``,
    ``"`` and backticks in ``value`` are escaped."""
    escaped = "".join("\\" + ch if ch in '\\"`' else ch for ch in value)
    return f'export {name}="{escaped}"'


def slurm_cluster(jobs: int, cores: int, memory: str, gpus: int = 0, walltime: str = "01:00:00",
                  queue: str | None = None, account: str | None = None, python: str | None = None,
                  env: dict[str, str] | None = None, dashboard: bool = True):
    """A ``dask_jobqueue.SLURMCluster`` whose jobs each run one Dask worker with ``cores``
    single-threaded processes (one cell at a time each) or, with ``gpus``, one worker process
    per GPU holding the resource ``GPU=1`` (``dask-cuda``'s layout), with the settings of
    ``DASK_CONFIG`` in the job's environment. Not started: call ``.scale(jobs=...)``; its
    ``job_script()`` is what ``sbatch`` receives. The user's dask config
    (``jobqueue.slurm``) fills what is not given. Without ``dashboard`` its scheduler's HTTP
    server (the dashboard's) takes any free port instead of 8787 (``--script-only``: a script
    printed and the scheduler closed at once, which took 8787 from whatever served there next,
    or warned that it was in use)."""
    from dask_jobqueue import SLURMCluster

    import re
    import shlex

    from dask.utils import parse_bytes

    if jobs < 1 or cores < 1 or gpus < 0:
        raise ProblemError(f"--jobs, --cores: expected >= 1 and --gpus >= 0, got {jobs}, {cores}, {gpus}")
    try:
        if parse_bytes(memory) <= 0:
            raise ValueError(memory)
    except (ValueError, TypeError):
        raise ProblemError(f"--memory: expected a size such as 16GB or 512MiB, got {memory!r}") from None
    if not re.fullmatch(r"(\d+-)?\d{1,3}(:\d{2}){0,2}", walltime):
        raise ProblemError(f"--walltime: expected a SLURM time such as 01:00:00 or 1-12:00:00, got {walltime!r}")
    python = shlex.quote(python) if python is not None else None  # pasted into the job script's command line
    processes = gpus if gpus else cores
    prologue = [shell_export(key, value) for key, value in sorted({
        **dask_environment(), "CONTACTBENCH_CACHE": "${TMPDIR:-/tmp}/contactbench-cache", **(env or {})}.items())]
    extra_directives = [f"--gres=gpu:{gpus}"] if gpus else []
    worker_args = ["--nthreads", "1"] + (["--resources", "GPU=1"] if gpus else [])  # (the last --nthreads wins)
    import dask

    with dask.config.set(DASK_CONFIG):  # the scheduler runs in this process
        return SLURMCluster(cores=cores, processes=processes, memory=memory, walltime=walltime, queue=queue,
                            account=account, python=python, job_extra_directives=extra_directives,
                            worker_extra_args=worker_args, job_script_prologue=prologue, n_workers=0,
                            job_name="contactbench", scheduler_options={} if dashboard else {"dashboard_address": ":0"})
