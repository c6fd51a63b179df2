"""The results schema: row columns and their types, the schema version of every cell file
and the upgrade of older files.

A cell file (``<cell>.parquet``) holds one row per problem of the cell: the ``COLUMNS``
below (identity, timing, solver answer, provenance ``env_*``), the family's ``meta_*``
columns, and the columns of the cell's kind (``Kind.columns``: verdict, checks, reference,
``outcome``). Its parquet metadata records ``contactbench_schema`` = ``SCHEMA_VERSION``.

How rows are counted and aggregated into tables (``summarize``: distinct cases, median
timings ``TIMING``, each kind's own aggregations) is ``bench.analysis.results``.
"""

from __future__ import annotations

import pandas as pd

from problems import get_kind
from problems.kinds.checks import OUTCOMES
from solvers.errors import ProblemError

#: version written in every cell file's parquet metadata; bump when columns change meaning.
SCHEMA_VERSION = 7
#: parquet metadata key of the version.
SCHEMA_KEY = b"contactbench_schema"

#: columns every cell row has: name -> pandas dtype (``env_*`` provenance columns come on top).
COLUMNS: dict[str, str] = {
    "run_id": "str", "cell_id": "str", "family": "str", "family_label": "str", "kind": "str",
    "family_params": "str", "n_scenes": "int64", "n_lps": "int64", "seed": "int64", "solver": "str",
    "solver_spec": "str", "settings": "str", "dtype": "str", "device": "str", "lp_index": "int64", "case_hash": "str",
    "generator_version": "int64", "family_cases": "int64",
    "solver_label": "str", "profile": "str", "status": "str", "native_status": "str", "message": "str",
    "iterations": "int64", "objective": "float64", "outcome": "str", "error_type": "str", "error": "str",
    "repeats": "int64", "ms_batch_median": "float64", "ms_batch_min": "float64", "ms_batch_iqr": "float64",
    "first_call_ms": "float64", "compile_s": "float64", "ms_per_256": "float64", "us_per_lp": "float64",
    "end_to_end_ms_batch_median": "float64", "end_to_end_ms_per_256": "float64", "end_to_end_us_per_lp": "float64",
    "ms_repeats": "object", "end_to_end_ms_repeats": "object", "cpu_share": "float64",
    "peak_rss_mb": "float64", "device_peak_mb": "float64", "device_model": "str", "device_id": "str",
    "started": "str", "timestamp": "str",
}
#: timing columns a summary aggregates: summary column -> (row column, aggregation).
TIMING = {"ms_per_256": ("ms_per_256", "median"), "us_per_lp": ("us_per_lp", "median"),
          "end_to_end_ms_per_256": ("end_to_end_ms_per_256", "median"),
          "end_to_end_us_per_lp": ("end_to_end_us_per_lp", "median"),
          "iqr_ms": ("ms_batch_iqr", "median"), "compile_s": ("compile_s", "median"),
          "peak_rss_mb": ("peak_rss_mb", "max"), "device_peak_mb": ("device_peak_mb", "max")}
#: per-repeat batch times (ms, one array per row, the same on every row of a cell): the
#: samples of the bootstrap intervals on median times (``bench.analysis.stats.median_interval``).
REPEAT_COLUMNS = ("ms_repeats", "end_to_end_ms_repeats")
#: the report's groups, and how the report names them.
REPORT_GROUP = ["family_label", "kind", "solver_label", "device", "dtype", "n_scenes"]
REPORT_NAMES = {"family_label": "family", "solver_label": "solver", "n_scenes": "scenes"}


class SchemaError(ProblemError):
    """A cell file this version cannot read (written by a newer contactbench)."""


