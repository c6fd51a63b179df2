"""The float64 reference of a batch, cached on disk by content hash.

Each kind names its reference (``Kind.reference_solver``: HiGHS for hold LPs and plain LPs,
Clarabel at 1e-10 for QPs and SOCPs) and turns its answers into reference rows
(``Kind.reference_rows``: ``truth``, ``ref_delta``, ``ref_exit``, ``ref_verdict``, ...); this
module runs it and owns the cache. A batch of more than ``CHUNK_CASES`` cases is solved and
cached in chunks keyed by each chunk's own content, so a cluster computes a large reference
on every worker at once and a grown batch reuses the chunks it shares.

Trust rules: the reference solvers are the built-in adapter classes, imported directly (a
plug-in registering ``highs`` or ``clarabel`` cannot stand in for them); the cache stores the
reference's *answers* (``x``, duals, status) with the solver's identity, version and options
in the key, and the rows are recomputed from them by the verifier on every load; an entry
whose recomputed truth contradicts the stored one, or that does not read back, is
recomputed and replaced. What each kind's truth means: docs/verification.md."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from problems import ProblemBatch, get_kind
from solvers import BatchSolution

from bench.engine.rundir import write_bytes_atomic
from bench.engine.verify import DEFAULT_TOLERANCES, Tolerances

CACHE_ENV = "CONTACTBENCH_CACHE"
REFERENCE_VERSION = "6"  # bump when the verifier's rules change: a cached entry is checked against them


def default_cache_dir() -> Path:
    """``$CONTACTBENCH_CACHE`` or ``results/cache`` under the working directory."""
    return Path(os.environ.get(CACHE_ENV, "results/cache")) / "reference"


def reference_solver(batch: ProblemBatch) -> tuple | None:
    """``(adapter class, distribution, profile)`` of the reference for ``batch``'s kind
    (None when the kind computes its reference itself)."""
    return get_kind(batch.kind).reference_adapter()


def reference_identity(batch: ProblemBatch) -> dict[str, str]:
    """Which solver, at which version and with which options, computes ``batch``'s reference."""
    return get_kind(batch.kind).reference_identity()


def solve_reference(batch: ProblemBatch) -> BatchSolution:
    """The reference's raw float64 answers for ``batch`` (its kind's built-in code path)."""
    return get_kind(batch.kind).solve_reference(batch)


