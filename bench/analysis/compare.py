"""``contactbench compare BASE NEW``: did it get slower, less correct or less safe, and is
the difference real?

For every configuration in both runs (solver spec, dtype, device, family, kind, batch size):
the ratio of the median end-to-end times per case, NEW over BASE, with its bootstrap interval
over the timed repeats (``bench.analysis.stats.ratio_interval``), and per outcome the change of
its distinct-case rate with a conservative interval. Verdicts: ``slower`` / ``faster`` (the
time interval wholly beyond ``threshold``; the plain ratio, marked, without repeats);
``less correct`` / ``more correct`` and ``less safe`` / ``safer`` (a one-sided Fisher test at
``1 - confidence``); ``new false accepts`` (NEW has some, BASE none: a rare event is never
``same``); ``failed`` (every case failed in NEW only); else ``same``. Where either run's
``cpu_share`` (the share of its timed repeats' runnable time the machine let it run) is
below ``min_cpu_share`` the time is ``noisy``: no time verdict (unless ``strict``).
``worse`` is any of slower, less correct, less safe, new false accepts, failed, or a BASE
configuration missing in NEW. ``notes`` names where the runs differ in what may explain a difference: machine,
engine layout, grid, package versions, XLA and allocator settings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from solvers.errors import ProblemError

from bench.analysis import intervals, results, stats
from bench.engine.rundir import read_manifest

#: what names a configuration across two runs
KEYS = ["solver_spec", "dtype", "device", "family_label", "kind", "n_scenes"]
#: verdicts that count as a regression (exit 1)
WORSE = ("slower", "less correct", "less safe", "new false accepts", "failed")
#: the time verdict of a configuration whose timings were contended (``min_cpu_share``)
NOISY = "noisy"
#: ``compare``'s default ``min_cpu_share``: below it a run's timings were contended. An idle
#: machine gives a cell 0.93-1 (its own threads and the run's other processes wait a little);
#: one other busy process on its CPU about 1/2.
MIN_CPU_SHARE = 0.8
#: env columns whose difference between the runs is noted
NOTED_ENV = ("env_host", "env_cpu", "env_python", "env_numpy", "env_scipy", "env_highspy", "env_jax", "env_jaxlib",
             "env_linrax", "env_solver_versions", "env_xla_flags", "env_malloc", "env_pjrt_nproc",
             "env_xla_preallocate", "env_jax_matmul_precision", "env_jax_compilation_cache")
#: grid options (run.json ``grid``, ``bench.engine.gridfile``) whose difference is noted (the others
#: show as configurations of one run only)
NOTED_GRID = ("seed", "repeats", "timeout", "preset")
#: engine fields (run.json) whose difference is noted
NOTED_ENGINE = ("kind", "workers", "cells_at_once", "exclusive", "hosts", "embedded", "timings_share_a_host")


@dataclass(frozen=True)
class Comparison:
    """``table``: one row per configuration in both runs (see the module docstring);
    ``only_base`` / ``only_new``: the configurations of one run only; ``notes``: where the
    runs differ beyond their results; ``threshold`` and ``confidence`` as asked."""

    table: pd.DataFrame
    only_base: pd.DataFrame
    only_new: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    threshold: float = 1.1
    confidence: float = 0.95
    min_cpu_share: float = MIN_CPU_SHARE
    strict: bool = False

    @property
    def worse(self) -> bool:
        """True when some configuration got worse (``WORSE``) or is missing in NEW."""
        return bool(len(self.only_base)) or (bool(self.table["worse"].any()) if len(self.table) else False)

    def to_json(self) -> dict:
        """A JSON-ready dict of the whole comparison (NaN as None)."""
        def records(df: pd.DataFrame) -> list[dict]:
            out = []
            for rec in df.to_dict("records"):
                out.append({k: (None if isinstance(v, float) and not math.isfinite(v) else
                                v.item() if isinstance(v, np.generic) else v) for k, v in rec.items()})
            return out
        return {"threshold": self.threshold, "confidence": self.confidence, "min_cpu_share": self.min_cpu_share,
                "strict": self.strict, "worse": self.worse,
                "notes": self.notes, "configurations": records(self.table),
                "only_base": records(self.only_base), "only_new": records(self.only_new)}


def check_threshold(threshold: float) -> float:
    """``threshold`` (a time ratio > 1) or ``ProblemError`` naming it."""
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold > 1):
        raise ProblemError(f"threshold: expected a time ratio > 1 (e.g. 1.1), got {threshold!r}")
    return float(threshold)


def check_min_cpu_share(share: float) -> float:
    """``share`` (a CPU share from 0 to 1; 0 never calls a timing noisy) or ``ProblemError``
    naming it."""
    if isinstance(share, bool) or not (isinstance(share, (int, float)) and 0 <= share <= 1):
        raise ProblemError(f"min_cpu_share: expected a share from 0 to 1 (e.g. {MIN_CPU_SHARE}), got {share!r}")
    return float(share)


def _cpu_shares(rows: pd.DataFrame) -> dict[tuple, float]:
    """Per configuration (``KEYS``) the lowest ``cpu_share`` of its cells (NaN: not recorded)."""
    if "cpu_share" not in rows:
        return {}
    lowest = rows.groupby(KEYS, dropna=False, observed=True)["cpu_share"].min()
    return {(key if isinstance(key, tuple) else (key,)): float(v) for key, v in lowest.items()}


def _select(rows: pd.DataFrame, family: str | None, kind: str | None, which: str) -> pd.DataFrame:
    if family is not None:
        rows = rows[(rows["family"].astype(str) == family) | (rows["family_label"].astype(str) == family)]
    if kind is not None:
        rows = rows[rows["kind"].astype(str) == kind]
    if rows.empty:
        raise ProblemError(f"{which}: no results of --family {family} --kind {kind}")
    return rows


def _rates(rows: pd.DataFrame, confidence: float) -> pd.DataFrame:
    counts = results.case_counts(rows, KEYS)
    rates = intervals.add_rates(counts, ["correct", "false_accept", "uncertain", "failed"], confidence)
    errored = rows.assign(_failed=rows["error_type"].astype(str).ne("") if "error_type" in rows else False)
    cell_failed = errored.groupby(KEYS, dropna=False)["_failed"].all().rename("cell_failed").reset_index()
    return rates.merge(cell_failed, on=KEYS, how="left")


def _time_verdict(ratio: float, low: float, high: float, threshold: float) -> str | None:
    """``slower`` / ``faster`` from the ratio's interval, or from the plain ratio (marked ``(no
    interval)``) where there is none; None within the threshold."""
    if np.isfinite(low) and np.isfinite(high):
        return "slower" if low > threshold else "faster" if high < 1 / threshold else None
    if np.isfinite(ratio):
        return "slower (no interval)" if ratio > threshold else "faster (no interval)" if ratio < 1 / threshold else None
    return None


def _rate_verdicts(r, alpha: float) -> list[str]:
    """The correct-rate and false-accept-rate verdicts of one merged rates row."""
    out = []
    counts = {o: (int(r[f"{o}_new"]), int(r["cases_new"]), int(r[f"{o}_base"]), int(r["cases_base"]))
              for o in ("correct", "false_accept")}
    k_new, n_new, k_base, n_base = counts["correct"]
    if stats.rate_increase_p(k_base, n_base, k_new, n_new) < alpha:
        out.append("less correct")
    elif stats.rate_increase_p(k_new, n_new, k_base, n_base) < alpha:
        out.append("more correct")
    k_new, n_new, k_base, n_base = counts["false_accept"]
    if stats.rate_increase_p(k_new, n_new, k_base, n_base) < alpha:
        out.append("less safe")
    elif k_new > 0 and k_base == 0:
        out.append("new false accepts")
    elif stats.rate_increase_p(k_base, n_base, k_new, n_new) < alpha:
        out.append("safer")
    return out


def compare(base_dirs: list[Path | str], new_dirs: list[Path | str], threshold: float = 1.1,
            confidence: float = 0.95, family: str | None = None, kind: str | None = None,
            min_cpu_share: float = MIN_CPU_SHARE, strict: bool = False) -> Comparison:
    """Compare the runs ``new_dirs`` with ``base_dirs`` (see the module docstring).
    ``ProblemError`` for a bad threshold, confidence or CPU share, runs without readable
    results, or runs that share no configuration (nothing to compare)."""
    threshold = check_threshold(threshold)
    confidence = intervals.check_confidence(confidence)
    min_cpu_share = check_min_cpu_share(min_cpu_share)
    base = _select(results.load(base_dirs), family, kind, "BASE")
    new = _select(results.load(new_dirs), family, kind, "NEW")
    rates_base, rates_new = _rates(base, confidence), _rates(new, confidence)
    both = rates_base.merge(rates_new, on=KEYS, suffixes=("_base", "_new"))
    if both.empty:
        raise ProblemError("nothing to compare: BASE and NEW share no configuration "
                           f"(solver, dtype, device, family, kind, scenes); BASE has {len(rates_base)}, "
                           f"NEW {len(rates_new)}")
    times_base, times_new = intervals.time_samples(base, KEYS), intervals.time_samples(new, KEYS)
    shares_base, shares_new = _cpu_shares(base), _cpu_shares(new)
    records = []
    for _, r in both.iterrows():
        key = tuple(r[k] for k in KEYS)
        a, b = times_new.get(key, np.empty(0)), times_base.get(key, np.empty(0))
        ratio, low, high = stats.ratio_interval(a, b, confidence) if len(a) and len(b) else (np.nan,) * 3
        rec = {k: r[k] for k in KEYS}
        rec.update(cases_base=int(r["cases_base"]), cases_new=int(r["cases_new"]),
                   base_us=float(np.median(b)) if len(b) else np.nan, new_us=float(np.median(a)) if len(a) else np.nan,
                   time_ratio=ratio, ratio_low=low, ratio_high=high,
                   cpu_share_base=shares_base.get(key, np.nan), cpu_share_new=shares_new.get(key, np.nan))
        contended = min(rec["cpu_share_base"], rec["cpu_share_new"]) < min_cpu_share  # (False with a NaN)
        rec.update(uncertain_base=int(r["uncertain_base"]), uncertain_agree_base=int(r["uncertain_agree_base"]),
                   uncertain_new=int(r["uncertain_new"]), uncertain_agree_new=int(r["uncertain_agree_new"]))
        for o in ("correct", "false_accept", "uncertain", "failed"):
            rec[f"{o}_change"] = r[f"{o}_rate_new"] - r[f"{o}_rate_base"]
            rec[f"{o}_change_low"] = r[f"{o}_low_new"] - r[f"{o}_high_base"]
            rec[f"{o}_change_high"] = r[f"{o}_high_new"] - r[f"{o}_low_base"]
        if bool(r["cell_failed_new"]) and not bool(r["cell_failed_base"]):
            verdicts = ["failed"]
        else:
            time = NOISY if contended and not strict else _time_verdict(ratio, low, high, threshold)
            verdicts = [v for v in [time] if v]
            verdicts += _rate_verdicts(r, 1.0 - confidence)
        rec["verdict"] = ", ".join(verdicts) or "same"
        rec["worse"] = any(v.split(" (")[0] in WORSE for v in verdicts)
        records.append(rec)
    table = pd.DataFrame(records)
    table = table.sort_values(["worse", "family_label", "kind", "n_scenes", "solver_spec"],
                              ascending=[False, True, True, True, True]).reset_index(drop=True)
    keys_base = rates_base[KEYS].drop_duplicates()
    keys_new = rates_new[KEYS].drop_duplicates()
    only_base = keys_base.merge(keys_new, on=KEYS, how="left", indicator=True)
    only_new = keys_new.merge(keys_base, on=KEYS, how="left", indicator=True)
    only_base = only_base[only_base["_merge"] == "left_only"].drop(columns="_merge").reset_index(drop=True)
    only_new = only_new[only_new["_merge"] == "left_only"].drop(columns="_merge").reset_index(drop=True)
    notes = _notes(base, new, base_dirs, new_dirs)
    noisy = int(table["verdict"].str.contains(NOISY).sum())
    if noisy:
        notes.append(f"timings were contended: {noisy} configuration(s) ran with less than {min_cpu_share:g} of "
                     "their runnable time on a CPU in BASE or NEW (cpu_share), so their times are 'noisy', with no "
                     "time verdict; rerun them on an idle machine, or use --strict for the plain verdicts")
    if any("(no interval)" in v for v in table["verdict"]):
        notes.append("some runs have too few timed repeats for an interval: their time verdicts compare the plain "
                     f"ratio with the threshold x{threshold:g} (marked 'no interval')")
    return Comparison(table, only_base, only_new, notes, threshold, confidence, min_cpu_share, strict)


def _values(rows: pd.DataFrame, column: str) -> list[str]:
    return sorted(map(str, rows[column].dropna().unique())) if column in rows else []


def _versions(rows: pd.DataFrame) -> dict[str, str]:
    """Package -> version(s) of a run's solver packages (``env_solver_versions``: "pkg ver, ...")."""
    found: dict[str, set[str]] = {}
    for text in _values(rows, "env_solver_versions"):
        for item in filter(None, (part.strip() for part in text.split(","))):
            package, _, version = item.rpartition(" ")
            found.setdefault(package or version, set()).add(version if package else "?")
    return {package: "/".join(sorted(versions)) for package, versions in found.items()}


