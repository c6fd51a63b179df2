"""``contactbench publish``: a static comparison dashboard from one or more runs.

The site opens from ``file://`` with no server and no network: HTML from Jinja2 templates
(``bench/reporting/templates``, autoescaped, so solver messages and names cannot inject markup),
interactive plots from Plotly, whose JavaScript is written once to ``assets/plotly.min.js``.

Pages: ``index.html`` (per family, solver configurations ranked by correctness then speed;
provenance of every run) and one ``family-<name>.html`` per family (the full table, an
accuracy-vs-time scatter, a Dolan-More performance profile, shifted geometric means and the
cases where configurations disagree).

A *configuration* is solver label (name and settings) x device x dtype x machine; runs from
different machines are kept apart by the host they ran on.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from solvers import ProblemError

from bench.analysis import intervals, recommend, results
from bench.engine.rundir import read_manifest, replace_output_dir
from bench.engine.schema import outcome_columns

#: shift of the shifted geometric mean, microseconds per case (see ``shifted_geometric_mean``).
SGM_SHIFT_US = 10.0
#: the largest time ratio the performance profile plots.
PROFILE_TAU_MAX = 1e3
#: the most disagreeing cases listed per family page.
MAX_DRILL_CASES = 200
#: tables longer than this many rows are folded (``<details>``, closed) on a family page
FOLD_ROWS = 20
#: the column naming one case (``bench.analysis.results.case_ids``: its content, not its parameters)
CASE_KEY = results.CASE_KEY


@dataclass(frozen=True)
class Site:
    """Where a published dashboard was written, and what it holds."""

    out: Path
    index: Path
    family_pages: dict[str, Path]
    configurations: int
    runs: int


#: a family table's groups: one configuration, kind and batch size
FAMILY_KEYS = ["config", "solver_label", "device", "dtype", "kind", "n_scenes"]


def family_table(rows: pd.DataFrame, confidence: float = intervals.DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """Per configuration, kind and batch size (scenes) of one family: n, outcome counts (those
    the kinds present give), median ms per 256 scenes, median us per case, median compile
    seconds and the kinds' own aggregations (``bench.analysis.results.summarize``); then ``cases``, the
    rates with their intervals and ``false_accept_bound`` (``bench.analysis.intervals.add_rates``) and
    ``time_low_us`` / ``time_high_us`` around ``rank_us`` at ``confidence``."""
    keys = FAMILY_KEYS
    table = results.summarize(rows, keys)
    outcomes = [o for o in outcome_columns(list(rows["kind"].unique())) if o in table]
    table = intervals.with_intervals(table, rows, keys, outcomes, confidence)
    table = table.rename(columns={"n_scenes": "scenes", "us_per_lp": "us_per_case",
                                  "end_to_end_us_per_lp": "e2e_us_per_case",
                                  "end_to_end_ms_per_256": "e2e_ms_per_256"})
    table["correct_pct"] = 100.0 * table["correct"] / table["n"]
    rank_us = rows.groupby(keys)["rank_us"].median().rename("rank_us").reset_index()
    return table.merge(rank_us.rename(columns={"n_scenes": "scenes"}), on=[k if k != "n_scenes" else "scenes"
                                                                            for k in keys], how="left")


def ranked(table: pd.DataFrame, by: str = "rank_us") -> pd.DataFrame:
    """A family table in ranking order with ``rank`` and ``tied`` (``bench.analysis.results.rank``:
    the one ranking rule)."""
    return results.rank(table, by)


#: what a ranking compares: configurations that solved the same problems on the same device
RANKING_GROUP = ["kind", "scenes", "device"]


def ranked_groups(table: pd.DataFrame, by: str = "rank_us") -> pd.DataFrame:
    """A family table ranked within each kind x batch size x device (``RANKING_GROUP``): a
    QP configuration is never ranked against an LP one, nor 64 scenes against 4,096. Groups
    in order of kind, batch size and device; ``rank`` restarts at 1 in each."""
    parts = [ranked(group, by) for _, group in table.groupby(RANKING_GROUP, sort=True)]
    return pd.concat(parts, ignore_index=True) if parts else table.assign(rank=[], tied=[])


def shifted_geometric_mean(values_us: np.ndarray, shift_us: float = SGM_SHIFT_US) -> float:
    """``exp(mean(log(t + s))) - s`` of times ``t`` in microseconds, shift ``s`` in microseconds.

    The shift damps ratios between times far below it: per-case times here run from about
    0.1 us (a vmapped batch) to milliseconds, and a difference of fractions of a microsecond
    matters little to a controller with a budget of 1,000 us per tick (1 kHz) while it would
    dominate a plain geometric mean. 10 us is about one Python call into a native solver.
    """
    t = np.asarray(values_us, dtype=float)
    t = t[np.isfinite(t)]
    if shift_us < 0:
        raise ProblemError(f"shift_us: expected >= 0, got {shift_us!r}")
    if t.size == 0:
        return float("nan")
    return float(np.exp(np.mean(np.log(t + shift_us))) - shift_us)


def case_times(rows: pd.DataFrame) -> pd.DataFrame:
    """Cases x configurations: microseconds per case where the answer is correct, ``inf``
    where it is not (the input of the performance profile). Only cases every configuration
    of the family attempted are kept, so the ratios compare like with like."""
    t = np.where(rows["outcome"] == "correct", rows["rank_us"].astype(float), np.inf)
    frame = rows.assign(_t=t).pivot_table(index=CASE_KEY, columns="config", values="_t", aggfunc="min")
    return frame.dropna(axis=0, how="any")


def performance_profile(times: pd.DataFrame, tau_max: float = PROFILE_TAU_MAX) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Dolan-More profile: for each configuration, ``tau`` (ratios to the fastest correct
    configuration per case) and ``rho(tau)``, the fraction of cases it answers correctly
    within ``tau`` times the best. Cases no configuration answers correctly are dropped."""
    if times.empty:
        return {}
    best = times.min(axis=1)
    times = times[np.isfinite(best)]
    best = best[np.isfinite(best)]
    if times.empty:
        return {}
    ratios = times.div(best, axis=0)
    out = {}
    for config in ratios.columns:
        r = np.sort(ratios[config].to_numpy())
        r = r[np.isfinite(r) & (r <= tau_max)]
        tau = np.concatenate([[1.0], r, [tau_max]])
        rho = np.concatenate([[np.mean(ratios[config].to_numpy() <= 1.0)],
                              np.arange(1, r.size + 1) / len(ratios), [r.size / len(ratios)]])
        out[config] = (tau, rho)
    return out


