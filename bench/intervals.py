"""Intervals on result tables: outcome rates with Clopper-Pearson bounds, bootstrap intervals
on median times per case, pairwise speed ratios and statistical ties in a ranking.

The formulas live in ``bench.stats``; this module applies them to cell rows (``bench.schema``)
and is the one owner of how the report, the dashboard and ``contactbench recommend`` count:

* **Rates count distinct cases.** A case is named by its content (``case_hash``: the
  problem's own arrays, ``ProblemBatch.case_hashes``), not by the parameters that made it:
  answered in several merged runs of one configuration (by other seeds of a family that
  ignores the seed, say) it counts once, with its worst outcome (``SEVERITY``): the same
  case solved twice is not twice the evidence. Rows of results schema 4 and older have no
  hash and are named by family, kind, parameters, batch size, seed and index.
* **Times per case come from the timed repeats.** Each cell stores every repeat's batch time
  (``end_to_end_ms_repeats``; the solve's ``ms_repeats`` for runs before end-to-end timing);
  a repeat's time per case is its batch time over the cell's cases, in microseconds. A
  group's interval is the percentile bootstrap of the median over the repeats of its cells.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from problems.kinds.checks import OUTCOMES

from . import stats

#: outcomes from worst to best: a case answered several times keeps the first of these it got.
SEVERITY = ("false_accept", "failed", "uncertain", "false_reject", "suboptimal", "correct")
#: the columns that name one case in rows without a ``case_hash`` (schema 4 and older).
LEGACY_CASE_KEY = ["family_label", "kind", "family_params", "n_scenes", "seed", "lp_index"]
#: default confidence level of every interval.
DEFAULT_CONFIDENCE = 0.95
#: the one check of a confidence level (``bench.stats``).
check_confidence = stats.check_confidence


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
    ``OUTCOMES`` over the distinct cases, each case counted once with its worst outcome."""
    rank = {o: i for i, o in enumerate(SEVERITY)}
    work = rows[keys].copy()
    work["_case"] = case_ids(rows)
    work["_severity"] = rows["outcome"].astype(str).map(rank).fillna(0).astype(int)  # unknown: worst
    worst = work.groupby(keys + ["_case"], dropna=False, sort=False)["_severity"].min().reset_index()
    worst["outcome"] = worst["_severity"].map(dict(enumerate(SEVERITY)))
    counts = pd.crosstab([worst[k] for k in keys], worst["outcome"]).reindex(columns=list(OUTCOMES), fill_value=0)
    counts.insert(0, "cases", counts.sum(axis=1))
    return counts.reset_index().rename_axis(columns=None)