def _effective_grid(grid_options: dict) -> dict[str, str]:
    """The grid options that decide a difference, with what an option left out means: the
    ``default`` preset, seed 0, the preset's repeats and timeout."""
    from bench.engine.grid import PRESETS

    name = str(grid_options.get("preset", "default"))
    preset = PRESETS.get(name, {})
    effective = {"preset": name, "seed": grid_options.get("seed", 0),
                 "repeats": grid_options.get("repeats", preset.get("repeats", "(default)")),
                 "timeout": grid_options.get("timeout", preset.get("timeout", "(default)"))}
    return {key: str(value) for key, value in effective.items()}


def _notes(base: pd.DataFrame, new: pd.DataFrame, base_dirs, new_dirs) -> list[str]:
    """Where the runs differ in what may explain a difference in their results."""
    notes = []
    for column in NOTED_ENV:
        if column == "env_solver_versions":
            a, b = _versions(base), _versions(new)
            changed = [f"{p} {a.get(p, '-')} -> {b.get(p, '-')}" for p in sorted(set(a) | set(b))
                       if p in a and p in b and a[p] != b[p]]
            if changed:
                notes.append("solver versions differ (BASE -> NEW): " + ", ".join(changed))
            continue
        a, b = _values(base, column), _values(new, column)
        if a != b:
            what = {"env_host": "different machines", "env_cpu": "different CPUs"}.get(column, column.removeprefix("env_"))
            notes.append(f"{what}: BASE {', '.join(a) or '-'}; NEW {', '.join(b) or '-'}")
    manifests = [[read_manifest(d) for d in dirs] for dirs in (base_dirs, new_dirs)]
    engines = [[m["engine"] for m in side if isinstance(m.get("engine"), dict)] for side in manifests]
    for name in NOTED_ENGINE:
        a, b = (sorted({str(e[name]) for e in side if name in e}) for side in engines)
        if a and b and a != b:
            notes.append(f"engine layout differs, {name}: BASE {', '.join(a)}; NEW {', '.join(b)}")
    # (a run of an older contactbench records no grid: nothing to compare)
    grids = [[_effective_grid(m["grid"]) for m in side if isinstance(m.get("grid"), dict)] for side in manifests]
    for name in NOTED_GRID:
        a, b = (sorted({g[name] for g in side}) for side in grids)
        if a and b and a != b:
            notes.append(f"grids differ, {name}: BASE {', '.join(a)}; NEW {', '.join(b)}")
    return notes