def disagreements(rows: pd.DataFrame, limit: int = MAX_DRILL_CASES) -> tuple[pd.DataFrame, int]:
    """Cases where not every configuration is correct, one row per case, narrow whatever the
    number of configurations: ``kind``; ``case`` (its parameters, ``meta_*``, as
    ``name=value`` text); ``reference`` (the reference's truth and verdict, exit or
    objective); ``not correct`` (a list: ``config: outcome (status)`` for each configuration
    not correct on it); ``correct`` (``k of m`` configurations). Returns ``(table, total
    disagreeing cases)``; near-boundary cases (smallest ``|meta_signed_distance|``) first
    when the family has them, the first ``limit`` kept."""
    outcome = rows.pivot_table(index=CASE_KEY, columns="config", values="outcome", aggfunc="first")
    answer = rows["outcome"].astype(str)
    if "status" in rows:
        answer = answer + " (" + rows["status"].astype(str) + ")"
    wide = rows.assign(_answer=answer).pivot_table(index=CASE_KEY, columns="config", values="_answer",
                                                   aggfunc="first")
    bad = (outcome != "correct") & outcome.notna()
    keys = outcome.index[bad.any(axis=1)]
    total = len(keys)
    meta_cols = [c for c in rows.columns if c.startswith("meta_") and rows[c].notna().any()]
    ref_cols = [c for c in ("truth", "ref_verdict", "ref_exit", "ref_objective") if c in rows]
    first = rows.drop_duplicates(CASE_KEY).set_index(CASE_KEY).loc[keys]
    if "meta_signed_distance" in first:
        first = first.assign(_d=first["meta_signed_distance"].abs()).sort_values("_d", kind="stable")
    first = first.head(limit)

    def text(value) -> str:
        if isinstance(value, (float, np.floating)):
            return f"{value:.4g}"
        return str(value)

    records = []
    for key, r in first.iterrows():
        given = [(c[5:], r[c]) for c in meta_cols if pd.notna(r[c]) and c != "meta_case"]
        reference = [text(r[c]) for c in ref_cols if pd.notna(r[c]) and str(r[c]) != ""]
        wrong = [f"{config}: {wide.at[key, config]}" for config in outcome.columns if bad.at[key, config]]
        answered = int(outcome.loc[key].notna().sum())
        records.append({"kind": str(r["kind"]), "case": ", ".join(f"{k}={text(v)}" for k, v in given),
                        "reference": " / ".join(dict.fromkeys(reference)), "not correct": wrong,
                        "correct": f"{answered - len(wrong)} of {answered}"})
    return pd.DataFrame(records, columns=["kind", "case", "reference", "not correct", "correct"]), total


