"""Reports: per family x kind x solver x settings x device x dtype x batch size.

Columns: ``n`` and the outcome counts (``correct``, ``false_accept``, ``false_reject``,
``uncertain``, ``failed``; QP kinds add ``suboptimal`` and their largest gap and residuals);
the timings (``ms_per_256``, ``us_per_lp``, their ``end_to_end_`` forms, ``iqr_ms``,
``compile_s``) and memory (``peak_rss_mb``, ``device_peak_mb``); rates counted over distinct
cases (``bench.analysis.results``) with their Clopper-Pearson intervals at the report's
confidence level, ``false_accept_bound`` (the safety figure) and the bootstrap interval of
the time per case; ``rank`` and ``tied`` by the one ranking rule
(``bench.analysis.results.rank``). ``rank_deficient_summary`` repeats the counts for cases
whose equality rows are rank-deficient (two-foot stances). Every column's unit:
docs/timing.md, "The results schema"; the rates: docs/recommend.md."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from problems.kinds.checks import OUTCOMES, UNPROVEN, WRONG

from bench.analysis import intervals, results
from bench.engine.rundir import read_manifest, replace_output_dir
from bench.engine.schema import REPORT_GROUP, rename_for_report

__all__ = ["load_runs", "read_manifest", "write_report", "summarize"]

GROUP = REPORT_GROUP


def load_runs(run_dirs: list[Path | str]) -> pd.DataFrame:
    """All readable cell rows of the given run directories (``bench.analysis.results.load``: symlinks
    such as ``latest`` resolved, ``config``, ``case_id`` and ``rank_us`` added). An
    unreadable or damaged cell file is skipped with a warning naming it; ``ProblemError``
    when nothing at all is readable."""
    return results.load(run_dirs)


def summarize(rows: pd.DataFrame, confidence: float = intervals.DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """One row per cell group with outcome counts and timing (``bench.analysis.results.summarize``:
    distinct cases), then the rates with their intervals and the timing interval at
    ``confidence`` (see the module docstring)."""
    table = results.summarize(rows, GROUP)
    table = intervals.with_intervals(table, rows, GROUP, [o for o in OUTCOMES if o in table], confidence)
    table["rank_us"] = results.ranking_time_us(table)
    # as the dashboard: within family x kind x batch size x device (the same problems, the same device)
    ranked = [results.rank(group) for _, group in table.groupby(["family_label", "kind", "n_scenes", "device"],
                                                                sort=False)]
    table = pd.concat(ranked, ignore_index=True) if ranked else table.assign(rank=[], tied=[])
    out = rename_for_report(table.drop(columns="rank_us"))
    out = out[["rank", *[c for c in out.columns if c not in ("rank", "tied")], "tied"]]
    return out.sort_values(["family", "kind", "scenes", "device", "rank", "end_to_end_ms_per_256"],
                           na_position="last", kind="stable").reset_index(drop=True)


def kind_sections(rows: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """The kinds' own report sections (``Kind.report_sections``), group columns renamed."""
    from problems import get_kind

    out = []
    for name in sorted(map(str, rows["kind"].unique())):
        try:
            kind = get_kind(name)
        except Exception:  # a plug-in kind this process has not loaded: no section of its own
            continue
        for title, stem, table in kind.report_sections(rows[rows["kind"] == name], GROUP):
            out.append((title, stem, rename_for_report(table)))
    return out


