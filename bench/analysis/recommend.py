"""``contactbench recommend``: which configurations may a controller use, and how sure are we?

A configuration (solver label x device x dtype, x machine when hosts are merged), on one
family, kind and batch size, **qualifies** when, at the confidence level, the one-sided
Clopper-Pearson upper bound of each error rate is within its threshold and its median
end-to-end time per case fits the budget: ``false_accept`` (unsafe) at most
``max_false_accept``; ``uncertain`` + ``failed`` (no verified answer) at most
``max_uncertain``; ``false_reject`` + ``suboptimal`` (safe but wrong) at most ``max_wrong``.
Otherwise it is **out** (an observed rate already at or above a threshold, or over budget)
or **open** (too few cases to show the bound: ``needed_cases`` and ``needed_n`` say how many
a rerun needs); on a fixed set (a ``files`` folder) an open configuration is *undecided*,
and its reason says what would decide it. Rates count distinct cases, each once with its
worst outcome (``bench.analysis.results``); a solver's own status flag never decides
anything here. In full: docs/recommend.md."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from problems.kinds.checks import UNPROVEN, UNSAFE, WRONG
from solvers.errors import ProblemError

from bench.analysis import intervals, results, stats

#: one row per configuration, family, kind and batch size
KEYS = ["config", "solver_label", "device", "dtype", "family_label", "kind", "n_scenes"]


@dataclass(frozen=True)
class Criterion:
    """An error-rate rule: the outcomes it counts, the threshold's name, and words for reasons."""

    name: str
    outcomes: tuple[str, ...]
    threshold: str
    label: str
    without: str


CRITERIA = (
    Criterion("false_accept", UNSAFE, "max_false_accept", "false-accept", "without a false accept"),
    Criterion("uncertain", UNPROVEN, "max_uncertain", "uncertain-or-failed",
              "without an uncertain or failed answer"),
    Criterion("wrong", WRONG, "max_wrong", "wrong-answer", "without a wrong answer"),
)

@dataclass(frozen=True)
class Thresholds:
    """What a configuration must show to qualify: upper bounds of rates (fractions of cases,
    in (0, 1)), the budget in microseconds per case end to end (> 0) and the confidence
    level of the bounds (in (0, 1))."""

    max_false_accept: float = 1e-3
    max_uncertain: float = 1e-2
    max_wrong: float = 1e-2
    budget_us: float = 1000.0
    confidence: float = 0.95

    def __post_init__(self) -> None:
        for name in ("max_false_accept", "max_uncertain", "max_wrong"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < 1):
                raise ProblemError(f"{name}: expected a rate in (0, 1), got {value!r}")
        if not (isinstance(self.budget_us, (int, float)) and self.budget_us > 0 and math.isfinite(self.budget_us)):
            raise ProblemError(f"budget_us: expected microseconds per case > 0, got {self.budget_us!r}")
        intervals.check_confidence(self.confidence)


@dataclass(frozen=True)
class Recommendation:
    """The assessment of every configuration (``table``: qualifying ones first, per family,
    kind and batch size fastest first and ranked, then open, then out), the thresholds, and ``rerun_n``: the ``--n`` (scenes) a
    rerun needs to decide every open configuration a rerun can decide (None when none is);
    ``undecidable``: how many open ones their family's fixed set cannot decide (see the module
    docstring)."""

    table: pd.DataFrame
    thresholds: Thresholds
    rerun_n: int | None
    undecidable: int = 0
    #: per configuration and reference truth class, where a configuration's cases mix them
    #: (``by_truth_class``); empty otherwise
    by_truth: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def rerun_decides(self) -> int:
        """How many open configurations a rerun with ``rerun_n`` scenes decides."""
        return int((self.table["status"] == "open").sum()) - self.undecidable

    @property
    def qualifying(self) -> pd.DataFrame:
        return self.table[self.table["status"] == "qualifies"]

    def to_json(self) -> dict:
        """A JSON-ready dict: thresholds, rerun ``--n`` and one record per configuration."""
        def clean(value, key=""):
            if key in ("needed_cases", "needed_n", "rank") and isinstance(value, (int, float, np.number)):
                return int(value) if np.isfinite(value) else None
            if isinstance(value, (np.integer,)):
                return int(value)
            if isinstance(value, (float, np.floating)):
                return None if not np.isfinite(value) else float(value)
            if isinstance(value, (np.bool_,)):
                return bool(value)
            return value
        records = [{k: clean(v, k) for k, v in rec.items()} for rec in self.table.to_dict("records")]
        truth = [{k: clean(v, k) for k, v in rec.items()} for rec in self.by_truth.to_dict("records")]
        return {"thresholds": asdict(self.thresholds), "rerun_n": self.rerun_n, "undecidable": self.undecidable,
                "by_truth_class": truth,
                "qualifying": [r for r in records if r["status"] == "qualifies"],
                "open": [r for r in records if r["status"] == "open"],
                "out": [r for r in records if r["status"] == "out"]}