def _plot_json(fig) -> str:
    """The figure as JSON safe inside a ``<script>`` element (``<``, ``>`` and ``&`` written as
    JSON escapes, so a solver label cannot close the element)."""
    return fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def scatter_figure(table: pd.DataFrame):
    """Accuracy (percent correct) against microseconds per case (end to end, ``rank_us``),
    one trace per solver label; interval bars where the table has them: the bootstrap interval
    of the median time (``time_low_us`` / ``time_high_us``) and the Clopper-Pearson interval
    of the correct rate (``correct_low`` / ``correct_high``, as percent)."""
    import plotly.graph_objects as go

    def bars(grp, low, high, point, scale=1.0):
        if low not in grp or high not in grp:
            return None
        lo = (grp[low] * scale).to_numpy(dtype=float)
        hi = (grp[high] * scale).to_numpy(dtype=float)
        x = grp[point].to_numpy(dtype=float)
        plus, minus = np.where(np.isfinite(hi), hi - x, 0.0), np.where(np.isfinite(lo), x - lo, 0.0)
        return {"type": "data", "symmetric": False, "array": np.maximum(plus, 0).tolist(),
                "arrayminus": np.maximum(minus, 0).tolist(), "thickness": 1}

    fig = go.Figure()
    colours = solver_colours(table["solver_label"])
    for solver, grp in table.groupby("solver_label", sort=True):
        symbols = [DTYPE_SYMBOLS.get(str(d), "square") + ("-open" if str(dev) == "gpu" else "")
                   for d, dev in zip(grp["dtype"], grp["device"])]
        fig.add_trace(go.Scatter(
            x=grp["rank_us"], y=grp["correct_pct"], mode="markers", name=str(solver),
            text=(grp["config"] + " / " + grp["kind"]).tolist(),
            marker={"size": 11, "color": colours[str(solver)], "symbol": symbols},
            error_x=bars(grp, "time_low_us", "time_high_us", "rank_us"),
            error_y=bars(grp, "correct_low", "correct_high", "correct_pct", 100.0),
            hovertemplate="%{text}<br>%{x:.3g} us per case<br>%{y:.2f} % correct<extra></extra>"))
    fig.update_layout(xaxis={"type": "log", "title": "microseconds per case, end to end (median, log scale)"},
                      yaxis={"title": "correct (%)"}, margin={"t": 30}, height=460, legend={"title": "solver"})
    return fig


#: the scatter's marker per dtype (open markers: GPU)
DTYPE_SYMBOLS = {"float64": "circle", "float32": "diamond"}


#: columns a ranking's table leaves out (the same on every row, or the per-case times again per 256
#: scenes): every table fits a 1,400 px window; report.csv keeps them all
GROUP_TABLE_OMITS = ("kind", "scenes", "device", "e2e_ms_per_256", "ms_per_256")


#: colours told apart with every common colour-vision deficiency: Okabe and Ito's eight, then
#: Paul Tol's nine "muted" ones (17 solvers in one plot before a colour repeats)
SOLVER_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000",
                  "#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499")


def solver_colours(labels) -> dict[str, str]:
    """One colour per distinct solver label (sorted) from ``SOLVER_COLOURS``: distinct within a
    plot of up to 17 solvers."""
    return {label: SOLVER_COLOURS[i % len(SOLVER_COLOURS)] for i, label in enumerate(sorted(map(str, set(labels))))}


#: the profile's line dash per dtype (a solver's configurations share its colour)
DTYPE_DASH = {"float64": "solid", "float32": "dash"}


#: the most configurations per kind and batch size in a family page's ratio table.
MAX_RATIO_CONFIGS = 10


def speed_ratios(rows: pd.DataFrame, table: pd.DataFrame, confidence: float = intervals.DEFAULT_CONFIDENCE,
                 limit: int = MAX_RATIO_CONFIGS) -> list[dict]:
    """Per kind and batch size of a family: the pairwise speed ratios (row configuration's
    median end-to-end time per case over the column's, with bootstrap intervals,
    ``bench.analysis.intervals.ratio_matrix``) among its ``limit`` fastest configurations that have
    repeat times. Returns one dict per block: ``kind``, ``scenes``, ``configs`` (fastest
    first), ``cells`` (``{a: {b: {"text", "verdict"}}}``) and ``left_out`` (configurations past
    ``limit``)."""
    samples = intervals.time_samples(rows, ["kind", "n_scenes", "config"])
    blocks = []
    for (kind, scenes), grp in table.groupby(["kind", "scenes"], sort=True):
        order = grp.sort_values("rank_us")["config"].tolist()
        have = [c for c in order if samples.get((kind, scenes, c), np.empty(0)).size >= 2]
        if len(have) < 2:
            continue
        chosen = have[:limit]
        matrix = intervals.ratio_matrix({c: samples[(kind, scenes, c)] for c in chosen}, confidence)
        cells = {a: {} for a in chosen}
        for _, r in matrix.iterrows():
            cells[r["a"]][r["b"]] = {"text": f"{r['ratio']:.3g} [{r['low']:.3g}, {r['high']:.3g}]",
                                     "verdict": r["verdict"]}
        blocks.append({"kind": str(kind), "scenes": int(scenes), "configs": chosen, "cells": cells,
                       "left_out": len(have) - len(chosen)})
    return blocks


