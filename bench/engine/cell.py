"""One cell's computation, in the process that runs it: pure but for the solver's timing.

``solve_cell(cell, env, run_id)``: regenerate the batch (generators are pure), load the
cached float64 reference, time the solve (``solvers.timing.timed_solve``: one warm-up
end-to-end call recorded as ``first_call_ms`` / ``compile_s``, then ``repeats`` timed
end-to-end calls, each also timed in its ``run``: ``end_to_end_*`` and the solve columns,
and the share of their runnable time the machine let them run, ``cpu_share``), record the
process's peak resident memory during the cell (``peak_rss_mb``) and, for JAX adapters,
the device's peak memory and model, then verify and judge through the batch's kind and
return one row per problem. A solver exception becomes ``failed`` rows carrying
its type and traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

import problems
from solvers import STATUS_TEXT, check_standard_form
from solvers.types import text_column
from solvers.timing import repeat_orders, timed_solve

from bench.engine.env import device_memory, jax_devices, malloc_settings, peak_rss_mb, reset_peak_rss, solver_versions
from bench.engine.grid import Cell
from bench.engine.reference import reference
from bench.engine.schema import REPEAT_COLUMNS
from bench.engine.verify import DEFAULT_TOLERANCES, judge

#: ``ms_per_256`` reports milliseconds per this many scenes.
CASES_PER_REPORT = 256


def _on_jax(adapter) -> bool:
    """Whether the adapter computes with JAX (a JAX adapter, or one with ``backend=jax``)."""
    from solvers import _jax

    return isinstance(adapter, _jax.JaxBatchedAdapter) or adapter.settings.get("backend") == "jax"


def devices_seen(adapter) -> str:
    """``env_jax_devices``: JAX's devices in this process (``bench.engine.env.jax_devices``) where the
    adapter computes with JAX, '' where it does not: a HiGHS cell never imports JAX (1.3 s of a
    fresh worker's start). Where the adapter could not be built (``None``), JAX's devices if
    the attempt imported JAX, else ''."""
    import sys

    if adapter is None:
        return jax_devices() if "jax" in sys.modules else ""
    return jax_devices() if _on_jax(adapter) else ""


def jax_matmul_precision(adapter) -> str:
    """The matmul precision the adapter's JAX solve ran with (``solvers._jax.MATMUL_PRECISION``),
    or '' for an adapter that does not compute with JAX."""
    from solvers import _jax

    return _jax.MATMUL_PRECISION if _on_jax(adapter) else ""


def jax_compilation_cache(adapter) -> str:
    """The folder of JAX's persistent compilation cache in this worker (JAX's
    ``jax_compilation_cache_dir``, set by the user through ``JAX_COMPILATION_CACHE_DIR``), or
    '' where there is none or the adapter does not compute with JAX. With one, a program an
    earlier run compiled is read back, so ``compile_s`` measures a cache read, not a compile."""
    if not _on_jax(adapter):
        return ""
    from solvers import _jax

    return str(_jax.import_jax().config.jax_compilation_cache_dir or "")


def batch_for(cell: Cell) -> problems.ProblemBatch:
    """The cell's problem batch (pure function of the cell's problem fields)."""
    return problems.generate(cell.family, cell.n, cell.seed)


def batch_name(cell: Cell) -> str:
    """File name of the cell's saved batch: one per distinct problem set of a run."""
    return hashlib.sha256(repr(cell.problem_key).encode()).hexdigest()[:16]


def saved_or_new_batch(cell: Cell, folder: Path) -> tuple[problems.ProblemBatch, bool]:
    """``(batch, saved)``: the cell's batch as an earlier cell saved it under ``folder``
    (``saved`` True: the same bytes as before), else generated now (not yet saved)."""
    name = batch_name(cell)
    if (folder / f"{name}.json").exists():
        return problems.ProblemBatch.load(folder, name), True
    return batch_for(cell), False