def upgrade(rows: pd.DataFrame, version: int, source: str = "rows") -> pd.DataFrame:
    """Rows of schema ``version`` as rows of ``SCHEMA_VERSION``.

    Version 1 (files without the metadata key, written before this module) may lack
    ``family_label`` and ``solver_label`` (filled from ``family`` / ``solver``) and timing
    columns (NaN). Version 2 lacks the end-to-end timings and the memory columns (NaN) and
    ``device_model`` (''). Version 3 lacks the per-repeat times ``ms_repeats`` and
    ``end_to_end_ms_repeats`` (None: no timing interval can be given). Version 4 lacks
    ``case_hash`` ('': such rows name a case by family, parameters, size, seed and index,
    ``bench.analysis.results.case_ids``). Version 5 lacks ``generator_version`` (1: every family's
    first sampler). Versions 5 and 6 hold ``case_hash`` fingerprints of the first
    ``ProblemBatch.case_hashes``, which gave the exit LPs of ``+u`` and ``-u`` one
    fingerprint: they are dropped ('', the legacy key). A newer version raises
    ``SchemaError`` naming ``source``."""
    if version > SCHEMA_VERSION:
        raise SchemaError(f"{source}: written with results schema {version}; this contactbench reads schema "
                          f"<= {SCHEMA_VERSION}. Upgrade contactbench to read it.")
    if version < SCHEMA_VERSION:
        rows = rows.copy()
        if "family_label" not in rows:
            rows["family_label"] = rows["family"]
        if "solver_label" not in rows:
            rows["solver_label"] = rows["solver"]
        for column, (source_column, _how) in TIMING.items():
            if source_column not in rows:
                rows[source_column] = float("nan")
        for column in ("device_model", "device_id"):
            if column not in rows:
                rows[column] = ""
        for column in REPEAT_COLUMNS:
            if column not in rows:
                rows[column] = None
        if "case_hash" not in rows or version < 7:  # (schema 5 and 6: the flawed first fingerprint)
            rows["case_hash"] = ""
        if "generator_version" not in rows:
            rows["generator_version"] = 1
    return rows


#: columns a cell file cannot do without (a file lacking one is skipped, named, by every
#: reader: ``bench.engine.rundir.read_cell``); every other column of ``COLUMNS`` and of the kinds is
#: filled in when missing (``complete``).
REQUIRED_COLUMNS = ("run_id", "cell_id", "family", "kind", "solver", "dtype", "device", "n_scenes", "lp_index",
                    "outcome")
_EMPTY = {"str": "", "float64": float("nan"), "int64": -1, "bool": False, "object": None}


def complete(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with every column of ``COLUMNS`` and of its kinds' ``columns`` it lacks added:
    '' for text, NaN for numbers, -1 for counts, False for flags, None for lists (the
    labels from ``family`` / ``solver``). Readers then never meet a missing column."""
    wanted = dict(COLUMNS)
    for name in map(str, rows["kind"].unique()) if "kind" in rows and len(rows) else []:
        kind = kind_or_none(name)
        wanted.update(kind.columns if kind is not None else {})
    missing = {c: t for c, t in wanted.items() if c not in rows}
    if not missing:
        return rows
    rows = rows.copy()
    for column, dtype in missing.items():
        if column == "family_label" and "family" in rows:
            rows[column] = rows["family"]
        elif column == "solver_label" and "solver" in rows:
            rows[column] = rows["solver"]
        else:
            rows[column] = [_EMPTY.get(dtype)] * len(rows) if dtype == "object" else _EMPTY.get(dtype, "")
    return rows


def version_of(metadata: dict | None) -> int:
    """The schema version recorded in parquet ``metadata`` (1 when absent: older files)."""
    raw = (metadata or {}).get(SCHEMA_KEY)
    try:
        return int(raw) if raw is not None else 1
    except ValueError:
        raise SchemaError(f"results schema: unreadable version {raw!r}") from None


def kind_or_none(name: str):
    """The registered kind ``name``, or None for one a plug-in this process has not loaded."""
    try:
        return get_kind(name)
    except ProblemError:  # a kind registered by a plug-in this process has not loaded
        return None


def outcome_columns(kinds: list[str]) -> list[str]:
    """The outcome columns a summary of these kinds shows (every outcome for an unknown kind)."""
    wanted = set()
    for name in kinds:
        kind = kind_or_none(name)
        wanted |= set(kind.outcomes if kind is not None else OUTCOMES)
    return [o for o in OUTCOMES if o in wanted]


def rename_for_report(table: pd.DataFrame) -> pd.DataFrame:
    """The report's column names for the group columns (``family``, ``solver``, ``scenes``)."""
    return table.rename(columns=REPORT_NAMES)


def check_columns(rows: pd.DataFrame) -> list[str]:
    """What ``rows`` lacks of the schema: missing common columns and, per kind present,
    missing kind columns (empty: conforming)."""
    missing = [c for c in COLUMNS if c not in rows]
    for name in sorted(map(str, rows["kind"].unique())) if "kind" in rows else []:
        kind = kind_or_none(name)
        missing += [f"{name}:{c}" for c in (kind.columns if kind else {}) if c not in rows]
    return missing