def rank_deficient_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Outcome counts on the cases whose equality rows are rank-deficient
    (``meta_rank_deficient``), per cell group; empty when there are none."""
    if "meta_rank_deficient" not in rows:
        return pd.DataFrame()
    sub = rows[rows["meta_rank_deficient"].fillna(False).astype(bool)]
    if sub.empty:
        return pd.DataFrame()
    table = results.summarize(sub, GROUP)
    return rename_for_report(table[GROUP + ["n"] + [c for c in OUTCOMES if c in table]].rename(columns={"n": "cases"}))


def truth_class_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Outcome counts per cell group and reference truth (``truth``: feasible, infeasible, ...)
    for the groups whose cases mix truth classes (a QP family with feasible and infeasible
    wrenches): a solver right on one class and wrong on the other shows as such. Empty when no
    group mixes them."""
    if "truth" not in rows:
        return pd.DataFrame()
    known = rows[rows["truth"].notna() & (rows["truth"].astype(str) != "")]
    mixed = known.groupby(GROUP, dropna=False)["truth"].transform("nunique") > 1
    sub = known[mixed]
    if sub.empty:
        return pd.DataFrame()
    table = results.summarize(sub.assign(truth=sub["truth"].astype(str)), GROUP + ["truth"])
    keep = GROUP + ["truth", "n"] + [c for c in OUTCOMES if c in table] + ["uncertain_agree"]
    return rename_for_report(table[[c for c in keep if c in table]].rename(columns={"n": "cases"}))