def base_rows(cell: Cell, batch: problems.ProblemBatch, ref: pd.DataFrame, env: dict[str, str],
              run_id: str) -> pd.DataFrame:
    """Identity, parameters (``meta_*``) and reference columns, one row per problem of the batch."""
    spec = cell.adapter_spec
    same = np.zeros(len(batch), dtype=np.int64)

    def text(value):  # one string on every row: a column of one name (text_column), not B strings converted
        return text_column([value], same) if isinstance(value, str) else [value] * len(batch)

    head = pd.DataFrame({
        "run_id": text(run_id), "cell_id": text(cell.cell_id), "family": text(cell.family.name),
        "family_label": text(cell.family_label), "kind": text(cell.kind),
        "family_params": text(json.dumps(cell.params, sort_keys=True)), "n_scenes": cell.n,
        "n_lps": len(batch), "seed": cell.seed, "solver": text(spec.name), "solver_spec": text(str(cell.solver)),
        "settings": text(json.dumps({"profile": spec.profile, **spec.settings} if spec.profile != "default"
                                    else spec.settings, sort_keys=True, default=str)),
        "dtype": text(cell.dtype), "device": text(cell.device), "lp_index": np.arange(len(batch)),
        "generator_version": int(batch.params.get("generator_version", 1)),
        "family_cases": most if (most := cell.family.family.most_scenes(cell.params)) is not None else -1,
        "case_hash": batch.case_hashes(),
    })
    env_cols = pd.DataFrame({k: text(v) for k, v in env.items()}, index=pd.RangeIndex(len(batch)))
    return pd.concat([head, batch.meta.add_prefix("meta_"), ref.reset_index(drop=True), env_cols], axis=1)


def failed_rows(cell: Cell, batch: problems.ProblemBatch, ref: pd.DataFrame, env: dict[str, str],
                run_id: str, error_type: str, error: str) -> pd.DataFrame:
    """Rows for a cell that produced no answers: every case ``failed`` with the reason."""
    rows = base_rows(cell, batch, ref, env, run_id)
    return rows.assign(verdict="failed", outcome="failed", status="error", error_type=error_type,
                       error=error[-4000:], solver_label=cell.solver.label)


def timing_columns(times_s: np.ndarray, first_s: float, n_scenes: int, n_problems: int,
                   end_to_end_s: np.ndarray | None = None) -> dict[str, float]:
    """The timing columns of a cell from its timed repeats (seconds, see
    ``solvers.timing``): each repeat's batch time in ms (``ms_repeats``,
    ``end_to_end_ms_repeats``: lists, the samples of the timing intervals),
    ``solve`` (``times_s``) batch median / min / IQR in ms, first call
    in ms, ``compile_s`` (first call minus a steady end-to-end call), ``ms_per_256`` (per 256
    scenes) and ``us_per_lp`` (per problem); the same three medians ``end_to_end_*`` from
    ``end_to_end_s`` (NaN when not given)."""
    ms = times_s * 1e3
    median_ms = float(np.median(ms))
    q75, q25 = np.percentile(ms, [75, 25])
    whole_ms = float(np.median(end_to_end_s)) * 1e3 if end_to_end_s is not None else float("nan")
    steady_s = (whole_ms if np.isfinite(whole_ms) else median_ms) / 1e3
    return {"ms_batch_median": median_ms, "ms_batch_min": float(ms.min()), "ms_batch_iqr": float(q75 - q25),
            "first_call_ms": first_s * 1e3, "compile_s": max(first_s - steady_s, 0.0),
            "ms_per_256": median_ms * CASES_PER_REPORT / n_scenes, "us_per_lp": median_ms * 1e3 / n_problems,
            "end_to_end_ms_batch_median": whole_ms,
            "end_to_end_ms_per_256": whole_ms * CASES_PER_REPORT / n_scenes,
            "end_to_end_us_per_lp": whole_ms * 1e3 / n_problems,
            "ms_repeats": [float(v) for v in ms],
            "end_to_end_ms_repeats": [float(v) * 1e3 for v in end_to_end_s] if end_to_end_s is not None else None}