def reference_rows(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Reference rows from the reference's answers (``Kind.reference_rows``)."""
    return get_kind(batch.kind).reference_rows(batch, solution, tol)


def compute_reference(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Solve every problem of ``batch`` in float64 with its kind's reference and return the
    reference rows (no cache)."""
    return reference_rows(batch, solve_reference(batch), tol)


_SOLUTION_ARRAYS = ("x", "y_eq", "y_ub", "objective", "iterations")


def _save_solution(path: Path, solution: BatchSolution, truth: np.ndarray, identity: dict[str, str]) -> None:
    """Write the reference's answers, the truth they gave and the solver identity as one
    ``.npz`` (no pickle), atomically; a failed write leaves no temporary file."""
    arrays = {k: np.asarray(getattr(solution, k)) for k in _SOLUTION_ARRAYS}
    arrays["status"] = solution.status_text().astype("U32")
    arrays["native_status"] = solution.native_status.text().astype(str)
    arrays["truth"] = np.asarray(truth, dtype=str)
    arrays["identity"] = np.array(json.dumps(identity, sort_keys=True))
    if "ray" in solution.extras:  # the proof of an unbounded case
        arrays["ray"] = np.asarray(solution.extras["ray"], dtype=float)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    write_bytes_atomic(path, write)


def _load_solution(path: Path) -> tuple[BatchSolution, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        solution = BatchSolution(
            x=data["x"], y_eq=data["y_eq"], y_ub=data["y_ub"], objective=data["objective"],
            status=data["status"], iterations=data["iterations"],
            native_status=data["native_status"], message="",
            extras={"ray": data["ray"]} if "ray" in data.files else {})
        return solution, data["truth"].astype(str)


def _truth_of(rows: pd.DataFrame) -> np.ndarray:
    """What the cache vouches for per case: the truth and the verifier's verdict of the
    reference's own answer (``truth|verdict``); a load must reproduce both exactly."""
    truth = rows["truth"].astype(str) if "truth" in rows else pd.Series([""] * len(rows))
    return (truth + "|" + rows["ref_verdict"].astype(str)).to_numpy()


def cache_path(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES, cache_dir: Path | str | None = None) -> Path:
    """Where ``batch``'s reference answers are cached: the key hashes the batch's content,
    the tolerances, the reference solver's identity (class, package version, options) and
    the family's generator version."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = hashlib.sha256(json.dumps({"tol": tol.as_dict(), "solver": reference_identity(batch),
                                     "generator_version": batch.params.get("generator_version", 1)},
                                    sort_keys=True).encode()).hexdigest()[:12]
    return directory / f"v{REFERENCE_VERSION}-{batch.content_hash()[:32]}-{key}.npz"


#: cases per reference chunk: a large batch's reference is computed (``bench.engine.cluster``: one
#: Dask task per chunk, on every worker) and cached chunk by chunk
CHUNK_CASES = 4096


def chunks(batch: ProblemBatch, size: int | None = None) -> list[slice]:
    """The consecutive case ranges of ``batch`` its reference is computed and cached in
    (``size`` cases each, default ``CHUNK_CASES``)."""
    size = CHUNK_CASES if size is None else size
    if not (isinstance(size, int) and size >= 1):
        raise ValueError(f"size: expected a positive integer, got {size!r}")
    return [slice(start, min(start + size, len(batch))) for start in range(0, len(batch), size)]


def reference(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES,
              cache_dir: Path | str | None = None) -> pd.DataFrame:
    """Reference rows for ``batch`` (see module docstring), chunk by chunk (``chunks``): each
    from the cache when it holds a sound entry (see ``cache_path``), else solved here and
    cached; rows are always recomputed from the cached answers."""
    parts = []
    for part in chunks(batch):
        sub = batch.subset(part)
        rows = cached_reference(sub, tol, cache_dir)
        parts.append(rows if rows is not None else store_reference(sub, solve_reference(sub), tol, cache_dir))
    return pd.concat(parts, ignore_index=True)


def missing_chunks(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES,
                   cache_dir: Path | str | None = None) -> list[slice]:
    """The chunks of ``batch`` (``chunks``) whose reference the cache does not hold."""
    return [part for part in chunks(batch) if not cache_path(batch.subset(part), tol, cache_dir).exists()]


def cached_reference(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES,
                     cache_dir: Path | str | None = None) -> pd.DataFrame | None:
    """The reference rows from a sound cache entry, or None (missing, unreadable or
    contradicting its stored verdicts: a warning says which)."""
    found = cached_answers(batch, tol, cache_dir)
    return None if found is None else found[0]


def cached_answers(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES,
                   cache_dir: Path | str | None = None) -> tuple[pd.DataFrame, BatchSolution] | None:
    """``(rows, answers)`` from a sound cache entry of ``batch`` (one entry: a batch of at
    most ``CHUNK_CASES`` cases, or one chunk), or None as ``cached_reference``."""
    path = cache_path(batch, tol, cache_dir)
    if path.exists():
        try:
            solution, stored_truth = _load_solution(path)
            if len(solution) == len(batch):
                rows = reference_rows(batch, solution, tol)
                if np.array_equal(_truth_of(rows), stored_truth):
                    return rows, solution
            warnings.warn(f"reference cache {path}: contradicts its stored verdicts; recomputing", stacklevel=2)
        except Exception as exc:  # unreadable or foreign: recompute, never trust it
            warnings.warn(f"reference cache {path}: unreadable ({type(exc).__name__}: {exc}); recomputing",
                          stacklevel=2)
    return None


def store_reference(batch: ProblemBatch, solution: BatchSolution, tol: Tolerances = DEFAULT_TOLERANCES,
                    cache_dir: Path | str | None = None) -> pd.DataFrame:
    """Reference rows from the reference's answers ``solution`` (computed here or on a cluster
    worker), cached chunk by chunk (``chunks``) for next time; a cache that cannot be
    written costs a recomputation."""
    if len(chunks(batch)) > 1:
        return pd.concat([store_reference(batch.subset(part), solution.take(part), tol, cache_dir)
                          for part in chunks(batch)], ignore_index=True)
    path = cache_path(batch, tol, cache_dir)
    rows = reference_rows(batch, solution, tol)
    try:
        _save_solution(path, solution, _truth_of(rows), reference_identity(batch))
    except OSError as exc:  # a read-only or full cache costs a recomputation next time, nothing else
        warnings.warn(f"reference cache {path}: not written ({exc})", stacklevel=2)
    return rows