def provenance(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per run: id, commit, CPU, host, JAX devices and package versions."""
    cols = ["run_id"] + sorted(c for c in rows.columns if c.startswith("env_"))
    return rows[cols].drop_duplicates("run_id").reset_index(drop=True)


#: report.md's main table: at most 12 columns (report.csv and ``report --format json`` hold every one)
MAIN_COLUMNS = ["rank", "family", "kind", "scenes", "device", "solver", "dtype", "cases", "correct", "unsafe",
                "wrong", "unproven", "e2e us per case"]


def main_table(summary: pd.DataFrame) -> pd.DataFrame:
    """report.md's main table: one line per configuration in rank order within each family,
    kind, batch size and device; ``rank`` as text (``=3`` a tie, blank: no correct answer);
    ``unsafe`` the false accepts, ``wrong`` the safe wrong answers (false rejects,
    suboptimal), ``unproven`` the uncertain and failed answers; the median end-to-end
    microseconds per case. ``device`` appears only where the summary has several."""
    def total(names):
        return sum(summary[c].fillna(0).astype(int) for c in names if c in summary) + 0 * summary["n"]
    out = pd.DataFrame({
        "rank": [results.rank_text(r, t) for r, t in zip(summary["rank"], summary["tied"])],
        "family": summary["family"], "kind": summary["kind"], "scenes": summary["scenes"],
        "device": summary["device"], "solver": summary["solver"], "dtype": summary["dtype"],
        "cases": summary["n"], "correct": summary["correct"], "unsafe": summary["false_accept"],
        "wrong": total(WRONG),
        "unproven": [results.agree_text(u, a) for u, a in zip(total(UNPROVEN), _agree(summary))],
        "e2e us per case": [results.us_text(t) for t in results.ranking_time_us(summary)],
    })[MAIN_COLUMNS]
    return out.drop(columns=["device"]) if out["device"].nunique() <= 1 else out


def rate_columns(summary: pd.DataFrame) -> list[str]:
    """The interval columns of a summary (``cases``, ``*_rate`` / ``_low`` / ``_high``,
    ``false_accept_bound``, ``time_*_us``): in report.csv, apart in report.md."""
    return [c for c in summary.columns if c == "cases" or c.endswith(("_rate", "_low", "_high"))
            or c in ("false_accept_bound", "time_low_us", "time_high_us")]


def rates_table(summary: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """report.md's rates section: per group, each outcome as ``rate [low, high]`` (only
    outcomes some group has), the false-accept safety bound and the timing interval."""
    keys = [c for c in ("family", "kind", "solver", "device", "dtype", "scenes") if c in summary]
    out = summary[keys + ["cases"]].copy()
    pct = f"{100 * confidence:g} %"
    out = out.join(intervals.rate_texts(summary, list(OUTCOMES)))
    out[f"false_accept <= ({pct}, one-sided)"] = [results.sci(b) for b in summary["false_accept_bound"]]
    out["e2e us per case [interval]"] = [results.interval_text(t, lo, hi) for t, lo, hi in zip(
        results.ranking_time_us(summary), summary["time_low_us"], summary["time_high_us"])]
    return out


#: the terminal summary's columns, solver first (``terminal``); a column whose value is the
#: same on every line is dropped and named in the title instead
TERMINAL = ["solver", "dtype", "device", "problem", "scenes", "rank", "correct", "unsafe", "unproven", "us/case"]
#: columns ``terminal`` may drop when constant
TERMINAL_DROPPABLE = ("dtype", "device", "scenes")


def _agree(summary: pd.DataFrame) -> pd.Series:
    """The uncertain cases that agree with the reference (0 where the summary has no count)."""
    return summary["uncertain_agree"].fillna(0).astype(int) if "uncertain_agree" in summary else 0 * summary["n"]


def terminal(summary: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """``(lines, constant)``: the summary as one short line per configuration for a terminal of
    100 columns, the solver first, grouped by problem (``family/kind``) in rank order:
    ``rank`` (``=`` a tie), ``correct``, ``unsafe`` (false accepts), ``unproven`` (uncertain
    and failed), the median end-to-end microseconds per case. The columns of
    ``TERMINAL_DROPPABLE`` whose value is the same on every line are dropped and returned
    in ``constant`` (column -> value); report.md and the dashboard hold the rest."""
    summary = summary.sort_values(["family", "kind", "scenes", "device", "rank"], kind="stable", na_position="last")
    unsure = sum(summary[c] for c in UNPROVEN if c in summary)
    lines = pd.DataFrame({
        "solver": summary["solver"].astype(str), "dtype": summary["dtype"].astype(str),
        "device": summary["device"].astype(str),
        "problem": summary["family"].astype(str) + "/" + summary["kind"].astype(str),
        "scenes": summary["scenes"].astype(int).astype(str),
        "rank": [results.rank_text(r, t) for r, t in zip(summary["rank"], summary["tied"])],
        "correct": [f"{c}/{n}" for c, n in zip(summary["correct"].astype(int), summary["n"].astype(int))],
        "unsafe": summary["false_accept"].astype(int).astype(str),
        "unproven": [results.agree_text(u, a) for u, a in zip(pd.Series(unsure, index=summary.index).astype(int),
                                                         _agree(summary))],
        "us/case": [results.us_text(t) for t in results.ranking_time_us(summary)],
    })[TERMINAL].reset_index(drop=True)
    constant = {c: str(lines[c].iloc[0]) for c in TERMINAL_DROPPABLE if len(lines) and lines[c].nunique() == 1}
    return lines.drop(columns=list(constant)), constant


def md_text(value) -> str:
    """``value`` as inert Markdown text: HTML special characters as entities (a family path
    or a solver message such as ``<img src=x onerror=...>`` is shown, never run by a
    Markdown renderer), table pipes and backticks escaped, on one line."""
    text = html.escape(str(value), quote=False).replace("|", "\\|").replace("`", "\\`")
    return " ".join(text.splitlines())


def _markdown(df: pd.DataFrame, **options) -> str:
    """``df`` as a Markdown table, its text cells through ``md_text`` (the column names are
    contactbench's own)."""
    safe = df.copy()
    for column in safe.columns[[pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt)
                                for dt in safe.dtypes]]:
        safe[column] = safe[column].map(lambda v: v if v is None or (isinstance(v, float) and v != v) else md_text(v))
    return safe.to_markdown(index=False, **({"floatfmt": ".3g"} | options))