def worst_of_repeats(batch: problems.ProblemBatch, solutions, ref: pd.DataFrame):
    """``(solution, judged rows)``: every timed repeat's answers verified (``judge``), and per
    case the answer of the repeat judged worst (``problems.kinds.checks.SEVERITY``; the last of equals),
    so that an answer a later repeat got wrong is never hidden behind an earlier right one."""
    from solvers import BatchSolution

    from problems.kinds.checks import SEVERITY

    judged = [judge(batch, s, ref, DEFAULT_TOLERANCES) for s in solutions]
    if len(judged) == 1:
        return solutions[0], judged[0]
    rank = {o: i for i, o in enumerate(SEVERITY)}
    severity = np.stack([j["outcome"].map(rank).fillna(0).to_numpy(dtype=int) for j in judged])[::-1]
    pick = len(judged) - 1 - np.argmin(severity, axis=0)  # the worst; among equals the last repeat
    index = pick * len(batch) + np.arange(len(batch))
    solution = BatchSolution.concat(list(solutions)).take(index)
    rows = pd.concat(judged, ignore_index=True).iloc[index].reset_index(drop=True)
    return solution, rows


def solve_cell(cell: Cell, env: dict[str, str], run_id: str, cache_dir: Path | None = None,
               batch_dir: Path | None = None) -> pd.DataFrame:
    """Run one cell in this process and return its rows (solver exceptions become failed rows).

    The batch is read from ``batch_dir`` when the parent saved it there, else generated.
    """
    started = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    name = batch_name(cell)
    if batch_dir is not None and (batch_dir / f"{name}.json").exists():
        batch = problems.ProblemBatch.load(batch_dir, name)
    else:
        batch = batch_for(cell)
    ref = reference(batch, cache_dir=cache_dir)
    digest = batch.content_hash()
    reset_peak_rss()
    adapter = None
    try:
        adapter = cell.adapter_spec.build()
        # the adapter gets read-only copies (``check_standard_form``); the verifier judges ``batch``
        problem = check_standard_form(*batch.arrays(), **batch.extra(), batched=True)
        timed = timed_solve(adapter, problem, cell.repeats, repeat_orders(len(batch), cell.repeats, cell.seed))
    except Exception as exc:  # recorded, never swallowed: the rows carry type and text
        env = {**env, "env_jax_devices": devices_seen(adapter)}
        return failed_rows(cell, batch, ref, env, run_id, type(exc).__name__, f"{exc}\n{traceback.format_exc()}")
    if batch.content_hash() != digest:  # the problems judged on must be the problems generated
        return failed_rows(cell, batch_for(cell), ref, {**env, "env_jax_devices": devices_seen(adapter)}, run_id,
                           "InputModified", "the adapter changed the problem arrays of the batch it was given; "
                           "its answers cannot be judged (an adapter must not write into its inputs)")
    rss_mb = peak_rss_mb()
    device_mb, model, device_id = device_memory(cell.device)
    if cell.device == "cpu":  # the CPU model says more than JAX's device kind ("cpu")
        model = str(env.get("env_cpu", ""))
    env = {**env, "env_jax_devices": devices_seen(adapter), "env_xla_flags": os.environ.get("XLA_FLAGS", ""),
           "env_malloc": malloc_settings(),
           "env_pjrt_nproc": os.environ.get("PJRT_NPROC", ""),
           "env_xla_preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", ""),
           "env_jax_matmul_precision": jax_matmul_precision(adapter),
           "env_jax_compilation_cache": jax_compilation_cache(adapter), "env_solver_versions": solver_versions(adapter)}
    rows = base_rows(cell, batch, ref, env, run_id)  # (env after the solve: its import is not timed)
    solution, checked = worst_of_repeats(batch, timed.solutions, ref)
    timing = timing_columns(timed.times_s, timed.first_s, cell.n, len(batch), timed.end_to_end_s)
    cell_cols = {
        "solver_label": adapter.label, "profile": adapter.profile,
        "status": text_column(STATUS_TEXT, solution.status), "native_status": solution.native_status.column(),
        "message": solution.message.column(), "iterations": solution.iterations,
        "objective": solution.objective, "error_type": "", "error": "", "repeats": cell.repeats,
        **{k: v for k, v in timing.items() if k not in REPEAT_COLUMNS},
        **{k: [timing[k]] * len(batch) for k in REPEAT_COLUMNS},
        "cpu_share": timed.cpu_share,
        "peak_rss_mb": rss_mb, "device_peak_mb": device_mb, "device_model": model, "device_id": device_id,
        "started": started, "timestamp": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
    }
    checked = checked.drop(columns=[c for c in checked if c in rows])
    return pd.concat([rows, checked.reset_index(drop=True), pd.DataFrame(cell_cols)], axis=1)
