"""The float64 reference: HiGHS answers for hold LPs, Clarabel (1e-10) for QPs and SOCPs,
cached on disk by content hash.

For LP-1 the reference is ``ref_delta`` (HiGHS' optimum), ``truth`` (``supported`` when
``ref_delta <= reference_delta``) and ``ref_verdict`` (the verifier's verdict of HiGHS'
own answer, as a cross-check); cases with ``reference_delta < ref_delta <= ambiguous_delta``
(unsupported by less than the witness tolerance) are marked ``ambiguous``. For exits it is ``ref_exit``: HiGHS' ``t`` when verified, else 0 (an exit
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

from .verify import DEFAULT_TOLERANCES, Tolerances, verify_exit, verify_lp1, verify_qp

CACHE_ENV = "CONTACTBENCH_CACHE"
REFERENCE_VERSION = "3"


def default_cache_dir() -> Path:
    """``$CONTACTBENCH_CACHE`` or ``results/cache`` under the working directory."""
    return Path(os.environ.get(CACHE_ENV, "results/cache")) / "reference"


QP_REFERENCE = ("clarabel", {"profile": "high_accuracy"})


def compute_qp_reference(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """QP / SOCP reference: Clarabel (interior point, float64, gap and feasibility 1e-10).

    ``truth`` is ``feasible`` when Clarabel's answer passes the verifier's primal check,
    ``infeasible`` when Clarabel says so, else ``unknown`` (every solver's outcome on such a
    case is ``uncertain``). ``ref_objective`` is recomputed from its ``x``.
    """
    name, settings = QP_REFERENCE
    solution = get(name, **settings).solve_batch(*batch.arrays(), **batch.extra())
    checked = verify_qp(batch, solution, tol)
    truth = np.select([checked["verdict"] == "feasible", checked["verdict"] == "infeasible"],
                      ["feasible", "infeasible"], default="unknown")
    # Clarabel stops with InsufficientProgress on some rank-deficient, inconsistent equality
    # blocks (two-foot stances); equalities with no least-squares solution decide those.
    truth = np.where((truth == "unknown") & ~equalities_consistent(batch), "infeasible", truth)
    return pd.DataFrame({"truth": truth, "ref_objective": np.where(truth == "feasible", checked["qp_objective"], np.nan),
                         "ref_verdict": checked["verdict"], "ref_status": checked["said"],
                         "ref_primal_residual": checked["primal_residual"]})


def equalities_consistent(batch: ProblemBatch, rtol: float = 1e-9) -> np.ndarray:
    """(B,) True where ``A_eq x = b_eq`` has a solution (least-squares residual within
    ``rtol * (1 + |b_eq|_inf)``), whatever the rank of ``A_eq``."""
    out = np.ones(len(batch), bool)
    for i in range(len(batch)):
        A, b = batch.A_eq[i], batch.b_eq[i]
        if len(b):
            x = np.linalg.lstsq(A, b, rcond=None)[0]
            out[i] = np.max(np.abs(A @ x - b)) <= rtol * (1 + np.max(np.abs(b)))
    return out


def compute_reference(batch: ProblemBatch, tol: Tolerances = DEFAULT_TOLERANCES) -> pd.DataFrame:
    """Solve every problem of ``batch`` in float64 (LPs: HiGHS; QPs/SOCPs: Clarabel) and
    return the reference rows."""
    if batch.kind in ("qp", "socp"):
        return compute_qp_reference(batch, tol)
    solution = get("highs").solve_batch(*batch.arrays())
    if batch.kind == "lp1":
        checked = verify_lp1(batch, solution, tol)
        delta = solution.objective
        truth = np.where(delta <= tol.reference_delta, "supported", "unsupported")
        ambiguous = (delta > tol.reference_delta) & (delta <= tol.ambiguous_delta)
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
