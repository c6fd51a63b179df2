"""The float64 reference: HiGHS answers for a batch, cached on disk by content hash.

For LP-1 the reference is ``ref_delta`` (HiGHS' optimum), ``truth`` (``supported`` when
``ref_delta <= reference_delta``) and ``ref_verdict`` (the verifier's verdict of HiGHS'
own answer, as a cross-check); cases with ``0 < ref_delta < ambiguous_delta`` are marked
``ambiguous``. For exits it is ``ref_exit``: HiGHS' ``t`` when verified, else 0 (an exit
LP of an unsupported scene is infeasible, and its checked exit is 0 by definition).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from problems import ProblemBatch
from solvers import get

from .verify import DEFAULT_TOLERANCES, Tolerances, verify_exit, verify_lp1

CACHE_ENV = "CONTACTBENCH_CACHE"
REFERENCE_VERSION = "1"


def default_cache_dir() -> Path:
    """``$CONTACTBENCH_CACHE`` or ``results/cache`` under the working directory."""
    return Path(os.environ.get(CACHE_ENV, "results/cache")) / "reference"


def compute_reference(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Solve every LP of ``batch`` with HiGHS in float64 and return the reference rows."""
    solution = get("highs").solve_batch(*batch.arrays())
    if batch.kind == "lp1":
        checked = verify_lp1(batch, solution, tol)
        delta = solution.objective
        truth = np.where(delta <= tol.reference_delta, "supported", "unsupported")
        ambiguous = (delta > tol.reference_delta) & (delta < tol.ambiguous_delta)
        return pd.DataFrame({"ref_delta": delta, "truth": truth, "ref_verdict": checked["verdict"],
                             "ambiguous": ambiguous})
    checked = verify_exit(batch, solution, tol)
    return pd.DataFrame({"ref_exit": checked["exit"], "ref_verdict": checked["verdict"]})


def reference(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES,
              cache_dir: Path | str | None = None) -> pd.DataFrame:
    """Reference rows for ``batch`` (see module docstring), from the cache when present.

    The cache key is the batch's content hash plus the tolerances, so changing either
    recomputes. Files are written atomically (temp name, then rename).
    """
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    tol_digest = hashlib.sha256(json.dumps(tol.as_dict(), sort_keys=True).encode()).hexdigest()[:8]
    key = f"{batch.content_hash()[:32]}-{tol_digest}"
    path = directory / f"v{REFERENCE_VERSION}-{key}.parquet"
    if path.exists():
        return pd.read_parquet(path)
    rows = compute_reference(batch, tol)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    rows.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return rows