def recommendation_box(rows: pd.DataFrame, confidence: float = intervals.DEFAULT_CONFIDENCE) -> dict:
    """``contactbench recommend`` at its default thresholds (``bench.analysis.recommend.Thresholds``) on
    one family's rows, for the family page: thresholds, qualifying configurations (fastest
    first, ties marked), the others with their reasons, and the rerun ``--n``."""
    result = recommend.assess(rows, recommend.Thresholds(confidence=confidence))
    t = result.thresholds
    sci = results.sci

    def record(r) -> dict:
        return {"rank": results.rank_text(r["rank"], r["tied"]),
                "config": str(r["config"]), "kind": str(r["kind"]), "scenes": str(r["scenes"]),
                "cases": f"{r['cases']:,}", "false_accept_bound": sci(r["false_accept_bound"]),
                "uncertain_bound": sci(r["uncertain_bound"]), "wrong_bound": sci(r["wrong_bound"]),
                "time": results.interval_text(r["us_per_case"], r["time_low_us"], r["time_high_us"]),
                "status": str(r["status"]), "reasons": "; ".join(r["reasons"])}

    rest = result.table[result.table["status"] != "qualifies"]
    return {"confidence": f"{100 * t.confidence:g} %", "max_false_accept": sci(t.max_false_accept),
            "max_uncertain": sci(t.max_uncertain), "max_wrong": sci(t.max_wrong), "budget_us": results.budget_text(t.budget_us),
            "qualifying": [record(r) for _, r in result.qualifying.iterrows()],
            "rest": [record(r) for _, r in rest.iterrows()],
            "open": result.rerun_decides, "rerun_n": result.rerun_n,
            "undecidable": result.undecidable}


def profile_figure(profile: dict[str, tuple[np.ndarray, np.ndarray]]):
    """The performance profile, one step trace per configuration (``solver dtype device``):
    its solver's colour (``solver_colours``), dashed for float32, dotted on a GPU."""
    import plotly.graph_objects as go

    fig = go.Figure()
    parts = {config: (config.rsplit(" ", 2) + ["", ""])[:3] for config in profile}
    colours = solver_colours(p[0] for p in parts.values())
    for config, (tau, rho) in sorted(profile.items()):
        solver, dtype, device = parts[config]
        dash = "dot" if device == "gpu" else DTYPE_DASH.get(dtype, "dashdot")
        fig.add_trace(go.Scatter(x=tau, y=rho, mode="lines", name=config,
                                 line={"shape": "hv", "color": colours[solver], "dash": dash}))
    fig.update_layout(xaxis={"type": "log", "title": "tau: time ratio to the fastest correct configuration"},
                      yaxis={"title": "fraction of cases correct within tau", "range": [0, 1.02]},
                      margin={"t": 30}, height=460)
    return fig


def scaling_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, kind and batch size (scenes): median microseconds per case end to
    end (``rank_us``) and of the solve alone, over correct and incorrect cases alike (time
    is what the batch cost), and whether the adapter solves the batch at once (``batched``)."""
    import solvers

    keys = ["config", "solver", "device", "kind", "n_scenes"]
    table = rows.groupby(keys).agg(us_per_case=("rank_us", "median"), solve_us_per_case=("us_per_lp", "median"))
    table = table.reset_index()

    def batched(name: str) -> bool:
        try:
            return bool(solvers.adapter_class(name).CAPABILITIES.batched)
        except Exception:
            return False

    table["batched"] = table["solver"].map({name: batched(name) for name in table["solver"].unique()})
    return table


def crossover(scaling: pd.DataFrame) -> pd.DataFrame:
    """Per kind and device: for each batched configuration, the smallest batch size (scenes)
    from which it is faster per case (end to end) than the fastest loop configuration at
    that size, on that device; NaN (``never``) where it never is among the sizes run."""
    out = []
    for (kind, device), grp in scaling.groupby(["kind", "device"], sort=True):
        loops = grp[~grp["batched"]]
        if loops.empty:
            continue
        best_loop = loops.groupby("n_scenes")["us_per_case"].min()
        for config, g in grp[grp["batched"]].groupby("config", sort=True):
            g = g.set_index("n_scenes")["us_per_case"]
            sizes = [n for n in sorted(g.index) if n in best_loop.index]
            wins = [n for n in sizes if g[n] < best_loop[n]]
            first = next((n for n in sizes if all(g[m] < best_loop[m] for m in sizes if m >= n)), None)
            out.append({"kind": kind, "device": device, "config": config, "sizes": len(sizes),
                        "faster_from_scenes": first if wins else None,
                        "fastest_loop_us": float(best_loop[sizes[-1]]) if sizes else float("nan"),
                        "its_us_at_largest": float(g[sizes[-1]]) if sizes else float("nan")})
    return pd.DataFrame(out, columns=["kind", "device", "config", "sizes", "faster_from_scenes",
                                      "fastest_loop_us", "its_us_at_largest"])


def scaling_figure(scaling: pd.DataFrame):
    """Microseconds per case (end to end) against batch size, log-log, one line per
    configuration and kind; GPU lines dashed."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for (config, kind), g in scaling.groupby(["config", "kind"], sort=True):
        g = g.sort_values("n_scenes")
        gpu = (g["device"] == "gpu").any()
        fig.add_trace(go.Scatter(x=g["n_scenes"].tolist(), y=g["us_per_case"].tolist(), mode="lines+markers",
                                 name=f"{config} ({kind})", line={"dash": "dash" if gpu else "solid"},
                                 hovertemplate="%{x} scenes<br>%{y:.3g} us per case<extra></extra>"))
    fig.update_layout(xaxis={"type": "log", "title": "batch size (scenes, log scale)"},
                      yaxis={"type": "log", "title": "microseconds per case, end to end (log scale)"},
                      margin={"t": 30}, height=460)
    return fig


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-").lower()