def write_report(rows: pd.DataFrame, out_dir: Path | str, manifests: list[dict] | None = None,
                 inputs: list[Path | str] = (), confidence: float = intervals.DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """Write ``report.md``, ``report.csv`` and ``provenance.csv`` under ``out_dir``; return the summary.

    The folder is built beside ``out_dir`` and swapped in (``bench.engine.rundir.replace_output_dir``):
    ``ProblemError`` when ``out_dir`` holds files contactbench did not write or overlaps one of
    the run directories ``inputs``; a failed write leaves the previous report as it was."""
    confidence = intervals.check_confidence(confidence)
    return replace_output_dir(out_dir, lambda tmp: _write_report(rows, tmp, manifests, confidence),
                              [Path(d) for d in inputs])


def _write_report(rows: pd.DataFrame, out: Path, manifests: list[dict] | None, confidence: float) -> pd.DataFrame:
    summary = summarize(rows, confidence)
    summary.to_csv(out / "report.csv", index=False)
    prov = provenance(rows)
    prov.to_csv(out / "provenance.csv", index=False)
    lines = ["# contactbench report", "",
             "Outcomes are verified independently of each solver against a float64 reference (hold LPs: "
             "HiGHS; QPs and SOCPs: Clarabel at 1e-10). `false_accept` is the unsafe error: said supported "
             "(or handed out forces) when the contacts cannot hold, or forces that violate the constraints. "
             "`ms_per_256` is the median time per 256 scenes of the solve alone, `end_to_end_ms_per_256` "
             "of host arrays in to host answers out (conversions and transfers included); `compile_s` is first "
             "call minus a steady call; `peak_rss_mb` / `device_peak_mb` the cell's peak host / device memory.",
             "", "Rows are in rank order within each family, kind, batch size and device (`=3`: a statistical "
             "tie; no rank: no correct answer). `unsafe`: false accepts; `wrong`: false rejects and suboptimal "
             "answers; `unproven`: uncertain and failed, `(n agree)`: how many of them agree with the reference's "
             "truth without proving it (right without proof; the rest are wrong without proof). Every other column is in report.csv "
             "(`contactbench report --format json|csv`).",
             "", _markdown(main_table(summary), disable_numparse=True), "",
             f"## Rates with {100 * confidence:g} % intervals", "",
             "Each outcome's rate over the distinct cases with its two-sided Clopper-Pearson interval, the one-sided "
             "upper bound of the false-accept rate (the safety figure: 0 unsafe answers in 64 cases still allows "
             "4.6e-2), and a bootstrap interval of the median end-to-end time per case over the timed repeats. "
             "`contactbench recommend` turns these into an answer.", "",
             _markdown(rates_table(summary, confidence), disable_numparse=True), ""]
    deficient = rank_deficient_summary(rows)
    if len(deficient):
        deficient.to_csv(out / "rank_deficient.csv", index=False)
        lines += ["## Rank-deficient equality rows (two-foot stances)", "",
                  "The same outcomes restricted to cases whose wrench rows are rank-deficient; a solver that "
                  "fails here fails on real stances, not on a generator artefact.", "", _markdown(deficient), ""]
    by_truth = truth_class_summary(rows)
    if len(by_truth):
        by_truth.to_csv(out / "truth_classes.csv", index=False)
        lines += ["## By truth class", "",
                  "The same outcomes per reference truth, for the problem sets that mix feasible and infeasible "
                  "cases: how a solver does on the cases it can answer with forces, and on those where it must "
                  "prove that none exist.", "", _markdown(by_truth), ""]
    for title, stem, table in kind_sections(rows):
        table.to_csv(out / f"{stem}.csv", index=False)
        lines += [f"## {title}", "", _markdown(table), ""]
    lines += ["## Failures", ""]
    failed = rows[rows.get("error_type", pd.Series("", index=rows.index)).fillna("") != ""]
    if len(failed):
        first = failed.drop_duplicates("cell_id")[["cell_id", "error_type", "error"]]
        for _, r in first.iterrows():
            first_line = str(r.error).splitlines()[0] if r.error else ""
            lines.append(f"- {md_text(r.cell_id)}: {md_text(r.error_type)}: {md_text(first_line)}")
    else:
        lines.append("None.")
    lines += ["", "## Provenance", "", _markdown(prov.T.reset_index().rename(columns={"index": "field"}))]
    for m in manifests or []:
        lines += ["", f"Run {md_text(m.get('run_id'))}: {md_text(m.get('command', ''))}; skipped: "
                  + (", ".join(f"{md_text(a)} ({md_text(b)})" for a, b in m.get("skipped", [])) or "none")]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return summary