def text_rows(comparison: Comparison) -> pd.DataFrame:
    """The comparison as short display columns: one line per configuration."""
    t = comparison.table
    if t.empty:
        return pd.DataFrame(columns=["verdict", "configuration", "family", "scenes", "time NEW/BASE", "CPU share",
                                     "correct", "false accept", "uncertain (agree)"])

    def change(row, outcome: str) -> str:
        d, lo, hi = row[f"{outcome}_change"], row[f"{outcome}_change_low"], row[f"{outcome}_change_high"]
        return f"{d:+.3g} [{lo:+.2g}, {hi:+.2g}]" if np.isfinite(d) else ""

    return pd.DataFrame({
        "verdict": t["verdict"],
        "configuration": results.config_label(t, solver="solver_spec", host=False),
        "family": t["family_label"].astype(str) + "/" + t["kind"].astype(str),
        "scenes": t["n_scenes"].astype(int),
        "time NEW/BASE": [f"{r:.3g} [{lo:.3g}, {hi:.3g}]" if np.isfinite(lo) else (f"{r:.3g}" if np.isfinite(r) else "")
                          for r, lo, hi in zip(t["time_ratio"], t["ratio_low"], t["ratio_high"])],
        "CPU share": [f"{a:.2f} -> {b:.2f}" if np.isfinite(a) or np.isfinite(b) else ""
                      for a, b in zip(t["cpu_share_base"], t["cpu_share_new"])],
        "correct": [change(r, "correct") for _, r in t.iterrows()],
        "false accept": [change(r, "false_accept") for _, r in t.iterrows()],
        "uncertain (agree)": [f"{results.agree_text(r.uncertain_base, r.uncertain_agree_base)} -> "
                              f"{results.agree_text(r.uncertain_new, r.uncertain_agree_new)}" for r in t.itertuples()],
    })