def page_names(labels: list[str]) -> dict[str, str]:
    """``family-<slug>.html`` per family label, unique however the labels differ (case,
    punctuation, length: ``files[path=a/Good]`` and ``files[path=a/good]``); a slug two
    labels share, or one past 80 characters, ends with a digest of the label. File systems
    that ignore case are counted in: the test is on lower-cased names."""
    slugs = {label: _slug(label) for label in labels}
    counts: dict[str, int] = {}
    for slug in slugs.values():
        counts[slug] = counts.get(slug, 0) + 1
    names = {}
    for label, slug in slugs.items():
        if counts[slug] > 1 or len(slug) > 80:
            slug = f"{slug[:60]}-{hashlib.sha256(label.encode()).hexdigest()[:10]}"
        names[label] = f"family-{slug}.html"
    return names


def _records(df: pd.DataFrame) -> list[dict]:
    """Rows as dicts of display strings: numbers in the one style of every table
    (``bench.analysis.results.number_text``), NaN blank, text as it is."""
    def fmt(v):
        if isinstance(v, (int, float, np.integer, np.floating, bool, np.bool_)) or v is None:
            return results.number_text(v)
        return str(v)
    return [{k: fmt(v) for k, v in rec.items()} for rec in df.to_dict("records")]


#: the headers the dashboard shows for its columns (any other: underscores as spaces)
HEADERS = {
    "rank": "rank", "solver_label": "solver", "config": "configuration", "device": "device", "dtype": "dtype",
    "kind": "kind", "scenes": "scenes", "n_scenes": "scenes", "n": "cases", "cases": "cases",
    "correct": "correct", "suboptimal": "suboptimal", "false_accept": "false accepts",
    "false_reject": "false rejects", "uncertain": "uncertain", "failed": "failed", "correct_pct": "correct %",
    "false_accept_bound": "false accepts \u2264", "e2e_us_per_case": "\u00b5s per case, end to end",
    "e2e_us_interval": "end to end [interval]", "us_per_case": "\u00b5s per case, solve",
    "e2e_ms_per_256": "ms per 256, end to end", "ms_per_256": "ms per 256, solve", "sgm_us": "shifted geo. mean \u00b5s",
    "compile_s": "compile s", "peak_rss_mb": "peak host MB", "device_peak_mb": "peak device MB",
    "sizes": "sizes run", "faster_from_scenes": "faster from (scenes)", "fastest_loop_us": "fastest loop \u00b5s",
    "its_us_at_largest": "its \u00b5s at the largest", "truth": "reference answer", "ref_verdict": "reference verdict",
    "ref_objective": "reference objective", "signed_distance": "signed distance", "lp_index": "case",
}
#: columns shown left-aligned (text)
TEXT_COLUMNS = frozenset({"solver_label", "config", "device", "dtype", "kind", "truth", "ref_verdict"})


def header(column: str) -> str:
    """The dashboard's header of ``column`` (``HEADERS``, else its name with spaces)."""
    return HEADERS.get(column, str(column).replace("_", " "))


#: env columns whose values are comma lists of items that differ from cell to cell (each
#: solver's packages, each JAX adapter's devices): provenance shows the union of their items
LISTED_ENV = ("env_solver_versions", "env_jax_devices")


