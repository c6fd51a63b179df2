"""Intervals on result tables: outcome rates with Clopper-Pearson bounds, bootstrap intervals
on median times per case and pairwise speed ratios.

The formulas live in ``bench.analysis.stats``; this module applies them to cell rows, counted and
timed by the rules of ``bench.analysis.results`` (distinct cases, each with its worst outcome; times
per case from the timed repeats behind the ranking time: a repeat's time per case is its
batch time over the cell's cases, in microseconds, and a group's interval is the percentile
bootstrap of the median over the repeats of its cells).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.analysis import stats
from bench.analysis.results import REPEAT_PREFERENCE, case_counts, repeat_column, sci

#: default confidence level of every interval.
DEFAULT_CONFIDENCE = 0.95
#: the one check of a confidence level (``bench.analysis.stats``).
check_confidence = stats.check_confidence


def add_rates(table: pd.DataFrame, outcomes: list[str], confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """``table`` (with ``cases`` and a count column per outcome) plus, per outcome ``o``,
    ``o_rate`` (count / cases), ``o_low`` and ``o_high`` (two-sided Clopper-Pearson interval
    at ``confidence``) and ``false_accept_bound``: the one-sided upper bound of the
    false-accept rate, the safety figure. Where ``table`` has a ``kind`` column, an outcome
    that kind cannot give (``Kind.outcomes``: no ``suboptimal`` for a hold LP) gets NaN, not
    a rate of 0 (copy)."""
    from bench.engine.schema import outcome_columns

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


def _per_case_us(cells: pd.DataFrame) -> np.ndarray:
    """Microseconds per case of every timed repeat of these cells (one row per cell), from
    the repeats behind the ranking time (``bench.analysis.results.repeat_column``)."""
    samples = []
    for _, cell in cells.iterrows():
        column = repeat_column(cell)
        if column is not None:
            samples.append(np.asarray(cell[column], dtype=float) * 1e3 / max(int(cell["n_lps"]), 1))
    return np.concatenate(samples) if samples else np.empty(0)


def time_samples(rows: pd.DataFrame, keys: list[str]) -> dict[tuple, np.ndarray]:
    """Per group of ``keys`` (tuple of its values): microseconds per case of every timed
    repeat of its cells (empty for cells that failed or runs that kept no repeat times)."""
    have = [c for c in REPEAT_PREFERENCE if c in rows]
    if not have:
        return {}
    cells = rows.drop_duplicates("cell_id" if "run_id" not in rows else ["run_id", "cell_id"])
    return {(key if isinstance(key, tuple) else (key,)): _per_case_us(grp)
            for key, grp in cells.groupby(keys, sort=False, dropna=False)}


def add_time_intervals(table: pd.DataFrame, rows: pd.DataFrame, keys: list[str],
                       confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """``table`` (one row per group of ``keys``) plus ``time_low_us`` and ``time_high_us``:
    the bootstrap interval (``bench.analysis.stats.median_interval``) of the median microseconds per
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


def ratio_matrix(samples: dict[str, np.ndarray], confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """Pairwise speed ratios: for configurations ``a`` (rows) and ``b`` (columns), the ratio
    of ``a``'s median time per case to ``b``'s (> 1: ``a`` is slower) with its bootstrap
    interval (``bench.analysis.stats.ratio_interval``). Long format: ``a``, ``b``, ``ratio``, ``low``,
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