def select(rows: pd.DataFrame, family: str | None = None, kind: str | None = None,
           device: str | None = None, truth: str | None = None) -> pd.DataFrame:
    """The rows of ``family`` (registry name or label), ``kind``, ``device`` and reference
    ``truth`` class (``feasible``, ``infeasible``, ``supported``, ...; None: all);
    ``ProblemError`` naming the option and the values the runs hold when one matches nothing."""
    for option, value, columns in (("family", family, ("family", "family_label")), ("kind", kind, ("kind",)),
                                   ("device", device, ("device",)), ("truth", truth, ("truth",))):
        if value is None:
            continue
        mask = np.zeros(len(rows), dtype=bool)
        for column in columns:
            if column in rows:
                mask |= rows[column].astype(str).to_numpy() == value
        if not mask.any():
            held = sorted(set(rows[columns[-1]].astype(str))) if columns[-1] in rows else []
            raise ProblemError(f"{option}: {value!r} matches nothing in these runs; they hold: {', '.join(held)}")
        rows = rows[mask]
    return rows


def _judge(k: int, n: int, limit: float, crit: Criterion, confidence: float,
           most_cases: int | None = None) -> tuple[str, str, int | None, float]:
    """``(state, reason, needed cases, bound)`` of one criterion: ``met``, ``open`` or ``out``.
    ``most_cases``: the most cases the family can give (None: no limit); an open criterion
    needing more gives ``needed`` None and says what the whole set can show at best."""
    bound = stats.rate_upper_bound(k, n, confidence)
    if bound <= limit:
        return "met", "", None, bound
    needed = stats.cases_to_show(k, n, limit, confidence)
    if needed is None:
        return "out", f"{crit.label} bound {results.sci(bound)} > {results.sci(limit)} ({k:,} of {n:,})", None, bound
    if most_cases is not None and needed > most_cases:
        best = stats.rate_upper_bound(k, most_cases, confidence)
        return ("open", f"needs {needed:,} cases to show {crit.label} <= {results.sci(limit)}, but the family holds "
                f"{most_cases:,}: {most_cases:,} cases can show at most {results.sci(best)} ({k:,} seen); decide it "
                f"with more problems (a larger folder) or a looser --{crit.threshold.replace('_', '-')} (>= {results.sci(best)})",
                None, bound)
    if k == 0:
        return "open", f"needs {needed:,} cases {crit.without} to show <= {results.sci(limit)}, has {n:,}", needed, bound
    return ("open", f"needs about {needed:,} cases at the observed {crit.label} rate ({k:,} of {n:,}) to show "
            f"<= {results.sci(limit)}, has {n:,}", needed, bound)


def unproven_why(rows: pd.DataFrame) -> str:
    """Why one configuration's ``uncertain`` answers are unproven, from what its solver said on
    them: ``41 of 42 uncertain agree with the reference: its infeasibility claims carry no
    certificate``; empty without uncertain rows."""
    unsure = rows[rows["outcome"].astype(str) == "uncertain"]
    if unsure.empty:
        return ""
    agree = int(unsure["ref_agrees"].fillna(False).astype(bool).sum()) if "ref_agrees" in unsure else 0
    said = unsure["status"] if "status" in unsure else pd.Series(dtype=str)
    said = said.dropna().astype(str).mode()
    top = str(said.iloc[0]) if len(said) else ""
    cause = {"infeasible": "its infeasibility claims carry no certificate (duals that prove them)",
             "unbounded": "its unboundedness claims carry no ray",
             "optimal": "its answers carry neither a witness (a feasible x) nor a certificate within the "
                        "tolerances"}.get(
        top, f"it stops with {top}" if top else "its answers prove nothing within the tolerances")
    return f"{agree} of {len(unsure)} uncertain agree with the reference: {cause}"