def merged_env(rows: pd.DataFrame, env_cols: list[str]) -> dict[str, str]:
    """The environment of ``rows`` (one host's cells) as provenance shows it: per ``env_``
    column (name without the prefix) every distinct non-empty value, and for
    ``LISTED_ENV`` the union of their comma-separated items (every solver package's version,
    every JAX device seen), not the first cell's alone."""
    out = {}
    for column in env_cols:
        values = sorted({str(v) for v in rows[column].dropna().unique()} - {"", "nan"})
        if column in LISTED_ENV:
            values = sorted({item.strip() for v in values for item in v.split(",") if item.strip()})
        if values:
            out[column[4:]] = ", ".join(values)
    return out


def _provenance(rows: pd.DataFrame, run_dirs: list[Path]) -> list[dict]:
    runs = []
    manifests = {}
    for d in run_dirs:
        m = read_manifest(d)
        manifests[m.get("run_id", Path(d).resolve().name)] = m
    env_cols = sorted(c for c in rows.columns if c.startswith("env_"))
    for run_id, grp in rows.groupby("run_id", sort=True):
        first = grp.iloc[0]
        m = manifests.get(str(run_id), {})
        by_host = grp.groupby("env_host", sort=True) if "env_host" in grp else [("", grp)]
        hosts = [{"host": str(host), "cells": str(h["cell_id"].nunique()), "env": merged_env(h, env_cols)}
                 for host, h in by_host]
        cpus = sorted(map(str, grp["env_cpu"].dropna().unique())) if "env_cpu" in grp else []
        runs.append({
            "run_id": str(run_id), "date": str(m.get("started", first.get("timestamp", ""))),
            "command": str(m.get("command", "")), "cells": str(grp["cell_id"].nunique()), "hosts": hosts,
            "env": hosts[0]["env"], "mixed_cpus": cpus if len(cpus) > 1 else [],
        })
    return runs


def _environment():
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("bench.reporting", "templates"),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["header"] = header
    env.tests["text_column"] = lambda column: column in TEXT_COLUMNS
    return env


def publish(run_dirs: list[Path | str], out: Path | str, confidence: float = intervals.DEFAULT_CONFIDENCE,
            compare_with: list[Path | str] | None = None, threshold: float = 1.1) -> Site:
    """Build the dashboard of ``run_dirs`` (each a ``contactbench run`` directory) under ``out``;
    every interval (rates, times, ratios, the recommendation box) at ``confidence``. With
    ``compare_with`` (base run directories) it adds ``compare.html``: ``bench.analysis.compare`` of
    ``run_dirs`` against them, slower / faster beyond ``threshold``.

    Raises ``ProblemError`` when no run directory holds readable results, or when ``out``
    may not be replaced (it holds files contactbench did not write, or overlaps a run
    directory); the site is built beside ``out`` and swapped in only when complete.
    """
    run_dirs, rows, confidence, versus = _inputs(run_dirs, confidence, compare_with, threshold)
    out = Path(out)
    return replace_output_dir(out, lambda tmp: _build_site(rows, run_dirs, tmp, out, confidence, versus),
                              [*run_dirs, *(Path(d) for d in compare_with or [])])


def publish_single_file(run_dirs: list[Path | str], file: Path | str,
                        confidence: float = intervals.DEFAULT_CONFIDENCE,
                        compare_with: list[Path | str] | None = None, threshold: float = 1.1) -> Site:
    """The dashboard of ``run_dirs`` (as ``publish``) as one self-contained HTML file ``file``
    (``bench.reporting.single_file``: Plotly and the data inlined, every page in it, offline), written
    whole or not at all. ``ProblemError`` when ``file`` is a folder, does not end in
    ``.html``, is not a file contactbench wrote, or lies in a run directory
    (``bench.engine.rundir.check_output_file``), and as ``publish``."""
    import tempfile

    from bench.engine.rundir import check_output_file
    from bench.reporting.single_file import FILE_MARKER, bundle

    file = Path(file)
    if file.suffix.lower() not in (".html", ".htm"):
        raise ProblemError(f"--single-file: expected a file name ending in .html, got {str(file)!r}")
    if file.is_dir():
        raise ProblemError(f"--single-file: {str(file)!r} is a folder; name the HTML file to write")
    check_output_file(file, FILE_MARKER, [Path(d) for d in run_dirs])
    run_dirs, rows, confidence, versus = _inputs(run_dirs, confidence, compare_with, threshold)
    file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".contactbench-site-", dir=file.parent) as tmp:
        site = _build_site(rows, run_dirs, Path(tmp) / "site", file.parent, confidence, versus)
        pages = ["index.html", *(p.name for p in site.family_pages.values()),
                 *(["compare.html"] if versus is not None else [])]
        part = Path(tmp) / file.name
        part.write_text(bundle(Path(tmp) / "site", pages), encoding="utf-8")
        os.replace(part, file)
    return Site(out=file, index=file, family_pages={k: file for k in site.family_pages},
                configurations=site.configurations, runs=site.runs)