def add_rates(table: pd.DataFrame, outcomes: list[str], confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """``table`` (with ``cases`` and a count column per outcome) plus, per outcome ``o``,
    ``o_rate`` (count / cases), ``o_low`` and ``o_high`` (two-sided Clopper-Pearson interval
    at ``confidence``) and ``false_accept_bound``: the one-sided upper bound of the
    false-accept rate, the safety figure. Where ``table`` has a ``kind`` column, an outcome
    that kind cannot give (``Kind.outcomes``: no ``suboptimal`` for a hold LP) gets NaN, not
    a rate of 0 (copy)."""
    from .schema import outcome_columns

    confidence = check_confidence(confidence)
    out = table.copy()
    n = out["cases"].to_numpy(dtype=np.int64)
    ok = n > 0
    gives = {kind: set(outcome_columns([kind])) for kind in out["kind"].astype(str).unique()} if "kind" in out else {}
    for o in outcomes:
        k = out[o].to_numpy(dtype=np.int64) if o in out else np.zeros_like(n)
        low, high = np.full(n.shape, np.nan), np.full(n.shape, np.nan)
        if ok.any():
            low[ok], high[ok] = stats.rate_intervals(k[ok], n[ok], confidence)
        rate = np.where(ok, k / np.maximum(n, 1), np.nan)
        if gives:
            foreign = ~out["kind"].astype(str).map(lambda kind: o in gives[kind]).to_numpy(dtype=bool)
            rate[foreign], low[foreign], high[foreign] = np.nan, np.nan, np.nan
        out[f"{o}_rate"] = rate
        out[f"{o}_low"], out[f"{o}_high"] = low, high
    k = out["false_accept"].to_numpy(dtype=np.int64) if "false_accept" in out else np.zeros_like(n)
    bound = np.full(n.shape, np.nan)
    if ok.any():
        bound[ok] = stats.rate_upper_bounds(k[ok], n[ok], confidence)
    out["false_accept_bound"] = bound
    return out


def with_intervals(table: pd.DataFrame, rows: pd.DataFrame, keys: list[str], outcomes: list[str],
                   confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """A summary ``table`` (one row per group of ``keys`` of ``rows``) joined with ``cases``,
    the rates of ``outcomes`` with their intervals and ``false_accept_bound`` (``add_rates``
    over ``case_counts``), then ``time_low_us`` / ``time_high_us`` (``add_time_intervals``):
    the columns the report and the dashboard add to their tables (copy)."""
    rates = add_rates(case_counts(rows, keys), outcomes, confidence)
    rates = rates[keys + ["cases"] + [f"{o}_{s}" for o in outcomes for s in ("rate", "low", "high")]
                  + ["false_accept_bound"]]
    return add_time_intervals(table.merge(rates, on=keys, how="left"), rows, keys, confidence)


def rank_text(rank, tied: bool) -> str:
    """A rank for display: ``=3`` where it is shared (a statistical tie), blank for none."""
    if rank is None or (isinstance(rank, float) and np.isnan(rank)):
        return ""
    return f"{'=' if tied else ''}{int(rank)}"


def _per_case_us(cells: pd.DataFrame) -> np.ndarray:
    """Microseconds per case of every timed repeat of these cells (one row per cell):
    end-to-end repeats where recorded, else the solve's."""
    samples = []
    for _, cell in cells.iterrows():
        for column in ("end_to_end_ms_repeats", "ms_repeats"):
            values = cell.get(column)
            if values is not None and not (isinstance(values, float) and np.isnan(values)) and len(values):
                samples.append(np.asarray(values, dtype=float) * 1e3 / max(int(cell["n_lps"]), 1))
                break
    return np.concatenate(samples) if samples else np.empty(0)


def time_samples(rows: pd.DataFrame, keys: list[str]) -> dict[tuple, np.ndarray]:
    """Per group of ``keys`` (tuple of its values): microseconds per case of every timed
    repeat of its cells (empty for cells that failed or runs that kept no repeat times)."""
    have = [c for c in ("end_to_end_ms_repeats", "ms_repeats") if c in rows]
    if not have:
        return {}
    cells = rows.drop_duplicates("cell_id" if "run_id" not in rows else ["run_id", "cell_id"])
    return {(key if isinstance(key, tuple) else (key,)): _per_case_us(grp)
            for key, grp in cells.groupby(keys, sort=False, dropna=False)}


def add_time_intervals(table: pd.DataFrame, rows: pd.DataFrame, keys: list[str],
                       confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """``table`` (one row per group of ``keys``) plus ``time_low_us`` and ``time_high_us``:
    the bootstrap interval (``bench.stats.median_interval``) of the median microseconds per
    case, end to end (the solve alone for runs before end-to-end timing), over the timed
    repeats; NaN with fewer than 2 repeats (copy)."""
    confidence = check_confidence(confidence)
    samples = time_samples(rows, keys)
    low, high = [], []
    for _, r in table.iterrows():
        lo, hi = stats.median_interval(samples.get(tuple(r[k] for k in keys), np.empty(0)), confidence)
        low.append(lo)
        high.append(hi)
    return table.assign(time_low_us=low, time_high_us=high)


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


def ratio_matrix(samples: dict[str, np.ndarray], confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """Pairwise speed ratios: for configurations ``a`` (rows) and ``b`` (columns), the ratio
    of ``a``'s median time per case to ``b``'s (> 1: ``a`` is slower) with its bootstrap
    interval (``bench.stats.ratio_interval``). Long format: ``a``, ``b``, ``ratio``, ``low``,
    ``high``, ``verdict`` ("slower", "faster", "tie" when the interval holds 1, "none" without
    an interval)."""
    confidence = check_confidence(confidence)
    names = list(samples)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ratio, low, high = stats.ratio_interval(samples[a], samples[b], confidence)
            for x, y, r, lo, hi in ((a, b, ratio, low, high), (b, a, 1 / ratio, 1 / high, 1 / low)):
                if not np.isfinite(lo) or not np.isfinite(hi):
                    verdict = "none"
                elif lo > 1:
                    verdict = "slower"
                elif hi < 1:
                    verdict = "faster"
                else:
                    verdict = "tie"
                out.append({"a": x, "b": y, "ratio": r, "low": lo, "high": hi, "verdict": verdict})
    return pd.DataFrame(out, columns=["a", "b", "ratio", "low", "high", "verdict"])


def rate_texts(table: pd.DataFrame, outcomes: list[str]) -> pd.DataFrame:
    """Display columns of a table with rates (``add_rates``): per outcome some row has a count
    of (and the kind can give), ``"rate [low, high]"``; blank where the kind cannot give it."""
    out = pd.DataFrame(index=table.index)
    for o in outcomes:
        if f"{o}_rate" not in table or not (table[o] > 0).any():
            continue
        out[o] = [f"{sci(r)} [{sci(lo)}, {sci(hi)}]" if pd.notna(r) else ""
                  for r, lo, hi in zip(table[f"{o}_rate"], table[f"{o}_low"], table[f"{o}_high"])]
    return out


def sci(value: float, digits: int = 2) -> str:
    """``value`` in short scientific notation: ``1.2e-2``, ``1e-3``; ``0`` for zero."""
    if value == 0:
        return "0"
    if not np.isfinite(value):
        return str(value)
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return mantissa if int(exponent) == 0 else f"{mantissa}e{int(exponent)}"