def assess(rows: pd.DataFrame, thresholds: Thresholds = Thresholds()) -> Recommendation:
    """Judge every configuration of ``rows`` (cell rows from ``bench.analysis.results.load`` or
    ``prepare``, which add ``config``, ``case_id`` and ``rank_us``) against ``thresholds``
    (see the module docstring)."""
    if rows.empty:
        raise ProblemError("rows: no results to assess")
    conf = thresholds.confidence
    if "n_lps" not in rows:  # cases per scene unknown: one
        rows = rows.assign(n_lps=rows["n_scenes"])
    counts = results.case_counts(rows, KEYS)
    if "family_cases" not in rows:  # rows of an older contactbench: no known limit
        rows = rows.assign(family_cases=-1)
    times = rows.groupby(KEYS, dropna=False).agg(us_per_case=("rank_us", "median"), lps=("n_lps", "max"),
                                                 most_scenes=("family_cases", "max")).reset_index()
    table = intervals.add_time_intervals(counts.merge(times, on=KEYS, how="left"), rows, KEYS, conf)
    why = {key: unproven_why(group) for key, group in rows.groupby(KEYS, dropna=False)
           if (group["outcome"].astype(str) == "uncertain").any()}
    records = []
    for _, r in table.iterrows():
        n = int(r["cases"])
        rec = {"config": r["config"], "solver": r["solver_label"], "device": r["device"], "dtype": r["dtype"],
               "family": r["family_label"], "kind": r["kind"], "scenes": int(r["n_scenes"]), "cases": n}
        per_scene = max(int(r["lps"]) / max(int(r["n_scenes"]), 1), 1.0) if pd.notna(r["lps"]) else 1.0
        most = int(r["most_scenes"]) if pd.notna(r["most_scenes"]) and r["most_scenes"] > 0 else None
        most_cases = int(most * per_scene) if most is not None else None
        states, out_reasons, open_reasons = [], [], []
        for crit in CRITERIA:
            k = int(sum(int(r[o]) for o in crit.outcomes if o in r))
            state, reason, need, bound = _judge(k, n, getattr(thresholds, crit.threshold), crit, conf, most_cases)
            rec[crit.name] = k
            rec[f"{crit.name}_bound"] = bound
            states.append(state)
            if state == "out":
                unproven = why.get(tuple(r[k] for k in KEYS), "") if crit.name == "uncertain" else ""
                out_reasons.append(f"{reason}; {unproven}" if unproven else reason)
            elif state == "open":  # an undecidable one (need None) sorts above every number
                open_reasons.append((math.inf if need is None else need, reason))
        t = float(r["us_per_case"])
        if not np.isfinite(t):
            states.append("out")
            out_reasons.append("no time measured")
        elif t > thresholds.budget_us:
            states.append("out")
            out_reasons.append(f"over budget: {results.us_text(t)} us per case")
        status = "out" if "out" in states else "open" if "open" in states else "qualifies"
        # an out configuration gives what rules it out; an open one the rule needing the most cases
        need, reason = max(open_reasons, key=lambda x: x[0]) if status == "open" else (None, "")
        need = None if need == math.inf else need
        rec.update(us_per_case=t, time_low_us=float(r["time_low_us"]), time_high_us=float(r["time_high_us"]),
                   status=status, reasons=out_reasons if status == "out" else [reason] if reason else [],
                   needed_cases=need,
                   needed_n=int(math.ceil(need / per_scene)) if need else None,
                   decidable=status != "open" or need is not None)
        records.append(rec)
    out = pd.DataFrame(records)
    order = {"qualifies": 0, "open": 1, "out": 2}
    out = out.assign(_s=out["status"].map(order)).sort_values(["_s", "family", "kind", "scenes", "us_per_case", "config"],
                                                             na_position="last")
    out = out.drop(columns="_s").reset_index(drop=True)
    out = _rank_qualifying(out)
    is_open = out["status"] == "open"
    open_n = out.loc[is_open, "needed_n"].dropna()
    return Recommendation(out, thresholds, int(open_n.max()) if len(open_n) else None,
                          int((is_open & ~out["decidable"]).sum()), by_truth_class(rows, out))


def by_truth_class(rows: pd.DataFrame, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per configuration whose cases mix reference truth classes (a family of feasible and
    infeasible wrenches), one row per class: ``truth``, ``cases``, ``correct``, ``unsafe``
    (false accepts), ``wrong`` (false rejects, suboptimal), ``unproven`` (uncertain, failed)
    and ``unproven_agree``; in ``table``'s order (``assess``) when given. Empty where no
    configuration mixes them."""
    if "truth" not in rows:
        return pd.DataFrame()
    known = rows[rows["truth"].notna() & (rows["truth"].astype(str) != "")]
    known = known[known.groupby(KEYS, dropna=False)["truth"].transform("nunique") > 1]
    if known.empty:
        return pd.DataFrame()
    counts = results.case_counts(known.assign(truth=known["truth"].astype(str)), KEYS + ["truth"])
    total = lambda names: sum(counts[c] for c in names if c in counts) + 0 * counts["cases"]  # noqa: E731
    out = pd.DataFrame({"config": counts["config"], "family": counts["family_label"], "kind": counts["kind"],
                        "scenes": counts["n_scenes"], "truth": counts["truth"], "cases": counts["cases"],
                        "correct": total(("correct",)), "unsafe": total(UNSAFE),
                        "wrong": total(WRONG), "unproven": total(UNPROVEN),
                        "unproven_agree": counts["uncertain_agree"]})
    if table is not None and len(table):
        order = {key: i for i, key in enumerate(zip(table["config"], table["family"], table["kind"], table["scenes"]))}
        out = out.assign(_o=[order.get(k, len(order)) for k in zip(out["config"], out["family"], out["kind"],
                                                                    out["scenes"])])
        out = out.sort_values(["_o", "truth"], kind="stable").drop(columns="_o")
    return out.reset_index(drop=True)


def _rank_qualifying(table: pd.DataFrame) -> pd.DataFrame:
    """``rank`` of the qualifying rows by time within each family, kind and batch size (the
    same problems), with ties (overlapping time intervals with the tie group's fastest,
    ``bench.analysis.results.mark_ties``); NaN for the others."""
    table = table.assign(rank=np.nan, tied=False)
    q = table[table["status"] == "qualifies"]
    for _, grp in q.groupby(["family", "kind", "scenes"], sort=False):
        ranked = results.mark_ties(grp, time="us_per_case")
        table.loc[grp.index, "rank"] = ranked["rank"].to_numpy()
        table.loc[grp.index, "tied"] = ranked["tied"].to_numpy()
    return table