def _inputs(run_dirs, confidence: float, compare_with, threshold: float):
    """``(run_dirs, rows, confidence, versus)`` of a dashboard: the runs' rows
    (``bench.analysis.results.load``) and, with ``compare_with``, ``(compare_with, bench.analysis.compare)``;
    every argument checked (``ProblemError`` naming it)."""
    if not run_dirs:
        raise ProblemError("run_dirs: expected at least one run directory")
    confidence = intervals.check_confidence(confidence)
    run_dirs = [Path(d) for d in run_dirs]
    rows = results.load(run_dirs)
    versus = None
    if compare_with:
        from bench.analysis import compare

        versus = (compare_with, compare.compare(compare_with, run_dirs, threshold, confidence=confidence))
    return run_dirs, rows, confidence, versus


def _interval_texts(table: pd.DataFrame) -> list[str]:
    return [results.interval_text(t, lo, hi) for t, lo, hi in
            zip(table["rank_us"], table["time_low_us"], table["time_high_us"])]


def _build_site(rows: pd.DataFrame, run_dirs: list[Path], out: Path, final: Path,
                confidence: float = intervals.DEFAULT_CONFIDENCE, versus=None) -> Site:
    """Write the site's files into ``out`` (a temporary folder); paths in the returned
    ``Site`` point to ``final``, where ``publish`` moves the folder."""
    import plotly
    import plotly.offline

    (out / "assets").mkdir(parents=True)
    (out / "assets" / "plotly.min.js").write_text(plotly.offline.get_plotlyjs(), encoding="utf-8")
    env = _environment()
    provenance = _provenance(rows, run_dirs)
    common = {"runs": provenance, "plotly_version": plotly.__version__, "sgm_shift": SGM_SHIFT_US,
              "confidence": f"{100 * confidence:g} %"}
    families, pages = [], {}
    page_of = page_names(sorted(map(str, rows["family_label"].unique())))
    common["families_nav"] = [{"name": label, "page": page} for label, page in page_of.items()]
    if versus is not None:
        common["families_nav"].append({"name": "compare", "page": "compare.html"})
    for family, frows in rows.groupby("family_label", sort=True):
        families.append(_write_family_page(out, env, common, str(family), frows, page_of[str(family)], confidence))
        pages[str(family)] = final / page_of[str(family)]
    if versus is not None:
        _write_compare_page(out, env, common, *versus)
    index = env.get_template("index.html.j2").render(**common, families=families,
                                                     n_configs=int(rows["config"].nunique()))
    (out / "index.html").write_text(index, encoding="utf-8")
    (out / "site.json").write_text(json.dumps({"families": [f["name"] for f in families],
                                               "runs": [r["run_id"] for r in provenance]}, indent=2))
    return Site(out=final, index=final / "index.html", family_pages=pages,
                configurations=int(rows["config"].nunique()), runs=len(provenance))


