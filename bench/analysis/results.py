"""The results table: the one owner of how cell rows are loaded, named, counted, ranked and
written as numbers. ``report``, ``publish`` and ``recommend`` are presenters over it.

* ``load`` / ``prepare``: every readable cell row of some runs, with ``config`` (the
  configuration label: solver label x dtype x device, and the host when runs of several
  machines are merged, ``config_label``), ``case_id`` (``case_ids``: a case is named by its
  content) and ``rank_us`` (``ranking_time_us``: end to end where measured, else the solve).
* One counting rule: distinct cases. A case answered several times in one group counts once,
  with its worst outcome (``SEVERITY``): ``case_counts`` and ``summarize``.
* One ranking rule (``rank``): fewest false accepts, then most correct, then fastest; ties
  where the intervals overlap on all three (``mark_ties``).
* Number formats: ``sci``, ``us_text``, ``interval_text``, ``budget_text``, ``rank_text``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from problems.kinds.checks import OUTCOMES, SEVERITY

from solvers.errors import ProblemError

from bench.engine.rundir import load_cells
from bench.engine.schema import TIMING, kind_or_none, outcome_columns

#: the columns that name one case in rows without a ``case_hash`` (schema 4 and older).
LEGACY_CASE_KEY = ["family_label", "kind", "family_params", "n_scenes", "seed", "lp_index"]
#: the column ``prepare`` adds that names one case.
CASE_KEY = ["case_id"]


# ----------------------------------------------------------------------------- loading
def load(run_dirs: list[Path | str]) -> pd.DataFrame:
    """All readable cell rows of the given run directories, ``prepare``d. An unreadable or
    damaged cell file is skipped with a warning naming it; ``ProblemError`` when nothing at
    all is readable (``bench.engine.rundir.load_cells``)."""
    return prepare(load_cells(run_dirs)[0])


def config_label(rows: pd.DataFrame, solver: str = "solver_label", device: bool = True,
                 host: bool = True) -> pd.Series:
    """The configuration label per row: ``<solver> dtype device`` (``solver`` the column naming
    the solver: its label, or its spec), ``@ host`` added when several machines are merged
    (``host``); without ``device``, ``<solver> dtype``. The one builder of a configuration's
    name: tables, compare and the studies use it."""
    label = rows[solver].astype(str) + " " + rows["dtype"].astype(str)
    if device:
        label = label + " " + rows["device"].astype(str)
    hosts = rows["env_host"].astype(str) if host and "env_host" in rows else pd.Series("", index=rows.index)
    if hosts.nunique() > 1:
        label = label + " @ " + hosts
    return label


def ranking_time_us(rows: pd.DataFrame) -> pd.Series:
    """Microseconds per case a row ranks by: end to end where measured, else the solve."""
    end_to_end = rows["end_to_end_us_per_lp"] if "end_to_end_us_per_lp" in rows else pd.Series(np.nan, rows.index)
    solve = rows["us_per_lp"] if "us_per_lp" in rows else pd.Series(np.nan, rows.index)
    return end_to_end.astype(float).fillna(solve.astype(float))


#: the per-repeat batch times behind ``ranking_time_us``, in the order they are preferred
REPEAT_PREFERENCE = ("end_to_end_ms_repeats", "ms_repeats")


def repeat_column(row) -> str | None:
    """The column of ``row`` (a cell's row) holding the repeat times its ranking time comes
    from (``REPEAT_PREFERENCE``), None when it kept none."""
    for column in REPEAT_PREFERENCE:
        values = row.get(column)
        if values is not None and not (isinstance(values, float) and np.isnan(values)) and len(values):
            return column
    return None


def prepare(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with ``config``, ``case_id`` and ``rank_us`` (see the module docstring), and
    the optional columns a presenter reads filled with NaN where a run lacks them (copy)."""
    rows = rows.copy()
    for col in ("compile_s", "ms_per_256", "us_per_lp", "end_to_end_us_per_lp", "end_to_end_ms_per_256",
                "family_params", "seed"):
        if col not in rows:
            rows[col] = np.nan
    rows["family_params"] = rows["family_params"].astype(str)
    rows["case_id"] = case_ids(rows)
    rows["config"] = config_label(rows)
    rows["rank_us"] = ranking_time_us(rows)
    return rows


# ---------------------------------------------------------------------------- counting
def case_ids(rows: pd.DataFrame) -> pd.Series:
    """One id per row naming its case: ``kind`` and ``case_hash`` (the content), or for rows
    without a hash the ``LEGACY_CASE_KEY`` columns joined."""
    legacy = pd.Series("legacy", index=rows.index)
    for column in LEGACY_CASE_KEY:
        if column in rows:
            legacy = legacy + "|" + rows[column].astype(str)
    if "case_hash" not in rows:
        return legacy
    hashed = rows["kind"].astype(str) + "|" + rows["case_hash"].fillna("").astype(str)
    return hashed.where(rows["case_hash"].fillna("").astype(str) != "", legacy)


def case_counts(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``: ``cases`` (distinct cases) and one count per outcome of
    ``OUTCOMES`` over the distinct cases, each case counted once with its worst outcome;
    ``uncertain_agree``: the uncertain cases whose every answer agreed with the reference's
    truth, proof or not (``ref_agrees``: right without proof; the rest of ``uncertain`` is
    wrong without proof)."""
    rank = {o: i for i, o in enumerate(SEVERITY)}
    work = rows[keys].copy()
    work["_case"] = rows["case_id"] if "case_id" in rows else case_ids(rows)
    work["_severity"] = rows["outcome"].astype(str).map(rank).fillna(0).astype(int)  # unknown: worst
    work["_agrees"] = rows["ref_agrees"].fillna(False).astype(bool) if "ref_agrees" in rows else False
    worst = work.groupby(keys + ["_case"], dropna=False, sort=False).agg(
        _severity=("_severity", "min"), _agrees=("_agrees", "all")).reset_index()
    worst["outcome"] = worst["_severity"].map(dict(enumerate(SEVERITY)))
    counts = pd.crosstab([worst[k] for k in keys], worst["outcome"]).reindex(columns=list(OUTCOMES), fill_value=0)
    counts.insert(0, "cases", counts.sum(axis=1))
    agree = worst[(worst["outcome"] == "uncertain") & worst["_agrees"]].groupby(keys, dropna=False).size()
    counts["uncertain_agree"] = agree.reindex(counts.index, fill_value=0).astype(int).to_numpy()
    return counts.reset_index().rename_axis(columns=None)


def summarize(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per group of ``keys``: ``n`` (distinct cases), outcome counts over the
    distinct cases (``case_counts``; the outcomes the kinds present give), median timings
    (``bench.engine.schema.TIMING``) and the kinds' own aggregations (a column only where some
    group has a value). Every table of the report, the dashboard, the seed-002 tables and
    asv's tracks is built from it."""
    missing = {column: float("nan") for column, _how in TIMING.values() if column not in rows}
    rows = rows.assign(**missing) if missing else rows  # a run of failed cells only has no timings
    kinds = sorted(map(str, rows["kind"].unique()))
    counts = case_counts(rows, keys).set_index(keys)
    counts = counts.rename(columns={"cases": "n"})[["n", *outcome_columns(kinds), "uncertain_agree"]]
    agg = {name: pd.NamedAgg(column, how) for name, (column, how) in TIMING.items()}
    table = rows.groupby(keys).agg(**agg)
    extra = []
    for name in kinds:
        kind = kind_or_none(name)
        aggs = {col: pd.NamedAgg(src, how) for col, (src, how) in (kind.aggregations() if kind else {}).items()
                if src in rows}
        if aggs:
            extra.append(rows[rows["kind"] == name].groupby(keys).agg(**aggs))
    out = counts.join(table)
    if extra:
        merged = pd.concat(extra).groupby(level=list(range(len(keys)))).max()
        out = out.join(merged.dropna(axis=1, how="all"))
    return out.reset_index()


# ----------------------------------------------------------------------------- ranking
def rank(table: pd.DataFrame, by: str = "rank_us") -> pd.DataFrame:
    """Configurations of ``table`` (one row each, with ``n``, ``false_accept``, ``correct``
    (or ``correct_pct``) and, where ``bench.analysis.intervals.with_intervals`` added them, the rate and time intervals)
    in ranking order: fewest false accepts, then most correct (both per distinct case), then
    fastest by ``by`` (default ``rank_us``, the ranking time; ``us_per_case``: the solve
    alone). Adds ``rank`` (1 = best, first column) and ``tied`` (True when the rank is
    shared: intervals overlapping on all three keys; a table without intervals ties only
    equal values; ranking ``by`` another column than ``rank_us`` compares its point values).
    A configuration without one correct answer gets no rank (NaN) and comes last: there is
    nothing to rank it by."""
    if by not in table:
        raise ProblemError(f"by: expected a column of the table, got {by!r}")
    n = table["n"].where(table["n"] > 0)
    correct = table["correct"] / n if "correct" in table else table["correct_pct"] / 100.0
    order = table.assign(_unsafe=table["false_accept"] / n, _neg_correct=-correct,
                         _unranked=~(correct > 0).to_numpy())
    order = order.sort_values(["_unranked", "_unsafe", "_neg_correct", by], na_position="last")
    spans = order.copy()
    if "false_accept_rate" not in spans:
        spans["false_accept_rate"] = spans["_unsafe"]
    if "correct_rate" not in spans:
        spans["correct_rate"] = -spans["_neg_correct"]
    if by != "rank_us":
        spans = spans.drop(columns=[c for c in ("time_low_us", "time_high_us") if c in spans])
    unranked = order["_unranked"].to_numpy()
    marked = mark_ties(spans[~unranked].reset_index(drop=True), time=by)
    order = order.drop(columns=["_unsafe", "_neg_correct", "_unranked"]).reset_index(drop=True)
    order.insert(0, "rank", np.concatenate([marked["rank"].to_numpy(dtype=float), np.full(unranked.sum(), np.nan)]))
    order["tied"] = np.concatenate([marked["tied"].to_numpy(dtype=bool), np.zeros(unranked.sum(), bool)])
    return order


def _overlap(a_low: float, a_high: float, b_low: float, b_high: float) -> bool:
    return a_low <= b_high and b_low <= a_high


def _span(row: pd.Series, low: str, high: str, point: str) -> tuple[float, float]:
    """``row``'s interval; a missing one is the point value (NaN point: the whole line)."""
    lo, hi, p = row.get(low, np.nan), row.get(high, np.nan), row.get(point, np.nan)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        lo = hi = p
    if not np.isfinite(lo):
        return -np.inf, np.inf
    return float(lo), float(hi)


def mark_ties(order: pd.DataFrame, time: str = "rank_us") -> pd.DataFrame:
    """Ranks of an ordered table (best first) with statistical ties: a row is tied with the
    first row of the current tie group (its *leader*) when their intervals overlap on every
    ranking key: false-accept rate (``false_accept_low`` / ``_high``), correct rate
    (``correct_low`` / ``_high``) and time per case (``time_low_us`` / ``time_high_us``
    around ``time``); a row without an interval counts as its point value. Sets ``rank``
    (the leader's position, 1 = best) and ``tied`` (True when the rank is shared) (copy)."""
    out = order.reset_index(drop=True).copy()
    ranks, leader = [], None
    spans = [((_span(r, "false_accept_low", "false_accept_high", "false_accept_rate")),
              (_span(r, "correct_low", "correct_high", "correct_rate")),
              (_span(r, "time_low_us", "time_high_us", time))) for _, r in out.iterrows()]
    for i, span in enumerate(spans):
        if leader is not None and all(_overlap(*a, *b) for a, b in zip(spans[leader], span)):
            ranks.append(leader + 1)
        else:
            leader = i
            ranks.append(i + 1)
    ranks = np.asarray(ranks, dtype=int)
    shared = pd.Series(ranks).duplicated(keep=False).to_numpy()
    out["rank"] = ranks
    out["tied"] = shared
    return out


# ----------------------------------------------------------------------------- numbers
def sci(value: float, digits: int = 2) -> str:
    """A rate or bound in short scientific notation: ``1.2e-2``, ``1e-3``; ``0`` for zero."""
    if value == 0:
        return "0"
    if not np.isfinite(value):
        return str(value)
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return mantissa if int(exponent) == 0 else f"{mantissa}e{int(exponent)}"


def number_text(value) -> str:
    """A measured number for display, in the one style of every table: counts with thousands
    separators (``1,830``), other numbers from 100 up rounded to a whole with separators
    (``1,830``, ``458``), three significant digits below (``45.8``, ``2.5``, ``0.912``);
    blank for None or NaN."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return "" if value is None else ("yes" if value else "no")
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    value = float(value)
    if not np.isfinite(value):
        return ""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def us_text(value: float) -> str:
    """Microseconds for display (``number_text``: ``1,830``, ``457``, ``2.5``, ``0.912``);
    blank for NaN."""
    return number_text(float(value))


def interval_text(t: float, low: float, high: float) -> str:
    """``"12.3 [11.9, 13]"`` (microseconds), or the median alone without an interval."""
    if not np.isfinite(t):
        return ""
    return f"{us_text(t)} [{us_text(low)}, {us_text(high)}]" if np.isfinite(low) else us_text(t)


def budget_text(budget_us: float) -> str:
    """A time budget in microseconds for display, as the times are written (``us_text``:
    ``1,000``, ``2.5``)."""
    return us_text(float(budget_us))


def agree_text(count: int, agree: int) -> str:
    """``42 (38 agree)``: unproven answers and how many of them agree with the reference's
    truth (right without proof); ``0`` for none."""
    return f"{int(count)} ({int(agree)} agree)" if count else "0"


def rank_text(rank, tied: bool) -> str:
    """A rank for display: ``=3`` where it is shared (a statistical tie), blank for none."""
    if rank is None or (isinstance(rank, float) and np.isnan(rank)):
        return ""
    return f"{'=' if tied else ''}{int(rank)}"