def _write_family_page(out: Path, env, common: dict, family: str, frows: pd.DataFrame, slug: str,
                       confidence: float) -> dict:
    """Write one family's page (``family.html.j2``) into ``out`` as ``slug``; returns its entry
    of the overview (name, page, kinds, the best rows of each ranking, counts)."""
    table = ranked_groups(family_table(frows, confidence))
    table["rank"] = [results.rank_text(r, t) for r, t in zip(table["rank"], table["tied"])]
    table["e2e_us_interval"] = _interval_texts(table)
    table["false_accept_bound"] = [results.sci(b) if pd.notna(b) else "" for b in table["false_accept_bound"]]
    rate_cols = intervals.rate_texts(table, outcome_columns(list(frows["kind"].unique())))
    rates = table[["rank", "solver_label", "device", "dtype", "kind", "scenes", "cases"]].join(rate_cols)
    rates["false_accept_bound"] = table["false_accept_bound"]
    table["sgm_us"] = [shifted_geometric_mean(frows.loc[frows["config"] == c, "rank_us"]
                                              .groupby(frows["cell_id"]).median().to_numpy())
                       for c in table["config"]]
    scaling = scaling_table(frows)
    sizes = int(scaling["n_scenes"].nunique())
    cross = crossover(scaling) if sizes > 1 else crossover(scaling.iloc[:0])
    profiles = []
    for kind in sorted(frows["kind"].unique()):  # one profile per kind: ratios among the same cases
        times = case_times(frows[frows["kind"] == kind])
        curves = performance_profile(times)
        profiles.append({"kind": str(kind), "id": f"profile-{_slug(str(kind))}", "cases": len(times),
                         "traces": len(curves), "json": _plot_json(profile_figure(curves))})
    drill, drill_total = disagreements(frows)
    by_truth = recommend.by_truth_class(frows) if {"config", "family_label"} <= set(frows) else pd.DataFrame()
    if len(by_truth):
        by_truth = by_truth.assign(unproven=[results.agree_text(u, a) for u, a in
                                             zip(by_truth["unproven"], by_truth["unproven_agree"])])
        by_truth = by_truth.drop(columns=["family", "unproven_agree"])
    columns = ["rank", "solver_label", "device", "dtype", "kind", "scenes", "n",
               *outcome_columns(list(frows["kind"].unique())), "correct_pct", "false_accept_bound",
               "e2e_us_per_case", "e2e_us_interval", "us_per_case",
               "e2e_ms_per_256", "ms_per_256", "sgm_us", "compile_s", "peak_rss_mb", "device_peak_mb"]
    table = table.assign(**{c: np.nan for c in columns if c not in table})
    if "uncertain_agree" in table:  # right or wrong without proof, told apart
        table["uncertain"] = [results.agree_text(u, a) if pd.notna(u) else "" for u, a in
                              zip(table["uncertain"], table["uncertain_agree"].fillna(0))]
    # a ranking's table: its heading names the kind, size and device; per-256 times repeat us per case
    group_columns = [c for c in columns if c not in GROUP_TABLE_OMITS]
    groups = [{"kind": str(kind), "scenes": int(scenes), "device": str(device), "rows": _records(part[group_columns])}
              for (kind, scenes, device), part in table.groupby(RANKING_GROUP, sort=True)]
    top_columns = ["rank", "solver_label", "device", "dtype", "kind", "scenes", "n", "correct_pct", "false_accept",
                   "false_accept_bound", "e2e_us_per_case", "e2e_us_interval", "us_per_case"]
    info = {
        "name": str(family), "page": slug, "kinds": sorted(frows["kind"].unique()),
        # the best three of each ranking (kind x size x device), each its own table: kinds never share a ranking
        "rankings": [{"kind": str(kind), "scenes": int(scenes), "device": str(device),
                      "rows": _records(part.head(3)[top_columns])}
                     for (kind, scenes, device), part in table.groupby(RANKING_GROUP, sort=True)],
        "configurations": len(table), "cases": int(frows.drop_duplicates(CASE_KEY).shape[0]),
    }
    page = env.get_template("family.html.j2").render(
        **common, family=info, columns=group_columns, table=_records(table[columns]), groups=groups,
        scatters=[{"kind": str(kind), "id": f"scatter-{_slug(str(kind))}", "traces": int(part["solver_label"].nunique()),
                   "json": _plot_json(scatter_figure(part))} for kind, part in table.groupby("kind", sort=True)],
        profiles=profiles, by_truth=by_truth.to_dict("records"), drill=drill.to_dict("records"),
        drill_total=drill_total, drill_limit=MAX_DRILL_CASES,
        drill_near=bool("meta_signed_distance" in frows),
        scaling=_plot_json(scaling_figure(scaling)) if sizes > 1 else None,
        scaling_traces=int(scaling.groupby(["config", "kind"]).ngroups), scaling_sizes=sizes,
        crossover=_records(cross.assign(faster_from_scenes=[
            "never" if v is None or pd.isna(v) else str(int(v)) for v in cross["faster_from_scenes"]]))
        if sizes > 1 else [],
        crossover_columns=list(cross.columns),
        ratios=speed_ratios(frows, table, confidence), ratio_limit=MAX_RATIO_CONFIGS, fold_rows=FOLD_ROWS,
        advice=recommendation_box(frows, confidence), rates=_records(rates), rate_columns=list(rates.columns))
    (out / slug).write_text(page, encoding="utf-8")
    return info


def _write_compare_page(out: Path, env, common: dict, base_dirs, comparison) -> None:
    """``compare.html``: the comparison's table (``bench.analysis.compare.text_rows``), notes and the
    configurations of one side only."""
    from bench.analysis.compare import text_rows

    table = text_rows(comparison)
    rows = [{**rec, "worse": bool(w)} for rec, w in zip(table.to_dict("records"), comparison.table.get("worse", []))]

    def names(only: pd.DataFrame) -> list[str]:
        return [f"{r.solver_spec} {r.dtype} {r.device} {r.family_label}/{r.kind} n={r.n_scenes}" for r in only.itertuples()]

    page = env.get_template("compare.html.j2").render(
        **common, base=", ".join(str(Path(d).name) for d in base_dirs), threshold=f"{comparison.threshold:g}",
        notes=comparison.notes, columns=list(table.columns), rows=rows,
        only_base=names(comparison.only_base), only_new=names(comparison.only_new))
    (out / "compare.html").write_text(page, encoding="utf-8")


__all__ = ["Site", "publish", "publish_single_file", "shifted_geometric_mean", "performance_profile", "case_times", "family_table",
           "ranked", "disagreements", "scaling_table", "crossover", "speed_ratios", "recommendation_box"]
